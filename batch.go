package jsonrpc

// This file holds batches of outgoing calls, as a connection and an
// HTTPClient both send them: the entries' params encoded and their ids
// drawn, the array written, and each answer matched to its entry and
// decoded into its call.

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"sync/atomic"
)

// A BatchCall is one entry of a batch, sent by the Batch method of a
// [Caller] ([Conn.Batch], [HTTPClient.Batch], ...).
type BatchCall struct {
	// Method and Params are the call's method and params, as for
	// [Conn.Call].
	Method string
	Params any
	// Notify makes the entry a notification, which gets no response.
	Notify bool
	// Result, if not nil, receives the decoded result.
	Result any
	// Err is set by Batch: nil for a success, the *Error the peer
	// answered with, or why the result could not be decoded.
	Err error
}

// outBatch is a batch on its way out. Its entries take consecutive ids,
// drawn at once, so that an answer finds its entry by its id alone; a
// notification's id is left unused.
//
// Through interceptors, each entry passes through the chain on a
// goroutine of its own (runChains); the entries whose chains call next
// (join) go out together once every chain has called next or returned,
// and each waits there for its answer.
type outBatch struct {
	calls   []*BatchCall
	entries []batchEntry
	first   int64       // the id of entries[0]
	ch      *batchChain // through interceptors; otherwise nil
}

// batchChain is what the entries of a batch through interceptors share.
type batchChain struct {
	ctx     context.Context // Batch's
	arrived sync.WaitGroup  // each entry's chain has called next, or returned
	chains  sync.WaitGroup  // each entry's chain has returned
	sent    chan struct{}   // closed once the batch is sent, or has failed
	// abandon gives up on the call with id, as conn.abandon does; nil
	// over HTTP, where there is nothing to give up.
	abandon func(id int64, p *pending) bool

	mu       sync.Mutex
	panicked any // the first panic of a chain, for Batch's caller
}

// wait waits for every entry's chain to return, and passes the first
// panic of one on to Batch's caller, as a Call's chain panics on its
// caller's goroutine.
func (ch *batchChain) wait() {
	ch.chains.Wait()
	if ch.panicked != nil {
		panic(ch.panicked)
	}
}

// batchEntry is one entry of an outBatch: its method and params, encoded,
// and, for a call, its answer.
type batchEntry struct {
	method   string
	params   []byte
	out      bool    // it goes out in the batch
	p        pending // err and dest; done on a connection, or through interceptors
	answered bool    // for an HTTPClient, which matches answers itself

	// Through interceptors:
	oc     *outgoing
	result json.RawMessage // p.dest: the result, for the chain
	ended  bool            // Batch's ctx ended the wait for the answer
}

// newOutBatch encodes the params of calls and draws their ids from ids.
func newOutBatch(calls []*BatchCall, ids *atomic.Int64) (outBatch, error) {
	if len(calls) == 0 {
		return outBatch{}, errors.New("jsonrpc: empty batch")
	}
	b := outBatch{calls: calls, entries: make([]batchEntry, len(calls))}
	for i, bc := range calls {
		raw, err := encodeParams(bc.Params)
		if err != nil {
			return outBatch{}, err
		}
		e := &b.entries[i]
		e.method, e.params, e.out = bc.Method, raw, true
		e.p.dest = bc.Result
	}
	b.first = ids.Add(int64(len(calls))) - int64(len(calls)) + 1
	for i := range b.entries {
		p := &b.entries[i].p
		p.batchFirst, p.batchLast = b.first, b.id(len(calls)-1)
	}
	return b, nil
}

// id returns the id of entry i.
func (b *outBatch) id(i int) int64 { return b.first + int64(i) }

// isCall reports whether entry i is a call that goes out.
func (b *outBatch) isCall(i int) bool { return b.entries[i].out && !b.calls[i].Notify }

// firstLine returns where the first call of b that goes out notes the
// place of the batch's line in the output (see pending.line), or nil.
func (b *outBatch) firstLine() *linePos {
	for i := range b.entries {
		if b.isCall(i) {
			return &b.entries[i].p.line
		}
	}
	return nil
}

// anyOut reports whether any entry goes out.
func (b *outBatch) anyOut() bool {
	for i := range b.entries {
		if b.entries[i].out {
			return true
		}
	}
	return false
}

// appendTo appends the entries that go out, as one JSON array, to dst.
func (b *outBatch) appendTo(dst []byte) []byte {
	dst = append(dst, '[')
	n := 0
	for i, bc := range b.calls {
		e := &b.entries[i]
		if !e.out {
			continue
		}
		if n++; n > 1 {
			dst = append(dst, ',')
		}
		if bc.Notify {
			dst = appendRequest(dst, "", e.method, e.params)
		} else {
			dst = appendCall(dst, b.id(i), e.method, e.params)
		}
	}
	return append(dst, ']')
}

