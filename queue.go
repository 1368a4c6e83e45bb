package jsonrpc

// This file holds the queue of units for the workers: a line admitted
// under the connection's byte budget (or refused with ErrOverloaded),
// queued, and run by a worker once a slot is free.

import "log/slog"

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
	notes := 0 // whether line holds a notification: 1 yes, -1 no, 0 not known yet
	c.mu.Lock()
	for !c.stopped() && c.overBudget(cost) {
		// budgetWait is stored before awaiting is read, and add stores
		// awaiting before it reads budgetWait: a call made now either is
		// seen here or wakes the wait.
		c.budgetWait.Store(true)
		if c.awaiting.Load() > 0 {
			// Waiting would keep out the answers that the handlers
			// holding the budget wait for: refuse the line instead.
			// Refused, notifications would be lost without a word to
			// their peer, so a line that holds one (a batch with its
			// requests) is queued over the budget, up to an overdraft
			// of the budget once more.
			c.budgetWait.Store(false)
			if c.held.Load()+int64(cost) <= 2*int64(c.budget) {
				if notes == 0 {
					c.mu.Unlock()
					notes = -1
					if holdsNotification(rs, line, c.maxBatch) {
						notes = 1
					}
					c.mu.Lock()
					continue // the budget may have changed meanwhile
				}
				if notes > 0 {
					break
				}
			}
			c.mu.Unlock()
			c.refuse(rs, line, act, ErrOverloaded)
			return
		}
		c.cond.Wait()
		c.budgetWait.Store(false)
	}
	if !c.mem.tryTake(cost, c.in.charged) {
		// The server's budget has no room: shed the line rather than
		// hold it.
		c.mu.Unlock()
		c.refuse(rs, line, act, errServerFull)
		return
	}
	c.held.Add(int64(cost))
	c.mu.Unlock()

	own := append([]byte(nil), line...)
	var kind lineKind
	kind, rs.batch = scanLine(own, &rs.env, rs.batch, c.maxBatch)
	u := &unit{cost: cost}
	c.buildUnit(rs, u, kind, act)
	if extra := batchExtra(len(u.tasks)); extra > 0 {
		// A batch's requests cost more than their bytes.
		u.cost += extra
		c.held.Add(int64(extra))
		c.mem.take(extra)
	}
	rs.slabQueued = true
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(u.tasks) == 0 || c.isAborted() {
		c.held.Add(int64(-u.cost))
		c.mem.give(u.cost)
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

// holdsNotification reports whether line is a notification, or a batch
// with a notification among its entries.
func holdsNotification(rs *readState, line []byte, maxBatch int) bool {
	var kind lineKind
	kind, rs.batch = scanLine(line, &rs.env, rs.batch, maxBatch)
	switch kind {
	case lineObject:
		return rs.env.notification()
	case lineBatch:
		for i := range rs.batch {
			if rs.batch[i].notification() {
				return true
			}
		}
	}
	return false
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

// refuse answers the requests of line with werr ([ErrOverloaded], or
// [ErrNotRun] once Shutdown began) instead of running them; what route
// takes (responses, cancels) it still routes, and notifications are
// dropped. The reader writes the answers without waiting for room in the
// output (see lineWriter.appendNow): it must not stop reading here.
func (c *conn) refuse(rs *readState, line []byte, act bool, werr *Error) {
	u := &unit{}
	var kind lineKind
	kind, rs.batch = scanLine(line, &rs.env, rs.batch, c.maxBatch)
	switch kind {
	case lineObject:
		if c.route(rs, &rs.env, act) {
			return
		}
	case lineBatch:
	default:
		c.answerNoUnit(kind, line) // as when running: nothing to refuse
		return
	}
	c.buildUnit(rs, u, kind, act)
	switch werr {
	case ErrOverloaded:
		c.log.Debug("jsonrpc: refused requests over the byte budget while awaiting the peer")
	case errServerFull:
		c.log.Debug("jsonrpc: refused requests over the server's memory budget")
	default:
		c.log.Debug("jsonrpc: refused requests after Shutdown")
	}
	var out []byte
	n := 0
	for i := range u.tasks {
		t := &u.tasks[i]
		if t.req.ID.IsZero() {
			if t.preErr == nil {
				c.log.Debug("jsonrpc: dropped a notification", slog.String("method", t.req.Method), slog.String("why", werr.Message))
			}
			continue
		}
		answer := t.preErr
		if answer == nil {
			answer = werr
		}
		if n > 0 {
			out = append(out, ',')
		}
		n++
		out = appendErrorResponse(out, t.req.ID.raw, answer)
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
		if len(c.resume) > 0 || len(c.queue) == 0 || c.running.Load() > c.maxFlight {
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
	c.mem.give(n)
}
