package jsonrpc

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"sync"
	"sync/atomic"
	"time"
)

// A lineWriter writes newline-delimited messages, each exactly one line.
// One that a connection makes for another [Framing] frames each
// message by it instead, and one for a [Transport] hands each message to
// its WriteMessage whole and on its own.
// It buffers what it is given and writes it out on Flush, or by itself
// once enough has gathered. At most one Write to the underlying writer is
// in flight at a time; messages written meanwhile join the next one, and
// lines never interleave.
//
// A lineWriter is safe for concurrent use. After a write error, every
// later call returns that error.
type lineWriter struct {
	w       io.Writer
	mu      sync.Mutex
	cond    sync.Cond // signalled when a write ends
	buf     []byte
	spare   []byte
	writing bool
	writes  uint64 // writes ended
	err     error

	// gen numbers the buffers: the lines in buf are in buffer gen, and it
	// moves on when buf is taken to be written, or put back together
	// with other lines by writeLarge. failGen is one more than the buffer whose write
	// failed, if one did, and failN how much of it went out; so a caller
	// learns whether its line reached the writer (see appendSent).
	gen     uint64
	failGen uint64
	failN   int
	closed  atomic.Bool
	wClosed atomic.Bool // the underlying writer has been closed

	// mode is the framing: modeLine, modeHeader, modeCustom or
	// modeMessage. In modeCustom, framing frames each message, built
	// first in scratch. In modeMessage, w is the end of a Transport, and
	// each message is put in the buffer after its length, so that the
	// end can hand each to WriteMessage on its own (see appendRecord).
	mode    uint8
	framing Framing
	scratch []byte

	// kick, if set, is called instead of writing on the caller's
	// goroutine when a line added without flush fills the buffer past
	// flushThreshold: a connection's reader must never block in Write,
	// or two peers that both write could wait on each other for ever.
	kick kicker
}

// A kicker has a writer's buffered output written without blocking its
// caller: a connection, whose flushFromReader does it (an interface
// rather than a method value, which would cost an allocation per
// connection).
type kicker interface{ flushFromReader() }

const (
	flushThreshold = 64 << 10 // write out once this much is buffered
	highWater      = 1 << 20  // past this, writers wait for the write in flight
)

// full reports whether a writer must wait before it adds a line: a write
// is in flight and the buffer holds highWater bytes already. So the buffer
// never holds more than highWater plus one line.
func (lw *lineWriter) full() bool {
	return lw.err == nil && lw.writing && len(lw.buf) >= highWater
}

// newLineWriter returns a lineWriter that writes to w.
func newLineWriter(w io.Writer) *lineWriter {
	lw := &lineWriter{w: w}
	lw.cond.L = &lw.mu
	return lw
}

// WriteMessage buffers msg, which must be one JSON value, as one line (or
// one frame of the writer's framing). A message that spans several lines
// is compacted first; one that is not valid JSON is refused with an error
// matching [ErrParse].
func (lw *lineWriter) WriteMessage(msg []byte) error {
	if !validJSON(msg) {
		return Errorf(CodeParseError, "Parse error: message is not one valid JSON value")
	}
	return lw.append(func(buf []byte) []byte {
		if bytes.IndexByte(msg, '\n') < 0 {
			return append(buf, bytes.TrimSpace(msg)...)
		}
		var c bytes.Buffer
		_ = json.Compact(&c, msg) // valid, so it compacts
		return append(buf, c.Bytes()...)
	}, false)
}

// append adds one line, built by add, to the buffer, and writes the buffer
// out when flush is set or enough has gathered.
func (lw *lineWriter) append(add func([]byte) []byte, flush bool) error {
	if err := lw.lockRoom(); err != nil {
		return err
	}
	lw.addLine(add)
	if !flush {
		over := len(lw.buf) >= flushThreshold
		if kick := lw.kick; !over || kick != nil {
			lw.mu.Unlock()
			if over {
				kick.flushFromReader() // the owner writes on a goroutine of its own
			}
			return nil
		}
	}
	return lw.flushLocked()
}

// lockRoom locks lw once its buffer has room, for append and appendSent.
// On the writer's sticky error it returns that error, unlocked.
func (lw *lineWriter) lockRoom() error {
	lw.mu.Lock()
	for lw.full() {
		lw.cond.Wait()
	}
	if err := lw.err; err != nil {
		lw.mu.Unlock()
		return err
	}
	return nil
}

