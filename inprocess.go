package jsonrpc

// This file holds InProcess, a Caller that calls a Handler without a
// connection.

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"iter"
	"sync/atomic"
)

// An InProcess calls a Handler in the same process, as a peer would call
// it over a connection: params are encoded to JSON and decoded by the
// handler as a server decodes them, and the result is encoded and then
// decoded into the caller's result by the rules of [Conn.Call]; an error
// the handler returns, or a panic, becomes the *Error a peer would get.
// So a test can call a Mux through the same [Caller] as production code
// calls a server, with no goroutine and no connection.
//
// Each call runs the handler on the caller's goroutine, with a context
// derived from the caller's. A handler's [Peer] has no peer to call (its
// Call, Batch and Stream fail with [ErrNoConnection]); its notifications go
// to OnNotify. Interceptors wrap the calls as a connection's do. The zero
// InProcess answers every call "Method not found".
// An InProcess is safe for concurrent use when its Handler is.
type InProcess struct {
	// Handler answers the calls; nil answers each with
	// [ErrMethodNotFound].
	Handler Handler

	// OnNotify, if set, is called with each notification a handler sends
	// through [Peer], on the handler's goroutine, before the call returns;
	// req and its Params are valid only during the call.
	OnNotify func(req *Request)

	// Interceptors wrap each call, notification, batch entry and stream,
	// as a connection's do (see [Interceptor]), the first outermost; their
	// chain is built at the first call. A stream's items reach the range
	// through the innermost send, which must be called on the
	// interceptor's goroutine with a context derived from its own.
	Interceptors []Interceptor

	ids   idSource
	chain lazyChain
}

// inProcessStreamKey is the context key under which a stream's call
// carries its items' sink through the interceptors.
type inProcessStreamKey struct{}

// send runs req, through the interceptors if there are any. ls, if not
// nil, takes a stream's items.
func (p *InProcess) send(ctx context.Context, req *Request, ls *localSender) ([]byte, error) {
	chain := p.chain.get(p.Interceptors, func() SendFunc { return p.innermost })
	if chain == nil {
		return p.serve(ctx, req, ls)
	}
	if ls == nil {
		ls = new(localSender) // the call's state through the chain
	}
	return chain(context.WithValue(ctx, inProcessStreamKey{}, ls), req)
}

// innermost is the SendFunc at the heart of the chain: it runs the
// handler.
func (p *InProcess) innermost(ctx context.Context, req *Request) (json.RawMessage, error) {
	if err := checkRawParams(req.Params); err != nil { // an interceptor replaced them
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err // not run, as a connection sends nothing then
	}
	ls, _ := ctx.Value(inProcessStreamKey{}).(*localSender)
	if ls == nil {
		return nil, errLostCall // as a connection's chain
	}
	if ls.passed.Swap(true) {
		// next called again: a retry, as over a connection.
		if ls.stopped {
			return nil, errStreamStopped
		}
		if !req.ID.IsZero() {
			req.ID = p.ids.Next()
		}
	}
	res, err := p.serve(ctx, req, ls)
	switch {
	case req.ID.IsZero():
		return nil, nil // a notification's outcome is dropped
	case ls != nil && ls.stopped:
		return nil, errStreamStopped
	case err != nil && ctx.Err() != nil:
		return nil, ctx.Err() // as a connection's call ends
	}
	// A copy, which the interceptors may keep and change, as a
	// connection's: res may be the handler's own json.RawMessage, or the
	// package's null.
	return bytes.Clone(res), err
}

// Call calls method with params and decodes the result into result, as
// [Conn.Call] does.
func (p *InProcess) Call(ctx context.Context, method string, params, result any) error {
	raw, err := encodeParams(params)
	if err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err // not run, as a connection's Call sends nothing then
	}
	req := &Request{ID: p.ids.Next(), Method: method, Params: raw}
	ls := new(localSender) // to learn whether the chain passed the call on
	res, err := p.send(ctx, req, ls)
	if err != nil {
		if ctx.Err() != nil {
			return sent(ctx.Err()) // as a connection's Call does: it ran
		}
		return err
	}
	if result == nil {
		return nil // dropped, as a connection's Call drops it
	}
	err = decodeUnscannedResult(res, result)
	if p.chain.send != nil && !ls.passed.Load() {
		return err // an interceptor answered: nothing ran, as over a connection
	}
	return sent(err)
}

// Notify calls method with params as a notification: the handler runs,
// and whatever it returns is dropped. Notify returns an error only when
// params cannot be encoded or an interceptor returns one.
func (p *InProcess) Notify(ctx context.Context, method string, params any) error {
	raw, err := encodeParams(params)
	if err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err // not run, as a connection's Notify sends nothing then
	}
	_, err = p.send(ctx, &Request{Method: method, Params: raw}, nil)
	if p.chain.send == nil {
		return nil // the handler's error is dropped, as a peer drops it
	}
	return err // an interceptor's
}

