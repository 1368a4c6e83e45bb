package jsonrpc

import (
	"context"
	"encoding/json"
	"io"
	"iter"
	"log/slog"
	"sync"
	"time"
)

// ClientOptions configures a [Client]. A nil *ClientOptions is valid and
// gives the defaults of its zero fields.
type ClientOptions struct {
	// OnNotify, if set, is called for each notification from the peer,
	// one at a time and in arrival order, on the client's reader
	// goroutine; it must not block for long, and must not call the
	// client's methods that wait for a response. req and its Params are
	// valid only during the call. Stream items that belong to a call made
	// with [Client.Stream] go to that call instead.
	//
	// Because a server writes the notifications a handler sends before
	// the handler's response, OnNotify has returned for all of them
	// before the Call they belong to returns.
	OnNotify func(req *Request)

	// Handler answers requests that the peer sends to the client; nil
	// answers each with [ErrMethodNotFound]. Handlers run as a [Server]'s
	// do, with their own contexts (cancelled by the peer's cancel
	// notification), at most MaxInFlight at once, the rest queued up to
	// MaxPendingBytes; Close waits for them up to CancelGrace. A Handler
	// may call the peer with [Call]: responses are read whatever the
	// handlers do. When OnNotify is set, notifications go to it, not to
	// Handler.
	Handler Handler

	// MaxInFlight and MaxPendingBytes bound the Handler calls, as the
	// fields of the same names bound a [Server]'s; zero means
	// [DefaultMaxInFlight] and [DefaultMaxPendingBytes].
	MaxInFlight     int
	MaxPendingBytes int

	// Order says which of the peer's messages the Handler handles one at
	// a time, in arrival order (see [Order]).
	Order Order

	// CancelGrace is how long Close waits for the reader goroutine and
	// for Handler calls to end; zero means [DefaultCancelGrace]. (Close
	// called from a Handler or from OnNotify waits all of it, since it
	// waits for the goroutine it runs on.) A
	// goroutine still running then is left to end by itself: a Handler
	// that ignores its context, or a Read that closing the reader does
	// not interrupt (an *os.File on a pipe in blocking mode, such as
	// os.Stdin can be), which ends when the Read returns.
	CancelGrace time.Duration

	// MaxStreamBuffer bounds, in bytes, the items of one [Client.Stream]
	// that have arrived but that the range over it has not taken yet;
	// zero means [DefaultMaxStreamBuffer]. One item is always accepted.
	// A stream whose consumer falls further behind fails with an error
	// wrapping [ErrStreamOverflow] after the items already buffered, and
	// its call is cancelled; other calls are not held up.
	MaxStreamBuffer int

	// OnUnknownResponse, if set, is called on the reader goroutine for a
	// response whose id matches no call in flight (for example a late
	// answer to a cancelled call). Such responses are dropped.
	OnUnknownResponse func(resp *Response)

	// NoCancelRequest stops the client from sending its cancel
	// notification when the context of a call ends before its response
	// arrives.
	NoCancelRequest bool

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

	// Framing delimits messages; nil means [LineFraming].
	Framing Framing

	// HideErrorDetail withholds the text of Go errors from the answers to
	// the peer's requests, as [Server.HideErrorDetail] does.
	HideErrorDetail bool

	// MaxMessageSize is the largest message read; zero means
	// [DefaultMaxMessageSize].
	MaxMessageSize int

	// MaxBatch is the most entries read from one batch (a JSON array of
	// responses or requests); zero means [DefaultMaxBatch]. A longer
	// array is validated but otherwise dropped, so [Client.Batch] should
	// not send more calls than this at once.
	MaxBatch int

	// Logger receives malformed and dropped messages at Debug; nil
	// discards.
	Logger *slog.Logger

	// Interceptors wrap the sending of the client's calls and
	// notifications, and of those its Handler makes with [Call], the
	// first outermost (see [Interceptor]). NewClient builds their chain,
	// and panics on a nil Interceptor.
	Interceptors []Interceptor
}

// DefaultMaxStreamBuffer is the byte bound of a stream's buffer of items
// when [ClientOptions.MaxStreamBuffer] is zero.
const DefaultMaxStreamBuffer = 16 << 20

// A Client calls methods on the other end of a connection, and matches
// the responses to the calls by id, in whatever order they come. It is the
// calling face of the same engine that serves a [Server]'s connections:
// requests from the peer go to ClientOptions.Handler.
//
// A Client is safe for concurrent use. NewClient starts the goroutines
// that read (see [NewClient]); Close stops them.
type Client struct {
	c         *conn
	closeOnce sync.Once
}

