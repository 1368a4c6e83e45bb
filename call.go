package jsonrpc

// This file holds the outgoing side of a connection: calls, notifications,
// batches and streams sent to the peer, matched with their responses by
// id as the read loop delivers them.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"strconv"
	"sync"
)

// pending is a call waiting for its response. Whoever takes it out of the
// client's map (the reader with the response, or fail) sets err, decodes
// the result into dest, and sends on done, once.
type pending struct {
	done chan struct{} // capacity 1
	dest any           // where the result is decoded; nil to drop it
	err  error

	// For streams: items gathered by the reader, their size, and a
	// signal for each.
	stream bool
	mu     sync.Mutex
	items  [][]byte
	size   int
	signal chan struct{}
}

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
		id  int64
		rc  *reqCtx
	)
	if oc == nil {
		var err error
		if raw, err = encodeParams(params); err != nil {
			return err
		}
		id = c.ids.n.Add(1)
		if c.chain != nil {
			return c.through(ctx, &outgoing{id: id, params: raw}, method, result)
		}
		rc = c.slotHolder(ctx)
	} else {
		raw, id = oc.sendParams, oc.sendID
	}
	p, _ := c.calls.Get().(*pending)
	if p == nil {
		p = &pending{done: make(chan struct{}, 1)}
	}
	p.dest = result
	if err := c.add(id, p); err != nil {
		return err
	}
	if rc != nil {
		c.releaseReader(rc)
	}
	err := c.send(ctx, func(b []byte) []byte { return appendCall(b, id, method, raw) })
	if err != nil {
		if c.drop(id) {
			return c.sendErr(ctx, err)
		}
		<-p.done
		return p.err
	}
	if rc != nil {
		c.leaveSlot(rc)
		defer c.retakeSlot(rc)
	}
	select {
	case <-p.done:
	case <-ctx.Done():
		if c.abandon(id, p) {
			p.dest = nil
			c.calls.Put(p)
			return ctx.Err()
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
		defer c.retakeSlot(rc)
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
// buffer is full; otherwise the caller writes it.
func (c *conn) send(ctx context.Context, add func([]byte) []byte) error {
	if !c.talked.Load() {
		c.talked.Store(true)
	}
	if ctx.Done() == nil {
		return c.out.append(add, true)
	}
	if err := c.out.appendCtx(ctx, add); err != nil {
		return err
	}
	c.flushAsync()
	return nil
}

// sendErr is the error for a message that send did not buffer.
func (c *conn) sendErr(ctx context.Context, err error) error {
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

// drop forgets the call with id, and reports whether it was still
// pending.
func (c *conn) drop(id int64) bool {
	c.pmu.Lock()
	defer c.pmu.Unlock()
	if _, ok := c.pending[id]; !ok {
		return false
	}
	delete(c.pending, id)
	c.awaiting.Store(int64(len(c.pending)))
	return true
}

// abandon gives up waiting for the call with id, whose context ended. If
// the call was still pending, it is forgotten, the peer is told, and
// abandon reports true; if its response was already being delivered, it
// waits for that delivery to end and reports false.
func (c *conn) abandon(id int64, p *pending) bool {
	if c.drop(id) {
		c.sendCancel(id)
		return true
	}
	<-p.done
	return false
}

// sendCancel tells the peer that the call with id is cancelled, without
// making the caller wait for the write.
func (c *conn) sendCancel(id int64) {
	if c.noCancel {
		return
	}
	added := c.out.tryAppend(func(b []byte) []byte {
		b = append(b, `{"jsonrpc":"2.0","method":`...)
		b = appendString(b, c.cancelConv.method())
		b = append(b, `,"params":{`...)
		b = appendString(b, c.cancelConv.idMember())
		b = append(b, ':')
		b = strconv.AppendInt(b, id, 10)
		return append(b, "}}"...)
	})
	if added {
		c.flushAsync()
	} else {
		c.log.Debug("jsonrpc: dropped a cancel notification: the peer is not reading", slog.Int64("id", id))
	}
}

func (c *conn) closedErr(err error) error {
	c.pmu.Lock()
	defer c.pmu.Unlock()
	if c.callErr != nil {
		return c.callErr
	}
	return &closedError{cause: err}
}

// notifyPeer sends a notification; see [Conn.Notify]. oc is nil, or
// the notification as the innermost send of the chain of interceptors has
// it, as for call.
func (c *conn) notifyPeer(ctx context.Context, method string, params any, oc *outgoing) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	var raw []byte
	if oc == nil {
		var err error
		if raw, err = encodeParams(params); err != nil {
			return err
		}
		if c.chain != nil {
			return (&outgoing{params: raw}).through(ctx, c.chain, method, nil)
		}
	} else {
		raw = oc.sendParams
	}
	if err := c.callError(); err != nil {
		return err
	}
	err := c.send(ctx, func(b []byte) []byte { return appendRequest(b, "", method, raw) })
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
	err := c.send(ctx, func(b []byte) []byte { return appendCall(b, id, method, raw) })
	if err != nil {
		c.drop(id)
		return nil, false, c.sendErr(ctx, err)
	}
	if rc != nil {
		// The range's body runs without the slot too: a stream is a
		// wait for the peer from its call to its end.
		c.leaveSlot(rc)
		defer c.retakeSlot(rc)
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
				return nil, false, ctx.Err()
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

// take counts item, about to be handed to the range of a stream, out of
// the stream's buffer, and returns it. Items stay counted until then, so
// that those the range has not taken never pass MaxStreamBuffer.
func (p *pending) take(item []byte) []byte {
	p.mu.Lock()
	p.size -= len(item)
	p.mu.Unlock()
	return item
}

// streamItem delivers a "$/stream" notification to its call, and reports
// whether there was one.
//
// With act unset, it only reports whether the item is for a call of ours.
func (c *conn) streamItem(params []byte, act bool) bool {
	id, ok := streamTarget(params)
	if !ok || id <= 0 || id > c.ids.n.Load() {
		return false // the peer's own
	}
	if !act {
		return true
	}
	c.pmu.Lock()
	p := c.pending[id]
	c.pmu.Unlock()
	if p == nil || !p.stream {
		// An item for a call of ours that has ended (a stream stopped
		// early) is dropped.
		return true
	}
	item := itemOf(params)
	p.mu.Lock()
	overflow := p.size > 0 && p.size+len(item) > c.streamBuffer
	if !overflow {
		p.items = append(p.items, item)
		p.size += len(item)
	}
	p.mu.Unlock()
	if overflow {
		// The range has fallen too far behind: end the call, and tell
		// the peer, rather than hold its items without limit.
		if c.drop(id) {
			c.sendCancel(id)
			p.err = &streamOverflowError{limit: c.streamBuffer}
			p.done <- struct{}{}
		}
		return true
	}
	select {
	case p.signal <- struct{}{}:
	default:
	}
	return true
}

// streamTarget returns the id of the call that stream params, those of a
// "$/stream" notification, carry an item for, if it is one of ours.
func streamTarget(params []byte) (int64, bool) {
	if len(params) == 0 || params[0] != '{' {
		return 0, false
	}
	return parseID(memberValue(params, "id"))
}

// itemOf returns a copy of the "item" member of stream params, or null if
// they have none.
func itemOf(params []byte) json.RawMessage {
	item := memberValue(params, "item")
	if item == nil {
		return json.RawMessage("null")
	}
	return append(json.RawMessage(nil), item...)
}

// parseID returns the number an id of ours was written as.
func parseID(raw []byte) (int64, bool) {
	if len(raw) == 0 || len(raw) > 18 {
		return 0, false
	}
	var n int64
	for _, d := range raw {
		if d < '0' || d > '9' {
			return 0, false
		}
		n = n*10 + int64(d-'0')
	}
	return n, true
}

// deliver hands a response to the call it answers.
func (c *conn) deliver(e *envelope) {
	resp, why := e.response()
	if why != "" {
		c.log.Debug("jsonrpc: dropped an invalid response", slog.String("reason", why))
		return
	}
	id, ok := parseID(e.id)
	var p *pending
	if ok {
		c.pmu.Lock()
		p = c.pending[id]
		delete(c.pending, id)
		c.awaiting.Store(int64(len(c.pending)))
		c.pmu.Unlock()
	}
	if p == nil {
		if c.onUnknown != nil {
			// A copy, so that only this rare path makes resp escape.
			unknown := resp
			unknown.ID = ID{raw: string(e.id)}
			if unknown.Result != nil {
				unknown.Result = append(json.RawMessage(nil), unknown.Result...)
			}
			c.onUnknown(&unknown)
		} else {
			c.log.Debug("jsonrpc: dropped a response with an unknown id", slog.String("id", string(e.id)))
		}
		return
	}
	// The caller waits for done, so its result is ours to fill.
	p.err = decodeAnswer(resp, p.dest)
	p.done <- struct{}{}
}

// decodeAnswer returns the outcome of a call answered with r: the error r
// carries, or that of decoding its result into dest (nil to drop it).
func decodeAnswer(r Response, dest any) error {
	switch {
	case r.Error != nil:
		return r.Error
	case dest != nil:
		return decodeResult(r.Result, dest)
	}
	return nil
}

// decodeResult decodes a result, already validated as JSON, into dest as
// json.Unmarshal would, but by the strict rules of strict.go: member names
// match fields exactly, and a name given twice in one object is an error
// wrapping ErrDuplicateMember. The commonest destinations with a plain
// value take a shorter way, and a json.RawMessage takes the result as it
// is; anything else, or anything unusual, goes to encoding/json.
func decodeResult(raw []byte, dest any) error {
	switch d := dest.(type) {
	case *json.RawMessage:
		*d = append((*d)[:0], raw...)
		return nil
	case *int:
		if n, err := strconv.ParseInt(string(raw), 10, strconv.IntSize); err == nil {
			*d = int(n)
			return nil
		}
	case *int64:
		if n, err := strconv.ParseInt(string(raw), 10, 64); err == nil {
			*d = n
			return nil
		}
	case *float64:
		if len(raw) > 0 && raw[0] != 'n' && raw[0] != '"' && raw[0] != 't' && raw[0] != 'f' {
			if f, err := strconv.ParseFloat(string(raw), 64); err == nil {
				*d = f
				return nil
			}
		}
	case *string:
		if len(raw) >= 2 && raw[0] == '"' && bytes.IndexByte(raw, '\\') < 0 {
			*d = string(raw[1 : len(raw)-1])
			return nil
		}
	case *bool:
		switch string(raw) {
		case "true":
			*d = true
			return nil
		case "false":
			*d = false
			return nil
		}
	}
	raw, err := strictResult(raw, dest)
	if err != nil {
		return err
	}
	return json.Unmarshal(raw, dest)
}

// callError returns the error that closed the connection for calls, or nil.
func (c *conn) callError() error {
	c.pmu.Lock()
	defer c.pmu.Unlock()
	return c.callErr
}

// failCalls ends the outgoing side with cause: every call in flight, and
// every later one, fails with an error wrapping ErrClosed and cause.
func (c *conn) failCalls(cause error) {
	c.pmu.Lock()
	if c.callErr != nil {
		c.pmu.Unlock()
		return
	}
	c.callErr = &closedError{cause: cause}
	ps := c.pending
	c.pending = nil
	c.awaiting.Store(0)
	c.pmu.Unlock()
	for _, p := range ps {
		p.err = c.callErr
		p.done <- struct{}{}
	}
}