// Batch makes each call in turn, as Call and Notify do, and sets its Err.
// It returns ctx.Err() if ctx ends before every call is made, and sets it
// as the Err of the calls not made.
func (p *InProcess) Batch(ctx context.Context, calls ...*BatchCall) error {
	for i, bc := range calls {
		if err := ctx.Err(); err != nil {
			for _, rest := range calls[i:] {
				if !rest.Notify {
					rest.Err = err // not made
				}
			}
			return err
		}
		if bc.Notify {
			bc.Err = p.Notify(ctx, bc.Method, bc.Params)
		} else {
			bc.Err = p.Call(ctx, bc.Method, bc.Params, bc.Result)
		}
	}
	return nil
}

// Stream calls a streaming method (see [Stream]) and yields its items as
// the handler produces them, each encoded as JSON; if the handler fails,
// the last pair carries its error, as [Conn.Stream]'s does. A handler
// that is not a stream yields nothing, or only its error.
//
// The sequence is single-use. Stopping the range early cancels the
// handler's context.
func (p *InProcess) Stream(ctx context.Context, method string, params any) iter.Seq2[json.RawMessage, error] {
	return func(yield func(json.RawMessage, error) bool) {
		raw, err := encodeParams(params)
		if err != nil {
			yield(nil, err)
			return
		}
		ls := &localSender{yield: yield}
		if _, err := p.send(ctx, &Request{ID: p.ids.Next(), Method: method, Params: raw}, ls); err != nil && !ls.stopped {
			if ctx.Err() != nil {
				err = sent(ctx.Err()) // as Call does, and a connection's Stream
			}
			yield(nil, err)
		}
	}
}

// serve runs the handler on req and returns its result encoded as JSON,
// or the error a peer would be answered with. ls, if not nil, takes the
// stream items.
func (p *InProcess) serve(ctx context.Context, req *Request, ls *localSender) (res []byte, err error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	if ls == nil {
		ls = new(localSender)
	}
	ls.cancel, ls.onNotify, ls.req = cancel, p.OnNotify, req
	ls.ended.Store(false) // again, for a retry
	defer ls.ended.Store(true)
	h := p.Handler
	if h == nil {
		h = (*Mux)(nil)
	}
	defer func() {
		if v := recover(); v != nil {
			if ls.bodyExited {
				panic(v) // the range's body panicked: the caller's panic, not the handler's
			}
			res, err = nil, internalError("panic", fmt.Sprint(v), false)
		}
	}()
	// A new request, whatever the caller's request had.
	v, err := h.ServeJSONRPC(context.WithValue(handled(ctx), senderKey{}, sender(ls)), req)
	if err != nil {
		return nil, toWireError(err, ctx.Err() != nil, false)
	}
	res, err = encodeValue(v, false)
	if err != nil {
		return nil, internalError(fmt.Sprintf("%T", err), "cannot encode result: "+err.Error(), false)
	}
	return res, nil
}

// localSender delivers what a handler called in process sends: its
// notifications to onNotify, and its stream items to yield.
type localSender struct {
	yield    func(json.RawMessage, error) bool
	cancel   context.CancelFunc
	onNotify func(*Request)
	req      *Request    // for RequestFromContext
	ended    atomic.Bool // the handler has returned
	passed   atomic.Bool // the chain has called its innermost send
	stopped  bool
	// bodyExited is set when the range's body panicked or ended its
	// goroutine inside yield.
	bodyExited bool
}

func (ls *localSender) notify(_ context.Context, method string, params any) error {
	if ls.ended.Load() {
		return errHandlerReturned // as over a connection
	}
	if ls.onNotify == nil {
		return nil
	}
	raw, err := encodeParams(params)
	if err != nil {
		return err
	}
	ls.onNotify(&Request{Method: method, Params: raw})
	return nil
}

func (ls *localSender) emit(item any) error {
	if ls.yield == nil {
		if ls.req != nil && ls.req.ID.IsZero() {
			return errNoTaker // a notification: its producer stops, as over a connection
		}
		return nil
	}
	if ls.stopped {
		return context.Canceled
	}
	raw, err := encodeValue(item, false)
	if err != nil {
		return err
	}
	returned := false
	defer func() {
		if !returned {
			// The body panicked or called runtime.Goexit: the handler
			// is cancelled before its own deferred calls run, which
			// may wait for that.
			ls.stopped, ls.bodyExited = true, true
			ls.cancel()
		}
	}()
	// A copy, as a connection's items are: raw may be the handler's own
	// json.RawMessage, or the package's null.
	more := ls.yield(json.RawMessage(bytes.Clone(raw)), nil)
	returned = true
	if !more {
		ls.stopped = true
		ls.cancel()
		return context.Canceled
	}
	return nil
}
