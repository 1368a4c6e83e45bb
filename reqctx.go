package jsonrpc

// This file holds the context of one request: cancellation armed on
// demand, and what a handler sends on its connection while it runs.

import (
	"context"
	"errors"
	"sync/atomic"
	"time"
)

// newCtx returns a fresh request context. Contexts are carved from blocks
// and never reused, so one a handler keeps stays valid (and cancelled).
func (rs *readState) newCtx(c *conn, id string, inBatch bool) *reqCtx {
	if len(rs.slab) == 0 {
		// The blocks double from 4 up to 512 contexts (28 KiB), so that a
		// short connection (one HTTP request) makes a small one and a
		// busy one makes one allocation per 512 requests.
		rs.slabSize = min(max(2*rs.slabSize, 4), 512)
		rs.slab = make([]reqCtx, rs.slabSize)
	}
	rc := &rs.slab[0]
	rs.slab = rs.slab[1:]
	rc.conn, rc.id = c, id
	if inBatch {
		rc.flags.Store(flagInBatch)
	}
	return rc
}

// reqCtx is the context of one request. Cancellation is armed lazily: a
// handler that never asks for Done costs no channel and no goroutine, and
// the contexts of many requests share one allocation.
type reqCtx struct {
	conn   *conn
	req    *Request   // the request, while its handler runs
	id     string     // the request's id; "" for a notification
	reader *readState // the reading role it runs inline on, if so; read only by its handler's goroutine
	armed  atomic.Pointer[armedCtx]
	flags  atomic.Uint32
	pos    int32 // guarded by conn.mu: its place in conn.active plus one, 0 if none, or posSettled
}

// armedCtx is the part of a reqCtx made on demand: a context of the
// standard library's, so that context.Cause and the contexts derived from
// it work as for any other.
type armedCtx struct {
	ctx    context.Context
	cancel context.CancelCauseFunc

	// Guarded by conn.mu (see leaveSlot): the calls to the peer its
	// handler waits for, and whether it gave up its slot meanwhile.
	waits int
	freed bool
}

// posSettled is the pos of a request taken out of reach of cancels for
// good: it has finished, or a cancel has reached it.
const posSettled = -1

const (
	flagStarted       = 1 << iota // the handler has been called or skipped, or will run inline on a handed-off reader
	flagPeerCancelled             // a cancel for its id arrived
	flagAnswered                  // answered before it started
	flagEnded                     // the handler returned
	flagInBatch                   // an entry of a batch
	flagUnanswered                // cancelled by a convention that wants no answer
	flagNoHandler                 // served by a Mux's middleware alone: no handler for its method
)

var _ context.Context = (*reqCtx)(nil)

// Deadline returns the deadline of the context Serve was given.
func (rc *reqCtx) Deadline() (time.Time, bool) { return rc.conn.ctx.Deadline() }

// holdsSlot reports whether the handler of rc holds one of the
// connection's slots: it runs on a worker, or on a reader whose role has
// been handed off; a handler run inline on the reading role holds none.
func (rc *reqCtx) holdsSlot() bool {
	return rc.reader == nil || rc.reader.state.Load()&stateHandedOff != 0
}

// arm returns the armed part of rc, making it on first use.
func (rc *reqCtx) arm() *armedCtx {
	if a := rc.armed.Load(); a != nil {
		return a
	}
	ctx, cancel := context.WithCancelCause(rc.conn.ctx)
	a := &armedCtx{ctx: ctx, cancel: cancel}
	if !rc.armed.CompareAndSwap(nil, a) {
		cancel(nil)
		return rc.armed.Load()
	}
	// end stores flagEnded before it reads armed: one of the two sees
	// the other.
	if rc.flags.Load()&flagEnded != 0 {
		cancel(context.Canceled)
	}
	return a
}

// Done returns a channel closed when the request is cancelled, its handler
// returns, or the connection stops.
func (rc *reqCtx) Done() <-chan struct{} { return rc.arm().ctx.Done() }

// Err reports why the context ended, or nil.
func (rc *reqCtx) Err() error {
	if rc.flags.Load()&flagEnded != 0 {
		return context.Canceled
	}
	if a := rc.armed.Load(); a != nil {
		return a.ctx.Err()
	}
	return rc.conn.ctx.Err()
}

