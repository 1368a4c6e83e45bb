package jsonrpc

// This file holds HTTPClient, which calls a JSON-RPC 2.0 server over HTTP
// POST, one request per call, and reads answers sent as plain JSON, as
// server-sent events or as newline-delimited JSON.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"iter"
	"net/http"
	"net/http/httptrace"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// An HTTPClient calls a JSON-RPC 2.0 server over HTTP, such as
// [Server.ServeHTTP]: each Call, Notify, Batch or Stream is one POST of
// one message or batch, whose response carries the answer. It is a
// [Caller], its methods with the meaning of [Conn]'s, and reads answers sent as
// application/json, as server-sent events (text/event-stream) or as
// newline-delimited JSON (application/x-ndjson), whichever the server
// chose.
//
// URL must be set; the other fields may be left zero. An HTTPClient is
// safe for concurrent use, and its fields must not change once it is in
// use. Connections are kept alive and reused as the [http.Client] does.
//
// A call returns as soon as it has its answer. Of a streamed response
// that goes on after the answer, a call that accepts streams (OnNotify
// is set, or Stream) reads at most 4 KiB more, for at most 50 ms, so that
// a response that ends there leaves its connection to be reused, then
// drops the request; a call that asked for plain JSON does not read it
// at all. Either way a server that holds its response open keeps the
// call no longer, at the cost of its connection.
type HTTPClient struct {
	// URL is the server's endpoint.
	URL string

	// HTTP sends the requests; nil means [http.DefaultClient]. Its
	// Transport keeps only two idle connections per host: with more
	// concurrent callers, give the client a Transport whose
	// MaxIdleConnsPerHost is at least their number, or most calls open
	// a new connection. A redirect that it follows without the request's
	// body (301, 302 or 303, which turn the POST into a GET) answers no
	// call: the call fails with an error that says it may have run (the
	// server that redirected had it whole); 307 and 308 send the body
	// again, and their answer counts.
	HTTP *http.Client

	// Header holds headers added to every request, such as
	// Authorization.
	Header http.Header

	// OnNotify, if set, is called for each notification the server
	// streams before an answer (progress, log messages), in order, on
	// the goroutine of the call it came with; req and its Params are
	// valid only during the call. Without OnNotify, Call and Batch ask
	// for plain JSON, and the server drops such notifications.
	OnNotify func(req *Request)

	// Interceptors wrap the sending of the client's calls and
	// notifications, the first outermost (see [Interceptor]); they reach
	// the header of each call's request with [HTTPHeader].
	Interceptors []Interceptor

	// MaxMessageSize is the largest message read from a response; zero
	// means 64 MiB. A longer one, in any framing, fails
	// the call with an error wrapping [ErrMessageTooLarge] as soon as it
	// passes the limit: reading stops within 4 KiB of it (an event made
	// of several data lines, within one line of it), and a plain JSON
	// body whose Content-Length is over the limit is not read at all.
	MaxMessageSize int

	// Retry, if set, turns on retries, within the call's ctx: a call
	// that surely did not run (no connection could be made, or the
	// server answered 503, [ErrNotRun] or [ErrOverloaded]) is sent
	// again, and one that may have run (the connection broke once the
	// request was sent, the response ended without the answer, or a
	// proxy answered 502 or 504) is sent again only if Retry reports
	// that its method is safe to repeat: that it is idempotent, and at
	// most MaxRetries times. A Batch
	// that may have run is sent again only if Retry allows every method
	// in it, a Stream only while none of its items has been yielded,
	// and a Notify only if it surely did not run. The last attempt's
	// error is returned, wrapping ctx's error if ctx ended between two
	// attempts; [MayHaveRun] reports true if any attempt may have run.
	// Each attempt is a request of its own, with an id of its own, that
	// passes through the Interceptors. Nil retries nothing.
	Retry func(method string) bool

	// MaxRetries bounds how many times a call that may have run is sent
	// again because Retry allows it, so that a request that breaks every
	// server it reaches is not sent for as long as its ctx lasts; zero
	// means 4 (five attempts in all), a negative value none. Attempts that
	// surely did not run are not counted: they are sent again within
	// ctx.
	MaxRetries int

	// MinBackoff and MaxBackoff bound the wait between attempts, as
	// [Redialer]'s bound the wait between dials; zero means 50 ms and
	// 5 s. A 503's Retry-After is waited instead when it is shorter than
	// MaxBackoff.
	MinBackoff, MaxBackoff time.Duration

	ids     atomic.Int64
	traces  sync.Pool // of *wroteTrace
	chained lazyChain // the chain of Interceptors
}

