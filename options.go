package jsonrpc

// This file holds Options, the settings of every connection, and their
// defaults, turned into the engine's config in one place (Options.config;
// a Server and its transports only adjust a few fields of the result), and
// the config into a connection (newConn).
// It sits above the engine: newConn is where its layers are put together.

import (
	"context"
	"io"
	"log/slog"
	"time"
)

// Defaults for the settings of [Options] left zero.
const (
	// defaultMaxInFlight is the number of handlers that may run at once on
	// one connection.
	defaultMaxInFlight = 64
	// defaultMaxBatch is the largest batch read.
	defaultMaxBatch = 10000
	// defaultStopGrace is how long a connection that is told to stop, or
	// whose input has ended, waits for its handlers to return.
	defaultStopGrace = 5 * time.Second
	// defaultMaxPendingBytes is the byte budget of a connection for
	// requests read but not yet answered (see [Options.MaxPendingBytes]).
	defaultMaxPendingBytes = 32 << 20
	// defaultMaxStreamBuffer is the byte bound of a stream's buffer of
	// items (see [Options.MaxStreamBuffer]).
	defaultMaxStreamBuffer = 16 << 20
)

// orDefault returns v, or def if v is zero or less: how a setting left
// zero takes its default.
func orDefault[T int | int32 | time.Duration](v, def T) T {
	if v <= 0 {
		return def
	}
	return v
}

