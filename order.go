package jsonrpc

// This file holds the order in which a connection handles the peer's
// messages.

// An Order says which of the peer's messages a connection handles one at
// a time, in the order they arrive. Handlers otherwise run concurrently
// (up to MaxInFlight), so that a slow request does not hold up the rest.
//
// The zero Order is what stateful protocols such as LSP and MCP need:
// each notification is handled alone, after the handlers of every message
// that arrived before it have returned, and before any message that
// arrives after it is handled. The requests between two notifications run
// concurrently with each other. So a request sees the effects of every
// notification before it and of none after it: a hover sees exactly the
// edits (didChange) the editor sent before it, as LSP requires. A
// notification for a method that the [Mux] has no handler for changes
// nothing and holds nothing up.
//
// A message in order still being handled holds up the handling of the
// messages after it, but not their reading: responses to this side's own
// calls and cancel notifications are acted on as they arrive, so a
// handler may call the peer and get its answer. It must not wait for a
// request of the peer's, though, nor for a notification: that message
// would wait for it. A request that runs for long holds up the
// notifications after it, and the requests after those: name its method
// in Concurrent if it reads no state that notifications change, or let it
// end early and carry on in a goroutine of its own.
//
// The order holds on every transport: a stream, each accepted socket, a
// [Conn]; over HTTP, each body is one
// message or one batch, whose entries are always handled in order, one at
// a time.
type Order struct {
	// All handles every request in order too, as notifications are: each
	// message is handled alone, in arrival order. For servers whose
	// requests change state. MaxInFlight then bounds only the requests
	// of methods named in Concurrent.
	All bool

	// Requests names methods whose requests are handled in order, as
	// notifications are.
	Requests []string

	// Concurrent names methods outside the order: their messages,
	// notifications or requests, wait for nothing and hold up nothing.
	Concurrent []string
}

// orderConfig is an Order ready for lookups.
type orderConfig struct {
	all        bool
	requests   map[string]bool
	concurrent map[string]bool
}

func (o Order) config() orderConfig {
	oc := orderConfig{all: o.All}
	if len(o.Requests) > 0 {
		oc.requests = make(map[string]bool, len(o.Requests))
		for _, m := range o.Requests {
			oc.requests[m] = true
		}
	}
	if len(o.Concurrent) > 0 {
		oc.concurrent = make(map[string]bool, len(o.Concurrent))
		for _, m := range o.Concurrent {
			oc.concurrent[m] = true
		}
	}
	return oc
}

// serial reports whether a message for method (a notification or a
// request) is handled in order.
func (oc *orderConfig) serial(method string, notification bool) bool {
	if oc.concurrent[method] {
		return false
	}
	return notification || oc.all || oc.requests[method]
}

// The order off the reading goroutine. A unit the reader runs inline ends
// before the reader reads on, so inline units keep their order by
// themselves. A unit that runs off the reader (queued, or handed off while
// it ran) is admitted first: a unit in order is admitted only when no
// admitted unit has not ended, and a unit not in order only when no unit
// in order has not ended. A unit that cannot be admitted yet waits in
// c.ordered, and so does every unit after it (inOrder tells the reader),
// until finishUnit, run as each admitted unit ends, admits them in
// arrival order. So units in order run one at a time, after everything
// before them and before everything after them, and the units between two
// of them run concurrently.

// mustWaitLocked reports whether u, about to run off the reader, has to
// wait for the units before it.
func (c *conn) mustWaitLocked(u *unit) bool {
	return !u.free() && (len(c.ordered) > 0 || c.offWrite || u.serial() && c.offReaders.Load() > 0)
}

// admitLocked counts u among the units that run off the reader, unless it
// is outside the order.
func (c *conn) admitLocked(u *unit) {
	if !u.free() {
		c.admitSerialLocked(u.serial())
	}
}

func (c *conn) admitSerialLocked(serial bool) {
	if serial {
		c.offWrite = true
		c.inOrder.Store(true)
	} else {
		c.offReaders.Add(1)
	}
}

// finishUnit counts out u, an admitted unit that has ended, and admits
// the units waiting that may run now: it runs the first of them itself
// (its caller holds a slot) and starts the others.
func (c *conn) finishUnit(u *unit) {
	if u.free() {
		return
	}
	for u != nil {
		c.mu.Lock()
		if u.serial() {
			c.offWrite = false
		} else {
			c.offReaders.Add(-1)
		}
		var next *unit
		for len(c.ordered) > 0 && !c.isAborted() {
			f := c.ordered[0]
			if c.offWrite || f.serial() && c.offReaders.Load() > 0 {
				break
			}
			c.ordered[0] = nil
			c.ordered = c.ordered[1:]
			c.admitLocked(f)
			if next == nil {
				next = f
			} else {
				c.startLocked(f)
			}
		}
		if len(c.ordered) == 0 {
			c.ordered = nil
		}
		c.inOrder.Store(len(c.ordered) > 0 || c.offWrite)
		c.cond.Broadcast()
		c.mu.Unlock()
		if u = next; u != nil {
			c.runUnit(u, nil)
			c.release(u.cost)
		}
	}
}