// An HTTPError is returned by the methods of [HTTPClient] when the server
// answers with a status other than 200, or 202 and 204 where no answer is
// due. The error of a 503 Service Unavailable wraps both the *HTTPError
// and [ErrNotRun] (or the *Error its body answers with, when that is
// ErrNotRun or [ErrOverloaded]), since the server did not run the call.
type HTTPError struct {
	StatusCode int    // such as 415
	Status     string // such as "415 Unsupported Media Type"
	Body       []byte // the start of the response body, at most 512 bytes
}

// Error gives the response's status.
func (e *HTTPError) Error() string {
	return "jsonrpc: HTTP " + e.Status
}

// errNoAnswer is returned when a response ends without the answer to a
// call.
var errNoAnswer = errors.New("jsonrpc: the HTTP response carried no answer to the call")

// errMalformedResponse is returned when a response holds a message that
// is not JSON-RPC.
var errMalformedResponse = errors.New("jsonrpc: the HTTP response holds a malformed message")

// notRunError is the error of a 503: the server did not run the call.
type notRunError struct {
	http  *HTTPError
	wire  *Error
	after time.Duration // the response's Retry-After; zero if none
}

func (e *notRunError) Error() string { return e.http.Error() + ": " + e.wire.Error() }

func (e *notRunError) Unwrap() []error { return []error{e.http, e.wire} }

// readFailed is the error of an exchange whose response failed to give
// the answer, err: the request was sent, so the call may have run (see
// MayHaveRun). A read of the body that failed, the connection broken,
// wraps ErrClosed.
func readFailed(ctx context.Context, err error) error {
	switch {
	case ctx.Err() != nil:
		return sent(ctx.Err())
	case errors.Is(err, ErrMessageTooLarge), errors.Is(err, errMalformedResponse), errors.Is(err, errNoAnswer):
		return sent(err)
	}
	return sent(&closedError{cause: err})
}

// Call calls method with params and decodes the result into result, as
// [Conn.Call] does. If the server answers with a JSON-RPC error, Call
// returns it as an *Error; a status other than 200 gives an *HTTPError
// (see there for 503). If ctx ends first, the request is abandoned: the
// server sees its client go away. A failure of the transport (the
// connection refused, reset or closed early) gives an error wrapping
// [ErrClosed] and the *url.Error or read error; [MayHaveRun] says whether
// the call may have run.
func (c *HTTPClient) Call(ctx context.Context, method string, params, result any) error {
	if c.Retry == nil && len(c.Interceptors) == 0 {
		// The params are copied into the request's bytes, and not kept.
		raw, bp, err := encodeParamsBuf(params)
		if err != nil {
			return err
		}
		id := c.ids.Add(1)
		body := callBody(id, method, raw)
		if bp != nil {
			releaseParams(bp, raw)
		}
		return c.exchange(ctx, nil, id, body, result)
	}
	raw, err := encodeParams(params)
	if err != nil {
		return err
	}
	if c.Retry != nil {
		return c.retrying(ctx, c.callAgain(method), func() error { return c.callOnce(ctx, method, raw, result) })
	}
	return c.callOnce(ctx, method, raw, result)
}

// callOnce makes one attempt of a Call.
func (c *HTTPClient) callOnce(ctx context.Context, method string, raw []byte, result any) error {
	id := c.ids.Add(1)
	if len(c.Interceptors) > 0 {
		oc := &outgoing{id: id, params: raw, header: c.newHeader(), url: c.URL}
		return oc.through(ctx, c.chain(), method, result)
	}
	return c.call(ctx, nil, id, method, raw, result)
}

