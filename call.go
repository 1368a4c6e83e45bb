package jsonrpc

// This file holds the outgoing side of a connection: calls, notifications
// and streams sent to the peer, through the interceptors (intercept.go),
// registered in the table of calls awaiting answers (pending.go).
// It depends on the connection's state and writer (conn.go), pending.go,
// and the reading role it releases while a handler waits (read.go).

import (
	"context"
	"encoding/json"
	"errors"
	"strconv"
)

// call sends a request and waits for its response; see [Conn.Call].
//
// oc is nil for a call as the caller makes it: its params are encoded
// here, and it passes through the interceptors if there are any. From the
// innermost send of the chain, oc is the call as the chain passes it on,
// with its params encoded and its id drawn (sendParams, sendID), and the
// call gives up no handler's slot, as it may come from a goroutine other
// than the handler's. (One function serves both, so that the direct path
// costs no more than it did before interceptors.)
func (c *conn) call(ctx context.Context, method string, params, result any, oc *outgoing) error {
	var (
		raw []byte
		bp  *[]byte // the pooled buffer raw lies in, if any
		id  int64
		rc  *reqCtx
	)
	if oc == nil {
		var err error
		if raw, bp, err = encodeParamsBuf(params); err != nil {
			return err
		}
		id = c.ids.n.Add(1)
		if c.chain != nil {
			// The chain may keep the params.
			return c.through(ctx, &outgoing{id: id, params: ownParams(raw, bp)}, method, result)
		}
		rc = c.slotHolder(ctx)
	} else {
		raw, id = oc.sendParams, oc.sendID
	}
	p, _ := c.calls.Get().(*pending)
	if p == nil {
		p = &pending{done: make(chan struct{}, 1)}
	}
	p.dest, p.line = result, linePos{}
	if err := c.add(id, p); err != nil {
		return err
	}
	if rc != nil {
		c.releaseReader(rc)
	}
	err := c.send(ctx, func(b []byte) []byte { return appendCall(b, id, method, raw) }, &p.line)
	if bp != nil {
		// send has copied the params into the output, or failed:
		// either way they are not read again.
		releaseParams(bp, raw)
	}
	if err != nil {
		if c.drop(id) {
			return c.sendErr(ctx, err)
		}
		<-p.done // failed by failCalls
		if _, out := err.(*sentError); out {
			return p.err
		}
		return unsent(p.err) // never sent
	}
	if rc != nil {
		c.leaveSlot(rc)
		defer c.retakeSlot(rc, ctx.Done())
	}
	if done := ctx.Done(); done == nil {
		<-p.done // a context that cannot end: a receive costs less than a select
	} else {
		select {
		case <-p.done:
		case <-done:
			if c.abandon(id, p) {
				p.dest = nil
				c.calls.Put(p)
				return sent(ctx.Err())
			}
		}
	}
	err = p.err
	p.dest, p.err = nil, nil
	c.calls.Put(p)
	return err
}

// through passes oc, a call or a stream, through the connection's
// interceptors, and decodes its result into dest (nil to drop it). A
// handler of ours that makes it gives up its slot meanwhile.
func (c *conn) through(ctx context.Context, oc *outgoing, method string, dest any) error {
	if rc := c.slotHolder(ctx); rc != nil {
		c.releaseReader(rc)
		c.leaveSlot(rc)
		defer c.retakeSlot(rc, ctx.Done())
	}
	return oc.through(ctx, c.chain, method, dest)
}

// nextID, sendCall, sendNotify and sendStream make the connection the
// outbound of its chain of interceptors.

func (c *conn) nextID() int64 { return c.ids.n.Add(1) }

func (c *conn) sendCall(ctx context.Context, oc *outgoing, id int64, method string, params []byte) (json.RawMessage, error) {
	var result json.RawMessage
	oc.sendID, oc.sendParams = id, params
	err := c.call(ctx, method, nil, &result, oc)
	return result, err
}

func (c *conn) sendNotify(ctx context.Context, oc *outgoing, method string, params []byte) error {
	oc.sendParams = params
	return c.notifyPeer(ctx, method, nil, oc)
}

func (c *conn) sendStream(ctx context.Context, oc *outgoing, id int64, method string, params []byte) (json.RawMessage, bool, error) {
	return c.streamCall(ctx, nil, id, method, params, oc.yield, true)
}

func appendCall(b []byte, id int64, method string, params []byte) []byte {
	b = append(b, `{"jsonrpc":"2.0","id":`...)
	b = strconv.AppendInt(b, id, 10)
	b = append(b, `,"method":`...)
	b = appendString(b, method)
	if params != nil {
		b = append(b, `,"params":`...)
		b = append(b, params...)
	}
	return append(b, '}')
}

// send adds one message, built by add, to the output and has it written.
// When ctx can end, the write happens on a goroutine of the client's and
// send returns once the message is buffered, or when ctx ends while the
// buffer is full; otherwise the caller writes it. pos, if not nil, is
// where the pending call that the message sends notes where its line
// went, so that failCalls can tell whether a failed write took any of it.
func (c *conn) send(ctx context.Context, add func([]byte) []byte, pos *linePos) error {
	if !c.talked.Load() {
		c.talked.Store(true)
	}
	if ctx.Done() == nil {
		out, err := c.out.appendSent(add, pos)
		if err != nil && out {
			return sent(err) // the peer may have read it
		}
		return err
	}
	if err := c.out.appendCtx(ctx, add, pos); err != nil {
		return err
	}
	c.flushAsync()
	return nil
}