// appendSent is append with flush set, for a request: on failure, it
// reports whether any byte of the line went out to the writer, so that
// the peer may have read it (see MayHaveRun). A line written in a buffer
// that writeLarge put back together counts as gone out. at, if not nil,
// notes where the line went, as appendCtx does: the flush may leave the
// line to a write in flight, whose failure failCalls then reads.
func (lw *lineWriter) appendSent(add func([]byte) []byte, at *linePos) (out bool, err error) {
	if err := lw.lockRoom(); err != nil {
		return false, err
	}
	pos := linePos{gen: lw.gen, at: len(lw.buf), set: true}
	if at != nil {
		*at = pos
	}
	lw.addLine(add)
	if err = lw.flushLocked(); err == nil {
		return true, nil
	}
	lw.mu.Lock()
	defer lw.mu.Unlock()
	return lw.wentOutLocked(pos), err
}

// take takes the buffer to be written, and returns it with its
// generation.
func (lw *lineWriter) take() (data []byte, gen uint64) {
	data, gen = lw.buf, lw.gen
	lw.buf, lw.spare = lw.spare[:0], nil
	lw.gen++
	lw.writing = true
	return data, gen
}

// failed records a write error, err, of buffer gen, of which n bytes went
// out: the first error is kept as the writer's, and the first failed
// buffer as failGen, even when fail had set the error while that write
// was in flight.
func (lw *lineWriter) failed(err error, gen uint64, n int) {
	if err == nil {
		return
	}
	if lw.err == nil {
		lw.err = err
	}
	// A sticky error set by fail (closeNow, abort) while this write was
	// in flight does not say how much of the buffer went out: record it.
	if lw.failGen == 0 {
		lw.failGen, lw.failN = gen+1, n
	}
}

// appendNow adds one line, built by add, for a goroutine that must not
// wait for the peer: the connection's reader. It waits for room only
// past four times the high-water mark, so a reader that answers a hostile
// peer's garbage still meets backpressure, and a reader whose peer is
// merely busy writing too goes on reading; past flushThreshold it kicks a
// write as append does. Errors end up in the writer's sticky error.
func (lw *lineWriter) appendNow(add func([]byte) []byte) {
	lw.mu.Lock()
	for lw.err == nil && lw.writing && len(lw.buf) >= 4*highWater {
		lw.cond.Wait()
	}
	if lw.err != nil {
		lw.mu.Unlock()
		return
	}
	lw.addLine(add)
	over := len(lw.buf) >= flushThreshold
	kick := lw.kick
	if over && kick == nil {
		_ = lw.flushLocked()
		return
	}
	lw.mu.Unlock()
	if over {
		kick.flushFromReader()
	}
}

// pending reports whether there is buffered output that no write in
// flight will take along.
func (lw *lineWriter) pending() bool {
	lw.mu.Lock()
	defer lw.mu.Unlock()
	return lw.err == nil && !lw.writing && len(lw.buf) > 0
}

// addLine adds one message, built by add, to the buffer, framed; lw.mu
// is held.
func (lw *lineWriter) addLine(add func([]byte) []byte) {
	if cap(lw.buf)-len(lw.buf) < minRoom && cap(lw.buf) < flushThreshold {
		lw.buf = growOutput(lw.buf)
	}
	if lw.mode == modeLine {
		lw.buf = append(add(lw.buf), '\n')
	} else {
		lw.buf = lw.appendFramed(lw.buf, add)
	}
}

// minRoom is the room an output buffer under flushThreshold keeps for
// the next message: below it, growOutput doubles the buffer.
const minRoom = 256

// growOutput returns b with twice its capacity, at least 4 KiB, and at
// most 4 KiB past flushThreshold, so that the line that crosses it still
// fits. An output buffer grows to flushThreshold in a few doublings this
// way, where append's growth (a quarter at a time past 256 bytes) took
// some twenty allocations for each of a connection's two buffers.
func growOutput(b []byte) []byte {
	nb := make([]byte, len(b), min(max(2*cap(b), 4<<10), flushThreshold+4<<10))
	copy(nb, b)
	return nb
}

// appendCtx adds one line, built by add, to the buffer, without writing
// it: the caller arranges for a flush. While the buffer is full, it waits
// until there is room or ctx ends; then it adds nothing and returns
// ctx.Err(), as it does at once if ctx has ended already.
func (lw *lineWriter) appendCtx(ctx context.Context, add func([]byte) []byte, pos *linePos) error {
	if err := ctx.Err(); err != nil {
		return err // not sent: see MayHaveRun
	}
	_, err := lw.appendWithin(ctx, add, pos)
	return err
}