// call posts the call id, with header (nil for Header), and decodes the
// result of its answer into dest (nil to drop it).
func (c *HTTPClient) call(ctx context.Context, header http.Header, id int64, method string, raw []byte, dest any) error {
	return c.exchange(ctx, header, id, callBody(id, method, raw), dest)
}

// callBody returns the request of the call id. Its bytes are sized for
// the call, escapes in method aside, so that they take one allocation.
func callBody(id int64, method string, raw []byte) []byte {
	body := make([]byte, 0, len(`{"jsonrpc":"2.0","id":,"method":"","params":}`)+20+len(method)+len(raw))
	return appendCall(body, id, method, raw)
}

// exchange posts body, the request of the call id, with header (nil for
// Header), and decodes the result of its answer into dest (nil to drop
// it).
func (c *HTTPClient) exchange(ctx context.Context, header http.Header, id int64, body []byte, dest any) error {
	x, err := c.post(ctx, body, c.accept(), header)
	if err != nil {
		return err
	}
	defer x.end()
	var answered bool
	err = c.messages(&x, func(e *envelope, _ []envelope, kind lineKind) (bool, error) {
		if kind != lineObject {
			return false, nil
		}
		found, err := c.answerTo(e, id, dest)
		answered = found
		return !found, err
	})
	if !answered {
		if err == nil {
			err = errNoAnswer
		}
		return readFailed(ctx, err)
	}
	return err
}

// Notify sends a notification, for which no answer comes; it returns once
// the server has accepted it.
func (c *HTTPClient) Notify(ctx context.Context, method string, params any) error {
	raw, err := encodeParams(params)
	if err != nil {
		return err
	}
	if c.Retry != nil {
		return c.retrying(ctx, notifyAgain, func() error { return c.notifyOnce(ctx, method, raw) })
	}
	return c.notifyOnce(ctx, method, raw)
}

// notifyOnce makes one attempt of a Notify.
func (c *HTTPClient) notifyOnce(ctx context.Context, method string, raw []byte) error {
	if len(c.Interceptors) > 0 {
		oc := &outgoing{params: raw, header: c.newHeader(), url: c.URL}
		return oc.through(ctx, c.chain(), method, nil)
	}
	return c.notify(ctx, nil, method, raw)
}

// notify posts a notification, with header (nil for Header).
func (c *HTTPClient) notify(ctx context.Context, header http.Header, method string, raw []byte) error {
	x, err := c.post(ctx, appendRequest(nil, "", method, raw), contentJSON, header)
	if err != nil {
		return err
	}
	x.end()
	return nil
}

// Batch sends calls as one JSON array in one POST and matches each answer
// to its call by id, as [Conn.Batch] does.
func (c *HTTPClient) Batch(ctx context.Context, calls ...*BatchCall) error {
	if c.Retry != nil {
		return c.retrying(ctx, c.batchAgain(calls), func() error { return c.batchOnce(ctx, calls) })
	}
	return c.batchOnce(ctx, calls)
}

// batchOnce makes one attempt of a Batch.
func (c *HTTPClient) batchOnce(ctx context.Context, calls []*BatchCall) error {
	b, err := newOutBatch(calls, &c.ids)
	if err != nil {
		return err
	}
	if len(c.Interceptors) > 0 {
		return c.batchThrough(ctx, b)
	}
	err = c.exchangeBatch(ctx, &b, nil)
	b.collect()
	return err
}

// batchThrough sends a batch whose entries pass through the client's
// interceptors. b is taken by value, so that only this path puts it on the
// heap.
func (c *HTTPClient) batchThrough(ctx context.Context, b outBatch) error {
	b.runChains(ctx, c.chain(), c, nil)
	close(b.ch.sent)
	err := c.exchangeBatch(ctx, &b, b.header())
	b.ch.wait()
	return b.outcome(err)
}

