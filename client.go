package jsonrpc

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"iter"
	"log/slog"
	"strconv"
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

	// Handler answers requests that the peer sends to the client. Nil
	// answers each with [ErrMethodNotFound]. Each runs on a goroutine of
	// its own, which Close waits for (up to CancelGrace), with the limits
	// of a [Server]: at most MaxInFlight at once, as many more waiting,
	// and at most MaxPendingBytes of requests held; past that, the
	// client stops reading until a handler returns. (While it does not
	// read, it reads no responses either: a Handler that waits for a
	// response from the peer must not be one of many more than
	// MaxInFlight.)
	Handler Handler

	// MaxInFlight and MaxPendingBytes bound the Handler calls, as the
	// fields of the same names bound a [Server]'s; zero means
	// [DefaultMaxInFlight] and [DefaultMaxPendingBytes].
	MaxInFlight     int
	MaxPendingBytes int

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

	// NoCancelRequest stops the client from sending "$/cancelRequest"
	// when the context of a call ends before its response arrives.
	NoCancelRequest bool

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
}

// DefaultMaxStreamBuffer is the byte bound of a stream's buffer of items
// when [ClientOptions.MaxStreamBuffer] is zero.
const DefaultMaxStreamBuffer = 16 << 20

// A Client calls methods on the other end of a connection, and matches
// the responses to the calls by id, in whatever order they come.
//
// A Client is safe for concurrent use. NewClient starts one reader
// goroutine; Close stops it.
type Client struct {
	in   *LineReader
	out  *LineWriter
	opts ClientOptions
	log  *slog.Logger
	ids  IDSource

	ctx    context.Context // parent of the Handler's contexts
	cancel context.CancelFunc

	calls sync.Pool // of *pending, for Call

	mu      sync.Mutex
	cond    sync.Cond // a handler ended, or the client closed
	pending map[int64]*pending
	err     error // set once the client is closed
	closing bool  // Close is waiting: no more goroutines may start
	live    int   // goroutines started by goTracked still running
	idle    chan struct{}

	// Handler calls: running, waiting their turn, bytes held.
	running int
	waiting []*Request
	held    int

	readerDone chan struct{}
	closeOnce  sync.Once
}

// pending is a call waiting for its response. Whoever takes it out of the
// client's map (the reader with the response, or fail) sets err, decodes
// the result into dest, and sends on done, once.
type pending struct {
	done chan struct{} // capacity 1
	dest any           // where the result is decoded; nil to drop it
	err  error

	// For streams: items gathered by the reader, their size, and a
	// signal for each.
	stream bool
	mu     sync.Mutex
	items  [][]byte
	size   int
	signal chan struct{}
}

// NewClient returns a client that writes requests to w and reads
// responses from r. opts may be nil.
//
// The client's reader goroutine runs until r ends or Close is called. If r
// is an io.Closer, Close closes it, and returns once the reader goroutine
// has ended; otherwise the goroutine ends when its pending Read returns.
func NewClient(r io.Reader, w io.Writer, opts *ClientOptions) *Client {
	c := &Client{
		out:        NewLineWriter(w),
		pending:    make(map[int64]*pending),
		readerDone: make(chan struct{}),
	}
	if opts != nil {
		c.opts = *opts
	}
	if c.opts.MaxInFlight <= 0 {
		c.opts.MaxInFlight = DefaultMaxInFlight
	}
	if c.opts.MaxPendingBytes <= 0 {
		c.opts.MaxPendingBytes = DefaultMaxPendingBytes
	}
	if c.opts.CancelGrace <= 0 {
		c.opts.CancelGrace = DefaultCancelGrace
	}
	if c.opts.MaxStreamBuffer <= 0 {
		c.opts.MaxStreamBuffer = DefaultMaxStreamBuffer
	}
	c.cond.L = &c.mu
	c.in = NewLineReader(r, c.opts.MaxMessageSize)
	c.log = c.opts.Logger
	if c.log == nil {
		c.log = slog.New(slog.DiscardHandler)
	}
	c.ctx, c.cancel = context.WithCancel(context.Background())
	go c.read()
	return c
}