// Options configures a connection: a [Conn] made by [NewConn], [Dial] or
// [StartProcess], and each connection a [Server] serves, which embeds
// them. A nil *Options is valid, and every zero field means its default,
// so that the zero Options serves and calls by the specification:
// every request answered "Method not found", notifications handled in
// arrival order, LSP's cancel notification sent and accepted.
//
// Options must not change once a connection uses them. One Options value
// may configure many connections.
type Options struct {
	// Handler answers the peer's requests and notifications; nil answers
	// every request with [ErrMethodNotFound]. Handlers run concurrently
	// (see MaxInFlight and Order), each with a context that ends when it
	// returns, when the peer cancels its request, and when the connection
	// stops; a handler calls the peer through [Peer].
	Handler Handler

	// OnNotify, if set, takes the peer's notifications instead of
	// Handler: it is called for each, one at a time and in arrival order,
	// on the goroutine that reads, so it must not block for long nor wait
	// for an answer from the peer. req and its Params are valid only
	// during the call. Items of a call made with [Conn.Stream] go to that
	// call instead. Because a peer writes the notifications a handler
	// sends before the handler's response, OnNotify has returned for all
	// of them before the Call they came with returns.
	OnNotify func(req *Request)

	// Interceptors wrap every outgoing call and notification, those that
	// handlers make through [Peer] included, the first outermost (see
	// [Interceptor]). Each connection builds their chain when it is made,
	// and panics on a nil Interceptor.
	Interceptors []Interceptor

	// Logger receives handler panics (at Error, with the stack), and
	// dropped messages and failed notifications (at Debug); nil discards.
	Logger *slog.Logger

	// Framing delimits messages on a byte stream; nil means [LineFraming]
	// (one message per line). [HeaderFraming] is the Language Server
	// Protocol's Content-Length headers.
	Framing Framing

	// Order says which of the peer's messages are handled one at a time,
	// in arrival order; the zero Order handles notifications so, and
	// starts a request only once the notifications before it are handled
	// (see [Order]).
	Order Order

	// MaxMessageSize is the largest message read, in bytes; zero means
	// 64 MiB. A longer one is discarded as it is read, and answered with
	// an Invalid Request error with a null id, unless its first bytes
	// (512, or the limit and one if fewer) show a response: its id and
	// its "result" or "error" member, and no "method", as they do when
	// the id comes before the result or error, the order encoders
	// commonly write. Such a response is not answered, and the call it
	// answers fails with an error wrapping [ErrMessageTooLarge] (see
	// [MayHaveRun]) as soon as the message is read past the limit, or
	// under [HeaderFraming] once the first bytes of its body have come,
	// without waiting for the rest, which is skipped as it arrives. An
	// item of a stream (a [StreamItemMethod] notification) whose first
	// bytes show its call's id ends that stream with the same error, and
	// cancels the call. An array whose first bytes show such a response
	// as its first entry answers a batch of ours: it is not answered, and
	// every call of that batch fails with the same error. A response over
	// the limit of a Framing or Transport of one's own, which gives no
	// first bytes, is answered, and its call waits for its context.
	MaxMessageSize int

	// MaxBatch is the most entries read from one batch; zero means
	// 10,000. A longer batch of requests is answered with one
	// Invalid Request error with a null id, and a longer batch of
	// responses is not answered: when it answers a [Conn.Batch], every
	// call of that batch fails (it was sent, and may have run), so
	// Conn.Batch should send no more calls at once than this side's
	// MaxBatch, nor than the peer's.
	MaxBatch int

	// MaxInFlight bounds the handlers that run at once on a connection;
	// zero means 64. When every slot is taken, more
	// requests wait their turn in a queue while reading goes on (so
	// cancels, and responses to this side's calls, still arrive), up to
	// MaxPendingBytes. A handler that waits for the peer (a Call, Batch
	// or Stream made with its context, through [Peer] or a [Conn]) gives
	// up its slot meanwhile, and takes one again, waiting its turn before
	// the queue, once answered: handlers that call each other across a
	// connection cannot deadlock, at any depth. A call whose context ends
	// first returns at once, and its handler goes on over the bound until
	// it returns or waits for the peer again, so that no Call waits past
	// its context for a slot.
	MaxInFlight int

	// MaxPendingBytes is the byte budget of a connection: the requests
	// that wait for a slot or run off the reading goroutine are counted
	// by the size of the messages that hold them (plus 512 bytes each for
	// a queued one), and once they add up to more than MaxPendingBytes
	// the connection stops reading until some are answered. One message
	// is always let through, so a connection holds at most
	// MaxPendingBytes plus one message of requests, besides its read
	// buffer. A handler that waits for the peer, its slot given up,
	// counts 8 KiB (its goroutine) more while it waits; while such
	// handlers keep the connection over its budget, reading goes on (the
	// answers they wait for must arrive), and new requests, and queued
	// ones as they come to start, are answered with [ErrOverloaded]
	// instead: they did not run. So is every new request while any call
	// of this side awaits an answer. Notifications, which a refusal would
	// lose without a word to their peer, are not refused: while this side
	// awaits answers, a line that holds one (a batch with its requests) is
	// queued past the budget, up to twice MaxPendingBytes in all (past
	// that it is refused and its notifications dropped, logged at Debug),
	// and queued ones run in their turn. Zero means 32 MiB.
	MaxPendingBytes int

	// MaxStreamBuffer bounds, in bytes, the items of one [Conn.Stream]
	// that have arrived but that the range over it has not taken yet;
	// zero means 16 MiB. One item is always accepted.
	// A stream whose consumer falls further behind fails with an error
	// wrapping [ErrStreamOverflow] after the items already buffered, and
	// its call is cancelled; other calls are not held up.
	MaxStreamBuffer int

	// HideErrorDetail withholds the "detail" (the error text) from the
	// Internal error that a plain Go error or a panic becomes, for
	// endpoints that face untrusted peers. The "exception" still names
	// the Go type.
	HideErrorDetail bool

	// StopGrace bounds each wait of a connection's end; zero means
	// 5 seconds. When the connection is closed, or its context
	// ends, the handlers' contexts are cancelled and the answers given
	// within StopGrace are written; a handler still running then is
	// abandoned (it keeps its goroutine, its answer is dropped). At the
	// end of the input, the handlers in flight get StopGrace to finish
	// before their contexts are cancelled, and as long again to return.
	StopGrace time.Duration

	// Cancellation is the cancel convention: the notification sent to the
	// peer when the context of a call ends before its answer, and, unless
	// AcceptCancel is set, the one accepted from the peer. The zero value
	// is LSP's "$/cancelRequest" (see [Cancellation]).
	Cancellation Cancellation

	// AcceptCancel, if not empty, lists the cancel notifications accepted
	// from the peer instead of Cancellation's, for a server whose clients
	// speak different conventions (LSP's and MCP's, say).
	AcceptCancel []Cancellation

	// CancelQuietly makes a call whose context ends give up without
	// sending the peer the cancel notification.
	CancelQuietly bool

	// OnCancel, if set, is called on the reading goroutine for each cancel
	// notification from the peer, once it has taken effect, with the
	// cancel (the cause of the cancelled handlers' contexts) and what it
	// reached: the requests with its id that were running (their contexts
	// are cancelled) and those that had not started (they will not run).
	// Both zero means that the cancel reached no request: none with that
	// id was in flight (it had been answered already, or was never sent),
	// or an earlier cancel for that id reached every one in flight
	// already. It must not block.
	OnCancel func(cancel *CancelError, running, queued int)

	// SilenceTimeout, if positive, ends the connection once this side's
	// calls and streams have awaited answers for that long (up to a
	// quarter more) while not one byte came from the peer: a peer gone
	// silent, behind a black hole or a dead link, that the operating
	// system may not notice for many minutes. Those calls then fail with
	// an error wrapping [ErrClosed] that says so (they may have run, see
	// [MayHaveRun]), and a [Redialer] dials again. Only the time during
	// which calls wait counts, added up across calls, so that calls each
	// given up sooner still add up to it (the connection may then end up
	// to a quarter SilenceTimeout after the last of them gave up): idle
	// time never counts, and anything at all from the peer starts the
	// count again from zero. What this side writes does not count: the
	// progress of a Write cannot be seen until it returns, so a peer
	// that takes a large message of ours more slowly than SilenceTimeout
	// while sending nothing looks silent too; keep the timeout above the
	// time the largest message takes to go out. Zero means no limit; it costs nothing then, and next to nothing
	// otherwise: a counter per read from the peer, a look at the clock
	// each time calls start or stop waiting, and a timer that runs only
	// while calls wait.
	SilenceTimeout time.Duration

	// OnUnknownResponse, if set, is called on the reading goroutine for a
	// response whose id matches no call in flight (a late answer to a
	// cancelled call, say); such responses are dropped.
	OnUnknownResponse func(resp *Response)
}