// failOut sets the error of every entry that goes out, notifications
// too, to err, which kept the batch from going out.
func (b *outBatch) failOut(err error) {
	for i := range b.entries {
		if b.entries[i].out {
			b.entries[i].p.err = err
		}
	}
}

// expect sets the error of every call that goes out to err, until its
// answer comes.
func (b *outBatch) expect(err error) {
	for i := range b.entries {
		if b.isCall(i) {
			b.entries[i].p.err = err
		}
	}
}

// fail gives every call of the batch err, which ended the batch, and
// returns it.
func (b *outBatch) fail(err error) error {
	b.expect(err)
	b.collect()
	return err
}

// collect sets each call's Err to the outcome of its entry.
func (b *outBatch) collect() {
	for i, bc := range b.calls {
		if !bc.Notify {
			bc.Err = b.entries[i].p.err
		}
	}
}

// match settles the entries that the responses in batch, an array read
// in answer to b, answer; a response to no call of b, or to one answered
// already, is dropped, as a connection drops one.
func (b *outBatch) match(batch []envelope) {
	for i := range batch {
		id, ok := parseID(batch[i].id)
		n := id - b.first
		if !ok || n < 0 || n >= int64(len(b.entries)) || !b.isCall(int(n)) || b.entries[n].answered {
			continue
		}
		e := &b.entries[n]
		e.answered = true
		r, err := batch[i].answer()
		if err != nil {
			err = sent(err) // answered, if badly: it may have run
		} else {
			err = decodeAnswer(r, e.p.dest)
		}
		e.p.err = err
	}
}

// runChains passes each entry of b through the chain send, each on a
// goroutine of its own, and returns once every entry's chain has called
// next or returned: then the entries that go out are those whose chains
// called next, which wait in join until b.ch.sent is closed. hc, over
// HTTP, gives each entry the header its chain may add to and the URL it
// goes to; abandon, on a connection, gives up on a call whose ctx ends.
// The calls' Err and Result are set as their chains return.
func (b *outBatch) runChains(ctx context.Context, send SendFunc, hc *HTTPClient, abandon func(int64, *pending) bool) {
	ch := &batchChain{ctx: ctx, sent: make(chan struct{}), abandon: abandon}
	b.ch = ch
	ch.arrived.Add(len(b.entries))
	for i := range b.entries {
		e, bc := &b.entries[i], b.calls[i]
		e.out = false
		e.p.done = make(chan struct{}, 1)
		e.p.dest = &e.result
		e.oc = &outgoing{params: e.params, batch: b, entry: i}
		if !bc.Notify {
			e.oc.id = b.id(i)
		}
		if hc != nil {
			e.oc.header, e.oc.url = hc.newHeader(), hc.URL
		}
		ch.chains.Go(func() {
			defer func() {
				if !e.oc.passed.Swap(true) {
					ch.arrived.Done() // it returned, or panicked, without calling next
				}
				if v := recover(); v != nil {
					ch.mu.Lock()
					if ch.panicked == nil {
						ch.panicked = v
					}
					ch.mu.Unlock()
				}
			}()
			err := e.oc.through(ctx, send, bc.Method, bc.Result)
			if !bc.Notify {
				bc.Err = err
			}
		})
	}
	ch.arrived.Wait()
}

// join adds entry i, as its chain passes it to next, to what goes out, and
// waits for the batch to be sent and the entry's answer to come, or for
// its ctx or Batch's to end.
func (b *outBatch) join(ctx context.Context, i int, method string, params []byte) (json.RawMessage, error) {
	e := &b.entries[i]
	e.method, e.params, e.out = method, params, true
	b.ch.arrived.Done()
	<-b.ch.sent
	if !b.wait(ctx, i) {
		// The batch was sent (had it failed, the entry would have its
		// error): the call may have run, as without interceptors.
		if err := b.ch.ctx.Err(); err != nil {
			e.ended = true
			return nil, sent(err)
		}
		return nil, sent(ctx.Err())
	}
	e.oc.result = e.result
	return e.result, e.p.err
}

// wait waits for the outcome of entry i, and reports whether it came: it
// does not if ctx, the entry's, or Batch's ends first, and the call is
// given up.
func (b *outBatch) wait(ctx context.Context, i int) bool {
	e := &b.entries[i]
	select {
	case <-e.p.done:
		return true
	default:
	}
	select {
	case <-e.p.done:
		return true
	case <-ctx.Done():
	case <-b.ch.ctx.Done():
	}
	return !b.giveUp(i)
}

// giveUp gives up waiting for the answer to entry i, and reports whether
// it did: it did not if the answer was being delivered.
func (b *outBatch) giveUp(i int) bool {
	return b.ch.abandon == nil || b.ch.abandon(b.id(i), &b.entries[i].p)
}

