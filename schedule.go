package jsonrpc

// This file holds the scheduling of handlers: units run inline on the
// reading goroutine, the watchdog that hands reading on, the queue and the
// workers, and what the server learns about each method.

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"runtime/debug"
	"sync/atomic"
	"time"
)

// handoffDelay is how long a handler may run on the reading goroutine
// before reading moves to a fresh goroutine.
const handoffDelay = time.Millisecond

// readState is what the reading role owns. When a handler holds the
// reading goroutine up for too long, the role passes to a new goroutine
// with a fresh readState, and the old one stays with the handler.
type readState struct {
	// state is seq<<stateSeq | free | serial | handedOff | busy, where
	// seq counts the units run inline, and serial and free say where the
	// unit running stands in the order (see Order).
	state   atomic.Uint64
	current atomic.Int32 // index in unit.tasks of the task running inline

	env      envelope
	batch    []envelope
	unit     unit
	slab     []reqCtx
	slabSize int // the size of the last block of slab
	// slabQueued is set once a context of the block went to a queued
	// unit, whose line it keeps alive for as long as the block lives.
	slabQueued bool
	arena      arena
	names      map[string]*method // passed on with the reading role
	buf        []byte             // scratch for batch responses
	cancel     envelope
	sample     int // counts inline runs; one in sampleEvery is timed

	bufSize atomic.Int64 // size of the read buffer the unit running inline holds
	charged int          // guarded by conn.mu: bytes charged by the handoff
	off     bool         // guarded by conn.mu: the unit handed off is admitted (see admitLocked)
}

const (
	stateBusy      = 1
	stateHandedOff = 2
	stateSerial    = 4
	stateFree      = 8
	stateSeq       = 4 // the shift of seq
)

// maxScratch is the most entries the reading role keeps in its scratch
// space for batches while it waits for input; what a larger batch needed
// is let go.
const maxScratch = 256