// config returns what o sets up for a connection. o may be nil.
func (o *Options) config() *config {
	cfg := new(config)
	o.configInto(cfg)
	return cfg
}

// configInto sets cfg to what o sets up for a connection. o may be nil.
func (o *Options) configInto(cfg *config) {
	if o == nil {
		o = new(Options)
	}
	*cfg = config{
		handler:      o.Handler,
		log:          o.Logger,
		framing:      o.Framing,
		cancel:       o.Cancellation,
		maxMessage:   o.MaxMessageSize,
		maxBatch:     o.MaxBatch,
		maxFlight:    o.MaxInFlight,
		budget:       o.MaxPendingBytes,
		streamBuffer: o.MaxStreamBuffer,
		hideDetail:   o.HideErrorDetail,
		noCancel:     o.CancelQuietly,
		grace:        o.StopGrace,
		order:        o.Order,
		cancelIn:     o.AcceptCancel,
		onCancel:     o.OnCancel,
		onNotify:     o.OnNotify,
		onUnknown:    o.OnUnknownResponse,
		interceptors: o.Interceptors,
		silence:      o.SilenceTimeout,
		drainGrace:   true,
	}
}

// config is what sets up a connection: the fields of a [Server],
// [Options].
type config struct {
	handler      Handler
	log          *slog.Logger
	framing      Framing
	cancel       Cancellation
	maxMessage   int
	maxBatch     int
	maxFlight    int
	budget       int
	streamBuffer int
	hideDetail   bool
	noCancel     bool
	cancelIn     []Cancellation
	onCancel     func(*CancelError, int, int)
	grace        time.Duration
	onNotify     func(*Request)  // notifications in order, on the reader
	onUnknown    func(*Response) // responses that match no call
	drainGrace   bool            // at the end of input, handlers get grace, then stop
	idle         time.Duration   // close the connection after this long idle
	encoders     *encoders       // shared result encoders; nil for the connection's own
	in           *lineReader     // if set, the reader, rather than one made for r
	order        Order
	interceptors []Interceptor // outgoing calls pass through them
	mem          *memBudget    // the Server's memory budget; nil for none
	silence      time.Duration // SilenceTimeout
}