// deliver hands each entry that went out, through interceptors, the
// outcome that the one answering its batch (an HTTPClient) has set.
func (b *outBatch) deliver() {
	if b.ch == nil {
		return
	}
	for i := range b.entries {
		if b.entries[i].out {
			b.entries[i].p.done <- struct{}{}
		}
	}
}

// outcome returns, once the entries' chains have returned, what a Batch
// through interceptors returns: err, which ended the batch, or the end of
// Batch's ctx, or the close of the connection, that an entry met.
func (b *outBatch) outcome(err error) error {
	if err != nil {
		return err
	}
	for i := range b.entries {
		if b.entries[i].ended {
			return sent(b.ch.ctx.Err()) // it had gone out: it may have run
		}
	}
	for i := range b.entries {
		if b.isCall(i) && errors.Is(b.entries[i].p.err, ErrClosed) {
			return b.entries[i].p.err
		}
	}
	return nil
}

// batch sends calls as one array and waits for their responses; see
// [Conn.Batch].
func (c *conn) batch(ctx context.Context, calls ...*BatchCall) error {
	b, err := newOutBatch(calls, &c.ids.n)
	if err != nil {
		return err
	}
	if c.chain != nil {
		return c.batchThrough(ctx, b)
	}
	for i, bc := range calls {
		if bc.Notify {
			continue
		}
		p := &b.entries[i].p
		p.done = make(chan struct{}, 1)
		if err := c.add(b.id(i), p); err != nil {
			c.dropBatch(&b, i)
			return b.fail(err)
		}
	}
	rc := c.slotHolder(ctx)
	if rc != nil {
		c.releaseReader(rc)
	}
	if err := c.send(ctx, b.appendTo, b.firstLine()); err != nil {
		c.dropBatch(&b, len(calls))
		return b.fail(c.sendErr(ctx, err))
	}
	if rc != nil {
		c.leaveSlot(rc)
		defer c.retakeSlot(rc, ctx.Done())
	}
	defer b.collect()
	var first error    // the close that ended the batch, if any
	delivered := false // every call left has had its answer delivered
	for i, bc := range calls {
		if bc.Notify {
			continue
		}
		p := &b.entries[i].p
		if !delivered {
			select {
			case <-p.done:
			case <-ctx.Done():
				// Calls still waiting are cancelled and fail with ctx's
				// error; a call whose response is being delivered keeps
				// it, and abandon waits for that. Only a batch that lost
				// a call so was not completed.
				abandoned := false
				for j := i; j < len(calls); j++ {
					if !calls[j].Notify && c.abandon(b.id(j), &b.entries[j].p) {
						b.entries[j].p.err = sent(ctx.Err())
						abandoned = true
					}
				}
				if abandoned {
					return sent(ctx.Err()) // the batch went out: its calls may have run
				}
				delivered = true
			}
		}
		if errors.Is(p.err, ErrClosed) && first == nil {
			first = p.err
		}
	}
	return first
}

// dropBatch forgets the calls among the first n entries of b.
func (c *conn) dropBatch(b *outBatch, n int) {
	for i := range n {
		if !b.calls[i].Notify && !c.drop(b.id(i)) {
			// failCalls took it first: it is done with the entry once
			// it says so, and the batch may set its error after.
			<-b.entries[i].p.done
		}
	}
}

// batchThrough sends a batch whose entries pass through the connection's
// interceptors. A handler of ours that sends it gives up its slot
// meanwhile. b is taken by value, so that only this path puts it on the
// heap.
func (c *conn) batchThrough(ctx context.Context, b outBatch) error {
	if rc := c.slotHolder(ctx); rc != nil {
		c.releaseReader(rc)
		c.leaveSlot(rc)
		defer c.retakeSlot(rc, ctx.Done())
	}
	b.runChains(ctx, c.chain, nil, c.abandon)
	err := c.writeBatch(ctx, &b)
	close(b.ch.sent)
	b.ch.wait()
	return b.outcome(err)
}

// writeBatch registers the calls of b that go out and writes the entries
// that go out, as one array; the notifications are done once written. If
// that fails, every entry that goes out ends with the error, which it
// returns.
func (c *conn) writeBatch(ctx context.Context, b *outBatch) error {
	if !b.anyOut() {
		return nil
	}
	var err error
	added := len(b.entries) // the entries before it are registered
	for i := range b.entries {
		if b.isCall(i) {
			if err = c.add(b.id(i), &b.entries[i].p); err != nil {
				added = i
				break
			}
		}
	}
	if err == nil {
		if err = c.send(ctx, b.appendTo, b.firstLine()); err != nil {
			err = c.sendErr(ctx, err)
		}
	}
	for i := range b.entries {
		e := &b.entries[i]
		if !e.out || b.isCall(i) && (err == nil || i < added && !c.drop(b.id(i))) {
			continue // answered by the reader, or ended by failCalls
		}
		e.p.err = err
		e.p.done <- struct{}{}
	}
	return err
}
