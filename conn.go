package jsonrpc

// This file holds the connection: its state, its lifecycle (serve, stop,
// abort) and the read loop that turns each line into work.

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"
)

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
}

// conn is one connection: the engine behind [Server] and
// [Conn]. It reads messages, runs handlers for the peer's requests,
// sends this side's calls and routes their responses.
type conn struct {
	encoders   *encoders // shared by the connections of a Server
	handler    Handler
	mux        *Mux // the handler, when it is a non-nil *Mux
	log        *slog.Logger
	in         *lineReader
	out        *lineWriter
	r, w       any // the caller's reader and writer, closed on abort
	maxBatch   int
	maxFlight  int32
	budget     int // MaxPendingBytes
	hideDetail bool
	grace      time.Duration
	drainGrace bool
	idle       time.Duration
	seen       atomic.Uint64 // messages read, counted while idle is set

	cancelConv   Cancellation
	cancelIns    []incomingCancel // the cancel notifications the peer may send
	onCancel     func(*CancelError, int, int)
	noCancel     bool
	onNotify     func(*Request)
	onUnknown    func(*Response)
	streamBuffer int

	// The outgoing side (call.go).
	chain   SendFunc // the interceptors of outgoing calls; nil for none
	ids     idSource
	calls   sync.Pool // of *pending, for call
	pmu     sync.Mutex
	pending map[int64]*pending
	callErr error // set once calls can no longer be answered

	ctx    context.Context // parent of every handler's context
	cancel context.CancelCauseFunc

	reader  atomic.Pointer[readState] // the current reading role
	running atomic.Int32              // slots taken by units running
	held    atomic.Int64              // bytes of the units queued or running off the reader; changed under mu

	budgetWait atomic.Bool  // the reader waits for room in the budget
	awaiting   atomic.Int64 // calls of this side awaiting answers: len(pending)
	talked     atomic.Bool  // this side has sent a message of its own (see flushFromReader)
	resumeN    atomic.Int32 // handlers waiting in retakeSlot: len(resume), or about to be
	inOrder    atomic.Bool  // units wait in ordered, or one in order runs off the reader; changed under mu
	offReaders atomic.Int32 // units not in order admitted off the reader and not ended; changed under mu
	order      orderConfig

	mu       sync.Mutex
	cond     sync.Cond // the queue shrank, or reading stops
	queue    []*unit
	ordered  []*unit              // units waiting for the units before them (see finishUnit)
	offWrite bool                 // a unit in order is admitted off the reader and not ended
	resume   []chan struct{}      // handlers back from the peer, waiting for a slot
	active   map[string][]*reqCtx // requests that a cancel may reach, by id
	endErr   error                // why the connection ends
	live     int                  // goroutines of ours still running
	done     bool                 // finished is closed
	finished chan struct{}        // closed when nothing but a parked reader is left

	served   chan struct{} // closed when serve has returned, for a Conn
	readDone chan struct{} // closed when reading has ended for good
	readOnce sync.Once
	serveErr error // what serve returned

	abortOnce sync.Once
	aborted   chan struct{} // closed by abort
	endOnce   sync.Once
	ended     chan struct{} // closed at the end of the input, when drainGrace
	stopping  atomic.Bool   // no more lines are to be read
	parked    atomic.Bool   // the reader is in Read, or about to be

	// The watchdog is a timer, armed by the reader when it starts a unit
	// and re-armed by itself while the reader is busy.
	timer   *time.Timer
	armed   atomic.Bool
	tickMu  sync.Mutex // held by a tick; serve takes it to stop ticks
	dead    bool       // guarded by tickMu: no more ticks
	lastRS  *readState // guarded by tickMu: the last tick's sample
	lastSeq uint64
}

