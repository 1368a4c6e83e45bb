package jsonrpc

// This file holds Conn, the endpoint for a connection on which both sides
// call and serve.

import (
	"context"
	"encoding/json"
	"io"
	"iter"
	"log/slog"
	"time"
)

// ConnOptions configures a [Conn]. A nil *ConnOptions is valid and gives
// the defaults of its zero fields, which mean what the fields of the same
// names mean on a [Server] and in [ClientOptions].
type ConnOptions struct {
	// Handler answers the peer's requests and notifications; nil answers
	// every request with [ErrMethodNotFound]. Handlers run as a
	// Server's do, and may call the peer with [Call].
	Handler Handler

	// Logger receives handler panics (at Error) and dropped messages (at
	// Debug); nil discards.
	Logger *slog.Logger

	// Framing delimits messages; nil means [LineFraming].
	Framing Framing

	// Order says which of the peer's messages are handled one at a time,
	// in arrival order (see [Order]).
	Order Order

	// Cancel is the cancel convention: the notification sent when the
	// context of a call ends, and, unless AcceptCancel is set, the one
	// the peer sends; the zero value is LSP's "$/cancelRequest" (see
	// [Cancellation]).
	Cancel Cancellation

	// AcceptCancel, if not empty, lists the cancel notifications accepted
	// from the peer instead of Cancel's, for a server whose clients speak
	// different conventions (LSP's and MCP's, say).
	AcceptCancel []Cancellation

	// OnCancel, if set, is called on the reading goroutine for each cancel
	// notification from the peer, once it has taken effect, with the
	// cancel (the cause of the cancelled handlers' contexts) and what it
	// reached: the requests with its id that were running (their contexts
	// are cancelled) and those that had not started (they will not run).
	// Both zero means that no request with that id was in flight: it had
	// been answered already, or was never sent. It must not block.
	OnCancel func(cancel *CancelError, running, queued int)

	// NoCancelRequest stops the Conn from sending its cancel notification
	// when the context of one of its calls ends.
	NoCancelRequest bool

	// Limits, as on a Server; MaxStreamBuffer as in ClientOptions.
	MaxMessageSize  int
	MaxBatch        int
	MaxInFlight     int
	MaxPendingBytes int
	MaxStreamBuffer int

	// HideErrorDetail withholds the text of Go errors from answers, as
	// [Server.HideErrorDetail] does.
	HideErrorDetail bool

	// CancelGrace bounds each wait of the connection's end: at the end of
	// the input, handlers in flight get CancelGrace to finish before
	// their contexts are cancelled, and then as long again to return;
	// Close gives them as long. Zero means [DefaultCancelGrace].
	CancelGrace time.Duration

	// OnUnknownResponse, if set, is called on the reading goroutine for a
	// response whose id matches no call in flight; such responses are
	// dropped.
	OnUnknownResponse func(resp *Response)

	// Interceptors wrap the sending of the Conn's calls and
	// notifications, and of those its Handler makes with [Call], the
	// first outermost (see [Interceptor]). NewConn builds their chain,
	// and panics on a nil Interceptor.
	Interceptors []Interceptor
}

// A Conn is one end of a connection on which both sides call and serve:
// the peer's requests go to ConnOptions.Handler, as on a [Server], and
// Call, Notify, Batch and Stream call the peer, as a [Client] does, over
// one read loop, one writer and one cancel table. Responses are read and
// delivered whatever the handlers do, so a handler may wait for the peer
// (see [Call]) however many do the same.
//
// A Conn is safe for concurrent use. NewConn starts reading at once.
type Conn struct {
	c *conn
}