// Call calls method with params and decodes the result into result, which
// may be nil to discard it. params must encode as a JSON object or array,
// or be nil for none; a json.RawMessage is sent as it is.
//
// If the peer answers with an error, Call returns it as an *Error. If ctx
// ends before the response comes, Call returns ctx.Err() at once, whatever
// the peer does, tells the peer with "$/cancelRequest" (unless
// NoCancelRequest is set; the notice is best effort and is dropped if the
// peer is not reading), and drops the late response. Once the client is
// closed, Call returns an error wrapping [ErrClosed] and the reason the
// connection ended.
//
// With a ctx that can end, the request is written on a goroutine of the
// client's, so that a peer that stops reading cannot hold the caller; with
// one that cannot (context.Background()), the caller writes it itself.
func (c *Client) Call(ctx context.Context, method string, params, result any) error {
	raw, err := encodeParams(params)
	if err != nil {
		return err
	}
	p, _ := c.calls.Get().(*pending)
	if p == nil {
		p = &pending{done: make(chan struct{}, 1)}
	}
	p.dest = result
	id, err := c.add(p)
	if err != nil {
		return err
	}
	err = c.send(ctx, func(b []byte) []byte { return appendCall(b, id, method, raw) })
	if err != nil {
		if c.drop(id) {
			return c.sendErr(ctx, err)
		}
		<-p.done
		return p.err
	}
	select {
	case <-p.done:
	case <-ctx.Done():
		if c.abandon(id, p) {
			p.dest = nil
			c.calls.Put(p)
			return ctx.Err()
		}
	}
	err = p.err
	p.dest, p.err = nil, nil
	c.calls.Put(p)
	return err
}

func appendCall(b []byte, id int64, method string, params []byte) []byte {
	b = append(b, `{"jsonrpc":"2.0","id":`...)
	b = strconv.AppendInt(b, id, 10)
	b = append(b, `,"method":`...)
	b = appendString(b, method)
	if params != nil {
		b = append(b, `,"params":`...)
		b = append(b, params...)
	}
	return append(b, '}')
}

// send adds one message, built by add, to the output and has it written.
// When ctx can end, the write happens on a goroutine of the client's and
// send returns once the message is buffered, or when ctx ends while the
// buffer is full; otherwise the caller writes it.
func (c *Client) send(ctx context.Context, add func([]byte) []byte) error {
	if ctx.Done() == nil {
		return c.out.append(add, true)
	}
	if err := c.out.appendCtx(ctx, add); err != nil {
		return err
	}
	c.flushAsync()
	return nil
}

// flushAsync has what is buffered written by a goroutine of the client's,
// unless a write is in flight, which takes it along. A write error closes
// the client.
func (c *Client) flushAsync() {
	if c.out.busy() {
		return
	}
	c.goTracked(func() {
		if err := c.out.Flush(); err != nil {
			c.fail(err)
		}
	})
}

// sendErr is the error for a message that send did not buffer.
func (c *Client) sendErr(ctx context.Context, err error) error {
	if ctxErr := ctx.Err(); ctxErr != nil && errors.Is(err, ctxErr) {
		return ctxErr
	}
	return c.closedErr(err)
}

// add registers p under a new id.
func (c *Client) add(p *pending) (int64, error) {
	id := c.ids.n.Add(1)
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.err != nil {
		return 0, c.err
	}
	c.pending[id] = p
	return id, nil
}

// drop forgets the call with id, and reports whether it was still
// pending.
func (c *Client) drop(id int64) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.pending[id]; !ok {
		return false
	}
	delete(c.pending, id)
	return true
}

// abandon gives up waiting for the call with id, whose context ended. If
// the call was still pending, it is forgotten, the peer is told, and
// abandon reports true; if its response was already being delivered, it
// waits for that delivery to end and reports false.
func (c *Client) abandon(id int64, p *pending) bool {
	if c.drop(id) {
		c.sendCancel(id)
		return true
	}
	<-p.done
	return false
}

// sendCancel tells the peer that the call with id is cancelled, without
// making the caller wait for the write.
func (c *Client) sendCancel(id int64) {
	if c.opts.NoCancelRequest {
		return
	}
	added := c.out.tryAppend(func(b []byte) []byte {
		b = append(b, `{"jsonrpc":"2.0","method":"`+CancelMethod+`","params":{"id":`...)
		b = strconv.AppendInt(b, id, 10)
		return append(b, "}}"...)
	})
	if added {
		c.flushAsync()
	} else {
		c.log.Debug("jsonrpc: dropped a cancel notification: the peer is not reading", slog.Int64("id", id))
	}
}

func (c *Client) closedErr(err error) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.err != nil {
		return c.err
	}
	return &closedError{cause: err}
}