func newConn(cfg *config, ctx context.Context, r io.Reader, w io.Writer) *conn {
	c := &conn{
		handler:      cfg.handler,
		log:          cfg.log,
		in:           cfg.in,
		out:          newFramedWriter(cfg.framing, w),
		r:            r,
		w:            w,
		maxBatch:     cfg.maxBatch,
		maxFlight:    int32(min(cfg.maxFlight, 1<<30)),
		budget:       cfg.budget,
		hideDetail:   cfg.hideDetail,
		grace:        cfg.grace,
		drainGrace:   cfg.drainGrace,
		idle:         cfg.idle,
		encoders:     cfg.encoders,
		cancelConv:   cfg.cancel,
		noCancel:     cfg.noCancel,
		onCancel:     cfg.onCancel,
		onNotify:     cfg.onNotify,
		onUnknown:    cfg.onUnknown,
		streamBuffer: cfg.streamBuffer,
		order:        cfg.order.config(),
		finished:     make(chan struct{}),
		aborted:      make(chan struct{}),
		readDone:     make(chan struct{}),
	}
	if c.in == nil {
		c.in = newFramedReader(cfg.framing, r, cfg.maxMessage)
	}
	if len(cfg.interceptors) > 0 {
		c.chain = chainOf(cfg.interceptors, innermost(c))
	}
	if c.encoders == nil {
		c.encoders = new(encoders)
	}
	c.cancelIns = incomingCancels(cfg.cancel, cfg.cancelIn)
	if c.streamBuffer <= 0 {
		c.streamBuffer = defaultMaxStreamBuffer
	}
	c.mux, _ = c.handler.(*Mux)
	if c.handler == nil {
		c.handler = (*Mux)(nil)
	}
	if c.log == nil {
		c.log = discardLogger
	}
	if c.maxBatch <= 0 {
		c.maxBatch = defaultMaxBatch
	}
	if c.maxFlight <= 0 {
		c.maxFlight = defaultMaxInFlight
	}
	if c.grace <= 0 {
		c.grace = defaultStopGrace
	}
	if c.budget <= 0 {
		c.budget = defaultMaxPendingBytes
	}
	if c.drainGrace {
		c.ended = make(chan struct{})
	}
	c.live = 1 // the reader, which serve starts
	c.cond.L = &c.mu
	c.ctx, c.cancel = context.WithCancelCause(ctx)
	c.in.beforeRead = c.beforeRead
	c.in.afterRead = c.afterRead
	c.out.kick = c.flushFromReader
	return c
}

func (c *conn) serve(ctx context.Context) error {
	if c.idle > 0 {
		defer c.watchIdle()()
	}
	drained := false // the end of the input had both its graces
	if c.in.mode == modeWhole {
		// An HTTP body, read already, is served off its goroutine too,
		// so that ServeHTTP can return after the grace period while a
		// handler ignores its context; see growStack.
		go func() {
			growStack()
			c.readLoop(newReadState(), false)
		}()
	} else {
		go c.readLoop(newReadState(), false)
	}

	select {
	case <-c.finished:
	case <-ctx.Done():
		c.abort(ctx.Err())
	case <-c.aborted:
	case <-c.ended:
		// The input ended: the work in flight gets the grace period to
		// finish, then its contexts are cancelled (requests still queued
		// run with theirs cancelled, so that each is answered), and it
		// gets as long again to return.
		c.mu.Lock()
		cause := error(&peerClosedError{cause: c.endErr})
		c.mu.Unlock()
		drain := time.NewTimer(c.grace)
		select {
		case <-c.finished:
		case <-c.aborted:
		case <-drain.C:
			c.cancel(cause)
			drain.Reset(c.grace)
			select {
			case <-c.finished:
			case <-c.aborted:
			case <-drain.C:
				c.abort(cause) // abandon it: nothing more is written
				c.unblockWriter()
				drained = true
			}
		}
		drain.Stop()
	}
	select {
	case <-c.finished:
	default:
		if drained {
			break // waited for above, at most twice StopGrace in all
		}
		grace := time.NewTimer(c.grace)
		select {
		case <-c.finished:
		case <-grace.C:
			// Abandon what is still running.
			c.unblockWriter()
		}
		grace.Stop()
	}
	_ = c.out.Flush()
	c.cancel(context.Canceled)
	c.tickMu.Lock() // waits for a tick in progress
	c.dead = true
	if c.timer != nil {
		c.timer.Stop()
	}
	c.tickMu.Unlock()

	c.mu.Lock()
	err := c.endErr
	c.mu.Unlock()
	c.failCalls(err)
	if err == nil || errors.Is(err, io.EOF) {
		err = c.out.Err()
	}
	if errors.Is(err, ErrServerClosed) {
		return ErrServerClosed
	}
	return err
}

// unblockWriter closes the writer when a write to it is still in flight,
// once what is running has been abandoned: on most writers that ends the
// write.
func (c *conn) unblockWriter() {
	if wc, ok := c.w.(io.Closer); ok && c.out.busy() {
		_ = wc.Close()
	}
}

// flushFromReader has the buffered output written, for the reading
// goroutine. A reader that waits in Write could deadlock with a peer whose
// reader does the same: neither would read again. While this side has sent
// nothing of its own (no call, notification or batch: only answers), the
// peer's reader has nothing of ours to answer and, if it is this
// package's, writes nothing itself, since it has sent something (the
// requests being answered); so the reader writes itself, the fastest way.
// From this side's first message of its own on, the write goes to another
// goroutine.
func (c *conn) flushFromReader() {
	if !c.talked.Load() {
		if err := c.out.Flush(); err != nil {
			c.abort(err)
		}
		return
	}
	c.flushAsync()
}

