package jsonrpc

import (
	"bytes"
	"errors"
	"io"
	"math"
	"strconv"
	"strings"
)

// A Framing delimits messages on a stream: it says where each message
// starts and ends. [LineFraming], newline-delimited JSON, is the default;
// [HeaderFraming] is the base protocol of the Language Server Protocol. A
// type of one's own can implement Framing for a third, such as a length
// prefix in binary.
//
// The two built-in framings are recognised by their type and read and
// written without going through the interface. For any other, each
// message read is copied once more, out of the MessageReader's buffer,
// and each message written is built in a scratch buffer before
// AppendFrame frames it.
//
// One Framing value may serve many connections at once, so its methods may
// be called concurrently; a MessageReader it returns is used by one
// goroutine at a time.
type Framing interface {
	// NewReader returns a reader of the messages on r, none longer than
	// maxSize bytes.
	NewReader(r io.Reader, maxSize int) MessageReader

	// AppendFrame appends msg, one complete JSON message, framed for the
	// wire, to dst, and returns the extended slice. It must not keep msg.
	AppendFrame(dst, msg []byte) []byte
}

// A MessageReader reads whole messages from a stream.
type MessageReader interface {
	// ReadMessage returns the next message, without its framing; the slice is
	// valid until the next call. For a message over the reader's limit, it
	// returns an error wrapping [ErrMessageTooLarge], and for a message whose
	// framing is damaged one wrapping [ErrBadHeader] (or any error wrapping
	// either, for a framing of one's own); in both cases only that message is
	// lost, and the next call goes on with the one after it. At a clean end
	// of the input it returns io.EOF (a message returned together with
	// io.EOF, as bufio.Reader.ReadBytes returns its last, is served
	// first), and io.ErrUnexpectedEOF when the input ends inside a
	// message. Any other error ends reading.
	ReadMessage() ([]byte, error)
}

// LineFraming is newline-delimited JSON, the default framing: each message
// is one line, ended by "\n". A reader removes a trailing "\r" and skips
// blank lines; a writer compacts a message that spans lines. The zero
// value is ready to use.
type LineFraming struct{}

// NewReader returns a reader of newline-delimited messages on r, none
// longer than maxSize bytes; zero or less means 64 MiB. A longer line is
// reported as soon as the reader is past the limit, and the rest of it
// is discarded as it arrives, never held.
func (LineFraming) NewReader(r io.Reader, maxSize int) MessageReader {
	return newLineReader(r, maxSize)
}

// AppendFrame appends msg and "\n" to dst. The message must not contain a
// newline; JSON produced by encoding/json does not.
func (LineFraming) AppendFrame(dst, msg []byte) []byte {
	return append(append(dst, msg...), '\n')
}

// HeaderFraming is the base protocol of the Language Server Protocol: each
// message is a header block, then a body of exactly the length it states.
// The zero value is ready to use.
//
//	Content-Length: 58\r\n
//	\r\n
//	{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}
//
// A header is a line "Name: value"; the block ends with an empty line.
// Lines may end in "\r\n" or in a bare "\n", names are matched without
// regard to case, and headers other than Content-Length, such as
// Content-Type, are ignored. Content-Length is required, and may be
// repeated only with the same value.
//
// The reader keeps the stream going after a bad message wherever it can,
// and each bad message costs one error:
//   - A Content-Length over the limit is reported with an error wrapping
//     [ErrMessageTooLarge] once the body's first bytes (512 at most) are
//     read, so that a connection can tell which call a response too large
//     answered; the rest of the body is discarded as it arrives, never
//     held.
//   - A header block longer than 8 KiB is read up to its empty line, any
//     line over 8 KiB being discarded as it arrives, and reported with an
//     error wrapping [ErrBadHeader]; if it held a valid Content-Length, the
//     body is skipped too. A line over 8 KiB whose first 8 KiB do not
//     start "Name:" is no header, and is handled as below.
//   - A block without a usable Content-Length (missing, not a decimal
//     number, or given twice with different values) is reported at its
//     empty line, and a line that is not a header ("Name: value") at once,
//     with an error wrapping [ErrBadHeader]. Where the body ends is then
//     unknown, so the reader skips ahead to the next "Content-Length:" (in
//     any case) and reads on from there; what comes before it, the rest of
//     the lost message, is dropped.
//
// Empty lines between messages are skipped. The input ending inside a
// header block or a body gives io.ErrUnexpectedEOF; a body is never
// allocated for before it arrives.
type HeaderFraming struct{}