// Notify sends a notification: method with params, for which no response
// comes. It returns once the notification is handed to the writer, as
// [Client.Call] hands over a request, or when ctx ends first.
func (c *Client) Notify(ctx context.Context, method string, params any) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	raw, err := encodeParams(params)
	if err != nil {
		return err
	}
	if err := c.Err(); err != nil {
		return err
	}
	err = c.send(ctx, func(b []byte) []byte { return appendRequest(b, "", method, raw) })
	if err != nil {
		return c.sendErr(ctx, err)
	}
	return nil
}

// A BatchCall is one entry of a [Client.Batch].
type BatchCall struct {
	// Method and Params are the call's method and params, as for
	// [Client.Call].
	Method string
	Params any
	// Notify makes the entry a notification, which gets no response.
	Notify bool
	// Result, if not nil, receives the decoded result.
	Result any
	// Err is set by Batch: nil for a success, the *Error the peer
	// answered with, or why the result could not be decoded.
	Err error
}

// Batch sends calls as one JSON array and waits for their responses,
// matching each to its call by id; notifications get none. Each call's
// outcome is in its Err field. Batch itself returns an error only when the
// batch could not be completed: ctx ended (the calls still waiting are
// cancelled), or the client closed.
func (c *Client) Batch(ctx context.Context, calls ...*BatchCall) error {
	if len(calls) == 0 {
		return errors.New("jsonrpc: empty batch")
	}
	// failAll gives every call that expects a response the error that
	// ended the batch.
	failAll := func(err error) error {
		for _, bc := range calls {
			if !bc.Notify {
				bc.Err = err
			}
		}
		return err
	}
	raws := make([][]byte, len(calls))
	for i, bc := range calls {
		raw, err := encodeParams(bc.Params)
		if err != nil {
			return err
		}
		raws[i] = raw
	}
	ids := make([]int64, len(calls))
	ps := make([]*pending, len(calls))
	for i, bc := range calls {
		if bc.Notify {
			continue
		}
		ps[i] = &pending{done: make(chan struct{}, 1), dest: bc.Result}
		id, err := c.add(ps[i])
		if err != nil {
			c.dropAll(ids[:i])
			return failAll(err)
		}
		ids[i] = id
	}
	err := c.send(ctx, func(b []byte) []byte {
		b = append(b, '[')
		for i, bc := range calls {
			if i > 0 {
				b = append(b, ',')
			}
			if bc.Notify {
				b = appendRequest(b, "", bc.Method, raws[i])
			} else {
				b = appendCall(b, ids[i], bc.Method, raws[i])
			}
		}
		return append(b, ']')
	})
	if err != nil {
		c.dropAll(ids)
		return failAll(c.sendErr(ctx, err))
	}
	var first error // the close that ended the batch, if any
	for i, p := range ps {
		if p == nil {
			continue
		}
		select {
		case <-p.done:
		case <-ctx.Done():
			// Calls still waiting are cancelled and fail with ctx's
			// error; a call whose response is being delivered keeps it.
			for j := i; j < len(ps); j++ {
				if ps[j] == nil {
					continue
				}
				if c.abandon(ids[j], ps[j]) {
					calls[j].Err = ctx.Err()
				} else {
					calls[j].Err = ps[j].err
				}
			}
			return ctx.Err()
		}
		calls[i].Err = p.err
		if errors.Is(p.err, ErrClosed) && first == nil {
			first = p.err
		}
	}
	return first
}

func (c *Client) dropAll(ids []int64) {
	for _, id := range ids {
		if id != 0 {
			c.drop(id)
		}
	}
}

