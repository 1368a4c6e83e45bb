package jsonrpc

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"
)

// Defaults for the limits of a [Server] whose fields are zero.
const (
	// DefaultMaxInFlight is the number of handlers that may run at once on
	// one connection, and also the number of requests that may wait for a
	// free slot before the server stops reading.
	DefaultMaxInFlight = 64
	// DefaultMaxBatch is the largest batch a server accepts.
	DefaultMaxBatch = 10000
	// DefaultCancelGrace is how long Serve waits, once it has been told to
	// stop, for handlers to return.
	DefaultCancelGrace = 5 * time.Second
	// DefaultMaxPendingBytes is the byte budget of a connection for
	// requests read but not yet answered (see [Server.MaxPendingBytes]).
	DefaultMaxPendingBytes = 32 << 20
)

// handoffDelay is how long a handler may run on the reading goroutine
// before reading moves to a fresh goroutine.
const handoffDelay = time.Millisecond

// CancelMethod is the notification that cancels a request in flight:
// {"jsonrpc":"2.0","method":"$/cancelRequest","params":{"id":X}}.
const CancelMethod = "$/cancelRequest"

// StreamMethod is the notification that carries one item of a streaming
// handler: {"jsonrpc":"2.0","method":"$/stream","params":{"id":X,"item":V}},
// where X is the id of the request the item belongs to.
const StreamMethod = "$/stream"

// A Server serves JSON-RPC 2.0 over newline-delimited streams. Its fields
// configure it and must not change once Serve has been called.
//
// The zero Server is valid: it answers every call with "Method not found".
// One Server may serve many connections at once, each with its own call to
// Serve.
type Server struct {
	// Handler answers requests; nil answers every call with
	// [ErrMethodNotFound].
	Handler Handler

	// Logger receives handler panics (at Error, with the stack), failed
	// notifications (at Debug) and dropped messages (at Debug). Nil
	// discards.
	Logger *slog.Logger

	// MaxMessageSize is the largest message read, in bytes; zero means
	// [DefaultMaxMessageSize]. A longer line is discarded as it is read
	// and answered with an Invalid Request error with a null id.
	MaxMessageSize int

	// MaxBatch is the largest batch accepted; zero means
	// [DefaultMaxBatch]. A longer batch is answered with one Invalid
	// Request error with a null id.
	MaxBatch int

	// MaxInFlight bounds the handlers that run at once on a connection;
	// zero means [DefaultMaxInFlight]. When every slot is taken, up to
	// MaxInFlight more requests wait their turn while reading goes on (so
	// a cancel still arrives); past that, the reader waits too.
	MaxInFlight int

	// MaxPendingBytes is the byte budget of a connection: the requests
	// that wait for a slot or run off the reading goroutine are counted
	// by the size of the lines that hold them, and once they add up to
	// more than MaxPendingBytes the server stops reading until some are
	// answered. One line is always let through, so a connection holds at
	// most MaxPendingBytes plus one message of requests, besides its read
	// buffer. Zero means [DefaultMaxPendingBytes].
	MaxPendingBytes int

	// HideErrorDetail withholds the "detail" (the error text) from the
	// Internal error that a plain Go error or a panic becomes, for
	// endpoints that face untrusted peers. The "exception" still names
	// the Go type.
	HideErrorDetail bool

	// CancelGrace is how long Serve waits, after Close or the
	// cancellation of its context, for handlers to return; zero means
	// [DefaultCancelGrace]. A handler still running then is abandoned: it
	// keeps its goroutine, but its response is dropped.
	CancelGrace time.Duration

	mu     sync.Mutex
	conns  map[*conn]struct{}
	closed bool
}

// Serve reads requests from r and writes responses to w until the input
// ends, then waits for the handlers in flight, flushes w and returns nil.
// See [Server.Serve].
func Serve(ctx context.Context, r io.Reader, w io.Writer, h Handler) error {
	s := &Server{Handler: h}
	return s.Serve(ctx, r, w)
}

