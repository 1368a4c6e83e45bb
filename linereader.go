package jsonrpc

// This file holds the reader of newline-delimited messages, which the
// header framing shares; transport.go holds the writer.

import (
	"bytes"
	"errors"
	"io"
	"strconv"
	"sync/atomic"
)

// defaultMaxMessageSize is the largest message, in bytes, that a
// connection reads when no other limit is set.
const defaultMaxMessageSize = 64 << 20

// ErrMessageTooLarge is wrapped by the error that a [MessageReader]
// returns for a message longer than its limit. Reading can go on: the
// next call returns the line after it.
var ErrMessageTooLarge = errors.New("jsonrpc: message too large")

// tooLargeError reports an over-long line and the limit it broke, with
// the first bytes of the message (see keepHead), so that
// a connection can tell which of its calls a response too large to read
// answered.
type tooLargeError struct {
	limit int
	head  []byte
}

// tooLargeHead is how much of a message over the limit is kept, as the
// head of its error.
const tooLargeHead = 512

func (e *tooLargeError) Error() string {
	return ErrMessageTooLarge.Error() + " (limit " + strconv.Itoa(e.limit) + " bytes)"
}

func (e *tooLargeError) Unwrap() error { return ErrMessageTooLarge }

const initialBufSize = 64 << 10

// detachBufSize is the size of the buffer a reader of the first size
// takes when its reading role is handed off (see lineReader.detach).
const detachBufSize = 4 << 10

// maxIdleBufSize is the largest read buffer a lineReader keeps while it
// holds no unread data: a larger one, grown for a long line, is let go
// before the next read, so an idle connection holds at most this much.
const maxIdleBufSize = 1 << 20

// errReadStopped ends reading when the owner of a lineReader says so
// before a read.
var errReadStopped = errors.New("jsonrpc: reading stopped")

// A lineReader reads newline-delimited messages: one JSON value per line,
// ended by "\n". A trailing "\r" is removed and lines holding only
// whitespace are skipped. Lines may be of any length up to the limit; a
// longer line is discarded as it is read, never held whole in memory.
//
// The reader that [HeaderFraming] returns is a lineReader too, which reads
// messages framed by headers instead (see [HeaderFraming]).
//
// A lineReader is not safe for concurrent use.
type lineReader struct {
	r       io.Reader
	max     int
	buf     []byte
	start   int // unread data is buf[start:end]
	end     int
	scanned int // buf[start:scanned] holds no newline
	discard bool
	// reported is set once the error of the line being discarded has
	// been returned, before its newline came (modeLine).
	reported bool
	head     []byte // the first bytes of the message being discarded

	// chunks hold, in order, the start of a line longer than buf: full
	// buffers, chunked bytes in all. The line is joined once its end is
	// read, so that a long line costs about twice its size, where growing
	// one buffer by half each time cost three times.
	chunks  [][]byte
	chunked int

	// filled is set when the last read filled the buffer to its end.
	filled bool

	err    error
	closed atomic.Bool

	// hooks, if set, run around each call of Read on r, which may block
	// (see readHooks).
	hooks readHooks

	// letGo is set when a large buffer, emptied, has been let go; the
	// owner clears it once it has let go of its slices of that buffer.
	letGo bool

	// mode is the framing: modeLine, modeHeader or modeCustom (also for
	// a Transport, whose transportEnd is then inner).
	mode uint8

	// In modeHeader: what is being read (phaseHeader, ...); the
	// Content-Length of the block so far, -1 for none, or the bytes of
	// body left to read or skip; the bytes of the header block read so
	// far; whether it is too long; its first problem, if any.
	phase   uint8
	tooLong bool // the body being skipped is over the limit, not yet reported
	length  int
	hdrSize int
	hdrLong bool
	hdrErr  string

	// In modeCustom: the user's reader, which reads through a hookReader,
	// whether beforeRead stopped reading, and the io.EOF that the user's
	// reader returned together with its last message, for the next call.
	inner   MessageReader
	stopped bool
	lastEOF error

	// budget, if set, is the Server's memory budget, against which the
	// buffer's bytes past initialBufSize are charged (charged of them).
	budget  *readBudget
	charged int
}

