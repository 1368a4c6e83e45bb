package jsonrpc

// This file holds interceptors, which wrap the sending of outgoing calls
// and notifications as middleware given to Mux.Use wraps handlers: the
// chain, built once for a connection or an HTTPClient, the state a call
// carries through it in its context, and the innermost send, which hands
// the call to whichever sends it.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"net/http"
	"sync"
	"sync/atomic"
)

// A SendFunc sends one outgoing request, as the innermost of a chain of
// [Interceptor]s does: a call, or a notification when req.ID is zero, and
// returns the call's result as raw JSON (nil for a notification), or its
// error (the peer's *Error, or why no answer came).
type SendFunc func(ctx context.Context, req *Request) (json.RawMessage, error)

// An Interceptor wraps the sending of outgoing calls and notifications, as
// middleware given to [Mux.Use] wraps handlers: it returns a SendFunc that
// does its work around next, such as timing the call, counting it, adding
// a header or a deadline, or answering it itself. Interceptors are given in
// the Interceptors field of [Options], [HTTPClient] and [InProcess], the
// first the outermost. Each is called once when a chain is built (when a
// connection is made, or at an HTTPClient's or InProcess's first call),
// and the SendFunc it returns serves every call of that connection,
// concurrently.
//
// Every Call, Notify, entry of a Batch and Stream passes through the chain
// once, as do the calls that the handlers of a Conn or a Server make
// through [Peer]; the items of a stream do not, nor do the notifications
// a handler sends through Peer, which belong to its answer. The SendFunc sees req.Method, req.ID (drawn
// already; zero for a notification) and req.Params, raw JSON as encoded.
// It may set req.Params to other raw JSON (an object, an array, or nil
// for none), and may pass next a context derived from its own, with a
// deadline or values added; the context must derive from its own, which
// carries the call's place in its batch, stream or HTTP request (next
// fails otherwise).
//
// next returns the call's result, a copy the interceptor may keep, or its
// error: an *Error the peer answered with, ctx's error, or one wrapping
// [ErrClosed] or about the transport. What the outermost SendFunc returns
// is what the caller gets: a result is decoded into the caller's result
// once the chain has returned, so an interceptor may replace it, and one
// that returns without calling next sends nothing. Calling next again
// (a retry) sends the request again, on its own, with a new id set in
// req.ID.
//
// The entries of a Batch pass through the chain each on a goroutine of its
// own, and the batch is written, with the ctx given to Batch, once every
// entry's chain has called next or returned; an entry whose chain returned
// first is not sent. Over HTTP, the headers that the entries' chains add
// (see [HTTPHeader]) are merged into the one request.
//
// A Stream's chain lasts as long as the stream: next yields the items to
// the range over the stream from within it, and returns the call's result
// (the number of items, from a [Stream] handler), or an error wrapping
// context.Canceled if the range stopped early. So next must be called on
// the SendFunc's own goroutine, before it returns.
type Interceptor func(next SendFunc) SendFunc

// HTTPHeader returns the header of the HTTP request that will carry the
// outgoing call made with ctx, for an Interceptor to read or add to; nil
// when the call does not go over HTTP. It starts as a copy of
// [HTTPClient.Header].
func HTTPHeader(ctx context.Context) http.Header {
	oc, _ := ctx.Value(outgoingKey{}).(*outgoing)
	if oc == nil {
		return nil
	}
	return oc.header
}

// HTTPURL returns the URL that the outgoing call made with ctx is posted
// to, as given in [HTTPClient.URL], for an Interceptor to read (to name
// the server in a trace, say); "" when the call does not go over HTTP.
func HTTPURL(ctx context.Context) string {
	oc, _ := ctx.Value(outgoingKey{}).(*outgoing)
	if oc == nil {
		return ""
	}
	return oc.url
}

// outgoing is a call, notification, stream or batch entry on its way
// through a chain of interceptors; its context carries it to the innermost
// send.
type outgoing struct {
	id     int64       // the call's id; 0 for a notification
	params []byte      // as encoded, to tell whether an interceptor replaced them
	result []byte      // what the innermost send returned, to tell whether an interceptor replaced it
	header http.Header // over HTTP, the request's header; otherwise nil
	url    string      // over HTTP, the URL the request is posted to; otherwise ""
	passed atomic.Bool // next has been called: another call is a retry

	// A stream's range, and whether it stopped early.
	yield   func(json.RawMessage, error) bool
	stopped bool

	// A batch entry: its batch and its index there.
	batch *outBatch
	entry int

	// What the innermost send passes to a connection's call or
	// notifyPeer.
	sendID     int64
	sendParams []byte
}

type outgoingKey struct{}

// errLostCall is the error of a SendFunc given a context that does not
// derive from the one its chain was given.
var errLostCall = errors.New("jsonrpc: an interceptor passed on a context that does not derive from its own")

// errStreamStopped is what next returns to the interceptors of a stream
// whose range stopped early, which cancels its call.
var errStreamStopped = fmt.Errorf("jsonrpc: the range over the stream stopped early: %w", context.Canceled)

