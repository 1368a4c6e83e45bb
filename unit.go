package jsonrpc

// This file holds the unit, the work of one line, and its tasks, and how a
// scanned line is built into one: the messages that are not work for a
// handler are routed (route: responses and stream items to pending.go,
// cancels to cancel.go, other notifications to OnNotify), the rest become
// tasks.
// It depends on the connection's state, on pending.go and cancel.go, and
// on the rest of scheduling (schedule.go, route.go, reqctx.go).

import (
	"bytes"
	"log/slog"
	"unsafe"
)

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
// become tasks that carry their error; cancels inside a batch become
// nothing, and take effect once the batch is read, on its own requests
// too; valid responses from the peer are delivered.
//
// Messages of a batch that are not work for a handler (see route) are
// routed when act is set, and skipped otherwise, but for its cancels,
// which still reach its requests.
func (c *conn) buildUnit(rs *readState, u *unit, kind lineKind, act bool) {
	u.tasks = u.tasks[:0]
	u.batch = kind == lineBatch
	u.order = stateFree
	if kind == lineObject {
		c.addTask(rs, u, &rs.env, false)
	} else {
		rs.inBatch = true
		for i := range rs.batch {
			e := &rs.batch[i]
			if c.route(rs, e, act) {
				continue
			}
			c.addTask(rs, u, e, true)
		}
		rs.inBatch = false
	}
	for i := range u.tasks {
		if rc := u.tasks[i].ctx; rc != nil {
			rc.req = &u.tasks[i].req
		}
	}
	if len(rs.deferred) > 0 {
		c.cancelDeferred(rs, u)
	}
}

// A deferredCancel is a cancel notification of a batch, which takes effect
// once the batch's requests are read, so that it reaches those of the
// batch too, wherever they stand in it (a batch is a set, which the
// specification lets a server take in any order).
type deferredCancel struct {
	in     *incomingCancel
	params []byte
	// again is set for a line routed once already, whose cancel reached
	// the requests in flight then: it now reaches only the batch's own
	// requests, built again, and is not reported again.
	again bool
}

// cancelDeferred applies the cancels of the batch just built into u: each
// reaches the requests in flight with its id, as any cancel does, and
// those of u. The requests of u are looked up by id in a map made once,
// so that a batch of requests and cancels costs time linear in its size.
func (c *conn) cancelDeferred(rs *readState, u *unit) {
	var own map[string][]*reqCtx
	for i := range u.tasks {
		if rc := u.tasks[i].ctx; rc != nil && rc.id != "" {
			if own == nil {
				own = make(map[string][]*reqCtx)
			}
			k := activeKey(rc.id)
			own[k] = append(own[k], rc)
		}
	}
	for i, d := range rs.deferred {
		c.cancelFrom(rs, d.in, d.params, own, d.again)
		rs.deferred[i] = deferredCancel{} // the params lie in the line
	}
	rs.deferred = rs.deferred[:0]
}

// addTask appends the task for one envelope to u.
func (c *conn) addTask(rs *readState, u *unit, e *envelope, inBatch bool) {
	why := e.checkRequest()
	if why != "" {
		// The specification's examples fix the wire error to the bare
		// code and message; the reason goes to the log.
		c.log.Debug("jsonrpc: invalid request", slog.String("reason", why))
		u.tasks = append(u.tasks, task{preErr: ErrInvalidRequest})
		u.tasks[len(u.tasks)-1].req.ID = ID{raw: c.str(rs, e.replyID())}
		return
	}
	u.tasks = append(u.tasks, task{})
	t := &u.tasks[len(u.tasks)-1]
	t.method = rs.intern(c, e.methodName())
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
		t.req.ID = ID{raw: c.str(rs, e.id)}
	}
	t.req.Params = e.params
	t.params = e.params
	t.ctx = rs.newCtx(c, t.req.ID.raw, inBatch)
}

// route handles, on the reader, a message that is not work for a
// handler: a cancel notification, a response to a call of ours, an item of
// one of our streams, or a notification for OnNotify. It
// reports whether e was one; act=false only reports, for a line whose
// messages were routed once already, except that a cancel in a batch
// still reaches the batch's own requests, which are new.
func (c *conn) route(rs *readState, e *envelope, act bool) bool {
	if !e.object {
		return false
	}
	if e.method == nil {
		if e.result == nil && e.err == nil {
			return false
		}
		if _, why := e.response(); why != "" {
			return false // answered as an Invalid Request
		}
		if act {
			c.deliver(e)
		}
		return true
	}
	if e.id != nil {
		return false
	}
	// A notification: only three kinds are routed, so the common one is
	// ruled out by its method before the envelope is checked.
	name := e.method
	if bytes.IndexByte(name, '\\') >= 0 {
		name = appendString(nil, string(methodName(name))) // written with escapes
	}
	in := c.cancelIn(name)
	cancel := in != nil
	item := !cancel && string(name) == `"`+StreamItemMethod+`"`
	if !cancel && !item && c.onNotify == nil || e.checkRequest() != "" {
		return false
	}
	switch {
	case cancel:
		switch {
		case rs.inBatch:
			// Built again (act=false), a batch's own requests are new,
			// and the cancel must reach them too.
			rs.deferred = append(rs.deferred, deferredCancel{in: in, params: e.params, again: !act})
		case act:
			c.cancelFrom(rs, in, e.params, nil, false)
		}
		return true
	case item && c.streamItem(e.params, act):
		return true
	case c.onNotify != nil:
		if act {
			c.onNotify(&Request{Method: string(e.methodName()), Params: e.params})
		}
		return true
	}
	return false
}

// release returns the encoder that holds t's result, if any.
func (es *encoders) release(t *task) {
	if t.enc != nil {
		es.put(t.enc)
		t.enc = nil
	}
}

// str returns b, part of a line read, as a string that stays valid once
// the read buffer is reused: a copy in rs's arena, or, for an HTTP body,
// which is never reused, b's own bytes.
func (c *conn) str(rs *readState, b []byte) string {
	if c.in.mode == modeWhole && len(b) > 0 {
		return unsafe.String(&b[0], len(b))
	}
	return rs.arena.str(b)
}