// maxHeaderBytes is the longest header block, with its line endings, that a
// reader of [HeaderFraming] accepts.
const maxHeaderBytes = 8 << 10

// ErrBadHeader is wrapped by the error that a reader of [HeaderFraming]
// returns for a header block it cannot use. The next read goes on with
// the message after it.
var ErrBadHeader = errors.New("jsonrpc: bad message header")

// headerError reports a bad header block and what is wrong with it.
type headerError struct{ detail string }

func (e *headerError) Error() string { return ErrBadHeader.Error() + ": " + e.detail }

func (e *headerError) Unwrap() error { return ErrBadHeader }

// NewReader returns a reader of header-framed messages on r, with bodies of
// at most maxSize bytes; zero or less means 64 MiB.
func (HeaderFraming) NewReader(r io.Reader, maxSize int) MessageReader {
	return newHeaderReader(r, maxSize)
}

// AppendFrame appends to dst the header "Content-Length: N\r\n\r\n", with N
// the length of msg, then msg.
func (HeaderFraming) AppendFrame(dst, msg []byte) []byte {
	return append(appendHeader(dst, len(msg)), msg...)
}

// appendHeader appends the header block of an n-byte body to b.
func appendHeader(b []byte, n int) []byte {
	b = append(b, "Content-Length: "...)
	b = strconv.AppendInt(b, int64(n), 10)
	return append(b, "\r\n\r\n"...)
}

// The framings a lineReader or lineWriter can be set to.
const (
	modeLine    = iota // newline-delimited, the fast path
	modeHeader         // HeaderFraming
	modeCustom         // a Framing of the user's, through its interface; a Transport's reader
	modeWhole          // one message, the whole buffer: an HTTP body
	modeMessage        // a Transport's writer: each message handed on whole
)

// The phases of a lineReader in modeHeader.
const (
	phaseHeader = iota // reading header lines
	phaseBody          // waiting for the rest of a body of length bytes
	phaseSkip          // discarding length more bytes of a refused body
	phaseResync        // looking for the next "Content-Length:"
)

// newFramedReader returns the reader of messages on r for framing f (nil
// means LineFraming), none longer than maxSize bytes. For the built-in
// framings it is the lineReader itself. For any other it is a lineReader
// that reads through f.NewReader and copies each message into a buffer of
// its own, so that detach keeps the messages it returned valid; its
// beforeRead and afterRead hooks run around each Read on r, as for the
// built-in framings, since the inner reader may read ahead.
func newFramedReader(f Framing, r io.Reader, maxSize int) *lineReader {
	switch f.(type) {
	case nil, LineFraming, *LineFraming:
		return newLineReader(r, maxSize)
	case HeaderFraming, *HeaderFraming:
		return newHeaderReader(r, maxSize)
	}
	lr := newLineReader(r, maxSize)
	lr.mode = modeCustom
	lr.inner = f.NewReader(hookReader{lr}, lr.max)
	return lr
}

// newFramedWriter returns a lineWriter that writes to w messages framed by
// f; nil means LineFraming.
func newFramedWriter(f Framing, w io.Writer) *lineWriter {
	lw := new(lineWriter)
	initFramedWriter(lw, f, w)
	return lw
}

