package jsonrpc

// This file holds Peer, by which a handler calls the other side of its
// connection.

import (
	"context"
	"encoding/json"
	"iter"
)

// Peer returns a Caller that reaches the other side of the connection on
// which the handler whose context is ctx (or one derived from it) serves
// its request. It allocates nothing.
//
// Its Call, Batch and Stream wait for the peer's answer, which the
// connection's read loop routes to them whatever the handlers do, and the
// handler gives up its slot while it waits (see [Options.MaxInFlight]), so
// handlers that call the peer cannot starve each other, however deeply
// the two sides' handlers call each other. When the handler's request is
// cancelled, such a call ends with ctx's error and the peer is sent the
// cancel notification; when the connection ends, it fails with an error
// wrapping [ErrClosed]. An error the peer answers with comes back as an
// *Error with the peer's code: return it from the handler only if that
// code suits your own caller too.
//
// Its Notify sends a notification, such as progress or a log message,
// that is written before the handler's response; it returns once the
// notification is in the connection's output, which a goroutine of the
// connection's writes within a millisecond, or sooner with the response
// or another message. While the output is full (a megabyte waits behind
// a write in flight to a peer that stops reading), it waits for room
// until its ctx ends, and then returns ctx's error; while there is room,
// it sends also once ctx has ended, so that a cancelled handler can still
// report.
//
// The Caller reaches the peer for as long as the connection lasts, also
// after the handler returned: work the handler starts may keep it and
// call the peer later. Only its Notify, which belongs to the handler's
// response, fails once the handler has returned. A call made with the
// handler's context, or one derived from it (even by
// [context.WithoutCancel]), gives up the handler's slot while it waits,
// as if the handler waited: work that runs beside the handler should call
// with a context of its own.
//
// Outside a handler, the Caller's methods fail with [ErrNoConnection];
// so do Call, Batch and Stream over HTTP, whose responses cannot carry
// requests to the client, and in a handler called by [InProcess].
func Peer(ctx context.Context) Caller {
	switch s := ctx.Value(senderKey{}).(type) {
	case *reqCtx:
		return handlerPeer{s}
	case *localSender:
		return localPeer{s}
	}
	return localPeer{}
}

// handlerPeer is the Peer of a handler served on a connection.
type handlerPeer struct{ rc *reqCtx }

func (p handlerPeer) Call(ctx context.Context, method string, params, result any) error {
	return p.rc.conn.call(ctx, method, params, result, nil)
}

func (p handlerPeer) Notify(ctx context.Context, method string, params any) error {
	return p.rc.notify(ctx, method, params)
}

func (p handlerPeer) Batch(ctx context.Context, calls ...*BatchCall) error {
	return p.rc.conn.batch(ctx, calls...)
}

func (p handlerPeer) Stream(ctx context.Context, method string, params any) iter.Seq2[json.RawMessage, error] {
	return streamItems(ctx, p.rc.conn, method, params)
}

// localPeer is the Peer of a handler called in process, whose
// notifications go to the caller (ls), and of any other context, which has
// no peer (ls is nil).
type localPeer struct{ ls *localSender }

func (p localPeer) Call(context.Context, string, any, any) error { return ErrNoConnection }

func (p localPeer) Notify(ctx context.Context, method string, params any) error {
	if p.ls == nil {
		return ErrNoConnection
	}
	return p.ls.notify(ctx, method, params)
}

func (p localPeer) Batch(context.Context, ...*BatchCall) error { return ErrNoConnection }

func (p localPeer) Stream(context.Context, string, any) iter.Seq2[json.RawMessage, error] {
	return func(yield func(json.RawMessage, error) bool) { yield(nil, ErrNoConnection) }
}