// goLive runs f on a goroutine that the connection waits for before it
// ends, unless it has ended already.
func (c *conn) goLive(f func()) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.done {
		return
	}
	c.live++
	go func() {
		defer c.exit()
		f()
	}()
}

// exit counts a goroutine of the connection out.
func (c *conn) exit() {
	c.mu.Lock()
	c.live--
	c.checkDoneLocked()
	c.mu.Unlock()
}

// checkDoneLocked closes finished once no goroutine of the connection is
// left but, once reading has stopped, a reader blocked in a Read that
// could not be interrupted: nothing more will be written, so Serve may
// return, and that goroutine ends when its Read does, without serving
// what it read.
func (c *conn) checkDoneLocked() {
	if c.done {
		return
	}
	if c.live == 0 || c.live == 1 && c.parked.Load() && c.stopping.Load() {
		c.done = true
		close(c.finished)
	}
}

// overBudget reports whether n more bytes would take what the connection
// holds past its budget; while it holds nothing, any n fits.
func (c *conn) overBudget(n int) bool {
	held := c.held.Load()
	return held > 0 && held+int64(n) > int64(c.budget)
}

// release gives back the bytes a unit held against the budget.
func (c *conn) release(n int) {
	if n == 0 {
		return
	}
	c.mu.Lock()
	c.held.Add(int64(-n))
	c.cond.Broadcast()
	c.mu.Unlock()
}

// stopReading ends reading with cause (the first cause is kept). When
// interrupt is set, it also makes a pending Read return, in the gentlest
// way the reader allows: CloseRead (a TCP or Unix connection), a read
// deadline in the past, or, when the reader is not also the writer, Close.
// A connection that is both and allows neither is left alone, so that the
// responses still to come can be written.
func (c *conn) stopReading(cause error, interrupt bool) {
	c.mu.Lock()
	if c.endErr == nil {
		c.endErr = cause
	}
	c.stopping.Store(true)
	c.cond.Broadcast()
	c.checkDoneLocked()
	c.mu.Unlock()
	if !interrupt {
		return
	}
	if cr, ok := c.r.(interface{ CloseRead() error }); ok && cr.CloseRead() == nil {
		return
	}
	if d, ok := c.r.(interface{ SetReadDeadline(time.Time) error }); ok && d.SetReadDeadline(time.Unix(1, 0)) == nil {
		return
	}
	if _, ok := c.r.(io.Closer); ok && c.r != c.w {
		_ = c.in.Close()
	}
}

// abort stops the connection at once: reading stops, queued requests are
// dropped, and every handler's context is cancelled.
func (c *conn) abort(cause error) {
	c.abortOnce.Do(func() {
		c.stopReading(cause, true)
		// Nothing more is written, so a reader that is also the
		// writer may be closed too.
		if _, ok := c.r.(io.Closer); ok {
			_ = c.in.Close()
		}
		c.mu.Lock()
		c.queue, c.ordered = nil, nil
		c.mu.Unlock()
		c.out.fail(&closedError{cause: cause})
		c.failCalls(cause)
		c.cancel(cause)
		close(c.aborted)
	})
}

func (c *conn) isAborted() bool {
	select {
	case <-c.aborted:
		return true
	default:
		return false
	}
}

// beforeRead runs when the reader is about to block in Read: it has the
// responses gathered so far written (see flushFromReader), lets go of
// large scratch space, and lets the watchdog rest. It reports false, and
// the read does not happen, once reading has stopped.
func (c *conn) beforeRead() bool {
	c.flushFromReader()
	c.reader.Load().trim(c.in.letGo)
	c.in.letGo = false
	// parked is stored before stopping is read, as stopReading stores
	// stopping before it reads parked: one of the two sees the other.
	c.parked.Store(true)
	return !c.stopping.Load()
}

// afterRead notes that the reader is back from Read.
func (c *conn) afterRead() {
	c.parked.Store(false)
}

// readLoop is the reading role. It runs each unit inline, and returns when
// the input ends or when a handler ran too long and the role passed to
// another goroutine.
func (c *conn) readLoop(rs *readState, detach bool) {
	defer c.exit()
	handedOn := false
	defer func() {
		if !handedOn {
			c.readOnce.Do(func() { close(c.readDone) })
		}
	}()
	c.reader.Store(rs)
	if detach {
		c.in.detach()
	}
	for {
		if c.stopping.Load() {
			c.flushAsync()
			return
		}
		line, err := c.in.ReadMessage()
		if c.stopping.Load() {
			// Serve may have returned already: serve nothing more.
			return
		}
		if err != nil {
			if errors.Is(err, ErrMessageTooLarge) {
				c.writeError(nullID, limitError("message too large", c.in.max))
				continue
			}
			if errors.Is(err, ErrBadHeader) {
				// The framing lost one message and found the next.
				c.writeError(nullID, ErrParse)
				continue
			}
			c.stopReading(err, false)
			if !c.in.IsClosed() {
				c.failCalls(err) // no response can come any more
			}
			if c.ended != nil {
				c.endOnce.Do(func() { close(c.ended) })
			}
			c.flushFromReader() // nothing is left to read: no deadlock
			return
		}
		if !c.handleLine(rs, line) {
			handedOn = true
			return
		}
	}
}