// trim lets go of scratch space that a large batch needed, so that an idle
// connection holds no more than a small batch's worth, and of the block of
// contexts once one of them went to a queued unit: a context points to its
// request, which holds the unit's copy of its line. When the reader has
// let go of a large read buffer, bufGone, trim also forgets the slices of
// it that the scratch space still holds. Only the goroutine in the reading
// role calls it.
func (rs *readState) trim(bufGone bool) {
	if cap(rs.batch) > maxScratch {
		rs.batch = nil
	}
	if cap(rs.unit.tasks) > maxScratch {
		rs.unit.tasks = nil
	}
	if cap(rs.buf) > maxScratch<<10 {
		rs.buf = nil
	}
	if rs.slabQueued {
		rs.slab, rs.slabSize, rs.slabQueued = nil, 0, false
	}
	if bufGone {
		clear(rs.batch[:cap(rs.batch)])
		clear(rs.unit.tasks[:cap(rs.unit.tasks)])
		rs.env, rs.cancel = envelope{}, envelope{}
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
	name       string
	serialNote bool                  // its notifications are handled in arrival order (see Order)
	serialCall bool                  // and so are its calls
	free       bool                  // its messages are outside the order: Order.Concurrent names it
	route      atomic.Pointer[route] // the Mux's handler, when serving a Mux
	slow       atomic.Bool
	fast       atomic.Int32 // quick runs in a row while slow
	slowRuns   atomic.Int32 // timed inline runs in a row that were not quick
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

// intern returns what is known of the method named b, without allocating
// for the names it has seen before.
func (rs *readState) intern(c *conn, b []byte) *method {
	if m, ok := rs.names[string(b)]; ok {
		return m
	}
	return rs.learn(c, b)
}

// learn makes what is known of a method on its first message.
func (rs *readState) learn(c *conn, b []byte) *method {
	m := &method{name: string(b)}
	m.serialNote = c.order.serial(m.name, true)
	m.serialCall = c.order.serial(m.name, false)
	m.free = c.order.concurrent[m.name]
	if len(rs.names) < 1024 {
		rs.names[m.name] = m
	}
	return m
}

// unit is the work of one line: a single request, or the entries of a
// batch in order.
type unit struct {
	tasks []task
	batch bool
	// order is where it stands in the order (see Order): stateSerial if
	// it is handled in order, the units after it waiting for it;
	// stateFree if it is outside the order, all its messages being for
	// methods that Order.Concurrent names.
	order uint64
	cost  int // bytes held against the connection's budget until it ends
}

// task is one request of a unit.
type task struct {
	req     Request
	params  []byte // the params as scanned, which middleware may replace in req
	ctx     *reqCtx
	method  *method
	preErr  *Error   // answer with this and do not run
	handler Handler  // the Mux's handler, if looked up already
	enc     *encoder // holds the encoded result until it is written

	scratch [24]byte // holds a result that Func encoded, until it is written
}

// serial reports whether u is handled in order: the units after it wait
// for it.
func (u *unit) serial() bool { return u.order&stateSerial != 0 }

// free reports whether u is outside the order.
func (u *unit) free() bool { return u.order&stateFree != 0 }

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
//
// Messages of a batch that are not work for a handler (see route) are
// routed when act is set, and skipped otherwise.
func (c *conn) buildUnit(rs *readState, u *unit, kind lineKind, act bool) {
	u.tasks = u.tasks[:0]
	u.batch = kind == lineBatch
	u.order = stateFree
	if kind == lineObject {
		c.addTask(rs, u, &rs.env, false)
	} else {
		for i := range rs.batch {
			e := &rs.batch[i]
			if c.route(rs, e, act) {
				continue
			}
			c.addTask(rs, u, e, true)
		}
	}
	for i := range u.tasks {
		if rc := u.tasks[i].ctx; rc != nil {
			rc.req = &u.tasks[i].req
		}
	}
}

// addTask appends the task for one envelope to u.
func (c *conn) addTask(rs *readState, u *unit, e *envelope, inBatch bool) {
	why := e.checkRequest()
	if why != "" {
		// The specification's examples fix the wire error to the bare
		// code and message; the reason goes to the log.
		c.log.Debug("jsonrpc: invalid request", slog.String("reason", why))
		u.tasks = append(u.tasks, task{preErr: ErrInvalidRequest})
		u.tasks[len(u.tasks)-1].req.ID = ID{raw: rs.arena.str(e.replyID())}
		return
	}
	u.tasks = append(u.tasks, task{})
	t := &u.tasks[len(u.tasks)-1]
	t.method = rs.intern(c, methodName(e.method))
	m := t.method
	if !m.free {
		u.order &^= stateFree
	}
	switch {
	case e.id != nil:
		if m.serialCall {
			u.order |= stateSerial
		}
	case !m.serialNote:
	case c.mux == nil:
		u.order |= stateSerial
	default:
		// A notification that no handler takes changes nothing, and so
		// holds nothing up.
		if t.handler = m.handler(c.mux); t.handler != nil {
			u.order |= stateSerial
		}
	}
	t.req.Method = t.method.name
	if e.id != nil {
		t.req.ID = ID{raw: rs.arena.str(e.id)}
	}
	t.req.Params = e.params
	t.params = e.params
	t.ctx = rs.newCtx(c, t.req.ID.raw, inBatch)
}

// unitOverhead is what a queued unit costs against the budget besides its
// line: the unit, its tasks and contexts.
const unitOverhead = 512

// enqueue queues a copy of line for a worker. Its requests are reachable
// by a cancel from then on.
//
// The reader waits first while the line would take the bytes held for the
// connection's requests past its budget (unless nothing is held), so that
// a peer that sends faster than the handlers answer, or stops reading the
// answers, meets backpressure. It never waits for a free slot as such:
// reading goes on while handlers wait, so that the responses and cancels
// they wait for still arrive.
func (c *conn) enqueue(rs *readState, line []byte, act bool) {
	cost := len(line) + unitOverhead
	c.mu.Lock()
	for !c.stopping.Load() && c.overBudget(cost) {
		// budgetWait is stored before awaiting is read, and add stores
		// awaiting before it reads budgetWait: a call made now either is
		// seen here or wakes the wait.
		c.budgetWait.Store(true)
		if c.awaiting.Load() > 0 {
			// Waiting would keep out the answers that the handlers
			// holding the budget wait for: refuse the line instead.
			c.budgetWait.Store(false)
			c.mu.Unlock()
			c.refuse(rs, line, act)
			return
		}
		c.cond.Wait()
		c.budgetWait.Store(false)
	}
	c.held.Add(int64(cost))
	c.mu.Unlock()

	own := append([]byte(nil), line...)
	var kind lineKind
	kind, rs.batch = scanLine(own, &rs.env, rs.batch, c.maxBatch)
	u := &unit{cost: cost}
	c.buildUnit(rs, u, kind, act)
	rs.slabQueued = true
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
	if c.mustWaitLocked(u) {
		c.ordered = append(c.ordered, u)
		c.inOrder.Store(true)
		return
	}
	c.admitLocked(u)
	c.startLocked(u)
}

// startLocked runs u, admitted, on a worker of its own if a slot is free,
// and queues it otherwise.
func (c *conn) startLocked(u *unit) {
	if c.running.Add(1) <= c.maxFlight {
		c.live++
		go func() {
			defer c.exit()
			c.runUnit(u, nil)
			c.release(u.cost)
			c.finishUnit(u)
			c.work()
		}()
		return
	}
	c.running.Add(-1)
	c.queue = append(c.queue, u)
}

// refuse answers the requests of line with [ErrOverloaded] instead of
// running them; what route takes (responses, cancels) it still routes,
// and notifications are dropped. The reader writes the answers without
// waiting for room in the output (see lineWriter.appendNow): it must not
// stop reading here.
func (c *conn) refuse(rs *readState, line []byte, act bool) {
	u := &unit{}
	var kind lineKind
	kind, rs.batch = scanLine(line, &rs.env, rs.batch, c.maxBatch)
	c.buildUnit(rs, u, kind, act)
	c.log.Debug("jsonrpc: refused requests over the byte budget while awaiting the peer")
	var out []byte
	n := 0
	for i := range u.tasks {
		t := &u.tasks[i]
		if t.req.ID.IsZero() {
			continue
		}
		werr := t.preErr
		if werr == nil {
			werr = ErrOverloaded
		}
		if n > 0 {
			out = append(out, ',')
		}
		n++
		out = appendErrorResponse(out, t.req.ID.raw, werr)
	}
	if n == 0 {
		return
	}
	if u.batch {
		out = append(append([]byte{'['}, out...), ']')
	}
	c.out.appendNow(func(b []byte) []byte { return append(b, out...) })
}

// work runs queued units until there are none, then gives up its slot.
// While a unit waits in the queue, every slot is held by a worker or by a
// handler back from the peer, so the queue never waits without one. A
// handler waiting for a slot to go on (see retakeSlot) comes before the
// queue.
func (c *conn) work() {
	for {
		c.mu.Lock()
		if len(c.resume) > 0 || len(c.queue) == 0 {
			c.freeSlotLocked()
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
		c.finishUnit(u)
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
	if rs != nil && u.batch && cap(out) <= 1<<20 {
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
		if t.ctx != nil {
			t.ctx.reader = rs // for releaseReader, on this goroutine
		}
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

// arm starts the watchdog's timer unless it runs already. The reader
// calls it as it starts each unit, so an idle connection has no timer.
func (c *conn) arm() {
	if !c.armed.Load() && c.armed.CompareAndSwap(false, true) {
		if c.timer == nil {
			// Made on first use, so that a connection of one quick
			// request (HTTP) makes none. Only the reading role writes
			// it; tick and serve read it under tickMu.
			c.tickMu.Lock()
			if !c.dead {
				c.timer = time.AfterFunc(handoffDelay, c.tick)
			}
			c.tickMu.Unlock()
			return
		}
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
	if c.stopping.Load() || (c.parked.Load() && s&stateBusy == 0) {
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

// releaseReader passes the reading role on at once when the handler of rc
// runs inline on the reading goroutine and is about to wait for the peer:
// the answer it waits for must be read by someone, and the watchdog would
// take a millisecond or two to notice. It runs on the handler's goroutine,
// which alone reads rc.reader.
func (c *conn) releaseReader(rc *reqCtx) {
	rs := rc.reader
	if rs == nil {
		return // run by a worker
	}
	s := rs.state.Load()
	if s&stateBusy == 0 || s&stateHandedOff != 0 {
		return // handed off already
	}
	c.tickMu.Lock()
	defer c.tickMu.Unlock()
	if !c.dead && c.reader.Load() == rs {
		c.handoff(rs, s) // only if the unit is still this one (s)
	}
}

// handoff passes the reading role on, if the reader is still busy with the
// same unit.
func (c *conn) handoff(rs *readState, s uint64) {
	// The unit keeps the read buffer its requests lie in: that counts
	// against the budget until the unit ends. The state changes under mu,
	// so that the unit's goroutine, which learns of the handoff from the
	// state, then sees all that goes with it (charged, off).
	c.mu.Lock()
	if c.stopping.Load() || !rs.state.CompareAndSwap(s, s|stateHandedOff) {
		c.mu.Unlock()
		return
	}
	c.live++
	rs.charged = int(rs.bufSize.Load())
	c.held.Add(int64(rs.charged))
	// The handler that held the reader up now holds a slot, and its unit
	// runs off the reader, where the order counts it (see admitLocked).
	c.running.Add(1)
	if s&stateFree == 0 {
		c.admitSerialLocked(s&stateSerial != 0)
		rs.off = true
	}
	c.mu.Unlock()
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
		if old&flagAnswered != 0 || rc.flags.Load()&flagUnanswered != 0 {
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
		if h = t.handler; h == nil {
			h = t.method.handler(c.mux)
		}
		if h == nil {
			return nil, ErrMethodNotFound, true
		}
	}
	// A RawHandlerFunc is called directly, and a handler made by Func
	// encodes the common results itself, so that the result is not boxed
	// in an interface.
	var v any
	var err error
	var encoded []byte
	f, isRaw := h.(RawHandlerFunc)
	var raw json.RawMessage
	if isRaw {
		raw, err = f(rc, &t.req)
	} else {
		if th, ok := h.(typedHandler); ok {
			encoded, v, err = th.serveTo(rc, &t.req, t.scratch[:0])
		} else {
			v, err = h.ServeJSONRPC(rc, &t.req)
		}
		raw, isRaw = v.(json.RawMessage)
	}
	if rc.flags.Load()&flagUnanswered != 0 {
		return nil, nil, false // cancelled by the peer, which wants no answer
	}
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
	if encoded != nil {
		return encoded, nil, true
	}
	if isRaw {
		if sameBytes(raw, t.params) {
			return raw, nil, true // the request's own params, validated as read
		}
		if raw, err = encodeRaw(raw); err != nil {
			return nil, internalError(fmt.Sprintf("%T", err), "cannot encode result: "+err.Error(), c.hideDetail), true
		}
		return raw, nil, true
	}
	raw, enc, err := c.encoders.encode(v)
	if err != nil {
		return nil, internalError(fmt.Sprintf("%T", err), "cannot encode result: "+err.Error(), c.hideDetail), true
	}
	t.enc = enc
	return raw, nil, true
}
