package jsonrpc

// This file holds how an HTTPClient tells whether a request that failed
// may have run: net/http's word on whether it wrote the request whole
// (wroteTrace), the errors of a transport that failed, and the answer a
// 503 carries.

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptrace"
	"sync/atomic"
)

// transportFailed is the error of a request that net/http could not
// complete: ctx's error if ctx has ended, otherwise an error wrapping
// ErrClosed and err. Either is marked as sent if the whole request was
// written, as wrote says when traced (see wroteTrace), since the server
// may then have run it. Untraced (a RoundTripper of the caller's, which
// may not say what it wrote), it is marked so unless no connection could
// be made.
func transportFailed(ctx context.Context, err error, traced, wrote bool) error {
	ended := ctx.Err() != nil
	if !ended {
		err = &closedError{cause: err}
	}
	if traced {
		if wrote {
			return sent(err)
		}
		return err
	}
	if ended {
		return sent(err) // a *url.Error that wraps ctx's error
	}
	var op *net.OpError
	if errors.As(err, &op) && op.Op == "dial" {
		return err
	}
	var dns *net.DNSError
	if errors.As(err, &dns) {
		return err
	}
	return sent(err)
}

// reportsWrites reports whether rt, an http.Client's Transport, is
// net/http's own, which says when it has written a request (see
// wroteTrace); nil stands for http.DefaultTransport, which a program may
// have replaced.
func reportsWrites(rt http.RoundTripper) bool {
	if rt == nil {
		rt = http.DefaultTransport
	}
	_, ok := rt.(*http.Transport)
	return ok
}

// A wroteTrace learns from net/http whether a request was written whole
// to the last connection it went to: until then, that server cannot have
// read it, and a failure leaves it not run. Each hop of a redirect, and
// each of net/http's own retries of a request it could not send, asks for
// a connection anew, and starts again.
//
// An HTTPClient keeps them for reuse, their hooks set once. A hook that
// net/http calls late, once the request it traced is over, can only mark
// the next one written: that one then says it may have run, never that it
// did not.
//
// A hop written whole and answered with a redirect that net/http follows
// without the body (301, 302 and 303 turn a POST into a GET) stays so:
// that server had the call whole and may have run it, whatever the later
// hops do. A redirect that sends the body again (307, 308) asks for it
// through the request's GetBody, which clears that mark.
type wroteTrace struct {
	trace    httptrace.ClientTrace
	wrote    atomic.Bool
	answered atomic.Bool // a hop written whole got a response, and the body was not sent again since
	body     []byte      // the request's body, for getBody
	getBody  func() (io.ReadCloser, error)
}

func newWroteTrace() *wroteTrace {
	w := new(wroteTrace)
	w.trace.GetConn, w.trace.WroteRequest = w.getConn, w.wroteRequest
	w.trace.GotFirstResponseByte = w.gotFirstResponseByte
	w.getBody = w.rewind
	return w
}

// mayHaveRun reports whether a server may have had the request whole:
// the last hop was written whole, or an earlier one was and was answered
// with a redirect that dropped the body.
func (w *wroteTrace) mayHaveRun() bool { return w.wrote.Load() || w.answered.Load() }

func (w *wroteTrace) gotFirstResponseByte() {
	if w.wrote.Load() {
		w.answered.Store(true)
	}
}

// rewind is the request's GetBody: net/http calls it to send the body
// again, to follow a 307 or 308, or to retry a request it did not write.
func (w *wroteTrace) rewind() (io.ReadCloser, error) {
	w.answered.Store(false)
	return io.NopCloser(bytes.NewReader(w.body)), nil
}

// wroteTrace returns a wroteTrace to trace a request with, one of c's if
// it has one to reuse.
func (c *HTTPClient) wroteTrace() *wroteTrace {
	w, _ := c.traces.Get().(*wroteTrace)
	if w == nil {
		return newWroteTrace()
	}
	w.wrote.Store(false)
	w.answered.Store(false)
	return w
}

func (w *wroteTrace) getConn(string) { w.wrote.Store(false) }

func (w *wroteTrace) wroteRequest(info httptrace.WroteRequestInfo) {
	if info.Err == nil {
		w.wrote.Store(true)
	}
}

// notRunAnswer returns the error that head, the start of the body of a
// 503, answers with, if it is ErrNotRun or ErrOverloaded; otherwise
// ErrNotRun.
func notRunAnswer(head []byte) *Error {
	var one envelope
	kind, batch := scanLine(head, &one, nil, 1)
	e := &one
	if kind == lineBatch && len(batch) > 0 {
		e = &batch[0]
	} else if kind != lineObject {
		return ErrNotRun
	}
	if r, why := e.response(); why == "" && r.Error != nil {
		if r.Error.Code == CodeNotRun || r.Error.Code == CodeOverloaded {
			return r.Error
		}
	}
	return ErrNotRun
}