// newLineReader returns a lineReader that reads from r messages of at most
// maxSize bytes; zero or less means 64 MiB.
func newLineReader(r io.Reader, maxSize int) *lineReader {
	return &lineReader{r: r, max: orDefault(maxSize, defaultMaxMessageSize)}
}

// ReadMessage returns the next message, without its line ending. The slice
// aliases the reader's buffer and is valid until the next call.
//
// At the end of the input it returns io.EOF; a last line that lacks its
// newline is still returned first. A line over the limit gives an error
// that wraps [ErrMessageTooLarge] as soon as it is read past the limit,
// and the next call skips the rest of it and goes on with the line after
// it. Any other read error is returned, and again on every later
// call. After Close, ReadMessage returns an error wrapping [ErrClosed].
func (lr *lineReader) ReadMessage() ([]byte, error) {
	if lr.mode != modeLine {
		return lr.readFramed()
	}
	for {
		if lr.closed.Load() {
			return nil, &closedError{}
		}
		if i := bytes.IndexByte(lr.buf[lr.scanned:lr.end], '\n'); i >= 0 {
			nl := lr.scanned + i
			if lr.chunked > 0 {
				nl = lr.joinLine(nl)
			}
			line := lr.buf[lr.start:nl]
			lr.start, lr.scanned = nl+1, nl+1
			if lr.discard || len(line)-crEnd(line) > lr.max {
				if err := lr.endLong(line); err != nil {
					return nil, err
				}
				continue
			}
			if line = trimLine(line); line != nil {
				return line, nil
			}
			continue
		}
		lr.scanned = lr.end
		// One byte more than the limit may be the "\r" of a "\r\n",
		// framing, not message: the newline tells.
		if !lr.discard && lr.chunked+lr.end-lr.start > lr.max+1 {
			lr.discard = true
			lr.keepLineHead()
		}
		if lr.discard {
			if err := lr.skipLong(); err != nil {
				return nil, err
			}
		}
		if lr.err != nil {
			if lr.discard {
				// The input ended in the line, reported already.
				lr.discard, lr.reported = false, false
				continue
			}
			if lr.chunked > 0 {
				lr.join()
			}
			line := lr.buf[lr.start:lr.end]
			lr.start, lr.scanned = lr.end, lr.end
			if len(line)-crEnd(line) > lr.max {
				lr.keepHead(line)
				return nil, lr.tooLarge()
			}
			if line = trimLine(line); line != nil {
				return line, nil
			}
			return nil, lr.err
		}
		lr.fill()
	}
}

// endLong ends line, which is over the limit, at its newline: it returns
// the line's error, or nil if skipLong has returned it already.
func (lr *lineReader) endLong(line []byte) error {
	if !lr.discard {
		lr.keepHead(line)
	}
	reported := lr.reported
	lr.discard, lr.reported = false, false
	if reported {
		return nil
	}
	return lr.tooLarge()
}

// skipLong drops what has been read of the line being discarded, which
// lacks its newline yet. The first time, it returns the line's error: the
// line is over the limit whatever follows, and its end may never come.
func (lr *lineReader) skipLong() error {
	if len(lr.chunks) > 0 {
		// The last chunk may be small (see fill): read the rest of the
		// line through the first, a whole buffer.
		lr.buf = lr.chunks[0]
	}
	lr.start, lr.end, lr.scanned = 0, 0, 0
	lr.dropChunks()
	if lr.reported {
		return nil
	}
	lr.reported = true
	return lr.tooLarge()
}

// keepLineHead keeps the head of the line being read, which is about to
// be discarded: it starts the first chunk, or at start.
func (lr *lineReader) keepLineHead() {
	if len(lr.chunks) > 0 {
		lr.keepHead(lr.chunks[0])
	} else {
		lr.keepHead(lr.buf[lr.start:lr.end])
	}
}