// A lazyChain is a chain of interceptors built at its first use, by
// InProcess and HTTPClient, whose Interceptors are set after they are
// made. A chain whose building panicked (see chainOf) panics at every
// use, not at the first only: no later call may go on without it.
type lazyChain struct {
	once  sync.Once
	send  SendFunc // nil for no interceptors
	fault any      // what building the chain panicked with
}

// get returns the chain of ics around the SendFunc that inner returns,
// built at the first call.
func (l *lazyChain) get(ics []Interceptor, inner func() SendFunc) SendFunc {
	l.once.Do(func() {
		defer func() { l.fault = recover() }()
		l.send = chainOf(ics, inner())
	})
	if l.fault != nil {
		panic(l.fault)
	}
	return l.send
}

// chainOf returns send wrapped in ics, the first outermost, or nil for no
// interceptors. It panics on a nil Interceptor, or one that returns a nil
// SendFunc.
func chainOf(ics []Interceptor, send SendFunc) SendFunc {
	if len(ics) == 0 {
		return nil
	}
	for i := len(ics) - 1; i >= 0; i-- {
		if ics[i] == nil {
			panic("jsonrpc: nil Interceptor")
		}
		if send = ics[i](send); send == nil {
			panic("jsonrpc: an Interceptor returned a nil SendFunc")
		}
	}
	return send
}

// through passes the request of oc, for method, through the chain send,
// and decodes the result it returns into dest, which may be nil.
func (oc *outgoing) through(ctx context.Context, send SendFunc, method string, dest any) error {
	req := &Request{Method: method, Params: oc.params}
	if oc.id != 0 {
		req.ID = Int64ID(oc.id)
	}
	raw, err := send(context.WithValue(ctx, outgoingKey{}, oc), req)
	if err != nil || oc.id == 0 || dest == nil {
		return err
	}
	if len(raw) == 0 {
		raw = json.RawMessage("null")
	}
	switch {
	case sameBytes(raw, oc.result): // the connection's own, as scanned
		err = decodeResult(raw, dest)
	case !validJSON(raw):
		err = errors.New("jsonrpc: an interceptor returned a result that is not valid JSON")
	default:
		// An interceptor's own bytes, valid but maybe with space around
		// the value (json.Encoder ends with a newline), which decodeResult
		// assumes there is not.
		err = decodeResult(trimSpace(raw), dest)
	}
	if err != nil && oc.passed.Load() {
		// The chain passed the call on: it may have run, as a call
		// without interceptors whose result does not decode.
		return sent(err)
	}
	return err
}

// An outbound sends what comes out of a chain: a connection or an
// HTTPClient. The methods take the request's state, and its params as
// validated; a result is returned as a copy.
type outbound interface {
	nextID() int64
	sendCall(ctx context.Context, oc *outgoing, id int64, method string, params []byte) (json.RawMessage, error)
	sendNotify(ctx context.Context, oc *outgoing, method string, params []byte) error
	// sendStream yields the items to oc.yield, and reports whether the
	// range stopped early.
	sendStream(ctx context.Context, oc *outgoing, id int64, method string, params []byte) (json.RawMessage, bool, error)
}

// innermost returns the SendFunc at the heart of o's chain, which sends a
// request as the call, notification, stream or batch entry that its
// context says it is.
func innermost(o outbound) SendFunc {
	return func(ctx context.Context, req *Request) (json.RawMessage, error) {
		oc, _ := ctx.Value(outgoingKey{}).(*outgoing)
		if oc == nil {
			return nil, errLostCall
		}
		params := []byte(req.Params)
		if params != nil && !sameBytes(params, oc.params) {
			if err := checkRawParams(params); err != nil {
				return nil, err
			}
			params = oneLine(params)
		}
		retry := oc.passed.Swap(true)
		if oc.batch != nil && !retry {
			return oc.batch.join(ctx, oc.entry, req.Method, params)
		}
		if oc.id == 0 {
			return nil, o.sendNotify(ctx, oc, req.Method, params)
		}
		id := oc.id
		if retry {
			id = o.nextID()
			req.ID = Int64ID(id)
		}
		if oc.yield == nil {
			raw, err := o.sendCall(ctx, oc, id, req.Method, params)
			oc.result = raw
			return raw, err
		}
		if oc.stopped {
			return nil, errStreamStopped
		}
		raw, stopped, err := o.sendStream(ctx, oc, id, req.Method, params)
		if stopped {
			oc.stopped = true
			return nil, errStreamStopped
		}
		oc.result = raw
		return raw, err
	}
}

// A streamer makes stream calls for streamItems.
type streamer interface {
	// stream makes the stream call, yields its items, and reports
	// whether the range stopped early, or returns the error that ended
	// the call.
	stream(ctx context.Context, method string, params []byte, yield func(json.RawMessage, error) bool) (stopped bool, err error)
}

// streamItems returns the items of a stream call that s makes; see
// [Conn.Stream].
func streamItems(ctx context.Context, s streamer, method string, params any) iter.Seq2[json.RawMessage, error] {
	return func(yield func(json.RawMessage, error) bool) {
		raw, err := encodeParams(params)
		if err != nil {
			yield(nil, err)
			return
		}
		stopped, err := s.stream(ctx, method, raw, yield)
		if err != nil && !stopped {
			yield(nil, err)
		}
	}
}
