package jsonrpc

// This file holds reading: serve, which runs a connection to its end, the
// read loop that turns each line into work, run inline or queued, the
// watchdogs of the reading role (the hand-off to a fresh goroutine when a
// handler holds the reader up, and the idle timeout).
// It depends on the connection's state (conn.go) and on scheduling
// (schedule.go, queue.go, unit.go, order.go, slots.go, cancel.go).

import (
	"context"
	"errors"
	"io"
	"sync"
	"time"
)

func (c *conn) serve(ctx context.Context) error {
	if c.idle > 0 {
		defer c.watchIdle()()
	}
	drained := false // the end of the input had both its graces
	if c.in.mode == modeWhole {
		// An HTTP body, read already, is served off its goroutine too,
		// so that ServeHTTP can return after the grace period while a
		// handler ignores its context; see growStack. ServeHTTP made
		// its reading role's state with the connection.
		rs := c.firstRS
		c.firstRS = nil
		go func() {
			growStack()
			c.readLoop(rs, false)
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
	_ = c.out.flushOrLeave()
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
	c.failCalls(err, c.out)
	if err == nil || errors.Is(err, io.EOF) {
		err = c.out.Err()
	}
	if errors.Is(err, ErrServerClosed) {
		return ErrServerClosed
	}
	return err
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
		c.flush()
		return
	}
	c.flushAsync()
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
	switch c.stopping.Load() {
	case readStop:
		return false
	case readDrain:
		c.checkDrain() // the work may have ended with the last line
	}
	return true
}

// afterRead notes that the reader is back from Read.
func (c *conn) afterRead() {
	c.parked.Store(false)
	if c.silence.timeout > 0 {
		c.fills.Add(1)
	}
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
		if c.stopped() {
			c.flushAsync()
			return
		}
		line, err := c.in.ReadMessage()
		if s := c.stopping.Load(); s != readOn {
			if s == readStop {
				// Serve may have returned already: serve nothing
				// more.
				return
			}
			if err == nil {
				// Shutdown: answer, run nothing more.
				c.refuse(rs, line, true, errStopping)
				c.checkDrain()
				continue
			}
		}
		if err != nil {
			if errors.Is(err, ErrMessageTooLarge) {
				// A response to a call of ours, as far as its head
				// shows, fails the call and is not answered.
				if !c.failTooLarge(err) {
					c.writeError(nullID, limitError("message too large", c.in.max))
				}
				continue
			}
			if errors.Is(err, ErrBadHeader) {
				// The framing lost one message and found the next.
				c.writeError(nullID, ErrParse)
				continue
			}
			c.stopReading(err, false)
			if !c.in.IsClosed() {
				c.failCalls(err, c.out) // no response can come any more
			}
			if c.ended != nil && c.stopping.Load() != readDrain {
				// (Shutdown, draining, waits for the work in flight
				// without limit.)
				c.endOnce.Do(func() { close(c.ended) })
			}
			c.flushFromReader() // nothing is left to read: no deadlock
			return
		}
		if !c.handleLine(rs, line) {
			return
		}
	}
}