// Serve reads newline-delimited requests from r and writes the responses
// to w, one per line, until r ends.
//
// Requests run concurrently, up to MaxInFlight at a time, so responses may
// come in any order; every request is answered exactly once and no
// notification is ever answered. A line that is not JSON is answered with
// a Parse error with a null id, and reading goes on at the next line.
//
// At the end of the input Serve waits for the handlers in flight, flushes
// w and returns nil. A read error other than io.EOF ends it the same way
// but returns that error. A write error ends it with that error. When ctx
// is cancelled Serve stops reading, cancels the handlers' contexts, waits
// up to CancelGrace for them, and returns ctx.Err(); after [Server.Close]
// or [Server.Shutdown] it returns [ErrServerClosed].
//
// A blocked Read cannot always be interrupted. On Close or the end of ctx,
// Serve closes r if it is an io.Closer, and w too if a write is still
// blocked when the grace period ends. On Shutdown, which must still write,
// it uses CloseRead or a read deadline where r has them, and closes r only
// if it is not also w. Otherwise Serve returns all the same once the
// requests already read are done, and the goroutine in Read ends when Read
// returns, without serving what it read. Serve never closes r or w at the
// end of the input.
//
// What a connection holds is bounded in bytes: see MaxMessageSize,
// MaxBatch and MaxPendingBytes, and SECURITY.md for the whole account.
func (s *Server) Serve(ctx context.Context, r io.Reader, w io.Writer) error {
	c := newConn(s, ctx, r, w)
	if !s.track(c) {
		return ErrServerClosed
	}
	defer s.untrack(c)
	return c.serve(ctx)
}

func (s *Server) track(c *conn) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return false
	}
	if s.conns == nil {
		s.conns = make(map[*conn]struct{})
	}
	s.conns[c] = struct{}{}
	return true
}

func (s *Server) untrack(c *conn) {
	s.mu.Lock()
	delete(s.conns, c)
	s.mu.Unlock()
}

// live returns the connections being served, and marks the server closed.
func (s *Server) closeAll() []*conn {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed = true
	cs := make([]*conn, 0, len(s.conns))
	for c := range s.conns {
		cs = append(cs, c)
	}
	return cs
}

// Close stops every connection at once: reading stops, the contexts of the
// handlers in flight are cancelled, and each Serve returns
// [ErrServerClosed] once its handlers have returned or its CancelGrace has
// passed. Later calls to Serve return ErrServerClosed at once. Close is
// idempotent and safe to call from any goroutine.
func (s *Server) Close() error {
	for _, c := range s.closeAll() {
		c.abort(ErrServerClosed)
	}
	return nil
}