// initFramedWriter sets lw, a zero lineWriter, up as newFramedWriter
// does.
func initFramedWriter(lw *lineWriter, f Framing, w io.Writer) {
	lw.w = w
	lw.cond.L = &lw.mu
	switch f.(type) {
	case nil, LineFraming, *LineFraming:
	case HeaderFraming, *HeaderFraming:
		lw.mode = modeHeader
	default:
		lw.mode = modeCustom
		lw.framing = f
	}
}

// initWhole sets lr, a zero lineReader, to read one message, body,
// already read in full and checked against the limit.
func (lr *lineReader) initWhole(body []byte) {
	lr.buf, lr.end, lr.max, lr.mode = body, len(body), max(len(body), 1), modeWhole
}

func newHeaderReader(r io.Reader, maxSize int) *lineReader {
	lr := newLineReader(r, maxSize)
	lr.mode = modeHeader
	lr.startBlock()
	return lr
}

// readFramed is ReadMessage for the framings other than newline-delimited.
func (lr *lineReader) readFramed() ([]byte, error) {
	switch lr.mode {
	case modeCustom:
		return lr.readCustom()
	case modeWhole:
		if lr.closed.Load() {
			return nil, &closedError{}
		}
		if lr.phase != 0 {
			return nil, io.EOF
		}
		lr.phase = 1 // read
		msg := lr.buf[lr.start:lr.end:lr.end]
		lr.start = lr.end
		if msg == nil {
			msg = []byte{}
		}
		return msg, nil
	}
	for {
		if lr.closed.Load() {
			return nil, &closedError{}
		}
		switch lr.phase {
		case phaseHeader:
			if lr.hdrSize == 0 && lr.scanned == lr.start {
				if ok, err := lr.quickHeader(); err != nil {
					return nil, err
				} else if ok {
					continue
				}
			}
			if done, err := lr.headerLine(); done {
				return nil, err
			}
			if lr.phase != phaseHeader || lr.scanned < lr.end {
				continue // a body follows, or more lines are buffered
			}
		case phaseBody:
			if n := lr.length; lr.end-lr.start >= n {
				msg := lr.buf[lr.start : lr.start+n : lr.start+n]
				lr.start += n
				lr.scanned = lr.start
				lr.startBlock()
				if msg == nil {
					msg = []byte{}
				}
				return msg, nil
			}
		case phaseSkip:
			if lr.tooLong {
				// The body's head is read first, for the error.
				want := min(lr.length, tooLargeHead, lr.max+1)
				if lr.end-lr.start < want && lr.err == nil {
					break
				}
				lr.tooLong = false
				lr.keepHead(lr.buf[lr.start:min(lr.end, lr.start+want)])
				lr.skip()
				return nil, lr.tooLarge()
			}
			if lr.skip() {
				continue
			}
		case phaseResync:
			if lr.findLength() {
				lr.startBlock()
				continue
			}
		}
		if lr.err != nil {
			return nil, lr.endFramed()
		}
		lr.fill()
	}
}

// skipTooLarge sets the reader to skip a body over the limit, reporting
// it once the body's head is read.
func (lr *lineReader) skipTooLarge() {
	lr.phase = phaseSkip
	lr.tooLong = true
}

// skip drops what is buffered of a body being skipped, and reports
// whether that was the rest of it.
func (lr *lineReader) skip() bool {
	n := min(lr.length, lr.end-lr.start)
	lr.length -= n
	if lr.length == 0 {
		lr.start += n
		lr.scanned = lr.start
		lr.startBlock()
		return true
	}
	lr.start, lr.end, lr.scanned = 0, 0, 0
	return false
}

// startBlock sets the reader to read a new header block at lr.start.
func (lr *lineReader) startBlock() {
	lr.phase = phaseHeader
	lr.length = -1
	lr.hdrSize = 0
	lr.hdrLong = false
	lr.hdrErr = ""
	lr.discard = false
}