// exchangeBatch posts the entries of b that go out, with header (nil for
// Header), and settles them with the answers that come back. Through
// interceptors, it then hands them their outcomes.
func (c *HTTPClient) exchangeBatch(ctx context.Context, b *outBatch, header http.Header) error {
	if !b.anyOut() {
		return nil
	}
	x, err := c.post(ctx, b.appendTo(nil), c.accept(), header)
	if err != nil {
		b.failOut(err)
		b.deliver()
		return err
	}
	defer x.end()
	b.expect(sent(errNoAnswer))
	err = c.messages(&x, func(e *envelope, batch []envelope, kind lineKind) (bool, error) {
		switch kind {
		case lineObject:
			if c.note(e) {
				return true, nil
			}
			// A single error answer with a null id, such as a Parse
			// error, is for the whole batch; one with an id, the
			// answer to that call alone, outside the array.
			if r, why := e.response(); why == "" && r.Error != nil && string(e.id) == "null" {
				b.expect(r.Error)
				return false, r.Error
			}
			b.match([]envelope{*e})
		case lineBatch:
			b.match(batch)
			return false, nil
		}
		return true, nil
	})
	b.deliver()
	var answer *Error
	if err != nil && !errors.As(err, &answer) {
		err = readFailed(ctx, err)
	}
	return err
}

// header returns the header of the one request that carries a batch
// through interceptors: every value that the header of an entry that goes
// out holds.
func (b *outBatch) header() http.Header {
	h := make(http.Header)
	for i := range b.entries {
		e := &b.entries[i]
		if !e.out {
			continue
		}
		for k, vs := range e.oc.header {
			for _, v := range vs {
				if !slices.Contains(h[k], v) {
					h[k] = append(h[k], v)
				}
			}
		}
	}
	return h
}

// Stream calls a streaming method (see [Stream]) and returns its items as
// the server sends them, as [Conn.Stream] does: the request asks for
// server-sent events, each "$/stream" notification for the call yields
// one item, and the sequence ends with the answer (an error answer is the
// last pair's error). Stopping the range early, or the end of ctx, drops
// the request, which cancels the handler on a server that watches its
// client.
func (c *HTTPClient) Stream(ctx context.Context, method string, params any) iter.Seq2[json.RawMessage, error] {
	return streamItems(ctx, c, method, params)
}

// stream makes a stream call for streamItems.
func (c *HTTPClient) stream(ctx context.Context, method string, raw []byte, yield func(json.RawMessage, error) bool) (bool, error) {
	if c.Retry != nil {
		return c.streamRetrying(ctx, method, raw, yield)
	}
	return c.streamOnce(ctx, method, raw, yield)
}

// streamOnce makes one attempt of a stream call.
func (c *HTTPClient) streamOnce(ctx context.Context, method string, raw []byte, yield func(json.RawMessage, error) bool) (bool, error) {
	id := c.ids.Add(1)
	if len(c.Interceptors) > 0 {
		oc := &outgoing{id: id, params: raw, header: c.newHeader(), url: c.URL, yield: yield}
		err := oc.through(ctx, c.chain(), method, nil)
		return oc.stopped, err
	}
	_, stopped, err := c.streamCall(ctx, nil, id, method, raw, yield, false)
	return stopped, err
}

// streamCall posts the stream call id, with header (nil for Header),
// yields its items as they come, and returns once its answer has come, or
// the range has stopped early (it reports which), or the call failed. The
// call's result is returned, as a copy, if keep is set.
func (c *HTTPClient) streamCall(ctx context.Context, header http.Header, id int64, method string, raw []byte, yield func(json.RawMessage, error) bool, keep bool) (json.RawMessage, bool, error) {
	x, err := c.post(ctx, appendCall(nil, id, method, raw), contentSSE, header)
	if err != nil {
		return nil, false, err
	}
	defer x.end()
	var (
		result *json.RawMessage
		dest   any
	)
	if keep {
		result = new(json.RawMessage)
		dest = result
	}
	answered, stopped := false, false
	err = c.messages(&x, func(e *envelope, _ []envelope, kind lineKind) (bool, error) {
		if kind != lineObject {
			return false, nil
		}
		// The method is read only once the envelope is known to be a
		// valid request: it may be any JSON value, such as 5.
		if e.notification() && e.checkRequest() == "" && string(e.methodName()) == StreamItemMethod {
			if to, ok := streamTarget(e.params); ok && to == id {
				if !yield(itemOf(e.params), nil) {
					stopped = true
					return false, nil
				}
			}
			return true, nil
		}
		found, err := c.answerTo(e, id, dest)
		answered = found
		return !found, err
	})
	if stopped {
		x.cancel() // drops the request, rather than draining it
		return nil, true, nil
	}
	if !answered {
		if err == nil {
			err = errNoAnswer
		}
		err = readFailed(ctx, err)
	}
	if err != nil || result == nil {
		return nil, false, err
	}
	return *result, false, nil
}