// keepHead keeps the first bytes of msg, a message over the limit, for
// its error: tooLargeHead of them, and never more than the limit and
// one.
func (lr *lineReader) keepHead(msg []byte) {
	lr.head = append(lr.head[:0], msg[:min(len(msg), tooLargeHead, lr.max+1)]...)
}

// tooLarge returns the error for the message over the limit whose head
// was kept.
func (lr *lineReader) tooLarge() error {
	err := &tooLargeError{limit: lr.max, head: bytes.Clone(lr.head)}
	lr.head = lr.head[:0]
	return err
}

// trimLine removes a trailing "\r" and returns nil for a blank line.
func trimLine(line []byte) []byte {
	if n := len(line); n > 0 && line[n-1] == '\r' {
		line = line[:n-1]
	}
	if skipSpace(line, 0) == len(line) {
		return nil
	}
	return line
}

// fill makes room in the buffer and reads into it once.
func (lr *lineReader) fill() {
	if lr.start > 0 {
		n := copy(lr.buf, lr.buf[lr.start:lr.end])
		lr.scanned -= lr.start
		lr.start, lr.end = 0, n
	}
	if lr.end == 0 && len(lr.chunks) == 0 && (len(lr.buf) > maxIdleBufSize || lr.charged > 0) {
		// Under a server's budget, any grown buffer goes: an idle
		// connection must not hold room that others need.
		lr.buf = nil
		lr.letGo = true
		lr.charge(0)
	}
	if lr.end == len(lr.buf) && lr.mode == modeLine && lr.end >= initialBufSize {
		// A line longer than the buffer: keep the buffer as it is and
		// read on into a new one (see chunks). The chunks of a line
		// never hold more than the limit and one buffer.
		size := min(initialBufSize, lr.max+1-lr.chunked-lr.end)
		if !lr.charge(lr.chunked + lr.end + size) {
			lr.err = errReadStopped
			return
		}
		lr.chunks = append(lr.chunks, lr.buf)
		lr.chunked += lr.end
		lr.buf = make([]byte, size)
		lr.start, lr.end, lr.scanned = 0, 0, 0
	}
	// (Not a line's last piece, which the chunk path sized to the limit
	// and charged with the chunks.)
	if lr.end == len(lr.buf) || lr.filled && len(lr.chunks) == 0 && len(lr.buf) < min(initialBufSize, lr.max+1) {
		// Grow by half, or to the first size: a long line costs at most
		// half again its size; a small buffer that a read filled is
		// too small for the input.
		size := initialBufSize
		if lr.end == len(lr.buf) {
			size = max(size, len(lr.buf)+len(lr.buf)/2)
		}
		if limit := lr.max + 1; size > limit && limit > lr.end {
			size = limit
		}
		if !lr.charge(size) {
			lr.err = errReadStopped
			return
		}
		nb := make([]byte, size)
		copy(nb, lr.buf[:lr.end])
		lr.buf = nb
	}
	if lr.hooks != nil && !lr.hooks.beforeRead() {
		lr.err = errReadStopped
		return
	}
	n, err := lr.r.Read(lr.buf[lr.end:])
	if lr.hooks != nil {
		lr.hooks.afterRead()
	}
	if n < 0 || n > len(lr.buf)-lr.end {
		n, err = 0, errors.New("jsonrpc: reader returned an invalid count")
	}
	lr.filled = n > 0 && n == len(lr.buf)-lr.end
	lr.end += n
	if err != nil {
		lr.err = err
	}
}

// joinLine ends a line held in chunks at buf[nl], the newline: it joins
// the line, unless it is over the limit, and returns where its newline
// is now.
func (lr *lineReader) joinLine(nl int) int {
	if lr.chunked+nl-lr.start > lr.max+1 { // the last byte may be a "\r"
		lr.discard = true // reported as the newline is taken
		lr.keepLineHead()
		lr.dropChunks()
		return nl
	}
	return nl + lr.join()
}

