package jsonrpc

// This file holds the connection: its state, its lifecycle (serve, stop,
// abort) and the read loop that turns each line into work.

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"
)

// conn is one connection being served.
type conn struct {
	encoders   encoders
	handler    Handler
	mux        *Mux // the handler, when it is a non-nil *Mux
	log        *slog.Logger
	in         *LineReader
	out        *LineWriter
	r, w       any // the caller's reader and writer, closed on abort
	maxBatch   int
	maxFlight  int32
	budget     int // MaxPendingBytes
	hideDetail bool
	grace      time.Duration

	ctx    context.Context // parent of every handler's context
	cancel context.CancelCauseFunc

	reader  atomic.Pointer[readState] // the current reading role
	running atomic.Int32              // slots taken by units running
	held    atomic.Int64              // bytes of the units queued or running off the reader; changed under mu

	mu       sync.Mutex
	cond     sync.Cond // the queue shrank, or reading stops
	queue    []*unit
	active   map[string][]*reqCtx // requests that a cancel may reach
	endErr   error                // why the connection ends
	live     int                  // goroutines of ours still running
	parked   bool                 // the reader is in Read (or about to be)
	done     bool                 // finished is closed
	finished chan struct{}        // closed when nothing but a parked reader is left

	abortOnce sync.Once
	aborted   chan struct{} // closed by abort
	stopping  atomic.Bool   // no more lines are to be read
	reading   atomic.Bool   // the reader is in Read

	// The watchdog is a timer, armed by the reader when it starts a unit
	// and re-armed by itself while the reader is busy.
	timer   *time.Timer
	armed   atomic.Bool
	tickMu  sync.Mutex // held by a tick; serve takes it to stop ticks
	dead    bool       // guarded by tickMu: no more ticks
	lastRS  *readState // guarded by tickMu: the last tick's sample
	lastSeq uint64
}

func newConn(s *Server, ctx context.Context, r io.Reader, w io.Writer) *conn {
	c := &conn{
		handler:    s.Handler,
		log:        s.Logger,
		in:         NewLineReader(r, s.MaxMessageSize),
		out:        NewLineWriter(w),
		r:          r,
		w:          w,
		maxBatch:   s.MaxBatch,
		maxFlight:  int32(min(s.MaxInFlight, 1<<30)),
		budget:     s.MaxPendingBytes,
		hideDetail: s.HideErrorDetail,
		grace:      s.CancelGrace,
		finished:   make(chan struct{}),
		aborted:    make(chan struct{}),
	}
	c.mux, _ = c.handler.(*Mux)
	if c.handler == nil {
		c.handler = (*Mux)(nil)
	}
	if c.log == nil {
		c.log = slog.New(slog.DiscardHandler)
	}
	if c.maxBatch <= 0 {
		c.maxBatch = DefaultMaxBatch
	}
	if c.maxFlight <= 0 {
		c.maxFlight = DefaultMaxInFlight
	}
	if c.grace <= 0 {
		c.grace = DefaultCancelGrace
	}
	if c.budget <= 0 {
		c.budget = DefaultMaxPendingBytes
	}
	c.cond.L = &c.mu
	c.ctx, c.cancel = context.WithCancelCause(ctx)
	c.in.beforeRead = c.beforeRead
	c.in.afterRead = c.afterRead
	return c
}