// chain returns the client's chain of interceptors, built at its first
// use.
func (c *HTTPClient) chain() SendFunc {
	return c.chained.get(c.Interceptors, func() SendFunc { return innermost(c) })
}

// newHeader returns the header of a request whose call passes through
// interceptors: a copy of Header, for them to add to.
func (c *HTTPClient) newHeader() http.Header {
	if c.Header == nil {
		return make(http.Header)
	}
	return c.Header.Clone()
}

// nextID, sendCall, sendNotify and sendStream make an HTTPClient the
// outbound of its chain of interceptors.

func (c *HTTPClient) nextID() int64 { return c.ids.Add(1) }

func (c *HTTPClient) sendCall(ctx context.Context, oc *outgoing, id int64, method string, params []byte) (json.RawMessage, error) {
	var result json.RawMessage
	err := c.call(ctx, oc.header, id, method, params, &result)
	return result, err
}

func (c *HTTPClient) sendNotify(ctx context.Context, oc *outgoing, method string, params []byte) error {
	return c.notify(ctx, oc.header, method, params)
}

func (c *HTTPClient) sendStream(ctx context.Context, oc *outgoing, id int64, method string, params []byte) (json.RawMessage, bool, error) {
	return c.streamCall(ctx, oc.header, id, method, params, oc.yield, true)
}

// accept is the Accept header of a call: streams are welcome when
// something takes the notifications they carry.
func (c *HTTPClient) accept() string {
	if c.OnNotify != nil {
		return contentJSON + ", " + contentSSE
	}
	return contentJSON
}

// answerTo reports whether e, one message of a response, is the answer to
// the call id, and if so returns the error it carries, or that of
// decoding its result into dest (nil to drop it). An error answer with a
// null id is the answer too: the server could not read the request's id
// (a Parse error, an Invalid Request), and its code says the call did not
// run, as for a batch. A notification goes to OnNotify; other messages
// are skipped.
func (c *HTTPClient) answerTo(e *envelope, id int64, dest any) (found bool, err error) {
	if c.note(e) {
		return false, nil
	}
	if e.method == nil && bytes.Equal(e.id, nullID) {
		if r, why := e.response(); why == "" && r.Error != nil {
			return true, r.Error
		}
		return false, nil
	}
	if got, ok := parseID(e.id); !ok || got != id || e.method != nil {
		return false, nil
	}
	r, err := e.answer()
	if err != nil {
		return true, sent(err) // delivered and answered, if badly: it may have run
	}
	return true, decodeAnswer(r, dest)
}

// note hands a notification to OnNotify and reports whether e was one.
func (c *HTTPClient) note(e *envelope) bool {
	if e.method == nil || e.id != nil {
		return false
	}
	if c.OnNotify != nil && e.checkRequest() == "" {
		c.OnNotify(&Request{Method: string(e.methodName()), Params: e.params})
	}
	return true
}

// Once a call has its answer, drainTime and drainBytes bound what it
// reads of the rest of a streamed response, so that a server that ends
// the response right after the answer leaves its connection to be reused.
const (
	drainTime  = 50 * time.Millisecond
	drainBytes = 4 << 10
)

// An exchange is one POST and its response.
type exchange struct {
	resp *http.Response
	// cancel abandons the request. It is nil for a request that accepts
	// plain JSON only, which costs nothing to set up: a server sends
	// such a request a stream only in spite of its Accept header.
	cancel context.CancelFunc
	eof    bool // the body has been read to its end
}