// Stream calls a streaming method (see [Stream]) and returns its items as
// they arrive: each "$/stream" notification that carries the call's id
// yields one item, and the sequence ends when the call's response
// arrives. If the response is an error, or the client closes, the last
// pair carries the error.
//
// The call is sent when the range starts. The sequence is single-use.
// Stopping the range early, or the end of ctx, cancels the call.
func (c *Client) Stream(ctx context.Context, method string, params any) iter.Seq2[json.RawMessage, error] {
	return func(yield func(json.RawMessage, error) bool) {
		raw, err := encodeParams(params)
		if err != nil {
			yield(nil, err)
			return
		}
		p := &pending{done: make(chan struct{}, 1), stream: true, signal: make(chan struct{}, 1)}
		id, err := c.add(p)
		if err != nil {
			yield(nil, err)
			return
		}
		err = c.send(ctx, func(b []byte) []byte { return appendCall(b, id, method, raw) })
		if err != nil {
			c.drop(id)
			yield(nil, c.sendErr(ctx, err))
			return
		}
		for {
			p.mu.Lock()
			items := p.items
			p.items = nil
			p.mu.Unlock()
			for _, item := range items {
				if !yield(p.take(item), nil) {
					if c.drop(id) {
						c.sendCancel(id)
					}
					return
				}
			}
			if len(items) > 0 {
				continue
			}
			select {
			case <-p.signal:
				continue
			case <-p.done:
			case <-ctx.Done():
				if c.abandon(id, p) {
					yield(nil, ctx.Err())
					return
				}
			}
			// Done: deliver what came before the response, then the end.
			p.mu.Lock()
			items = p.items
			p.items = nil
			p.mu.Unlock()
			for _, item := range items {
				if !yield(p.take(item), nil) {
					return
				}
			}
			if p.err != nil {
				yield(nil, p.err)
			}
			return
		}
	}
}

// take counts item, about to be handed to the range of a stream, out of
// the stream's buffer, and returns it. Items stay counted until then, so
// that those the range has not taken never pass MaxStreamBuffer.
func (p *pending) take(item []byte) []byte {
	p.mu.Lock()
	p.size -= len(item)
	p.mu.Unlock()
	return item
}

// goTracked runs f on a goroutine that Close waits for, unless Close has
// begun waiting, and reports whether it did.
func (c *Client) goTracked(f func()) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closing {
		return false
	}
	c.live++
	go func() {
		defer c.exitTracked()
		f()
	}()
	return true
}

// exitTracked counts a goroutine of goTracked out.
func (c *Client) exitTracked() {
	c.mu.Lock()
	c.live--
	if c.live == 0 && c.idle != nil {
		close(c.idle)
		c.idle = nil
	}
	c.mu.Unlock()
}

// Close closes the connection at once: messages not yet written are
// dropped, every call in flight returns an error wrapping [ErrClosed], the
// reader goroutine ends (see [NewClient]), and the contexts of the
// client's Handler calls are cancelled and waited for. Close waits at most
// CancelGrace (see [ClientOptions]) in all, then returns whatever is
// still running. Close is idempotent and safe to call from any goroutine.
func (c *Client) Close() error {
	c.closeOnce.Do(func() {
		c.fail(nil)
		_ = c.in.Close()
		c.out.closeNow()
		c.cancel()
		grace := time.NewTimer(c.opts.CancelGrace)
		defer grace.Stop()
		if _, ok := c.in.r.(io.Closer); ok {
			select {
			case <-c.readerDone:
			case <-grace.C:
				return
			}
		}
		c.mu.Lock()
		c.closing = true
		var idle chan struct{}
		if c.live > 0 {
			idle = make(chan struct{})
			c.idle = idle
		}
		c.mu.Unlock()
		if idle != nil {
			select {
			case <-idle:
			case <-grace.C:
			}
		}
	})
	return nil
}

// Done returns a channel that is closed when the client's reader
// goroutine ends: the connection ended or Close was called.
func (c *Client) Done() <-chan struct{} { return c.readerDone }

// Err returns the reason the client closed, wrapping [ErrClosed], or nil
// while it is open.
func (c *Client) Err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.err
}

// fail closes the client with cause and fails every call in flight.
func (c *Client) fail(cause error) {
	c.mu.Lock()
	if c.err != nil {
		c.mu.Unlock()
		return
	}
	c.err = &closedError{cause: cause}
	c.waiting = nil
	c.cond.Broadcast()
	ps := c.pending
	c.pending = make(map[int64]*pending)
	c.mu.Unlock()
	for _, p := range ps {
		p.err = c.err
		p.done <- struct{}{}
	}
}

