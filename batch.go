package jsonrpc

// This file holds batches of outgoing calls, as a connection and an
// HTTPClient both send them: the entries' params encoded and their ids
// drawn, the array written, and each answer matched to its entry and
// decoded into its call.

import (
	"context"
	"errors"
	"sync/atomic"
)

// A BatchCall is one entry of a [Client.Batch].
type BatchCall struct {
	// Method and Params are the call's method and params, as for
	// [Client.Call].
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
type outBatch struct {
	calls   []*BatchCall
	entries []batchEntry
	first   int64 // the id of entries[0]
}

// batchEntry is one entry of an outBatch: its params, encoded, and, for a
// call, its answer.
type batchEntry struct {
	params   []byte
	p        pending // err and dest; done only on a connection
	answered bool    // for an HTTPClient, which matches answers itself
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
		b.entries[i].params = raw
		b.entries[i].p.dest = bc.Result
	}
	b.first = ids.Add(int64(len(calls))) - int64(len(calls)) + 1
	return b, nil
}

// id returns the id of entry i.
func (b *outBatch) id(i int) int64 { return b.first + int64(i) }

// appendTo appends the batch, as one JSON array, to dst.
func (b *outBatch) appendTo(dst []byte) []byte {
	dst = append(dst, '[')
	for i, bc := range b.calls {
		if i > 0 {
			dst = append(dst, ',')
		}
		if bc.Notify {
			dst = appendRequest(dst, "", bc.Method, b.entries[i].params)
		} else {
			dst = appendCall(dst, b.id(i), bc.Method, b.entries[i].params)
		}
	}
	return append(dst, ']')
}

// expect sets the error of every call of the batch to err, until its
// answer comes.
func (b *outBatch) expect(err error) {
	for i, bc := range b.calls {
		if !bc.Notify {
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
		if !ok || n < 0 || n >= int64(len(b.entries)) || b.calls[n].Notify || b.entries[n].answered {
			continue
		}
		e := &b.entries[n]
		e.answered = true
		r, err := batch[i].answer()
		if err == nil {
			err = decodeAnswer(r, e.p.dest)
		}
		e.p.err = err
	}
}

// batch sends calls as one array and waits for their responses; see
// [Client.Batch].
func (c *conn) batch(ctx context.Context, calls ...*BatchCall) error {
	b, err := newOutBatch(calls, &c.ids.n)
	if err != nil {
		return err
	}
	for i, bc := range calls {
		if bc.Notify {
			continue
		}
		p := &b.entries[i].p
		p.done = make(chan struct{}, 1)
		if err := c.addAt(b.id(i), p); err != nil {
			c.dropBatch(&b, i)
			return b.fail(err)
		}
	}
	rc := c.slotHolder(ctx)
	if rc != nil {
		c.releaseReader(rc)
	}
	if err := c.send(ctx, b.appendTo); err != nil {
		c.dropBatch(&b, len(calls))
		return b.fail(c.sendErr(ctx, err))
	}
	if rc != nil {
		c.leaveSlot(rc)
		defer c.retakeSlot(rc)
	}
	defer b.collect()
	var first error // the close that ended the batch, if any
	for i, bc := range calls {
		if bc.Notify {
			continue
		}
		p := &b.entries[i].p
		select {
		case <-p.done:
		case <-ctx.Done():
			// Calls still waiting are cancelled and fail with ctx's
			// error; a call whose response is being delivered keeps it.
			for j := i; j < len(calls); j++ {
				if !calls[j].Notify && c.abandon(b.id(j), &b.entries[j].p) {
					b.entries[j].p.err = ctx.Err()
				}
			}
			return ctx.Err()
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
		if !b.calls[i].Notify {
			c.drop(b.id(i))
		}
	}
}