// NewConn returns a Conn that reads messages from r and writes to w, and
// starts serving it. opts may be nil.
//
// When r ends, calls in flight fail with an error wrapping [ErrClosed],
// the handlers in flight get CancelGrace to finish, their answers are
// written, and the connection closes: r and w are closed if they are
// io.Closers. Wait reports how it ended.
func NewConn(r io.Reader, w io.Writer, opts *ConnOptions) *Conn {
	if opts == nil {
		opts = new(ConnOptions)
	}
	c := startConn(&config{
		handler:      opts.Handler,
		log:          opts.Logger,
		framing:      opts.Framing,
		cancel:       opts.Cancel,
		maxMessage:   opts.MaxMessageSize,
		maxBatch:     opts.MaxBatch,
		maxFlight:    opts.MaxInFlight,
		budget:       opts.MaxPendingBytes,
		streamBuffer: opts.MaxStreamBuffer,
		hideDetail:   opts.HideErrorDetail,
		noCancel:     opts.NoCancelRequest,
		grace:        opts.CancelGrace,
		order:        opts.Order,
		cancelIn:     opts.AcceptCancel,
		onCancel:     opts.OnCancel,
		onUnknown:    opts.OnUnknownResponse,
		interceptors: opts.Interceptors,
		drainGrace:   true,
	}, r, w)
	go func() {
		<-c.served
		_ = c.out.Close()
		_ = c.in.Close()
	}()
	return &Conn{c: c}
}

// Call calls method on the peer and decodes the result into result, as
// [Client.Call] does.
func (c *Conn) Call(ctx context.Context, method string, params, result any) error {
	return c.c.call(ctx, method, params, result, nil)
}

// Notify sends a notification to the peer, as [Client.Notify] does.
func (c *Conn) Notify(ctx context.Context, method string, params any) error {
	return c.c.notifyPeer(ctx, method, params, nil)
}

// Batch sends calls to the peer as one array, as [Client.Batch] does.
func (c *Conn) Batch(ctx context.Context, calls ...*BatchCall) error {
	return c.c.batch(ctx, calls...)
}

// Stream calls a streaming method on the peer and returns its items, as
// [Client.Stream] does.
func (c *Conn) Stream(ctx context.Context, method string, params any) iter.Seq2[json.RawMessage, error] {
	return streamItems(ctx, c.c, method, params)
}

// Shutdown stops reading, lets the requests already read finish and their
// answers be written, and closes the connection; it returns once that is
// done, or ctx.Err() if ctx ends first (call Close then). Calls in flight
// fail with an error wrapping [ErrClosed].
func (c *Conn) Shutdown(ctx context.Context) error {
	c.c.stopReading(ErrClosed, true)
	c.c.failCalls(nil)
	select {
	case <-c.c.served:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Close closes the connection: reading stops, calls in flight fail with
// an error wrapping [ErrClosed], the handlers' contexts are cancelled
// (requests still queued run with theirs cancelled already, so that each
// gets its answer), and the answers given within CancelGrace are written
// before the streams are closed. Close returns when that is done, at most
// about twice CancelGrace later; called from a handler, it waits all of
// that, since it waits for its own handler. It is idempotent and safe
// from any goroutine.
func (c *Conn) Close() error {
	c.c.stopReading(ErrClosed, true)
	c.c.failCalls(nil)
	c.c.cancel(ErrClosed)
	t := time.NewTimer(c.c.grace)
	defer t.Stop()
	select {
	case <-c.c.served:
	case <-t.C:
		c.c.abort(ErrClosed) // drop what is left, unblock a stuck writer
		c.c.out.closeNow()
		<-c.c.served
	}
	return nil
}

// Wait blocks until the connection has ended and returns why: nil when
// the input ended cleanly, an error wrapping [ErrClosed] after Close or
// Shutdown or when handlers had to be abandoned at the end of the input,
// or the read or write error that ended it.
func (c *Conn) Wait() error {
	<-c.c.served
	if c.c.serveErr != nil {
		return c.c.serveErr
	}
	return nil
}

// Done returns a channel that is closed when the connection has ended.
func (c *Conn) Done() <-chan struct{} { return c.c.served }