// join copies the chunks and the unread data into one buffer, which
// becomes the reader's, and returns by how much the unread data moved.
// The new buffer is as large as the chunks and the old buffer together,
// so what is charged against a budget does not change, and a run of
// lines as long as this one fits in it.
func (lr *lineReader) join() int {
	nb := make([]byte, lr.chunked+len(lr.buf))
	n := 0
	for _, c := range lr.chunks {
		n += copy(nb[n:], c)
	}
	moved := n - lr.start
	copy(nb[n:], lr.buf[lr.start:lr.end])
	lr.buf = nb
	lr.start, lr.end, lr.scanned = 0, n+lr.end-lr.start, lr.scanned+moved
	lr.dropChunks()
	return moved
}

// dropChunks lets go of the chunks of a line, given to a join or too
// long to keep.
func (lr *lineReader) dropChunks() {
	if len(lr.chunks) > 0 {
		clear(lr.chunks)
		lr.chunks, lr.chunked = lr.chunks[:0], 0
		lr.charge(len(lr.buf))
	}
}

// detach moves the unread data to a new buffer, so that slices returned
// earlier stay valid for as long as anyone holds them.
func (lr *lineReader) detach() {
	if lr.mode == modeWhole {
		return // the body is never reused
	}
	if lr.mode == modeCustom {
		lr.buf = nil // the next message is copied into a new buffer
		if lr.budget != nil {
			lr.budget.mem.give(lr.charged) // the unit's now (see handoff)
			lr.charged = 0
		}
		return
	}
	// A buffer of the first size is followed by a small one: a hand-off
	// (a handler that calls its peer causes one) leaves a few lines
	// unread at most, and a read that fills the small buffer grows it at
	// the next (see fill). A buffer grown larger is followed by one as
	// large, up to the size an idle reader keeps, so that a run of long
	// lines is not read in pieces anew after every hand-off; one larger
	// still is not copied.
	size := max(lr.end-lr.start, min(detachBufSize, lr.max+1))
	if lr.budget != nil {
		// The old buffer is the handed-off unit's now, charged to it (see
		// handoff). The new one cannot wait for room: it holds just the
		// unread data, past the first initialBufSize bytes, and grows
		// within the budget.
		lr.budget.mem.give(lr.charged)
		lr.charged = max(size-initialBufSize, 0)
		lr.budget.mem.take(lr.charged)
	} else if len(lr.buf) > initialBufSize {
		size = max(size, min(len(lr.buf), maxIdleBufSize))
	}
	nb := make([]byte, size)
	n := copy(nb, lr.buf[lr.start:lr.end])
	lr.scanned -= lr.start
	lr.start, lr.end = 0, n
	lr.buf, lr.filled = nb, false
}

// Close marks the reader closed and closes the underlying reader if it is
// an io.Closer, which unblocks a pending Read on most readers, or the
// Transport it reads. It is idempotent: later calls do nothing and return
// nil.
func (lr *lineReader) Close() error {
	if lr.closed.Swap(true) {
		return nil
	}
	if c, ok := lr.r.(io.Closer); ok {
		return c.Close()
	}
	if e, ok := lr.inner.(*transportEnd); ok {
		return e.Close()
	}
	return nil
}

// IsClosed reports whether Close has been called.
func (lr *lineReader) IsClosed() bool { return lr.closed.Load() }

// readHooks run around each call of Read on a lineReader's r, which may
// block: the server flushes its output before it. When beforeRead reports
// false, Read is not called and reading ends. A connection implements
// them (an interface rather than two method values, which would cost two
// allocations per connection).
type readHooks interface {
	beforeRead() bool
	afterRead()
}

// crEnd is 1 when line ends in "\r", which the framing removes, else 0.
func crEnd(line []byte) int {
	if len(line) > 0 && line[len(line)-1] == '\r' {
		return 1
	}
	return 0
}