// Shutdown stops reading on every connection, lets the requests already
// read finish and their responses be written, and returns when all of that
// is done (also when a reader sits in a Read that cannot be interrupted),
// or returns ctx.Err() if ctx ends first. Unlike Close, it waits
// for handlers without limit (CancelGrace does not apply): give it a ctx
// with a deadline, and call Close when that passes. Each Serve returns
// [ErrServerClosed]. Calling Shutdown from inside a handler deadlocks.
func (s *Server) Shutdown(ctx context.Context) error {
	cs := s.closeAll()
	for _, c := range cs {
		c.stopReading(ErrServerClosed, true)
	}
	for _, c := range cs {
		select {
		case <-c.finished:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return nil
}

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

// readState is what the reading role owns. When a handler holds the
// reading goroutine up for too long, the role passes to a new goroutine
// with a fresh readState, and the old one stays with the handler.
type readState struct {
	// state is seq<<2 | busy | handedOff, where seq counts the units run
	// inline.
	state   atomic.Uint64
	current atomic.Int32 // index in unit.tasks of the task running inline

	env    envelope
	batch  []envelope
	unit   unit
	slab   []reqCtx
	arena  arena
	names  map[string]*method // passed on with the reading role
	buf    []byte             // scratch for batch responses
	cancel envelope
	sample int // counts inline runs; one in sampleEvery is timed

	bufSize atomic.Int64 // size of the read buffer the unit running inline holds
	charged int          // guarded by conn.mu: bytes charged by the handoff
}

const (
	stateBusy      = 1
	stateHandedOff = 2
)

// maxScratch is the most entries the reading role keeps in its scratch
// space for batches while it waits for input; what a larger batch needed
// is let go.
const maxScratch = 256

// trim lets go of scratch space that a large batch needed, so that an idle
// connection holds no more than a small batch's worth. Only the goroutine
// in the reading role calls it.
func (rs *readState) trim() {
	if cap(rs.batch) > maxScratch {
		rs.batch = nil
	}
	if cap(rs.unit.tasks) > maxScratch {
		rs.unit.tasks = nil
	}
	if cap(rs.buf) > maxScratch<<10 {
		rs.buf = nil
	}
}

func newReadState() *readState {
	return &readState{names: make(map[string]*method)}
}

// method is what the server learns about a method name as it serves it.
//
// Requests run inline on the reading goroutine, which is the fastest way
// to run a handler that returns quickly. One inline run in sampleEvery is
// timed; a method whose handler took longer than quickRun twice in a row
// then (once could be a pause of the collector), or held the reader up
// until reading was handed off, is marked slow, and its
// requests start on goroutines of their own from then on, so that handlers
// that wait (on I/O, on timers) or compute for long run side by side. A
// slow method that then returns quickly many times in a row is marked
// fast again.
type method struct {
	name     string
	route    atomic.Pointer[route] // the Mux's handler, when serving a Mux
	slow     atomic.Bool
	fast     atomic.Int32 // quick runs in a row while slow
	slowRuns atomic.Int32 // timed inline runs in a row that were not quick
}

// route caches what a Mux holds for one method, and which version of the
// Mux's table that was.
type route struct {
	table   *map[string]Handler
	handler Handler
}

// handler returns the handler for m: looked up in mux once for each
// version of its table, so that a request costs one map lookup, not two.
func (m *method) handler(mux *Mux) Handler {
	table := mux.handlers.Load()
	if r := m.route.Load(); r != nil && r.table == table {
		return r.handler
	}
	var h Handler
	if table != nil {
		h = (*table)[m.name]
	}
	m.route.Store(&route{table: table, handler: h})
	return h
}

// quickRun is how short a run on a goroutine of its own counts as quick,
// and quickRuns how many in a row make a slow method fast again.
const (
	quickRun    = 50 * time.Microsecond
	quickRuns   = 64
	sampleEvery = 32
)

// newCtx returns a fresh request context. Contexts are carved from blocks
// and never reused, so one a handler keeps stays valid (and cancelled).
func (rs *readState) newCtx(c *conn, id string, inBatch bool) *reqCtx {
	if len(rs.slab) == 0 {
		rs.slab = make([]reqCtx, 256)
	}
	rc := &rs.slab[0]
	rs.slab = rs.slab[1:]
	rc.conn, rc.id, rc.inBatch = c, id, inBatch
	return rc
}

// intern returns what is known of the method named b, without allocating
// for the names it has seen before.
func (rs *readState) intern(b []byte) *method {
	if m, ok := rs.names[string(b)]; ok {
		return m
	}
	m := &method{name: string(b)}
	if len(rs.names) < 1024 {
		rs.names[m.name] = m
	}
	return m
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

// unit is the work of one line: a single request, or the entries of a
// batch in order.
type unit struct {
	tasks []task
	batch bool
	cost  int // bytes held against the connection's budget until it ends
}

// task is one request of a unit.
type task struct {
	req    Request
	ctx    *reqCtx
	method *method
	preErr *Error   // answer with this and do not run
	enc    *encoder // holds the encoded result until it is written
}

// slow reports whether any task of u is for a method marked slow.
func (u *unit) slow() bool {
	for i := range u.tasks {
		if m := u.tasks[i].method; m != nil && m.slow.Load() {
			return true
		}
	}
	return false
}

// buildUnit turns the scanned line into the tasks of u. Invalid entries
// become tasks that carry their error; cancels inside a batch take effect
// at once and become nothing; valid responses from the peer are dropped.
func (c *conn) buildUnit(rs *readState, u *unit, kind lineKind) {
	u.tasks = u.tasks[:0]
	u.batch = kind == lineBatch
	if kind == lineObject {
		c.addTask(rs, u, &rs.env, false)
		return
	}
	for i := range rs.batch {
		e := &rs.batch[i]
		if e.isCancel() {
			c.cancelFrom(rs, e.params)
			continue
		}
		c.addTask(rs, u, e, true)
	}
}

// addTask appends the task for one envelope to u.
func (c *conn) addTask(rs *readState, u *unit, e *envelope, inBatch bool) {
	why := e.checkRequest()
	if why != "" && e.object && e.method == nil && (e.result != nil || e.err != nil) {
		if _, rwhy := e.response(); rwhy == "" {
			c.log.Debug("jsonrpc: dropped a response sent to a server", slog.String("id", string(e.id)))
			return
		}
	}
	u.tasks = append(u.tasks, task{})
	t := &u.tasks[len(u.tasks)-1]
	if why != "" {
		// The specification's examples fix the wire error to the bare
		// code and message; the reason goes to the log.
		c.log.Debug("jsonrpc: invalid request", slog.String("reason", why))
		t.req.ID = ID{raw: rs.arena.str(e.replyID())}
		t.preErr = ErrInvalidRequest
		return
	}
	t.method = rs.intern(methodName(e.method))
	t.req.Method = t.method.name
	if e.id != nil {
		t.req.ID = ID{raw: rs.arena.str(e.id)}
	}
	t.req.Params = e.params
	t.ctx = rs.newCtx(c, t.req.ID.raw, inBatch)
}

// enqueue queues a copy of line for a worker, waiting while the queue is
// full. Its requests are reachable by a cancel from then on.
//
// The reader waits first, while the queue is full or the line would take
// the bytes held for the connection's requests past its budget (unless
// nothing is held), so that a peer that sends faster than the handlers
// answer, or stops reading the answers, meets backpressure.
func (c *conn) enqueue(rs *readState, line []byte) {
	cost := len(line)
	c.mu.Lock()
	for !c.stopping.Load() && (len(c.queue) >= int(c.maxFlight) && c.running.Load() >= c.maxFlight ||
		c.overBudget(cost)) {
		c.cond.Wait()
	}
	c.held.Add(int64(cost))
	c.mu.Unlock()

	own := append([]byte(nil), line...)
	var kind lineKind
	kind, rs.batch = scanLine(own, &rs.env, rs.batch, c.maxBatch)
	u := &unit{cost: cost}
	c.buildUnit(rs, u, kind)
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(u.tasks) == 0 || c.isAborted() {
		c.held.Add(int64(-cost))
		c.cond.Broadcast()
		return
	}
	for _, t := range u.tasks {
		c.registerLocked(t.ctx)
	}
	if c.running.Add(1) <= c.maxFlight {
		c.live++
		go func() {
			defer c.exit()
			c.runUnit(u, nil)
			c.release(u.cost)
			c.work()
		}()
		return
	}
	c.running.Add(-1)
	c.queue = append(c.queue, u)
}

// work runs queued units until there are none, then gives up its slot.
// While a unit waits in the queue, every slot is held by a worker, so the
// queue never waits without one.
func (c *conn) work() {
	for {
		c.mu.Lock()
		if len(c.queue) == 0 {
			c.running.Add(-1)
			c.cond.Broadcast()
			c.mu.Unlock()
			return
		}
		u := c.queue[0]
		c.queue[0] = nil
		c.queue = c.queue[1:]
		c.cond.Broadcast()
		c.mu.Unlock()
		c.runUnit(u, nil)
		c.release(u.cost)
	}
}

// runUnit runs the tasks of u in order and writes the answer. rs is the
// reading role when the unit runs inline, and nil on a worker.
//
// While the unit runs inline, nothing is registered for cancels: nobody
// reads while it runs. If the watchdog hands reading on meanwhile, it
// registers the request running then; from that point this goroutine
// registers each later request itself, and takes every request out of
// reach once it has finished.
func (c *conn) runUnit(u *unit, rs *readState) {
	var out []byte
	if u.batch {
		if rs != nil {
			out = rs.buf[:0]
		}
		out = append(out, '[')
	}
	n := 0
	var prev *reqCtx
	for i := range u.tasks {
		t := &u.tasks[i]
		inline := false
		if t.ctx != nil {
			if i > 0 && !offReader(rs) {
				rs.current.Store(int32(i))
			}
			// Checked after current is set: a handoff from here on
			// registers this task, and one before it is seen here.
			if offReader(rs) {
				c.settle(prev)
				c.register(t.ctx)
			} else {
				inline = true
			}
			prev = t.ctx
		}
		result, werr, ok := c.runTask(t, rs, inline)
		if !ok || t.req.ID.IsZero() {
			c.encoders.release(t)
			continue
		}
		if !u.batch {
			if offReader(rs) {
				c.settle(prev)
			}
			c.writeAnswer(t.req.ID.raw, result, werr, offReader(rs))
			c.encoders.release(t)
			return
		}
		if n > 0 {
			out = append(out, ',')
		}
		n++
		out = appendAnswer(out, t.req.ID.raw, result, werr)
		c.encoders.release(t)
	}
	if offReader(rs) {
		c.settle(prev)
	}
	if n > 0 {
		out = append(out, ']')
		err := c.out.append(func(b []byte) []byte { return append(b, out...) }, offReader(rs))
		if err != nil {
			c.abort(err)
		}
	}
	if rs != nil && cap(out) <= 1<<20 {
		rs.buf = out[:0]
	}
}

// runTask invokes t, and learns from how long it took whether its method
// is slow.
func (c *conn) runTask(t *task, rs *readState, inline bool) (result []byte, werr *Error, ok bool) {
	if t.method == nil {
		return c.invoke(t, inline)
	}
	if inline {
		if rs.sample++; rs.sample%sampleEvery != 1 {
			result, werr, ok = c.invoke(t, true)
			if offReader(rs) {
				t.method.slow.Store(true) // it held the reader up
			}
			return result, werr, ok
		}
		start := time.Now()
		result, werr, ok = c.invoke(t, true)
		switch {
		case offReader(rs):
			t.method.slow.Store(true)
		case time.Since(start) < quickRun:
			t.method.slowRuns.Store(0)
		case t.method.slowRuns.Add(1) >= 2:
			t.method.slowRuns.Store(0)
			t.method.fast.Store(0)
			t.method.slow.Store(true)
		}
		return result, werr, ok
	}
	start := time.Now()
	result, werr, ok = c.invoke(t, false)
	if t.method.slow.Load() {
		if time.Since(start) >= quickRun {
			t.method.fast.Store(0)
		} else if t.method.fast.Add(1) >= quickRuns {
			t.method.slow.Store(false)
			t.method.fast.Store(0)
		}
	}
	return result, werr, ok
}

// offReader reports whether work is running off the reading role: on a
// worker (rs is nil), or inline on a reader that has been handed off.
func offReader(rs *readState) bool {
	return rs == nil || rs.state.Load()&stateHandedOff != 0
}

func (c *conn) register(rc *reqCtx) {
	c.mu.Lock()
	c.registerLocked(rc)
	c.mu.Unlock()
}

// settle takes a finished request out of reach of cancels.
func (c *conn) settle(rc *reqCtx) {
	if rc == nil {
		return
	}
	c.mu.Lock()
	rc.settled = true
	if rc.registered {
		c.unregisterLocked(rc)
	}
	c.mu.Unlock()
}

func (c *conn) registerLocked(rc *reqCtx) {
	if rc == nil || rc.settled || rc.registered || rc.id == "" {
		return
	}
	if c.active == nil {
		c.active = make(map[string][]*reqCtx)
	}
	c.active[rc.id] = append(c.active[rc.id], rc)
	rc.registered = true
}

func (c *conn) unregisterLocked(rc *reqCtx) {
	rc.registered = false
	list := c.active[rc.id]
	for i, x := range list {
		if x == rc {
			list = append(list[:i], list[i+1:]...)
			break
		}
	}
	if len(list) == 0 {
		delete(c.active, rc.id)
	} else {
		c.active[rc.id] = list
	}
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

// arm starts the watchdog's timer unless it runs already. The reader
// calls it as it starts each unit, so an idle connection has no timer.
func (c *conn) arm() {
	if !c.armed.Load() && c.armed.CompareAndSwap(false, true) {
		c.timer.Reset(handoffDelay)
	}
}

// tick is the watchdog: it hands reading to a fresh goroutine when the
// reader has been busy with the same unit since the last tick, that is for
// longer than handoffDelay. It re-arms itself while the reader is at work,
// and rests once the reader waits in Read or reading has ended.
func (c *conn) tick() {
	c.tickMu.Lock()
	defer c.tickMu.Unlock()
	if c.dead {
		return
	}
	rs := c.reader.Load()
	s := rs.state.Load()
	if rs == c.lastRS && s == c.lastSeq && s&stateBusy != 0 && s&stateHandedOff == 0 {
		c.handoff(rs, s)
		rs = c.reader.Load()
		s = rs.state.Load()
	}
	c.lastRS, c.lastSeq = rs, s
	if c.stopping.Load() || (c.reading.Load() && s&stateBusy == 0) {
		c.armed.Store(false)
		// A reader that started a unit meanwhile saw the timer armed and
		// left it: look again, now that it shows as disarmed.
		if s := c.reader.Load().state.Load(); s&stateBusy == 0 || c.stopping.Load() {
			return
		}
		if !c.armed.CompareAndSwap(false, true) {
			return
		}
	}
	c.timer.Reset(handoffDelay)
}

// handoff passes the reading role on, if the reader is still busy with the
// same unit.
func (c *conn) handoff(rs *readState, s uint64) {
	// The unit keeps the read buffer its requests lie in: that counts
	// against the budget until the unit ends.
	c.mu.Lock()
	if c.stopping.Load() {
		c.mu.Unlock()
		return
	}
	c.live++
	rs.charged = int(rs.bufSize.Load())
	c.held.Add(int64(rs.charged))
	c.mu.Unlock()
	if !rs.state.CompareAndSwap(s, s|stateHandedOff) {
		c.mu.Lock()
		c.held.Add(int64(-rs.charged))
		rs.charged = 0
		c.mu.Unlock()
		c.exit()
		return
	}
	// The handler that held the reader up now holds a slot.
	c.running.Add(1)
	// The unit is still running, so its tasks stay as they are.
	if i := int(rs.current.Load()); i < len(rs.unit.tasks) {
		if m := rs.unit.tasks[i].method; m != nil {
			m.slow.Store(true) // its handler held the reader up
		}
		if rc := rs.unit.tasks[i].ctx; rc != nil && rc.flags.Load()&flagEnded == 0 {
			rc.flags.Or(flagInline)
			c.register(rc)
		}
	}
	next := newReadState()
	next.names = rs.names
	c.reader.Store(next)
	go c.readLoop(next, true)
}

// reqCtx is the context of one request. Cancellation is armed lazily: a
// handler that never asks for Done costs no channel and no goroutine, and
// the contexts of many requests share one allocation.
type reqCtx struct {
	conn    *conn
	id      string // the request's id; "" for a notification
	armed   atomic.Pointer[armedCtx]
	flags   atomic.Uint32
	inBatch bool

	// Guarded by conn.mu.
	registered bool
	settled    bool
}

// armedCtx is the part of a reqCtx made on demand.
type armedCtx struct {
	mu   sync.Mutex
	done chan struct{}
	err  error
	stop func() bool
}

const (
	flagStarted       = 1 << iota // the handler has been called, or skipped
	flagPeerCancelled             // a cancel for its id arrived
	flagAnswered                  // answered before it started
	flagEnded                     // the handler returned
	flagInline                    // running (or about to) on a handed-off reader
)

var _ context.Context = (*reqCtx)(nil)

// Deadline returns the deadline of the context Serve was given.
func (rc *reqCtx) Deadline() (time.Time, bool) { return rc.conn.ctx.Deadline() }

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

// limitError is the Invalid Request error for input over one of the
// server's limits, with the limit in its data.
func limitError(reason string, limit int) *Error {
	return ErrInvalidRequest.WithData(map[string]any{"reason": reason, "limit": limit})
}

// invoke runs the handler for t and encodes its result. It returns
// ok=false when the request was already answered, having been cancelled
// while it waited for a slot.
//
// A task run inline was registered for cancels, if at all, only by a
// handoff, which never answers it early: a plain check of the cancel flag
// is enough. Any other task arbitrates with cancelFrom through flagStarted.
func (c *conn) invoke(t *task, inline bool) (result []byte, werr *Error, ok bool) {
	if t.preErr != nil {
		return nil, t.preErr, true
	}
	rc := t.ctx
	var old uint32
	if inline {
		old = rc.flags.Load() & flagPeerCancelled
	} else {
		old = rc.flags.Or(flagStarted) & (flagPeerCancelled | flagAnswered)
	}
	if old != 0 {
		rc.end()
		if old&flagAnswered != 0 {
			return nil, nil, false
		}
		return nil, ErrRequestCancelled, true
	}
	defer func() {
		if v := recover(); v != nil {
			c.log.Error("jsonrpc: handler panicked",
				slog.String("method", t.req.Method),
				slog.Any("panic", v),
				slog.String("stack", string(debug.Stack())))
			result, werr, ok = nil, internalError("panic", fmt.Sprint(v), c.hideDetail), true
		}
		rc.end()
	}()
	h := c.handler
	if c.mux != nil {
		if h = t.method.handler(c.mux); h == nil {
			return nil, ErrMethodNotFound, true
		}
	}
	v, err := h.ServeJSONRPC(rc, &t.req)
	if err != nil {
		if t.req.ID.IsZero() {
			c.log.Debug("jsonrpc: notification handler failed",
				slog.String("method", t.req.Method), slog.Any("error", err))
		}
		return nil, toWireError(err, rc.flags.Load()&flagPeerCancelled != 0, c.hideDetail), true
	}
	if t.req.ID.IsZero() {
		return nil, nil, true
	}
	if raw, isRaw := v.(json.RawMessage); isRaw && sameBytes(raw, t.req.Params) {
		return raw, nil, true // the request's own params, validated as read
	}
	raw, enc, err := c.encoders.encode(v)
	if err != nil {
		return nil, internalError(fmt.Sprintf("%T", err), "cannot encode result: "+err.Error(), c.hideDetail), true
	}
	t.enc = enc
	return raw, nil, true
}

// encoders keeps json.Encoders and their buffers for reuse, so that
// encoding a result costs no allocation of its own.
type encoders struct {
	pool sync.Pool // of *encoder
}

type encoder struct {
	buf bytes.Buffer
	enc *json.Encoder
}

// encode encodes v as encodeValue does. When the bytes come from a pooled
// encoder, it is returned too, to be released once they are written.
func (es *encoders) encode(v any) ([]byte, *encoder, error) {
	switch v.(type) {
	case nil, json.RawMessage, string:
		raw, err := encodeValue(v)
		return raw, nil, err
	}
	e, _ := es.pool.Get().(*encoder)
	if e == nil {
		e = new(encoder)
		e.enc = json.NewEncoder(&e.buf)
		e.enc.SetEscapeHTML(false)
	}
	e.buf.Reset()
	if err := e.enc.Encode(v); err != nil {
		es.put(e)
		return nil, nil, err
	}
	return bytes.TrimSuffix(e.buf.Bytes(), []byte("\n")), e, nil
}

// release returns the encoder that holds t's result, if any.
func (es *encoders) release(t *task) {
	if t.enc != nil {
		es.put(t.enc)
		t.enc = nil
	}
}

func (es *encoders) put(e *encoder) {
	if e.buf.Cap() <= 64<<10 {
		es.pool.Put(e)
	}
}

// sameBytes reports whether a and b are the same non-empty slice of memory.
func sameBytes(a, b []byte) bool {
	return len(a) > 0 && len(a) == len(b) && &a[0] == &b[0]
}

// encodeValue encodes a result or stream item. Raw JSON passes through as
// it is, once checked.
func encodeValue(v any) ([]byte, error) {
	switch v := v.(type) {
	case nil:
		return nullID, nil
	case json.RawMessage:
		if v == nil {
			return nullID, nil
		}
		if !validJSON(v) {
			return nil, errors.New("json.RawMessage is not valid JSON")
		}
		return oneLine(v), nil
	case string:
		return appendString(nil, v), nil
	}
	return json.Marshal(v)
}

// encodeParams encodes the params of a notification or request, which must
// be an object or an array; nil means none.
func encodeParams(params any) ([]byte, error) {
	if params == nil {
		return nil, nil
	}
	if raw, ok := params.(json.RawMessage); ok && raw == nil {
		return nil, nil
	}
	raw, err := encodeValue(params)
	if err != nil {
		return nil, err
	}
	if !validParams(raw) {
		return nil, Errorf(CodeInvalidParams, "Invalid params: params must encode as a JSON object or array")
	}
	return raw, nil
}

func appendAnswer(b []byte, id string, result []byte, werr *Error) []byte {
	if werr != nil {
		return appendErrorResponse(b, id, werr)
	}
	return appendResultResponse(b, id, result)
}

// largeResult is the size from which a result is written from where it
// lies rather than copied into the output buffer.
const largeResult = 64 << 10

// writeAnswer writes a response; flush is set off the reading goroutine,
// where nobody else would flush it soon.
func (c *conn) writeAnswer(id string, result []byte, werr *Error, flush bool) {
	var err error
	if werr == nil && len(result) >= largeResult {
		head := appendResultResponse(nil, id, nil)
		err = c.out.writeLarge(head[:len(head)-1], result, []byte("}"))
	} else {
		err = c.out.append(func(b []byte) []byte { return appendAnswer(b, id, result, werr) }, flush)
	}
	if err != nil {
		c.abort(err)
	}
}

func (c *conn) writeError(id []byte, e *Error, flush bool) {
	err := c.out.append(func(b []byte) []byte { return appendErrorResponse(b, id, e) }, flush)
	if err != nil {
		c.abort(err)
	}
}