// read is the reader goroutine.
func (c *Client) read() {
	defer close(c.readerDone)
	var env envelope
	var batch []envelope
	maxBatch := c.opts.MaxBatch
	if maxBatch <= 0 {
		maxBatch = DefaultMaxBatch
	}
	for {
		line, err := c.in.ReadMessage()
		if err != nil {
			if errors.Is(err, ErrMessageTooLarge) {
				c.log.Debug("jsonrpc: dropped a message over the size limit")
				continue
			}
			if c.in.IsClosed() {
				err = nil
			}
			c.fail(err)
			return
		}
		var kind lineKind
		kind, batch = scanLine(line, &env, batch, maxBatch)
		switch kind {
		case lineObject:
			c.dispatch(&env)
		case lineBatch:
			for i := range batch {
				c.dispatch(&batch[i])
			}
			if cap(batch) > maxScratch {
				batch = nil
			}
		case lineBatchTooLong:
			c.log.Debug("jsonrpc: dropped a batch over the length limit", slog.Int("limit", maxBatch))
		default:
			if c.log.Enabled(context.Background(), slog.LevelDebug) {
				c.log.Debug("jsonrpc: dropped a malformed message", slog.String("line", string(line)))
			}
		}
	}
}

// dispatch handles one message from the peer.
func (c *Client) dispatch(e *envelope) {
	if e.method == nil {
		c.deliver(e)
		return
	}
	if why := e.checkRequest(); why != "" {
		c.log.Debug("jsonrpc: dropped an invalid request", slog.String("reason", why))
		if e.replyID() != nil && e.id != nil {
			c.reply(e.replyID(), nil, ErrInvalidRequest)
		}
		return
	}
	req := Request{Method: string(methodName(e.method)), Params: e.params}
	if e.id == nil {
		if req.Method == StreamMethod && c.streamItem(e.params) {
			return
		}
		if c.opts.OnNotify != nil {
			c.opts.OnNotify(&req)
		}
		return
	}
	id := append([]byte(nil), e.id...)
	if c.opts.Handler == nil {
		c.reply(id, nil, ErrMethodNotFound)
		return
	}
	req.ID = ID{raw: string(id)}
	req.Params = append(json.RawMessage(nil), e.params...)
	if e.params == nil {
		req.Params = nil
	}
	c.schedule(&req)
}

// cost is what a request from the peer counts against MaxPendingBytes.
func (req *Request) cost() int { return len(req.ID.raw) + len(req.Method) + len(req.Params) }

// schedule runs the Handler for req on a goroutine, or queues req when
// MaxInFlight handlers run already. While the queue is full too, or the
// requests held would pass MaxPendingBytes, the reader waits here: the
// peer meets backpressure.
func (c *Client) schedule(req *Request) {
	n := req.cost()
	c.mu.Lock()
	for c.err == nil && (c.running >= c.opts.MaxInFlight && len(c.waiting) >= c.opts.MaxInFlight ||
		c.held > 0 && c.held+n > c.opts.MaxPendingBytes) {
		c.cond.Wait()
	}
	if c.err != nil {
		c.mu.Unlock()
		return
	}
	c.held += n
	if c.running >= c.opts.MaxInFlight {
		c.waiting = append(c.waiting, req)
		c.mu.Unlock()
		return
	}
	c.running++
	c.mu.Unlock()
	if !c.goTracked(func() { c.handle(req) }) {
		c.mu.Lock()
		c.running--
		c.held -= n
		c.mu.Unlock()
	}
}

// handle serves req and then the requests that wait their turn, and gives
// up its slot when none is left.
func (c *Client) handle(req *Request) {
	for req != nil {
		c.serveRequest(req)
		c.mu.Lock()
		c.held -= req.cost()
		req = nil
		if len(c.waiting) > 0 {
			req = c.waiting[0]
			c.waiting[0] = nil
			c.waiting = c.waiting[1:]
		} else {
			c.running--
		}
		c.cond.Broadcast()
		c.mu.Unlock()
	}
}

// serveRequest runs the Handler for a request from the peer.
func (c *Client) serveRequest(req *Request) {
	var result []byte
	var werr *Error
	func() {
		defer func() {
			if v := recover(); v != nil {
				c.log.Error("jsonrpc: client handler panicked", slog.String("method", req.Method), slog.Any("panic", v))
				werr = internalError("panic", "", true)
			}
		}()
		v, err := c.opts.Handler.ServeJSONRPC(c.ctx, req)
		if err != nil {
			werr = toWireError(err, false, false)
			return
		}
		if result, err = encodeValue(v); err != nil {
			werr = internalError("encode", err.Error(), false)
		}
	}()
	c.reply([]byte(req.ID.raw), result, werr)
}

func (c *Client) reply(id, result []byte, werr *Error) {
	_ = c.out.append(func(b []byte) []byte {
		if werr != nil {
			return appendErrorResponse(b, id, werr)
		}
		return appendResultResponse(b, id, result)
	}, true)
}