func (c *conn) serve(ctx context.Context) error {
	c.timer = time.AfterFunc(time.Hour, c.tick)
	c.timer.Stop()
	c.live = 1
	go c.readLoop(newReadState(), false)

	select {
	case <-c.finished:
	case <-ctx.Done():
		c.abort(ctx.Err())
	case <-c.aborted:
	}
	grace := time.NewTimer(c.grace)
	select {
	case <-c.finished:
	case <-grace.C:
		// Abandon what is still running; unblock a stuck writer.
		if wc, ok := c.w.(io.Closer); ok && c.out.busy() {
			_ = wc.Close()
		}
	}
	grace.Stop()
	_ = c.out.Flush()
	c.cancel(context.Canceled)
	c.timer.Stop()
	c.tickMu.Lock() // waits for a tick in progress
	c.dead = true
	c.tickMu.Unlock()

	c.mu.Lock()
	err := c.endErr
	c.mu.Unlock()
	if err == nil || errors.Is(err, io.EOF) {
		err = c.out.Err()
	}
	if errors.Is(err, ErrServerClosed) {
		return ErrServerClosed
	}
	return err
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
	if c.live == 0 || c.live == 1 && c.parked && c.stopping.Load() {
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
		c.queue = nil
		c.mu.Unlock()
		c.out.fail(&closedError{cause: cause})
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

// beforeRead runs when the reader is about to block in Read: it flushes
// the responses gathered so far, lets go of large scratch space, and lets
// the watchdog rest. It reports false, and the read does not happen, once
// reading has stopped.
func (c *conn) beforeRead() bool {
	if err := c.out.Flush(); err != nil {
		c.abort(err)
	}
	c.reader.Load().trim()
	c.mu.Lock()
	c.parked = true
	c.mu.Unlock()
	if c.stopping.Load() {
		return false
	}
	c.reading.Store(true)
	return true
}

// afterRead notes that the reader is back from Read.
func (c *conn) afterRead() {
	c.reading.Store(false)
	c.mu.Lock()
	c.parked = false
	c.mu.Unlock()
}

// readLoop is the reading role. It runs each unit inline, and returns when
// the input ends or when a handler ran too long and the role passed to
// another goroutine.
func (c *conn) readLoop(rs *readState, detach bool) {
	defer c.exit()
	c.reader.Store(rs)
	if detach {
		c.in.detach()
	}
	for {
		if c.stopping.Load() {
			if err := c.out.Flush(); err != nil {
				c.abort(err)
			}
			return
		}
		line, err := c.in.ReadMessage()
		if c.stopping.Load() {
			// Serve may have returned already: serve nothing more.
			return
		}
		if err != nil {
			if errors.Is(err, ErrMessageTooLarge) {
				c.writeError(nullID, limitError("message too large", c.in.max), false)
				continue
			}
			c.stopReading(err, false)
			if err := c.out.Flush(); err != nil {
				c.abort(err)
			}
			return
		}
		if !c.handleLine(rs, line) {
			return
		}
	}
}

// handleLine answers or runs one line. It reports whether this goroutine
// still holds the reading role.
func (c *conn) handleLine(rs *readState, line []byte) bool {
	kind, batch := scanLine(line, &rs.env, rs.batch, c.maxBatch)
	rs.batch = batch
	switch kind {
	case lineInvalidJSON:
		c.writeError(nullID, ErrParse, false)
		return true
	case lineOther, lineEmptyBatch:
		c.writeError(nullID, ErrInvalidRequest, false)
		return true
	case lineBatchTooLong:
		c.writeError(nullID, limitError("batch too long", c.maxBatch), false)
		return true
	case lineObject:
		if rs.env.isCancel() {
			c.cancelFrom(rs, rs.env.params)
			return true
		}
	}

	// The reader runs a unit inline only while a slot is free for it and
	// the budget has room (a handoff charges the unit to both): the slot
	// is taken (running grows) only if reading is handed off.
	if c.running.Load() >= c.maxFlight || c.overBudget(len(line)) {
		c.enqueue(rs, line)
		return true
	}
	u := &rs.unit
	c.buildUnit(rs, u, kind)
	if len(u.tasks) == 0 {
		return true
	}
	if u.slow() {
		c.enqueue(rs, line)
		return true
	}
	// current is set before busy, so that a handoff never sees a request
	// of an earlier unit; so is the size of the buffer the unit holds.
	rs.current.Store(0)
	rs.bufSize.Store(int64(cap(c.in.buf)))
	seq := rs.state.Load()>>2 + 1
	rs.state.Store(seq<<2 | stateBusy)
	c.arm()
	c.runUnit(u, rs)
	if rs.state.CompareAndSwap(seq<<2|stateBusy, seq<<2) {
		return true
	}
	// Reading moved on without us: take what the handoff registered out
	// of reach of cancels, give back the bytes it charged, and finish as
	// a worker.
	for i := range u.tasks {
		c.settle(u.tasks[i].ctx)
	}
	c.mu.Lock()
	charged := rs.charged
	c.mu.Unlock()
	c.release(charged)
	c.work()
	return false
}

// isCancel reports whether e is a valid "$/cancelRequest" notification.
func (e *envelope) isCancel() bool {
	return e.id == nil && string(e.method) == `"`+CancelMethod+`"` && e.checkRequest() == ""
}

// cancelFrom handles the params of a cancel notification: it cancels the
// context of every request in flight with that id. A request that has not
// started yet will not run; unless it is part of a batch, it is answered
// with CodeRequestCancelled at once.
func (c *conn) cancelFrom(rs *readState, params []byte) {
	e := &rs.cancel
	e.reset()
	if len(params) == 0 || params[0] != '{' {
		return
	}
	if _, ok := scanObject(params, 0, e); !ok || e.id == nil || !validID(e.id) {
		return
	}
	c.mu.Lock()
	list := append([]*reqCtx(nil), c.active[string(e.id)]...)
	c.mu.Unlock()
	for _, rc := range list {
		old := rc.flags.Or(flagPeerCancelled)
		if old&(flagStarted|flagPeerCancelled|flagInline) == 0 && !rc.inBatch {
			if rc.flags.Or(flagAnswered)&flagStarted == 0 {
				c.settle(rc)
				c.writeAnswer(rc.id, nil, ErrRequestCancelled, true)
			}
		}
		rc.cancel(context.Canceled)
	}
}