// crowded reports whether appendWithin must wait for room: highWater
// bytes are buffered, behind a write in flight (see full) or for the
// write that the caller who buffered them arranged (a flush on a goroutine
// of the connection's), which has not taken them yet; a caller that went
// on adding before that write began would grow the buffer without bound.
func (lw *lineWriter) crowded() bool { return lw.err == nil && len(lw.buf) >= highWater }

// appendWithin is appendCtx, but ctx bounds only the wait for room: a
// line for which there is room is added even once ctx has ended. It also
// returns how many bytes are then buffered that no write in flight will
// take along.
func (lw *lineWriter) appendWithin(ctx context.Context, add func([]byte) []byte, pos *linePos) (unwritten int, err error) {
	lw.mu.Lock()
	if lw.crowded() {
		stop := context.AfterFunc(ctx, func() {
			lw.mu.Lock()
			lw.cond.Broadcast()
			lw.mu.Unlock()
		})
		for lw.crowded() && ctx.Err() == nil {
			lw.cond.Wait()
		}
		stop()
		if lw.crowded() {
			lw.mu.Unlock()
			return 0, ctx.Err()
		}
	}
	if lw.err != nil {
		err := lw.err
		lw.mu.Unlock()
		return 0, err
	}
	if pos != nil {
		*pos = linePos{gen: lw.gen, at: len(lw.buf), set: true}
	}
	lw.addLine(add)
	if !lw.writing {
		unwritten = len(lw.buf)
	}
	lw.mu.Unlock()
	return unwritten, nil
}

// A linePos is where a line was added to a lineWriter's buffers: in
// buffer gen, at offset at. It is guarded by the writer's mutex.
type linePos struct {
	gen uint64
	at  int
	set bool
}

// wentOutLocked reports whether the line added at pos may have gone out
// to the writer, or may still go: it did not only when the writer has
// failed (nothing more is written) before the line's first byte. A line
// whose place is not known may have gone out.
func (lw *lineWriter) wentOutLocked(pos linePos) bool {
	if !pos.set || lw.err == nil {
		return true
	}
	return lw.gen > pos.gen && (lw.failGen != pos.gen+1 || lw.failN > pos.at)
}

// cancelRoom is how far past highWater tryAppend still adds a line: room
// for about a thousand cancel notifications, each some 60 bytes, behind a
// write that stalls for a while. A cancel dropped there would leave the
// peer's handler running, and with it, between two ends that call each
// other, whatever waits for that handler.
const cancelRoom = 64 << 10

// tryAppend adds one line, built by add, to the buffer, unless the writer
// has failed or the buffer holds cancelRoom bytes past highWater behind a
// write in flight; it never waits, and reports whether the line was
// added.
func (lw *lineWriter) tryAppend(add func([]byte) []byte) bool {
	lw.mu.Lock()
	defer lw.mu.Unlock()
	if lw.err != nil || lw.writing && len(lw.buf) >= highWater+cancelRoom {
		return false
	}
	lw.addLine(add)
	return true
}

// writeLarge writes one line made of head, body and tail, where body is
// large: rather than copy body into the buffer, it writes what is buffered
// and head, then body straight from the caller's memory, then tail. Lines
// that others add meanwhile wait in the buffer, after tail. Under
// HeaderFraming, the header for the whole message goes before head; a
// Framing of the user's, or a Transport, gets the message whole, so there
// body is copied.
func (lw *lineWriter) writeLarge(head, body, tail []byte) error {
	if lw.mode >= modeCustom { // modeCustom or modeMessage; a writer is never modeWhole
		return lw.append(func(b []byte) []byte {
			return append(append(append(b, head...), body...), tail...)
		}, true)
	}
	lw.mu.Lock()
	for lw.writing && lw.err == nil {
		lw.cond.Wait()
	}
	if lw.err != nil {
		err := lw.err
		lw.mu.Unlock()
		return err
	}
	data, gen := lw.take()
	if lw.mode == modeHeader {
		data = appendHeader(data, len(head)+len(body)+len(tail))
	}
	data = append(data, head...)
	lw.mu.Unlock()

	n, err := lw.w.Write(data)
	if err == nil {
		_, err = lw.w.Write(body)
	}

	lw.mu.Lock()
	gathered := lw.buf
	line := append(data[:0], tail...)
	if lw.mode == modeLine {
		line = append(line, '\n')
	}
	lw.buf = append(line, gathered...)
	lw.spare = gathered[:0]
	lw.writing = false
	lw.failed(err, gen, n)
	// The lines gathered meanwhile moved: count them as gone out.
	lw.gen++
	lw.cond.Broadcast()
	return lw.flushLocked()
}