// streamItem delivers a "$/stream" notification to its call, and reports
// whether there was one.
func (c *Client) streamItem(params []byte) bool {
	var e envelope
	if len(params) == 0 || params[0] != '{' {
		return false
	}
	if _, ok := scanObject(params, 0, &e); !ok || e.id == nil {
		return false
	}
	item := itemOf(params)
	id, ok := parseID(e.id)
	if !ok {
		return false
	}
	c.mu.Lock()
	p := c.pending[id]
	c.mu.Unlock()
	if p == nil || !p.stream {
		// An item for a call of ours that has ended (a stream stopped
		// early) is dropped; anything else is the peer's own.
		return id > 0 && id <= c.ids.n.Load()
	}
	p.mu.Lock()
	overflow := p.size > 0 && p.size+len(item) > c.opts.MaxStreamBuffer
	if !overflow {
		p.items = append(p.items, item)
		p.size += len(item)
	}
	p.mu.Unlock()
	if overflow {
		// The range has fallen too far behind: end the call, and tell
		// the peer, rather than hold its items without limit.
		if c.drop(id) {
			c.sendCancel(id)
			p.err = &streamOverflowError{limit: c.opts.MaxStreamBuffer}
			p.done <- struct{}{}
		}
		return true
	}
	select {
	case p.signal <- struct{}{}:
	default:
	}
	return true
}

// itemOf returns a copy of the "item" member of stream params.
func itemOf(params []byte) []byte {
	var v struct {
		Item json.RawMessage `json:"item"`
	}
	if json.Unmarshal(params, &v) != nil || v.Item == nil {
		return []byte("null")
	}
	return v.Item
}

// parseID returns the number an id of ours was written as.
func parseID(raw []byte) (int64, bool) {
	if len(raw) == 0 || len(raw) > 18 {
		return 0, false
	}
	var n int64
	for _, d := range raw {
		if d < '0' || d > '9' {
			return 0, false
		}
		n = n*10 + int64(d-'0')
	}
	return n, true
}

// deliver hands a response to the call it answers.
func (c *Client) deliver(e *envelope) {
	resp, why := e.response()
	if why != "" {
		c.log.Debug("jsonrpc: dropped an invalid response", slog.String("reason", why))
		return
	}
	id, ok := parseID(e.id)
	var p *pending
	if ok {
		c.mu.Lock()
		p = c.pending[id]
		delete(c.pending, id)
		c.mu.Unlock()
	}
	if p == nil {
		if c.opts.OnUnknownResponse != nil {
			resp.ID = ID{raw: string(e.id)}
			if resp.Result != nil {
				resp.Result = append(json.RawMessage(nil), resp.Result...)
			}
			c.opts.OnUnknownResponse(&resp)
		} else {
			c.log.Debug("jsonrpc: dropped a response with an unknown id", slog.String("id", string(e.id)))
		}
		return
	}
	// The caller waits for done, so its result is ours to fill.
	switch {
	case resp.Error != nil:
		p.err = resp.Error
	case p.dest != nil:
		p.err = decodeResult(resp.Result, p.dest)
	}
	p.done <- struct{}{}
}

// decodeResult decodes a result, already validated as JSON, into dest as
// json.Unmarshal would. The commonest destinations with a plain value take
// a shorter way; anything else, or anything unusual, goes to encoding/json.
func decodeResult(raw []byte, dest any) error {
	switch d := dest.(type) {
	case *json.RawMessage:
		*d = append((*d)[:0], raw...)
		return nil
	case *int:
		if n, err := strconv.ParseInt(string(raw), 10, strconv.IntSize); err == nil {
			*d = int(n)
			return nil
		}
	case *int64:
		if n, err := strconv.ParseInt(string(raw), 10, 64); err == nil {
			*d = n
			return nil
		}
	case *float64:
		if len(raw) > 0 && raw[0] != 'n' && raw[0] != '"' && raw[0] != 't' && raw[0] != 'f' {
			if f, err := strconv.ParseFloat(string(raw), 64); err == nil {
				*d = f
				return nil
			}
		}
	case *string:
		if len(raw) >= 2 && raw[0] == '"' && bytes.IndexByte(raw, '\\') < 0 {
			*d = string(raw[1 : len(raw)-1])
			return nil
		}
	case *bool:
		switch string(raw) {
		case "true":
			*d = true
			return nil
		case "false":
			*d = false
			return nil
		}
	}
	return json.Unmarshal(raw, dest)
}
