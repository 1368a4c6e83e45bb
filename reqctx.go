package jsonrpc

// This file holds the context of one request: cancellation armed on
// demand, and what a handler sends on its connection while it runs.

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"
)

// newCtx returns a fresh request context. Contexts are carved from blocks
// and never reused, so one a handler keeps stays valid (and cancelled).
func (rs *readState) newCtx(c *conn, id string, inBatch bool) *reqCtx {
	if len(rs.slab) == 0 {
		// The blocks double from 4 up to 256 contexts, so that a short
		// connection (one HTTP request) makes a small one.
		rs.slabSize = min(max(2*rs.slabSize, 4), 256)
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

// armedCtx is the part of a reqCtx made on demand.
type armedCtx struct {
	mu   sync.Mutex
	done chan struct{}
	err  error
	stop func() bool

	// Guarded by conn.mu (see leaveSlot): the calls to the peer its
	// handler waits for, and whether it gave up its slot meanwhile.
	waits int
	freed bool
}

// posSettled is the pos of a request taken out of reach of cancels for
// good: it has finished, or a cancel has reached it.
const posSettled = -1

const (
	flagStarted       = 1 << iota // the handler has been called, or skipped
	flagPeerCancelled             // a cancel for its id arrived
	flagAnswered                  // answered before it started
	flagEnded                     // the handler returned
	flagInline                    // running (or about to) on a handed-off reader
	flagInBatch                   // an entry of a batch
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
	rc.armed.CompareAndSwap(nil, new(armedCtx))
	return rc.armed.Load()
}

// Done returns a channel closed when the request is cancelled, its handler
// returns, or the connection stops.
func (rc *reqCtx) Done() <-chan struct{} {
	a := rc.arm()
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.done == nil {
		a.done = make(chan struct{})
		parent := rc.conn.ctx
		if a.err == nil && rc.flags.Load()&flagEnded != 0 {
			a.err = context.Canceled
		}
		if a.err == nil && parent.Err() != nil {
			a.err = context.Cause(parent)
		}
		if a.err != nil {
			close(a.done)
		} else if parent.Done() != nil {
			a.stop = context.AfterFunc(parent, func() { rc.cancel(context.Cause(parent)) })
		}
	}
	return a.done
}

// Err reports why the context ended, or nil.
func (rc *reqCtx) Err() error {
	if rc.flags.Load()&flagEnded != 0 {
		return context.Canceled
	}
	if a := rc.armed.Load(); a != nil {
		a.mu.Lock()
		err := a.err
		a.mu.Unlock()
		if err != nil {
			if errors.Is(err, context.DeadlineExceeded) {
				return context.DeadlineExceeded
			}
			return context.Canceled
		}
	}
	return rc.conn.ctx.Err()
}

// Value returns the sender for the package's key, and otherwise looks in
// the context Serve was given.
func (rc *reqCtx) Value(key any) any {
	if key == (senderKey{}) {
		return rc
	}
	return rc.conn.ctx.Value(key)
}

// cancel ends the context with err, unless it has already ended.
func (rc *reqCtx) cancel(err error) {
	a := rc.arm()
	a.mu.Lock()
	if a.err == nil {
		a.err = err
		if a.done != nil {
			close(a.done)
		}
	}
	stop := a.stop
	a.stop = nil
	a.mu.Unlock()
	if stop != nil {
		stop()
	}
}

// end marks the handler returned; only an armed context has more to do.
func (rc *reqCtx) end() {
	rc.flags.Or(flagEnded)
	if rc.armed.Load() != nil {
		rc.cancel(context.Canceled)
	}
}

// RequestFromContext returns the request that the handler given ctx (or
// a context derived from it) is serving: its id, method and params, for
// middleware and for protocols that need the id (MCP's progress and
// logging). It returns nil for any other context, and once the handler
// has returned. Like the *Request a handler is given, it must not be kept
// after the handler returns.
func RequestFromContext(ctx context.Context) *Request {
	if rc, ok := ctx.Value(senderKey{}).(*reqCtx); ok && rc.flags.Load()&flagEnded == 0 {
		return rc.req
	}
	return nil
}

// senderKey is the context key under which a handler's context holds its
// sender.
type senderKey struct{}

// sender sends what a handler emits while it runs.
type sender interface {
	notify(method string, params any) error
	emit(item any) error
}

// errHandlerReturned is returned by Notify on the context of a handler
// that has already returned.
var errHandlerReturned = errors.New("jsonrpc: notify after the handler returned")

func (rc *reqCtx) notify(method string, params any) error {
	if rc.flags.Load()&flagEnded != 0 {
		return errHandlerReturned
	}
	raw, err := encodeParams(params)
	if err != nil {
		return err
	}
	return rc.conn.out.append(func(b []byte) []byte {
		return appendRequest(b, "", method, raw)
	}, true)
}

func (rc *reqCtx) emit(item any) error {
	if rc.flags.Load()&flagEnded != 0 {
		return errHandlerReturned
	}
	if rc.id == "" {
		return nil
	}
	raw, err := encodeValue(item)
	if err != nil {
		return err
	}
	return rc.conn.out.append(func(b []byte) []byte {
		b = append(b, `{"jsonrpc":"2.0","method":"`+StreamMethod+`","params":{"id":`...)
		b = append(b, rc.id...)
		b = append(b, `,"item":`...)
		b = append(b, raw...)
		return append(b, "}}"...)
	}, true)
}