// sendErr is the error for a message that send failed to send, marked
// as sent if send said that the peer may have read it.
func (c *conn) sendErr(ctx context.Context, err error) error {
	if s, ok := err.(*sentError); ok {
		return sent(c.sendErr(ctx, s.err))
	}
	if ctxErr := ctx.Err(); ctxErr != nil && errors.Is(err, ctxErr) {
		return ctxErr
	}
	return c.closedErr(err)
}

// add registers p under id, drawn from c.ids.
func (c *conn) add(id int64, p *pending) error {
	c.pmu.Lock()
	if c.callErr != nil {
		err := c.callErr
		c.pmu.Unlock()
		return err
	}
	if c.pending == nil {
		c.pending = make(map[int64]*pending)
	}
	c.pending[id] = p
	c.awaiting.Store(int64(len(c.pending)))
	if c.silence.timeout > 0 {
		c.watchSilence()
	}
	c.pmu.Unlock()
	// Stored before budgetWait is read, as enqueue stores budgetWait
	// before it reads awaiting: one of the two sees the other. A reader
	// waiting for room in the budget must read on now, or this call's
	// answer could never come.
	if c.budgetWait.Load() {
		c.mu.Lock()
		c.cond.Broadcast()
		c.mu.Unlock()
	}
	return nil
}

// notifyPeer sends a notification; see [Conn.Notify]. oc is nil, or
// the notification as the innermost send of the chain of interceptors has
// it, as for call.
func (c *conn) notifyPeer(ctx context.Context, method string, params any, oc *outgoing) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	var (
		raw []byte
		bp  *[]byte // the pooled buffer raw lies in, if any
	)
	if oc == nil {
		var err error
		if raw, bp, err = encodeParamsBuf(params); err != nil {
			return err
		}
		if c.chain != nil {
			// The chain may keep the params.
			return (&outgoing{params: ownParams(raw, bp)}).through(ctx, c.chain, method, nil)
		}
	} else {
		raw = oc.sendParams
	}
	if err := c.callError(); err != nil {
		return err
	}
	err := c.send(ctx, func(b []byte) []byte { return appendRequest(b, "", method, raw) }, nil)
	if bp != nil {
		releaseParams(bp, raw) // copied into the output, or never to be
	}
	if err != nil {
		return c.sendErr(ctx, err)
	}
	return nil
}

// stream makes a stream call for streamItems; see [Conn.Stream].
func (c *conn) stream(ctx context.Context, method string, raw []byte, yield func(json.RawMessage, error) bool) (bool, error) {
	id := c.ids.n.Add(1)
	if c.chain != nil {
		oc := &outgoing{id: id, params: raw, yield: yield}
		err := c.through(ctx, oc, method, nil)
		return oc.stopped, err
	}
	_, stopped, err := c.streamCall(ctx, c.slotHolder(ctx), id, method, raw, yield, false)
	return stopped, err
}

// streamCall sends the stream call id, yields its items as they come, and
// returns once its answer has come and the range has taken the items
// before it, or the range has stopped early (it reports which), or the
// call failed. The call's result is returned, as a copy, if keep is set.
// rc, if not nil, is the handler of ours that makes the call, which gives
// up its slot meanwhile.
func (c *conn) streamCall(ctx context.Context, rc *reqCtx, id int64, method string, raw []byte, yield func(json.RawMessage, error) bool, keep bool) (json.RawMessage, bool, error) {
	p := &pending{done: make(chan struct{}, 1), stream: true, signal: make(chan struct{}, 1)}
	var result *json.RawMessage
	if keep {
		result = new(json.RawMessage)
		p.dest = result
	}
	if err := c.add(id, p); err != nil {
		return nil, false, err
	}
	if rc != nil {
		c.releaseReader(rc)
	}
	err := c.send(ctx, func(b []byte) []byte { return appendCall(b, id, method, raw) }, &p.line)
	if err != nil {
		if !c.drop(id) {
			<-p.done // failed by failCalls meanwhile
		}
		// Sent or not as send says (see call).
		return nil, false, c.sendErr(ctx, err)
	}
	if rc != nil {
		// The range's body runs without the slot too: a stream is a
		// wait for the peer from its call to its end.
		c.leaveSlot(rc)
		defer c.retakeSlot(rc, ctx.Done())
	}
	// A call still pending on the way out was stopped by the range: its
	// body broke, panicked or ended its goroutine.
	defer func() {
		if c.drop(id) {
			c.sendCancel(id)
		}
	}()
	for {
		p.mu.Lock()
		items := p.items
		p.items = nil
		p.mu.Unlock()
		for _, item := range items {
			if !yield(p.take(item), nil) {
				return nil, true, nil
			}
		}
		if len(items) > 0 {
			continue
		}
		select {
		case <-p.signal:
			continue
		case <-p.done:
		case <-ctx.Done():
			if c.abandon(id, p) {
				return nil, false, sent(ctx.Err())
			}
		}
		// Done: deliver what came before the response, then the end.
		p.mu.Lock()
		items = p.items
		p.items = nil
		p.mu.Unlock()
		for _, item := range items {
			if !yield(p.take(item), nil) {
				return nil, true, nil
			}
		}
		if result != nil && p.err == nil {
			return *result, false, nil
		}
		return nil, false, p.err
	}
}