// quickHeader reads, at the start of a header block, the block most
// peers send, "Content-Length: N\r\n\r\n" with N of at most 15 digits, if
// it is buffered whole: it reports whether it did, with the error to
// report for it. It does what headerLine would do with that block, only
// faster; for anything else it leaves the block to headerLine.
func (lr *lineReader) quickHeader() (bool, error) {
	const name = "Content-Length: "
	b := lr.buf[lr.start:lr.end]
	if len(b) < len(name)+5 || string(b[:len(name)]) != name {
		return false, nil
	}
	// Fifteen digits fit an int64, not the int of a 32-bit platform.
	n, i := int64(0), len(name)
	for ; i < len(b) && i < len(name)+15 && '0' <= b[i] && b[i] <= '9'; i++ {
		n = n*10 + int64(b[i]-'0')
	}
	if i == len(name) || len(b) < i+4 || string(b[i:i+4]) != "\r\n\r\n" {
		return false, nil
	}
	lr.start += i + 4
	lr.scanned = lr.start
	lr.length = int(min(n, math.MaxInt))
	if n > int64(lr.max) {
		lr.skipTooLarge()
		return true, nil
	}
	lr.phase = phaseBody
	return true, nil
}

// headerLine handles the next header line if a whole one is buffered. It
// reports done, with the error to return, when the header block turns out
// to be bad.
func (lr *lineReader) headerLine() (done bool, err error) {
	i := bytes.IndexByte(lr.buf[lr.scanned:lr.end], '\n')
	if i < 0 {
		lr.scanned = lr.end
		if !lr.discard && lr.end-lr.start > maxHeaderBytes && headerColon(lr.buf[lr.start:lr.start+maxHeaderBytes+1]) < 0 {
			// A long line that is not a header: out of step, as below. (Its
			// first bytes only are looked at, so that the reads do not
			// matter.)
			return true, lr.outOfStep(lr.start, lr.buf[lr.start:lr.end])
		}
		if lr.discard || lr.end-lr.start > maxHeaderBytes {
			// A line too long for any block: drop it as it arrives.
			lr.hdrSize += lr.end - lr.start
			lr.hdrLong = true
			lr.discard = true
			lr.start, lr.end, lr.scanned = 0, 0, 0
		}
		return false, nil
	}
	nl := lr.scanned + i
	lineStart := lr.start
	line := lr.buf[lineStart:nl]
	lr.start, lr.scanned = nl+1, nl+1
	prev := lr.hdrSize
	lr.hdrSize += len(line) + 1
	if lr.hdrSize > maxHeaderBytes {
		lr.hdrLong = true
	}
	if !lr.discard && len(line) > maxHeaderBytes && headerColon(line[:maxHeaderBytes+1]) < 0 {
		return true, lr.outOfStep(lineStart, line) // the same for a long line that came whole
	}
	if lr.discard || len(line) > maxHeaderBytes {
		// The end of a line too long for any block, or all of one that
		// came in one read: it is dropped unread whatever the reads were.
		lr.discard = false
		return false, nil
	}
	if n := len(line); n > 0 && line[n-1] == '\r' {
		line = line[:n-1]
	}
	if skipSpace(line, 0) == len(line) {
		switch {
		case prev == 0:
			lr.hdrSize = 0 // an empty line between messages
			return false, nil
		case len(line) == 0:
			if err := lr.endBlock(); err != nil {
				return true, err
			}
			return false, nil
		}
	}
	colon := bytes.IndexByte(line, ':') // headerColon, written out on this path
	if colon <= 0 || !isToken(line[:colon]) {
		return true, lr.outOfStep(lineStart, line) // not a header
	}
	if !equalFoldASCII(line[:colon], "content-length") {
		return false, nil
	}
	n, ok := parseLength(trimOWS(line[colon+1:]))
	switch {
	case !ok:
		lr.setHeaderErr("invalid Content-Length " + quoteShort(trimOWS(line[colon+1:])))
	case lr.length >= 0 && lr.length != n:
		lr.setHeaderErr("conflicting Content-Length values")
	default:
		lr.length = n
	}
	return false, nil
}