// Value returns the sender for the package's key, and otherwise looks in
// the context Serve was given. The key by which context.Cause finds the
// nearest cancellable context is an *int of package context's: that one
// is looked up in the armed context, whose cause is the request's.
func (rc *reqCtx) Value(key any) any {
	switch key {
	case senderKey{}:
		return rc
	case noHandlerKey{}:
		return rc.flags.Load()&flagNoHandler != 0 // this request's, whatever Serve's ctx says
	}
	if _, ok := key.(*int); ok {
		return rc.arm().ctx.Value(key)
	}
	return rc.conn.ctx.Value(key)
}

// cancel ends the context with cause, unless it has already ended.
func (rc *reqCtx) cancel(cause error) { rc.arm().cancel(cause) }

// end marks the handler returned; only an armed context has more to do,
// and end returns it, if any.
func (rc *reqCtx) end() *armedCtx {
	rc.flags.Or(flagEnded)
	a := rc.armed.Load()
	if a != nil {
		a.cancel(context.Canceled)
	}
	return a
}

// RequestFromContext returns the request that the handler given ctx (or
// a context derived from it) is serving: its id, method and params, for
// middleware and for protocols that need the id (MCP's progress and
// logging). It returns nil for any other context, and once the handler
// has returned. Like the *Request a handler is given, it must not be kept
// after the handler returns.
func RequestFromContext(ctx context.Context) *Request {
	switch s := ctx.Value(senderKey{}).(type) {
	case *reqCtx:
		if s.flags.Load()&flagEnded == 0 {
			return s.req
		}
	case *localSender:
		if !s.ended.Load() {
			return s.req
		}
	}
	return nil
}

// NoHandler reports whether ctx (or the context it derives from) is that
// of a request that a [Mux] passes through its middleware alone, because
// no handler is registered for its method: unless a middleware answers
// it, the answer is [ErrMethodNotFound]. Middleware that records method
// names, in metrics say, can use it to keep the names a peer makes up out
// of its records, whatever middleware inside it answers.
func NoHandler(ctx context.Context) bool {
	no, _ := ctx.Value(noHandlerKey{}).(bool)
	return no
}

// handled returns ctx for a request that a dispatch has found a handler
// for: ctx itself, or, if an outer dispatch had none, ctx with NoHandler
// false again.
func handled(ctx context.Context) context.Context {
	if NoHandler(ctx) {
		return context.WithValue(ctx, noHandlerKey{}, false)
	}
	return ctx
}

// noHandlerKey is the context key of what NoHandler reports: a bool set
// by the nearest dispatch of the request, by Mux.ServeJSONRPC (true, or
// false over an outer dispatch's true) or by InProcess (false); a reqCtx
// answers with its flagNoHandler.
type noHandlerKey struct{}

// senderKey is the context key under which a handler's context holds its
// sender.
type senderKey struct{}

// sender sends what a handler emits while it runs.
type sender interface {
	notify(ctx context.Context, method string, params any) error
	emit(item any) error
}

// errHandlerReturned is returned by Notify on the context of a handler
// that has already returned.
var errHandlerReturned = errors.New("jsonrpc: notify after the handler returned")

// notify is Peer's Notify: it adds the notification to the output,
// waiting for room there until ctx ends (a handler may still notify once
// its request was cancelled, while there is room), and has it written by a
// goroutine of the connection's (see conn.flushSoon), so that a peer that
// stops reading holds the handler no longer than ctx lasts.
func (rc *reqCtx) notify(ctx context.Context, method string, params any) error {
	if rc.flags.Load()&flagEnded != 0 {
		return errHandlerReturned
	}
	raw, err := encodeParams(params)
	if err != nil {
		return err
	}
	return rc.conn.sendSoon(ctx, func(b []byte) []byte {
		return appendRequest(b, "", method, raw)
	})
}

// errNoTaker is what emit returns for a notification: no one takes its
// items, so the producer is stopped at its first (see [Stream]).
var errNoTaker = errors.New("jsonrpc: a notification's stream has no taker")

func (rc *reqCtx) emit(item any) error {
	if rc.flags.Load()&flagEnded != 0 {
		return errHandlerReturned
	}
	if rc.id == "" {
		return errNoTaker
	}
	raw, err := encodeValue(item, false)
	if err != nil {
		return err
	}
	return rc.conn.sendSoon(rc, func(b []byte) []byte { // as notify, bounded by the handler's ctx
		b = append(b, `{"jsonrpc":"2.0","method":"`+StreamItemMethod+`","params":{"id":`...)
		b = append(b, rc.id...)
		b = append(b, `,"item":`...)
		b = append(b, raw...)
		return append(b, "}}"...)
	})
}