// Flush writes out everything buffered. If another goroutine's write is in
// flight, Flush leaves the data to it: that writer writes what gathered
// meanwhile as soon as its own write ends.
func (lw *lineWriter) Flush() error {
	lw.mu.Lock()
	return lw.flushLocked()
}

// flushOrLeave writes out what is buffered, unless another goroutine's
// write is in flight, which takes it along once it ends: unlike Flush, it
// never waits for that write, however much is buffered. A connection
// flushes so at its end, where a write in flight may be a caller's own,
// blocked on a peer that stopped reading, which nothing would end while
// the connection waited for it.
func (lw *lineWriter) flushOrLeave() error {
	lw.mu.Lock()
	return lw.flushLockedWait(false)
}

// flushLocked is Flush with lw.mu held; it unlocks it.
func (lw *lineWriter) flushLocked() error { return lw.flushLockedWait(true) }

// flushLockedWait is flushLocked; a write in flight with more than
// highWater bytes buffered behind it is waited for if wait is set, and
// left to take them along otherwise.
func (lw *lineWriter) flushLockedWait(wait bool) error {
	for {
		if lw.err != nil {
			err := lw.err
			lw.mu.Unlock()
			return err
		}
		if lw.writing {
			if wait && len(lw.buf) > highWater {
				lw.cond.Wait()
				continue
			}
			lw.mu.Unlock()
			return nil
		}
		if len(lw.buf) == 0 {
			lw.mu.Unlock()
			return nil
		}
		data, gen := lw.take()
		lw.mu.Unlock()
		n, err := lw.w.Write(data)
		lw.mu.Lock()
		lw.writes++
		lw.writing = false
		lw.spare = data[:0]
		lw.failed(err, gen, n)
		lw.cond.Broadcast()
	}
}

// Close flushes what is buffered, then closes the underlying writer if it
// is an io.Closer. Later writes fail with an error wrapping [ErrClosed].
// Close is idempotent: later calls do nothing and return nil.
func (lw *lineWriter) Close() error {
	if lw.closed.Swap(true) {
		return nil
	}
	// Wait out a write in flight, then write what gathered meanwhile, so
	// that nothing accepted before Close is dropped.
	lw.mu.Lock()
	for lw.writing && lw.err == nil {
		lw.cond.Wait()
	}
	err := lw.flushLocked()
	lw.fail(&closedError{})
	if cerr := lw.closeUnderlying(); err == nil {
		err = cerr
	}
	return err
}

// closeWithin is Close, but gives a write in flight, and what is buffered,
// at most d: a write still blocked then (on a peer that stopped reading,
// such as a call's own write on its caller's goroutine) is ended as
// closeNow ends it.
func (lw *lineWriter) closeWithin(d time.Duration) error {
	t := time.AfterFunc(d, lw.closeNow)
	defer t.Stop()
	return lw.Close()
}

// closeUnderlying closes the underlying writer, once, if it is an
// io.Closer.
func (lw *lineWriter) closeUnderlying() error {
	if c, ok := lw.w.(io.Closer); ok && !lw.wClosed.Swap(true) {
		return c.Close()
	}
	return nil
}

// closeNow closes the writer without writing what is buffered, and closes
// the underlying writer if it is an io.Closer, which unblocks a write in
// flight on most writers.
func (lw *lineWriter) closeNow() {
	lw.closed.Store(true)
	lw.fail(&closedError{})
	_ = lw.closeUnderlying()
}

// fail makes err the writer's sticky error, unless it already has one, and
// wakes any writer waiting for room.
func (lw *lineWriter) fail(err error) {
	lw.mu.Lock()
	if lw.err == nil {
		lw.err = err
	}
	lw.cond.Broadcast()
	lw.mu.Unlock()
}

// IsClosed reports whether Close has been called.
func (lw *lineWriter) IsClosed() bool { return lw.closed.Load() }

// busy reports whether a write to the underlying writer is in flight.
func (lw *lineWriter) busy() bool {
	lw.mu.Lock()
	defer lw.mu.Unlock()
	return lw.writing
}

// progress reports whether a write is in flight, and how many writes have
// ended so far.
func (lw *lineWriter) progress() (writing bool, writes uint64) {
	lw.mu.Lock()
	defer lw.mu.Unlock()
	return lw.writing, lw.writes
}

// Err returns the writer's sticky error, or nil.
func (lw *lineWriter) Err() error {
	lw.mu.Lock()
	defer lw.mu.Unlock()
	return lw.err
}