// outOfStep handles line, at start in the buffer, which is not a header:
// the stream is out of step. The reader looks for the next message from
// the start of the line, which may hold the rest of a lost body followed
// by a header, and returns the error to report.
func (lr *lineReader) outOfStep(start int, line []byte) error {
	lr.start, lr.scanned = start, start
	lr.phase = phaseResync
	return &headerError{"malformed header line " + quoteShort(line)}
}

// headerColon returns the index of the colon of line, a header line
// "Name: value", or -1 if line is not one.
func headerColon(line []byte) int {
	colon := bytes.IndexByte(line, ':')
	if colon <= 0 || !isToken(line[:colon]) {
		return -1
	}
	return colon
}

// setHeaderErr records the first problem of a header block.
func (lr *lineReader) setHeaderErr(detail string) {
	if lr.hdrErr == "" {
		lr.hdrErr = detail
	}
}

// endBlock decides what follows a header block that its empty line ended:
// its body, or, returning the error to report, what to skip.
func (lr *lineReader) endBlock() error {
	switch {
	case lr.hdrLong:
		if lr.length >= 0 && lr.hdrErr == "" {
			lr.phase = phaseSkip
		} else {
			lr.phase = phaseResync
		}
		return &headerError{"header block longer than " + strconv.Itoa(maxHeaderBytes) + " bytes"}
	case lr.hdrErr != "":
		lr.phase = phaseResync
		return &headerError{lr.hdrErr}
	case lr.length < 0:
		lr.phase = phaseResync
		return &headerError{"missing Content-Length"}
	case lr.length > lr.max:
		lr.skipTooLarge()
		return nil
	}
	lr.phase = phaseBody
	return nil
}

// endFramed returns the error for the end of the input, lr.err, and makes
// the reader return io.EOF from then on if it was the end.
func (lr *lineReader) endFramed() error {
	if lr.err != io.EOF {
		return lr.err
	}
	partial := false
	switch lr.phase {
	case phaseBody, phaseSkip:
		partial = true
	case phaseHeader:
		partial = lr.hdrSize > 0 || lr.discard || skipSpace(lr.buf[lr.start:lr.end], 0) < lr.end-lr.start
	}
	lr.start, lr.end, lr.scanned = 0, 0, 0
	lr.startBlock()
	if partial {
		return io.ErrUnexpectedEOF
	}
	return io.EOF
}

// lengthName starts the header that a reader out of step looks for.
const lengthName = "content-length:"

// findLength looks for lengthName, in any case, from lr.scanned. If it
// finds it, it starts the unread data there and reports true; if not, it
// drops what was searched, keeping only a tail that may be the start of
// it.
func (lr *lineReader) findLength() bool {
	b := lr.buf[:lr.end]
	for i := lr.scanned; i+len(lengthName) <= len(b); i++ {
		if lowerASCII(b[i]) == 'c' && equalFoldASCII(b[i:i+len(lengthName)], lengthName) {
			lr.start, lr.scanned = i, i
			return true
		}
	}
	keep := max(lr.scanned, lr.end-len(lengthName)+1)
	lr.start, lr.scanned = keep, keep
	return false
}

func lowerASCII(c byte) byte {
	if 'A' <= c && c <= 'Z' {
		return c + 'a' - 'A'
	}
	return c
}

// equalFoldASCII reports whether b equals the lower-case ASCII s without
// regard to the case of ASCII letters.
func equalFoldASCII(b []byte, s string) bool {
	if len(b) != len(s) {
		return false
	}
	for i := range len(s) {
		if lowerASCII(b[i]) != s[i] {
			return false
		}
	}
	return true
}

// isToken reports whether b is a header name: one or more of the token
// characters of RFC 9110.
func isToken(b []byte) bool {
	for _, c := range b {
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		case strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0:
		default:
			return false
		}
	}
	return len(b) > 0
}

// trimOWS removes the spaces and tabs around a header value.
func trimOWS(b []byte) []byte {
	for len(b) > 0 && (b[0] == ' ' || b[0] == '\t') {
		b = b[1:]
	}
	for len(b) > 0 && (b[len(b)-1] == ' ' || b[len(b)-1] == '\t') {
		b = b[:len(b)-1]
	}
	return b
}

