package jsonrpc

// This file holds the table of this side's calls awaiting the peer's
// answers (callTable, embedded in conn), and what happens to them when the
// connection ends (failCalls).
// It depends on nothing of the engine but the pending call and the error a
// closed connection gives (errors.go); conn.go, pending.go and the outgoing
// calls use it.

import (
	"sync"
	"sync/atomic"
)

// callTable is this side's calls awaiting the peer's answers, by id, and
// what delivering those answers needs.
type callTable struct {
	ids          idSource
	calls        sync.Pool // of *pending, for call
	pmu          sync.Mutex
	pending      map[int64]*pending
	callErr      error        // set once calls can no longer be answered
	awaiting     atomic.Int64 // calls of this side awaiting answers: len(pending)
	cancelConv   Cancellation // how a call given up on is cancelled
	noCancel     bool
	onUnknown    func(*Response)
	streamBuffer int
	silence      silenceWatch // for a peer gone silent (silence.go)
}

// pending is a call waiting for its response. Whoever takes it out of the
// client's map (the reader with the response, or fail) sets err, decodes
// the result into dest, and sends on done, once.
type pending struct {
	done chan struct{} // capacity 1
	dest any           // where the result is decoded; nil to drop it
	err  error

	// For an entry of a batch: the ids of the batch's first and last
	// entries, whose answers come in one array; 0 otherwise.
	batchFirst, batchLast int64

	// line is where the request went in the output, when a call whose
	// ctx can end buffered it (for a batch, in its first entry's):
	// guarded by the output's mutex (see failCalls).
	line linePos

	// For streams: items gathered by the reader, their size, and a
	// signal for each.
	stream bool
	mu     sync.Mutex
	items  [][]byte
	size   int
	signal chan struct{}
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

// drop forgets the call with id, and reports whether it was still
// pending.
func (c *callTable) drop(id int64) bool {
	c.pmu.Lock()
	defer c.pmu.Unlock()
	if _, ok := c.pending[id]; !ok {
		return false
	}
	c.remove(id)
	return true
}

// remove takes the call with id out of the table, if there, and notes
// the calls awaiting answers for SilenceTimeout. c.pmu is held.
func (c *callTable) remove(id int64) {
	delete(c.pending, id)
	c.awaiting.Store(int64(len(c.pending)))
	if c.silence.timeout > 0 {
		c.restSilence()
	}
}

// callError returns the error that closed the connection for calls, or nil.
func (c *callTable) callError() error {
	c.pmu.Lock()
	defer c.pmu.Unlock()
	return c.callErr
}

func (c *callTable) closedErr(err error) error {
	c.pmu.Lock()
	defer c.pmu.Unlock()
	if c.callErr != nil {
		return c.callErr
	}
	return &closedError{cause: err}
}

// batchLine returns where the line of p's batch went in the output, as
// the batch's first call that goes out noted it, if it is among ps, the
// calls failCalls ends; batches keeps what was found for each batch.
// Not found, the first call was answered: the line went out.
func batchLine(ps map[int64]*pending, p *pending, batches *map[int64]linePos) linePos {
	if line, ok := (*batches)[p.batchFirst]; ok {
		return line
	}
	var line linePos
	for id := p.batchFirst; id <= p.batchLast; id++ {
		if q := ps[id]; q != nil && q.line.set {
			line = q.line
			break
		}
	}
	if *batches == nil {
		*batches = make(map[int64]linePos)
	}
	(*batches)[p.batchFirst] = line
	return line
}

// failCalls ends the outgoing side with cause: every call in flight, and
// every later one, fails with an error wrapping ErrClosed and cause. out
// is the output the calls' requests went to: a call whose line it tells
// none of went out, as it failed, did not run.
func (c *callTable) failCalls(cause error, out *lineWriter) {
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
	// Each was handed to the writer, or is about to be: the peer may
	// have run it (see MayHaveRun, and call for the calls that were not),
	// unless the writer failed before its line.
	err := sent(c.callErr)
	var batches map[int64]linePos // each batch's line, by its first id
	out.mu.Lock()
	for _, p := range ps {
		p.err = err
		line := p.line
		if p.batchFirst != 0 {
			line = batchLine(ps, p, &batches)
		}
		if !out.wentOutLocked(line) {
			p.err = c.callErr
		}
	}
	out.mu.Unlock()
	for _, p := range ps {
		p.done <- struct{}{}
	}
}