// handleLine answers or runs one line. It reports whether this goroutine
// still holds the reading role.
func (c *conn) handleLine(rs *readState, line []byte) bool {
	if c.idle > 0 {
		c.seen.Add(1)
	}
	kind, batch := scanLine(line, &rs.env, rs.batch, c.maxBatch)
	rs.batch = batch
	switch kind {
	case lineInvalidJSON:
		c.writeError(nullID, ErrParse)
		return true
	case lineOther, lineEmptyBatch:
		c.writeError(nullID, ErrInvalidRequest)
		return true
	case lineBatchTooLong:
		c.writeError(nullID, limitError("batch too long", c.maxBatch))
		return true
	case lineObject:
		if c.route(rs, &rs.env, true) {
			return true
		}
	}

	// The reader runs a unit inline only while a slot is free for it and
	// the budget has room (a handoff charges the unit to both): the slot
	// is taken (running grows) only if reading is handed off; and only
	// while no unit in order runs off the reader, which it would pass.
	if c.inOrder.Load() || c.running.Load() >= c.maxFlight || c.overBudget(len(line)) {
		c.enqueue(rs, line, true)
		return true
	}
	u := &rs.unit
	c.buildUnit(rs, u, kind, true)
	if len(u.tasks) == 0 {
		return true
	}
	if u.slow() || u.order&stateSerial != 0 && c.offReaders.Load() > 0 {
		// Off the reader, or, in order, after the requests running off
		// it.
		c.enqueue(rs, line, false)
		return true
	}
	// current is set before busy, so that a handoff never sees a request
	// of an earlier unit; so is the size of the buffer the unit holds.
	rs.current.Store(0)
	rs.bufSize.Store(int64(cap(c.in.buf)))
	seq := rs.state.Load()>>stateSeq + 1
	busy := seq<<stateSeq | stateBusy | u.order
	rs.state.Store(busy)
	c.arm()
	c.runUnit(u, rs)
	if rs.state.CompareAndSwap(busy, seq<<stateSeq) {
		if c.resumeN.Load() > 0 {
			c.admitResumer() // see retakeSlot
		}
		return true
	}
	// Reading moved on without us: take what the handoff registered out
	// of reach of cancels, give back the bytes it charged, and finish as
	// a worker.
	for i := range u.tasks {
		c.settle(u.tasks[i].ctx)
	}
	c.mu.Lock()
	charged, off := rs.charged, rs.off
	c.mu.Unlock()
	c.release(charged)
	if off {
		c.finishUnit(u)
	}
	c.work()
	return false
}

// route handles, on the reader, a message that is not work for a
// handler: a cancel notification, a response to a call of ours, an item of
// one of our streams, or a notification for OnNotify. It
// reports whether e was one; act=false only reports, for a line whose
// messages were routed once already.
func (c *conn) route(rs *readState, e *envelope, act bool) bool {
	if !e.object {
		return false
	}
	if e.method == nil {
		if e.result == nil && e.err == nil {
			return false
		}
		if _, why := e.response(); why != "" {
			return false // answered as an Invalid Request
		}
		if act {
			c.deliver(e)
		}
		return true
	}
	if e.id != nil {
		return false
	}
	// A notification: only three kinds are routed, so the common one is
	// ruled out by its method before the envelope is checked.
	name := e.method
	if bytes.IndexByte(name, '\\') >= 0 {
		name = appendString(nil, string(methodName(name))) // written with escapes
	}
	in := c.cancelIn(name)
	cancel := in != nil
	item := !cancel && string(name) == `"`+StreamItemMethod+`"`
	if !cancel && !item && c.onNotify == nil || e.checkRequest() != "" {
		return false
	}
	switch {
	case cancel:
		if act {
			c.cancelFrom(rs, in, e.params)
		}
		return true
	case item && c.streamItem(e.params, act):
		return true
	case c.onNotify != nil:
		if act {
			c.onNotify(&Request{Method: string(methodName(e.method)), Params: e.params})
		}
		return true
	}
	return false
}