// parseLength parses a Content-Length value: decimal digits only, within
// the range of int.
func parseLength(b []byte) (int, bool) {
	if len(b) == 0 {
		return 0, false
	}
	n := 0
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		d := int(c - '0')
		if n > (maxInt-d)/10 {
			return 0, false
		}
		n = n*10 + d
	}
	return n, true
}

const maxInt = int(^uint(0) >> 1)

// quoteShort quotes b for an error message, cut to a few dozen bytes.
func quoteShort(b []byte) string {
	const limit = 40
	if len(b) > limit {
		return strconv.Quote(string(b[:limit])) + "..."
	}
	return strconv.Quote(string(b))
}

// hookReader is the reader under a Framing of the user's: it runs the
// lineReader's hooks around each Read of the underlying reader.
type hookReader struct{ lr *lineReader }

func (h hookReader) Read(p []byte) (int, error) {
	lr := h.lr
	if lr.hooks != nil && !lr.hooks.beforeRead() {
		lr.stopped = true
		return 0, errReadStopped
	}
	n, err := lr.r.Read(p)
	if lr.hooks != nil {
		lr.hooks.afterRead()
	}
	return n, err
}

// readCustom is ReadMessage for a Framing of the user's, and for a
// Transport.
func (lr *lineReader) readCustom() ([]byte, error) {
	if lr.closed.Load() {
		return nil, &closedError{}
	}
	if lr.stopped {
		return nil, errReadStopped
	}
	if lr.lastEOF != nil {
		return nil, lr.lastEOF
	}
	msg, err := lr.inner.ReadMessage()
	if lr.stopped {
		return nil, errReadStopped
	}
	if err != nil {
		if len(msg) == 0 || err != io.EOF {
			return nil, err
		}
		// A reader in io.Reader's way, that returns its last message
		// with io.EOF (bufio.Reader.ReadBytes, say): the message is
		// served, and the end comes next.
		lr.lastEOF = err
	}
	if len(msg) > lr.max {
		lr.keepHead(msg)
		return nil, lr.tooLarge()
	}
	if (cap(lr.buf) > maxIdleBufSize || lr.charged > 0) && len(msg) <= initialBufSize {
		lr.buf = nil
		lr.charge(0)
	}
	if len(msg) > cap(lr.buf) && lr.budget != nil {
		if !lr.charge(len(msg)) {
			return nil, errReadStopped
		}
		lr.buf = make([]byte, 0, len(msg))
	}
	lr.buf = append(lr.buf[:0], msg...)
	if lr.buf == nil {
		return []byte{}, nil
	}
	return lr.buf[:len(msg):len(msg)], nil
}

// maxFrameScratch is the largest scratch buffer a lineWriter keeps for a
// Framing of the user's.
const maxFrameScratch = 64 << 10

// appendFramed appends one message, built by add, to buf, framed by the
// writer's framing, which is not newline-delimited, or, in modeMessage,
// as a record that the Transport's end takes apart again.
func (lw *lineWriter) appendFramed(buf []byte, add func([]byte) []byte) []byte {
	if lw.mode == modeHeader {
		// Build the message in place, then move it up to make room for
		// the header, whose length is known only now.
		start := len(buf)
		buf = add(buf)
		n := len(buf) - start
		var hb [32]byte
		h := appendHeader(hb[:0], n)
		buf = append(buf, h...)
		copy(buf[start+len(h):], buf[start:start+n])
		copy(buf[start:], h)
		return buf
	}
	if lw.framing == nil { // modeMessage, a Transport's writer
		return appendRecord(buf, add)
	}
	lw.scratch = add(lw.scratch[:0])
	buf = lw.framing.AppendFrame(buf, lw.scratch)
	if cap(lw.scratch) > maxFrameScratch {
		lw.scratch = nil
	}
	return buf
}
