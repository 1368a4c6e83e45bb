package jsonrpc

// This file holds the slots that bound the handlers running on a
// connection (MaxInFlight), and how a handler that waits for the peer
// gives its slot up and takes one again.

import "context"

// freeSlotLocked gives up a slot: to the first handler waiting to go on
// after a call to the peer, or else back to the pool. While more handlers
// run than the bound (one went on over it, see resumeLocked), the slot
// goes back to the pool: the excess ends with the handler that made it.
func (c *conn) freeSlotLocked() {
	if len(c.resume) > 0 && c.running.Load() <= c.maxFlight {
		c.popResumerLocked()
		return
	}
	c.running.Add(-1)
	c.cond.Broadcast()
}

// slotHolder returns the request context that ctx belongs to when it is
// that of a handler of c, so that a call to the peer made with it lets go
// of the handler's slot while it waits; otherwise nil.
func (c *conn) slotHolder(ctx context.Context) *reqCtx {
	rc, _ := ctx.Value(senderKey{}).(*reqCtx)
	if rc == nil || rc.conn != c {
		return nil
	}
	return rc
}

// parkCost is what a handler that waits for the peer, its slot given up,
// costs against the byte budgets besides its request's line: its
// goroutine's stack, grown by the handler's calls, and the state of its
// call. MaxInFlight does not bound such handlers, so without it a peer
// could park a goroutine of some kilobytes for every short line it sends
// and leaves unanswered.
const parkCost = 8 << 10

// leaveSlot lets the handler of rc, about to wait for the peer, give up
// the slot it holds, so that MaxInFlight bounds the handlers that run, not
// those that wait: handlers that call each other across a connection
// (A calls B, whose handler calls A, whose handler calls B ...) can never
// hold every slot while they wait for requests queued behind them. The
// slot goes to a handler waiting to go on, or to the next queued unit.
// A handler whose calls overlap gives it up once, at its first. While it
// waits so, it counts parkCost more against MaxPendingBytes and the
// server's MaxMemory: past them, new requests are refused with
// ErrOverloaded, as the reader cannot wait for room that only the answers
// it must read would give back (see enqueue), and so are those already
// queued as they come to start (see overParked).
func (c *conn) leaveSlot(rc *reqCtx) {
	c.mu.Lock()
	defer c.mu.Unlock()
	a := rc.arm()
	if a.waits++; a.waits > 1 || !rc.holdsSlot() || c.isAborted() || rc.flags.Load()&flagEnded != 0 {
		return
	}
	a.freed = true
	c.held.Add(parkCost)
	c.parkedBytes.Add(parkCost)
	c.mem.take(parkCost)
	switch {
	case len(c.resume) > 0:
		c.freeSlotLocked()
	case len(c.queue) > 0 && c.running.Load() <= c.maxFlight:
		c.live++
		go func() {
			defer c.exit()
			c.work()
		}()
	default:
		c.running.Add(-1)
		c.cond.Broadcast()
	}
}

// overParked reports whether handlers wait for the peer and the bytes
// held for the connection's requests, theirs counted, are past its
// budget: a queued request that comes to start then is refused with
// ErrOverloaded rather than run, since it could park one more goroutine.
// The requests were admitted at the cost of their lines, before the
// handlers ahead of them parked.
func (c *conn) overParked() bool {
	return c.parkedBytes.Load() > 0 && c.held.Load() > int64(c.budget)
}

// errParkedFull answers a request refused by overParked: it did not run.
var errParkedFull = ErrOverloaded.WithData(map[string]string{"reason": "handlers waiting for the peer"})

// retakeSlot takes a slot again for the handler of rc, back from its last
// call to the peer, waiting if every slot is taken. Handlers waiting so
// get the next slot freed, before the queue. A call that work the handler
// started made after the handler returned took no slot; one that it made
// before, and that ends after, leaves the slot to endSlot.
//
// stop is the Done channel of the call's context: once it is closed the
// handler goes on at once, over the bound, as after an abort, so that a
// call whose context ended returns at once (see Conn.Call).
func (c *conn) retakeSlot(rc *reqCtx, stop <-chan struct{}) {
	c.mu.Lock()
	a := rc.arm()
	if a.waits--; a.waits > 0 || !a.freed || rc.flags.Load()&flagEnded != 0 {
		c.mu.Unlock()
		return
	}
	c.resumeLocked(a, stop)
}

// endSlot settles the slot of a handler that has returned, a, the armed
// part of its context, while a call to the peer made with that context,
// on a goroutine the handler started, still waits and has given the
// handler's slot up: the goroutine that ran the handler takes a slot
// again to go on, as retakeSlot would, and the call takes none when it
// ends. Otherwise the slot would be given back twice, once by that
// goroutine and once for the call, and MaxInFlight exceeded.
func (c *conn) endSlot(a *armedCtx) {
	c.mu.Lock()
	if !a.freed {
		c.mu.Unlock()
		return
	}
	c.resumeLocked(a, nil)
}

// resumeLocked takes a slot again for a handler whose slot a call to the
// peer gave up (see retakeSlot), waiting if every slot is taken; it is
// called with c.mu held and unlocks it.
func (c *conn) resumeLocked(a *armedCtx, stop <-chan struct{}) {
	a.freed = false
	c.held.Add(-parkCost)
	c.parkedBytes.Add(-parkCost)
	c.mem.give(parkCost)
	c.cond.Broadcast() // a reader may wait for room in the budget
	// resumeN is stored before the reader's state is read, and the reader
	// stores its state before it reads resumeN (see admitResumer): a unit
	// that runs inline, which holds no slot but counts against the bound,
	// either is seen here or, when it ends, sees this wait.
	c.resumeN.Add(1)
	if c.running.Add(1)+c.inlineRunning() <= c.maxFlight || c.isAborted() {
		c.resumeN.Add(-1)
		c.mu.Unlock()
		return
	}
	c.running.Add(-1)
	ready := make(chan struct{})
	c.resume = append(c.resume, ready)
	c.mu.Unlock()
	select {
	case <-ready:
		return
	case <-c.aborted:
		// Nothing more is read: go on, over the bound, as the rest of
		// the connection's handlers end.
	case <-stop:
		// The call's context ended: go on at once, over the bound, so
		// that the call returns as its context says (see Conn.Call).
	}
	c.mu.Lock()
	for i, ch := range c.resume {
		if ch == ready {
			c.resume = append(c.resume[:i], c.resume[i+1:]...)
			c.resumeN.Add(-1)
			c.running.Add(1)
			break
		}
	}
	c.mu.Unlock()
}

// inlineRunning returns 1 while a unit runs inline on the reading role,
// and 0 otherwise.
func (c *conn) inlineRunning() int32 {
	if s := c.reader.Load().state.Load(); s&stateBusy != 0 && s&stateHandedOff == 0 {
		return 1
	}
	return 0
}

// admitResumer lets a handler that waits to go on after a call to the peer
// take the room that a unit run inline has just left, if no slot holder
// took it; the reader calls it after such a unit while resumeN says that
// someone waits.
func (c *conn) admitResumer() {
	c.mu.Lock()
	if len(c.resume) > 0 && c.running.Load() < c.maxFlight {
		c.running.Add(1)
		c.popResumerLocked()
	}
	c.mu.Unlock()
}

// popResumerLocked lets the first handler waiting for a slot go on.
func (c *conn) popResumerLocked() {
	close(c.resume[0])
	c.resume[0] = nil
	c.resume = c.resume[1:]
	c.resumeN.Add(-1)
}
