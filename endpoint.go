package jsonrpc

// This file holds Conn, one end of a connection on which both sides call
// and serve, and Caller, what every way of calling has in common.

import (
	"context"
	"encoding/json"
	"io"
	"iter"
	"time"
)

// A Caller calls methods on a JSON-RPC peer. [Conn], [Process],
// [Redialer], [HTTPClient] and [InProcess] are Callers, and so is the
// connection of a handler's own request ([Peer]), so that code and its
// tests can call through any of them. Every Caller is safe for concurrent use.
type Caller interface {
	// Call calls method with params and decodes the result into result,
	// which may be nil to drop it. params must encode as a JSON object or
	// array, or be nil for none; a json.RawMessage is sent as it is. If
	// the peer answers with an error, Call returns it as an *Error.
	Call(ctx context.Context, method string, params, result any) error
	// Notify sends a notification, which gets no answer.
	Notify(ctx context.Context, method string, params any) error
	// Batch sends calls as one JSON array and waits for their answers;
	// each call's outcome is in its Err field.
	Batch(ctx context.Context, calls ...*BatchCall) error
	// Stream calls a streaming method (see [Stream]) and returns its
	// items as they arrive.
	Stream(ctx context.Context, method string, params any) iter.Seq2[json.RawMessage, error]
}

// A Conn is one end of a JSON-RPC connection, on which both sides may
// call and serve: Call, Notify, Batch and Stream call the peer and match
// its answers to the calls by id, in whatever order they come, while the
// peer's requests go to [Options.Handler], as on a [Server], over one read
// loop, one writer and one cancel table. Answers are read and delivered
// whatever the handlers do, so a handler may wait for the peer (see
// [Peer]) however many do the same. A Conn with no Handler is a client:
// it answers the peer's requests with "Method not found".
//
// A Conn is safe for concurrent use. It reads on a goroutine of its own
// from the moment it is made until it ends: when its input ends, or on
// Close or Shutdown. Done is closed when it has ended, and Wait reports
// why; its reader and writer are closed as it ends, if they are
// io.Closers: at once, or, for a write still in flight, at most StopGrace
// after Done (Close returns only once they are).
type Conn struct {
	c *conn

	// reaped, if set, is closed once the child process that StartProcess
	// connected this Conn to has been waited for.
	reaped <-chan struct{}
}

// waitProcess returns once the child process of c, if StartProcess made
// c, has been waited for: at most about 5 seconds after c has ended (see
// [Process]).
func (c *Conn) waitProcess() {
	if c.reaped != nil {
		<-c.reaped
	}
}

// NewConn returns a Conn that reads messages from r and writes to w,
// framed by opts.Framing (one per line by default), and starts reading.
// opts may be nil.
//
// When r ends, calls in flight fail with an error wrapping [ErrClosed],
// the handlers in flight get StopGrace to finish, their answers are
// written, and the connection ends: r and w are closed if they are
// io.Closers (a goroutine blocked in a Read that closing r does not
// interrupt ends when that Read returns). Wait reports how it ended.
func NewConn(r io.Reader, w io.Writer, opts *Options) *Conn {
	return startConn(newConn(opts.config(), context.Background(), r, w))
}

// startConn serves c on a goroutine of its own and returns its Conn; c's
// writer and reader are closed once it has ended.
func startConn(c *conn) *Conn {
	c.served = make(chan struct{})
	c.released = make(chan struct{})
	go func() {
		c.serveErr = c.serve(context.Background())
		close(c.served)
		// A write still blocked in its writer (a call's own, on its
		// caller's goroutine) gets StopGrace to end.
		_ = c.out.closeWithin(c.grace)
		_ = c.in.Close()
		close(c.released)
	}()
	return &Conn{c: c}
}

// Call calls method on the peer with params and decodes the result into
// result, which may be nil to drop it. params must encode as a JSON object
// or array, or be nil for none; a json.RawMessage is sent as it is.
//
// The result is decoded with encoding/json by the strict rules that [Func]
// applies to params: a member name matches a field only exactly, and a
// name given twice in one object, at any depth, makes Call return an
// error wrapping [ErrDuplicateMember]. A json.RawMessage result takes the
// result as it is, unchecked.
//
// If the peer answers with an error, Call returns it as an *Error. If ctx
// ends before the answer comes, Call returns an error wrapping ctx.Err()
// at once, whatever the peer does, tells the peer with the cancel
// notification (unless CancelQuietly is set; the notice never waits: it
// goes behind what is buffered, and is dropped only when some 64 KiB of
// notices wait already behind a write that the peer does not take), and
// drops the late answer;
// if ctx has ended before the call, nothing is sent. Once the connection
// has ended, Call returns an error wrapping [ErrClosed] and the reason.
// [MayHaveRun] tells whether a call that failed may have run on the peer.
//
// With a ctx that can end, the request is written on a goroutine of the
// connection's, so that a peer that stops reading cannot hold the caller;
// with one that cannot (context.Background()), the caller writes it
// itself. A handler that calls with its own context gives up its handler
// slot while it waits (see [Options.MaxInFlight]).
func (c *Conn) Call(ctx context.Context, method string, params, result any) error {
	return c.c.call(ctx, method, params, result, nil)
}