// answerNoUnit answers a line of a kind that holds no request to run:
// not JSON, neither object nor array, an empty batch, or one too long.
func (c *conn) answerNoUnit(kind lineKind, line []byte) {
	switch kind {
	case lineInvalidJSON:
		c.writeError(nullID, ErrParse)
	case lineOther, lineEmptyBatch:
		c.writeError(nullID, ErrInvalidRequest)
	case lineBatchTooLong:
		if !c.dropLongAnswers(line) {
			c.writeError(nullID, limitError("batch too long", c.maxBatch))
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
	case lineObject:
		if c.route(rs, &rs.env, true) {
			return true
		}
	case lineBatch:
	default:
		c.answerNoUnit(kind, line)
		return true
	}

	// The reader runs a unit inline only while a slot is free for it and
	// the budget has room (a handoff charges the unit to both): the slot
	// is taken (running grows) only if reading is handed off; and only
	// while no unit in order runs off the reader, which it would pass.
	if c.inOrder.Load() || c.running.Load() >= c.maxFlight || c.overBudget(len(line)) || c.mem.full(c.in.charged) {
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
	// This goroutine is their only writer: a store of what they hold
	// already, a locked instruction, is skipped.
	if rs.current.Load() != 0 {
		rs.current.Store(0)
	}
	if size := int64(cap(c.in.buf)); rs.bufSize.Load() != size {
		rs.bufSize.Store(size)
	}
	seq := rs.state.Load()>>stateSeq + 1
	busy := seq<<stateSeq | stateBusy | u.order
	rs.state.Store(busy)
	if c.in.mode != modeWhole {
		// An HTTP body is one line, on a goroutine of its own: nothing
		// waits to be read behind it, so it needs no watchdog.
		c.arm()
	}
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
	// The unit's answer may have been added as if inline (not flushed)
	// just as reading moved on, and after the new reader looked for
	// output to flush before it read: nobody else would write it.
	c.flush()
	c.work()
	return false
}

// errIdle ends a connection that stayed idle for the server's IdleTimeout.
var errIdle = errors.New("jsonrpc: connection idle")

// errStalled ends a connection whose peer stopped reading for the server's
// IdleTimeout.
var errStalled = errors.New("jsonrpc: the peer stopped reading")

// watchIdle closes the connection once it has been idle for c.idle: no
// whole message read, nothing running, queued or awaited. It checks four
// times per period, so the connection ends between one and one and a
// quarter periods after its last activity. A connection whose peer has
// stopped reading, so that one write has been in flight for the whole
// period, is aborted, whatever its handlers are doing: they may be
// waiting to write.
func (c *conn) watchIdle() (stop func()) {
	every := max(c.idle/4, time.Millisecond)
	var (
		mu         sync.Mutex
		stopped    bool
		seen       = c.seen.Load()
		since      = time.Now()
		writes     uint64
		stallSince time.Time
		t          *time.Timer
	)
	t = time.AfterFunc(every, func() {
		mu.Lock()
		defer mu.Unlock()
		if stopped {
			return
		}
		now := time.Now()
		writing, n := c.out.progress()
		switch {
		case !writing || n != writes:
			writes, stallSince = n, time.Time{}
		case stallSince.IsZero():
			stallSince = now
		case now.Sub(stallSince) >= c.idle:
			c.abort(errStalled)
			return
		}
		if n := c.seen.Load(); n != seen || c.busy() {
			seen, since = n, now
		} else if now.Sub(since) >= c.idle {
			c.stopReading(errIdle, true)
			return
		}
		t.Reset(every)
	})
	return func() {
		mu.Lock()
		stopped = true
		t.Stop()
		mu.Unlock()
	}
}

// busy reports whether the connection has work: a unit running on the
// reader or off it, requests queued, or calls of its own awaiting answers.
func (c *conn) busy() bool {
	if c.running.Load() > 0 || c.held.Load() > 0 || c.awaiting.Load() > 0 {
		return true
	}
	if rs := c.reader.Load(); rs != nil && rs.state.Load()&stateBusy != 0 {
		return true
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.queue) > 0 || len(c.ordered) > 0
}

// growStack grows the stack of the new goroutine that serves an HTTP body
// at once to 16 KiB, about what it reaches (a handler decoding its params
// with encoding/json, its answer written through net/http). A goroutine
// starts with a stack of a few KiB; grown on demand, deep in a handler,
// the stack is copied with every frame on it, which cost a round trip
// more than the rest of starting the goroutine. Called first, the growth
// copies one frame.
//
//go:noinline
func growStack() {
	var room [8 << 10]byte
	useStack(room[:])
}

// useStack keeps growStack's array, so that its frame is the size it says.
//
//go:noinline
func useStack([]byte) {}

// handoffDelay is how long a handler may run on the reading goroutine
// before reading moves to a fresh goroutine.
const handoffDelay = time.Millisecond

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
	if c.stopped() || (c.parked.Load() && s&stateBusy == 0) {
		c.armed.Store(false)
		// A reader that started a unit meanwhile saw the timer armed and
		// left it: look again, now that it shows as disarmed.
		if s := c.reader.Load().state.Load(); s&stateBusy == 0 || c.stopped() {
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
	// The unit keeps the read buffer its requests lie in, and a batch's
	// requests cost more than their bytes (as in enqueue): that counts
	// against the budget until the unit ends. The state changes under mu,
	// so that the unit's goroutine, which learns of the handoff from the
	// state, then sees all that goes with it (charged, off).
	c.mu.Lock()
	if c.stopped() || !rs.state.CompareAndSwap(s, s|stateHandedOff) {
		c.mu.Unlock()
		return
	}
	c.live++
	rs.charged = int(rs.bufSize.Load()) + batchExtra(len(rs.unit.tasks))
	// The unit needs none of the envelopes the batch was scanned into,
	// and its goroutine reads no more lines: let them go.
	rs.batch = nil
	c.held.Add(int64(rs.charged))
	c.mem.take(rs.charged)
	// The handler that held the reader up now holds a slot, and its unit
	// runs off the reader, where the order counts it (see admitLocked).
	c.running.Add(1)
	if s&stateFree == 0 {
		c.admitSerialLocked(s&stateSerial != 0)
		rs.off = true
	}
	c.mu.Unlock()
	// The unit is still running, so its tasks stay as they are. The task
	// running and those after it come in reach of cancels now: cancels
	// are read again from here on, and the unit's goroutine registers
	// each task only as it starts it.
	tasks := rs.unit.tasks
	if i := int(rs.current.Load()); i < len(tasks) {
		if m := tasks[i].method; m != nil {
			m.slow.Store(true) // its handler held the reader up
		}
		c.mu.Lock()
		c.registerInlineLocked(tasks[i].ctx)
		for j := i + 1; j < len(tasks); j++ {
			c.registerLocked(tasks[j].ctx)
		}
		c.mu.Unlock()
	}
	next := newReadState()
	next.names = rs.names
	c.reader.Store(next)
	go c.readLoop(next, true)
}