// end closes the response once the call has what it wants from it. A body
// read to its end is closed at once, which leaves the connection to be
// reused. Otherwise, if the request can be abandoned, at most drainBytes
// more of the body are read, for at most drainTime, so that a response
// that ends right after the answer leaves its connection to be reused too;
// then the request is abandoned. A body that cannot be drained so is
// closed unread, and the connection with it.
func (x *exchange) end() {
	if !x.eof && x.cancel != nil {
		stop := time.AfterFunc(drainTime, x.cancel)
		_, _ = io.CopyN(io.Discard, x.resp.Body, drainBytes)
		stop.Stop()
	}
	_ = x.resp.Body.Close()
	if x.cancel != nil {
		x.cancel()
	}
}

// post sends body, with header (nil for Header), and returns the
// exchange, whose response has status 200, 202 or 204; any other status
// is an *HTTPError (see there for 503). A failure of the transport wraps
// ErrClosed, or is ctx's error if ctx ended, and is marked as sent (see
// MayHaveRun) if the whole request had been written. The caller ends the
// exchange.
func (c *HTTPClient) post(ctx context.Context, body []byte, accept string, header http.Header) (exchange, error) {
	if err := ctx.Err(); err != nil {
		return exchange{}, err // not sent
	}
	parent := ctx
	var cancel context.CancelFunc
	if accept != contentJSON {
		ctx, cancel = context.WithCancel(ctx)
	}
	hc := c.HTTP
	if hc == nil {
		hc = http.DefaultClient
	}
	var w *wroteTrace
	pooled := false
	if reportsWrites(hc.Transport) {
		// WithClientTrace changes the hooks of a trace to call those of
		// a trace already in ctx as well: such a one is not reused.
		if pooled = httptrace.ContextClientTrace(ctx) == nil; pooled {
			w = c.wroteTrace()
		} else {
			w = newWroteTrace()
		}
		ctx = httptrace.WithClientTrace(ctx, &w.trace)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.URL, bytes.NewReader(body))
	if err != nil {
		if cancel != nil {
			cancel()
		}
		return exchange{}, err
	}
	if w != nil {
		w.body, req.GetBody = body, w.getBody
	}
	if header == nil {
		header = c.Header
	}
	for k, v := range header {
		req.Header[k] = v
	}
	// The keys are canonical and the values shared, as Header.Set would
	// store them but without an allocation each (see headerJSON).
	req.Header["Content-Type"] = headerJSON[:1:1]
	switch accept {
	case contentJSON:
		req.Header["Accept"] = headerJSON[:1:1]
	case contentSSE:
		req.Header["Accept"] = headerSSE[:1:1]
	case headerJSONOrSSE[0]:
		req.Header["Accept"] = headerJSONOrSSE[:1:1]
	default:
		req.Header.Set("Accept", accept)
	}
	resp, err := hc.Do(req)
	traced, wrote := w != nil, w != nil && w.mayHaveRun()
	if w != nil {
		w.body = nil
	}
	if pooled {
		c.traces.Put(w)
	}
	if err != nil {
		if cancel != nil {
			cancel()
		}
		return exchange{}, transportFailed(parent, err, traced, wrote)
	}
	x := exchange{resp: resp, cancel: cancel, eof: resp.ContentLength == 0}
	if r := resp.Request; r != nil && r.Response != nil && r.Method != http.MethodPost {
		// A redirect (301, 302, 303) that net/http followed with a
		// request without the call: the server that redirected had it
		// whole and may have run it, and this response cannot answer it,
		// whatever it says.
		x.end()
		return exchange{}, sent(fmt.Errorf("%w: the POST was redirected (%s) to %s %s", errNoAnswer, r.Response.Status, r.Method, r.URL.Redacted()))
	}
	switch resp.StatusCode {
	case http.StatusOK, http.StatusAccepted, http.StatusNoContent:
		return x, nil
	}
	head, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
	x.eof = len(head) < 512
	x.end()
	herr := &HTTPError{StatusCode: resp.StatusCode, Status: resp.Status, Body: head}
	switch {
	case resp.StatusCode == http.StatusServiceUnavailable:
		return exchange{}, &notRunError{http: herr, wire: notRunAnswer(head), after: retryAfter(resp.Header)}
	}
	return exchange{}, herr
}