// Notify sends a notification: method with params, for which no answer
// comes. It returns once the notification is handed to the writer, as
// Call hands over a request, or when ctx ends first.
func (c *Conn) Notify(ctx context.Context, method string, params any) error {
	return c.c.notifyPeer(ctx, method, params, nil)
}

// Batch sends calls as one JSON array and waits for their answers,
// matching each to its call by id; notifications get none. Each call's
// outcome is in its Err field. Batch itself returns an error only when the
// batch could not be sent or completed: it has no calls, or the params of
// one cannot be encoded as a JSON object or array (nothing is sent then);
// ctx ended (the calls still waiting are cancelled; once the batch went
// out, the error says it may have run, see [MayHaveRun]); or the
// connection ended.
func (c *Conn) Batch(ctx context.Context, calls ...*BatchCall) error {
	return c.c.batch(ctx, calls...)
}

// Stream calls a streaming method (see [Stream]) and returns its items as
// they arrive: each [StreamItemMethod] notification that carries the
// call's id yields one item, and the sequence ends when the call's answer
// arrives. If the answer is an error, or the connection ends, the last
// pair carries the error. Items wait for the range in a buffer of at most
// MaxStreamBuffer bytes (see [Options]).
//
// The call is sent when the range starts. The sequence is single-use.
// Stopping the range early, or the end of ctx, cancels the call.
func (c *Conn) Stream(ctx context.Context, method string, params any) iter.Seq2[json.RawMessage, error] {
	return streamItems(ctx, c.c, method, params)
}

// Shutdown stops the connection gracefully: the requests already read
// finish and their answers are written, this side's calls in flight get
// their answers, and then the connection ends; Shutdown returns once that
// is done, or ctx.Err() if ctx ends first (call Close then). Called from
// one of the connection's handlers, it waits for that handler too, so
// until ctx ends: a handler that ends its connection should start
// Shutdown on a goroutine of its own and return.
//
// Meanwhile reading goes on: each request the peer sends is answered at
// once with [ErrNotRun] (it did not run, and may be sent elsewhere),
// notifications for the handler are dropped (and logged at Debug), and
// responses reach this side's calls. Once the work in flight is done,
// and 100 ms later, whatever the peer still sends, reading stops and the
// connection ends; calls made after that fail with an error wrapping
// [ErrClosed], and so does any call still awaiting its answer.
func (c *Conn) Shutdown(ctx context.Context) error {
	c.c.drain(ErrClosed)
	select {
	case <-c.c.served:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Close ends the connection: reading stops, calls in flight fail with an
// error wrapping [ErrClosed], the handlers' contexts are cancelled
// (requests still queued run with theirs cancelled already, so that each
// gets its answer), and the answers given within StopGrace are written
// before the streams are closed (a write still blocked StopGrace after
// the end, such as a call's on a peer that reads nothing, is ended by
// closing the writer, when it is an io.Closer). Close returns when that
// is done, at most about twice StopGrace later; called from a handler, it waits all of
// that, since it waits for its own handler. It is idempotent and safe
// from any goroutine.
func (c *Conn) Close() error {
	c.c.stopReading(ErrClosed, true)
	c.c.failCalls(nil, c.c.out)
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
	<-c.c.released // at most StopGrace more, for a write still in flight
	return nil
}

// Wait blocks until the connection has ended and returns why: nil when
// the input ended cleanly, an error wrapping [ErrClosed] after Close or
// Shutdown, when SilenceTimeout ended it, or when handlers had to be
// abandoned at the end of the input, or the read or write error that
// ended it.
func (c *Conn) Wait() error {
	<-c.c.served
	return c.c.serveErr
}

// Done returns a channel that is closed when the connection has ended.
func (c *Conn) Done() <-chan struct{} { return c.c.served }