// config returns what opts set up for a connection.
func (o *ClientOptions) config() *config {
	if o == nil {
		o = new(ClientOptions)
	}
	return &config{
		handler:      o.Handler,
		log:          o.Logger,
		framing:      o.Framing,
		cancel:       o.Cancel,
		maxMessage:   o.MaxMessageSize,
		maxBatch:     o.MaxBatch,
		maxFlight:    o.MaxInFlight,
		budget:       o.MaxPendingBytes,
		streamBuffer: o.MaxStreamBuffer,
		hideDetail:   o.HideErrorDetail,
		noCancel:     o.NoCancelRequest,
		grace:        o.CancelGrace,
		order:        o.Order,
		cancelIn:     o.AcceptCancel,
		onCancel:     o.OnCancel,
		onNotify:     o.OnNotify,
		onUnknown:    o.OnUnknownResponse,
		interceptors: o.Interceptors,
		drainGrace:   true,
		quiet:        true,
	}
}

// NewClient returns a client that writes requests to w and reads
// responses from r. opts may be nil.
//
// The client reads until r ends or Close is called; at the end of r,
// calls in flight fail, and the peer's requests still being handled get
// CancelGrace to finish. If r is an io.Closer, Close closes it; otherwise
// a goroutine blocked in Read ends when that Read returns.
func NewClient(r io.Reader, w io.Writer, opts *ClientOptions) *Client {
	return &Client{c: startConn(opts.config(), r, w)}
}

// startConn makes a connection and serves it on a goroutine of its own.
func startConn(cfg *config, r io.Reader, w io.Writer) *conn {
	c := newConn(cfg, context.Background(), r, w)
	c.served = make(chan struct{})
	go func() {
		c.serveErr = c.serve(context.Background())
		close(c.served)
	}()
	return c
}

// Call calls method with params and decodes the result into result, which
// may be nil to discard it. params must encode as a JSON object or array,
// or be nil for none; a json.RawMessage is sent as it is.
//
// The result is decoded with encoding/json by the strict rules that [Func]
// applies to params: a member name matches a field only exactly, and a
// name given twice in one object, at any depth, makes Call return an
// error wrapping [ErrDuplicateMember]. A json.RawMessage result takes the
// result as it is, unchecked.
//
// If the peer answers with an error, Call returns it as an *Error. If ctx
// ends before the response comes, Call returns ctx.Err() at once, whatever
// the peer does, tells the peer with the cancel notification (unless
// NoCancelRequest is set; the notice is best effort and is dropped if the
// peer is not reading), and drops the late response. Once the client is
// closed, Call returns an error wrapping [ErrClosed] and the reason the
// connection ended.
//
// With a ctx that can end, the request is written on a goroutine of the
// client's, so that a peer that stops reading cannot hold the caller; with
// one that cannot (context.Background()), the caller writes it itself.
func (c *Client) Call(ctx context.Context, method string, params, result any) error {
	return c.c.call(ctx, method, params, result, nil)
}

// Notify sends a notification: method with params, for which no response
// comes. It returns once the notification is handed to the writer, as
// [Client.Call] hands over a request, or when ctx ends first.
func (c *Client) Notify(ctx context.Context, method string, params any) error {
	return c.c.notifyPeer(ctx, method, params, nil)
}

// Batch sends calls as one JSON array and waits for their responses,
// matching each to its call by id; notifications get none. Each call's
// outcome is in its Err field. Batch itself returns an error only when the
// batch could not be completed: ctx ended (the calls still waiting are
// cancelled), or the client closed.
func (c *Client) Batch(ctx context.Context, calls ...*BatchCall) error {
	return c.c.batch(ctx, calls...)
}

// Stream calls a streaming method (see [Stream]) and returns its items as
// they arrive: each "$/stream" notification that carries the call's id
// yields one item, and the sequence ends when the call's response
// arrives. If the response is an error, or the client closes, the last
// pair carries the error. Items wait for the range in a buffer of at most
// MaxStreamBuffer bytes (see [ClientOptions]).
//
// The call is sent when the range starts. The sequence is single-use.
// Stopping the range early, or the end of ctx, cancels the call.
func (c *Client) Stream(ctx context.Context, method string, params any) iter.Seq2[json.RawMessage, error] {
	return streamItems(ctx, c.c, method, params)
}

// Close closes the connection at once: messages not yet written are
// dropped, every call in flight returns an error wrapping [ErrClosed], the
// reading ends (see [NewClient]), and the contexts of the client's Handler
// calls are cancelled and waited for. Close waits at most CancelGrace
// (see [ClientOptions]) in all, then returns whatever is still running.
// Close is idempotent and safe to call from any goroutine.
func (c *Client) Close() error {
	c.closeOnce.Do(func() {
		c.c.abort(nil)
		c.c.out.closeNow() // closes w, which unblocks a write in flight
	})
	<-c.c.served
	return nil
}

// Done returns a channel that is closed when the client's reading has
// ended: the input ended, or Close was called and the pending Read (if
// Close could not interrupt it) has returned.
func (c *Client) Done() <-chan struct{} { return c.c.readDone }

// Err returns the reason the client closed, wrapping [ErrClosed], or nil
// while it is open.
func (c *Client) Err() error { return c.c.callError() }