func newConn(cfg *config, ctx context.Context, r io.Reader, w io.Writer) *conn {
	c := new(conn)
	initConn(c, newFramedWriter(cfg.framing, w), cfg, ctx, r, w)
	return c
}

// initConn sets c, a zero conn, up as newConn does, with out as its
// writer, for w: for a caller that allocates the conn and its parts in
// one piece (ServeHTTP). cfg is not kept.
func initConn(c *conn, out *lineWriter, cfg *config, ctx context.Context, r io.Reader, w io.Writer) {
	*c = conn{
		handler:    cfg.handler,
		log:        cfg.log,
		in:         cfg.in,
		out:        out,
		r:          r,
		w:          w,
		maxBatch:   cfg.maxBatch,
		maxFlight:  int32(min(cfg.maxFlight, 1<<30)),
		budget:     cfg.budget,
		hideDetail: cfg.hideDetail,
		grace:      cfg.grace,
		drainGrace: cfg.drainGrace,
		idle:       cfg.idle,
		encoders:   cfg.encoders,
		onCancel:   cfg.onCancel,
		onNotify:   cfg.onNotify,
		order:      cfg.order.config(),
		callTable: callTable{
			cancelConv:   cfg.cancel,
			noCancel:     cfg.noCancel,
			onUnknown:    cfg.onUnknown,
			streamBuffer: cfg.streamBuffer,
			silence:      silenceWatch{timeout: cfg.silence},
		},
		finished: make(chan struct{}),
		aborted:  make(chan struct{}),
	}
	if c.in == nil {
		c.in = newFramedReader(cfg.framing, r, cfg.maxMessage)
	}
	c.mem.mem = cfg.mem
	if cfg.mem != nil && c.in.budget == nil && c.in.mode != modeWhole {
		c.in.budget = &readBudget{mem: &c.mem, own: &c.held, stop: c.readStopped, quit: c.aborted}
	}
	if len(cfg.interceptors) > 0 {
		c.chain = chainOf(cfg.interceptors, innermost(c))
	}
	if c.encoders == nil {
		c.encoders = new(encoders)
	}
	c.cancelIns = incomingCancels(cfg.cancel, cfg.cancelIn)
	c.streamBuffer = orDefault(c.streamBuffer, defaultMaxStreamBuffer)
	c.mux, _ = c.handler.(*Mux)
	if c.handler == nil {
		c.handler = (*Mux)(nil)
	}
	if c.log == nil {
		c.log = discardLogger
	}
	c.maxBatch = orDefault(c.maxBatch, defaultMaxBatch)
	c.maxFlight = orDefault(c.maxFlight, defaultMaxInFlight)
	c.grace = orDefault(c.grace, defaultStopGrace)
	c.budget = orDefault(c.budget, defaultMaxPendingBytes)
	if c.drainGrace {
		c.ended = make(chan struct{})
	}
	c.live = 1 // the reader, which serve starts
	c.cond.L = &c.mu
	c.ctx, c.cancel = context.WithCancelCause(ctx)
	c.in.hooks = c
	c.out.kick = c
}

// discardLogger is the logger of a connection given none. It is never
// changed.
var discardLogger = slog.New(slog.DiscardHandler)
