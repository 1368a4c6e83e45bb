package jsonrpc

// This file holds the inline runs and the hand-off: what the reading role
// owns, how a unit runs, inline on the reading goroutine or on a worker,
// and the watchdog that hands reading on to a fresh goroutine when a
// handler holds it up.

import (
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
