package jsonrpc

// This file holds what the server learns about each method it serves:
// whether it is slow, where its messages stand in the order, and its
// handler in a Mux.

import (
	"sync/atomic"
	"time"
)

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
	first      route                 // the route looked up when it was learnt; never changed after
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

// Bounds of what a reading role remembers of methods: at most
// maxMethods names, each of at most maxMethodName bytes, so that a peer
// that sends many methods, or long ones, makes it hold at most 256 KiB.
// A method past them is looked up for each message.
const (
	maxMethods    = 1024
	maxMethodName = 256
)

// intern returns what is known of the method named b, without allocating
// for the names it has seen before.
func (rs *readState) intern(c *conn, b []byte) *method {
	// The method of the message before is the likeliest, and a compare
	// costs less than the map's hash.
	if m := rs.last; m != nil && m.name == string(b) {
		return m
	}
	if m, ok := rs.names[string(b)]; ok {
		rs.last = m
		return m
	}
	m := rs.learn(c, b)
	if len(b) <= maxMethodName {
		rs.last = m
	}
	return m
}

// learn makes what is known of a method on its first message. The
// method's handler in a Mux is looked up now, before anyone else sees
// it, into the route the method holds for it.
func (rs *readState) learn(c *conn, b []byte) *method {
	m := new(method)
	if c.in.mode == modeWhole && len(b) > 0 {
		m.name = c.str(rs, b) // the body is never reused
	} else {
		m.name = string(b)
	}
	m.serialNote = c.order.serial(m.name, true)
	m.serialCall = c.order.serial(m.name, false)
	m.free = c.order.concurrent[m.name]
	if c.mux != nil {
		m.first.table = c.mux.handlers.Load()
		if m.first.table != nil {
			m.first.handler = (*m.first.table)[m.name]
		}
		m.route.Store(&m.first)
	}
	if len(b) > maxMethodName {
		return m
	}
	if rs.names == nil {
		// The reading role of an HTTP body keeps its methods only from
		// the second on (a batch), so that a body of one request
		// makes no map: the first is rs.last until then.
		if rs.last == nil {
			return m
		}
		rs.names = map[string]*method{rs.last.name: rs.last}
	}
	if len(rs.names) < maxMethods {
		rs.names[m.name] = m
	}
	return m
}
