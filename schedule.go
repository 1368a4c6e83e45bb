package jsonrpc

// This file holds the inline runs: what the reading role owns (readState),
// and how a unit runs, inline on the reading goroutine or on a worker.
// It depends on the connection's state (conn.go) and on the rest of
// scheduling (unit.go, invoke.go, reqctx.go, cancel.go).

import (
	"sync/atomic"
	"time"
)

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
	last       *method            // the method of the last message; while names is nil (an HTTP body), the one learnt
	buf        []byte             // scratch for batch responses
	cancel     envelope
	sample     int // counts inline runs; one in sampleEvery is timed
	// While buildUnit reads a batch, inBatch is set and the batch's
	// cancel notifications wait in deferred, to reach its requests too.
	inBatch  bool
	deferred []deferredCancel

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
