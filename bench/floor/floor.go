// Package floor is the lower bound of the benchmarks: a hand-written
// newline-delimited JSON-RPC loop that uses no library and does only the
// minimum work each workload needs, written to be as fast as we know how.
//
// It reads into one buffer of its own (no bufio), and tokenizes each line
// once, front to back: member names are compared whole where they start
// (a few word compares), values are skipped (strings through a vectorised
// search for the closing quote), and the spans of the id, the method and
// the params are noted on the way; subtract's two integers are parsed in
// the same pass. Only a notification is found another way: once a line's
// params are reached without an id, and the rest of the line holds no
// "id", the line is dropped without scanning its params, and while lines
// keep being notifications each is first searched for "id" (vectorised)
// before any tokenizing. Every answer is appended to one output buffer,
// which is written before a read that may block (see Serve) or once it
// has grown large; a large result is written from the read buffer.
//
// It trusts the shape of its input (the benchmark workloads): it validates
// nothing, and skips a line it does not understand.
package floor

import (
	"bytes"
	"io"
	"strconv"
)

const (
	// readBufSize is the initial size of the read buffer. It grows when a
	// line does not fit, or takes more than a quarter of it: to 1 MiB the
	// first time (W5big's 256 KiB lines need no more), then doubling.
	readBufSize = 256 << 10
	// minRead is the least room kept free at the end of the read buffer
	// for the next read; below it, the partial line is moved to the
	// front (or the buffer grows).
	minRead = 64 << 10
	// smallPartial: a partial line at most this long is always moved to
	// the front before a read, so that reads keep landing in the same few
	// cache-warm pages.
	smallPartial = 4 << 10
	// flushAt is the size at which the output is written without waiting
	// for the next read, to bound its buffer.
	flushAt = 256 << 10
	// bigValue: params at least this long are written straight from the
	// read buffer instead of being copied into the output buffer.
	bigValue = 64 << 10
)

// Results of the scanning functions besides an index.
const (
	needMore  = -1 // the buffered bytes end before the line does
	malformed = -2 // not the shape the floor understands
)

// Serve answers the requests read from r, one per line, writing one
// response line per call (or batch) to w. Notifications get no answer.
//
// The output is written before a read from r, which could block, unless
// more than 4 KiB of a line is already buffered (its sender is in the
// middle of a large message, not waiting for answers); also once it passes
// flushAt, and at the end of the input.
func Serve(r io.Reader, w io.Writer) error {
	s := &server{w: w, out: make([]byte, 0, flushAt+minRead)}
	buf := make([]byte, readBufSize)
	start, end := 0, 0 // buf[start:end] is read but not yet served
	// scanned: buf[start:scanned] is known to hold no newline, so a
	// partial line is parsed again only once a newline has arrived.
	scanned := 0
	for {
		if bytes.IndexByte(buf[scanned:end], '\n') >= 0 {
			for start < end {
				n := s.line(buf[start:end], false)
				if n == 0 {
					break
				}
				start += n
				if len(s.out) >= flushAt {
					s.flush()
				}
			}
			if s.err != nil {
				return s.err
			}
		}
		scanned = end

		// The next read may block: write every answer made so far.
		// Unless a long partial line is buffered: the sender of a large
		// message is still writing it, not waiting for an answer, and the
		// answers made so far (often just the end of a large result written
		// from the read buffer) can go out with the next ones.
		if end-start <= smallPartial {
			s.flush()
			if s.err != nil {
				return s.err
			}
		}

		// Make room for the read: move a partial line to the front if it
		// is short, or if the room left is too small and the line takes at
		// most a quarter of the buffer; otherwise, if the room is too
		// small, grow the buffer (so that long lines, one after the other,
		// are moved only now and then).
		switch partial := end - start; {
		case partial == 0:
			start, end, scanned = 0, 0, 0
		case start > 0 && (partial <= smallPartial || len(buf)-end < minRead && partial <= len(buf)/4):
			copy(buf, buf[start:end])
			start, end, scanned = 0, partial, partial
		}
		if len(buf)-end < minRead {
			size := 2 * len(buf)
			if len(buf) == readBufSize {
				size = 4 * len(buf) // the first long line: 1 MiB
			}
			nb := make([]byte, size)
			copy(nb, buf[start:end])
			buf = nb
			end, scanned, start = end-start, scanned-start, 0
		}

		n, err := r.Read(buf[end:])
		end += n
		if err == io.EOF {
			// Serve the rest, the last line without its newline included.
			for start < end {
				n := s.line(buf[start:end], true)
				if n <= 0 {
					break
				}
				start += n
			}
			s.flush()
			return s.err
		}
		if err != nil {
			s.flush()
			return err
		}
	}
}

type server struct {
	w   io.Writer
	out []byte
	err error // the first write error; nothing is written after it
	// notifying: the last line was found to be a notification. The next
	// is then first searched for "id" (see line).
	notifying bool
}

func (s *server) flush() {
	if len(s.out) > 0 && s.err == nil {
		_, s.err = s.w.Write(s.out)
	}
	s.out = s.out[:0]
}

// request is what the scan of one request object found: spans of the
// values in the line (end 0: absent) and, for subtract's params, the two
// integers.
type request struct {
	idStart, idEnd         int
	method                 int // methodEcho, methodSubtract or methodOther
	paramsStart, paramsEnd int
	minuend, subtrahend    int64
	notification           bool // found to have no id without scanning its params
}

// line serves the line at the start of b and returns its length, its
// newline included. It returns 0, and leaves the output as it was, if b
// ends before the line does; at EOF, b's end is the line's end.
func (s *server) line(b []byte, atEOF bool) int {
	if s.notifying {
		// The last line was a notification: this one probably is too,
		// and a line with no "id" in it is answered with nothing.
		if nl := bytes.IndexByte(b, '\n'); nl >= 0 && !bytes.Contains(b[:nl], quotedID) {
			return nl + 1
		}
	}
	mark := len(s.out)
	i := skipSpace(b, 0)
	var req request
	batch, answered := false, false
	switch {
	case i == len(b):
	case b[i] == '{':
		i = scanObject(b, i, &req, true)
		answered = i >= 0 && req.idEnd > 0
		s.notifying = i >= 0 && req.notification
	case b[i] == '[':
		batch = true
		i, answered = s.batch(b, i)
		s.notifying = false
	case b[i] != '\n':
		i = malformed
	}
	// After the value: spaces, then the newline.
	if i >= 0 {
		i = skipSpace(b, i)
		if i < len(b) && b[i] != '\n' {
			i = malformed
		}
	}
	if i == malformed {
		// Not understood: skip the line, answer nothing.
		s.out = s.out[:mark]
		answered = false
		if j := bytes.IndexByte(b, '\n'); j >= 0 {
			return j + 1
		}
		i = len(b)
	}
	if i == needMore || i == len(b) && !atEOF {
		s.out = s.out[:mark]
		if atEOF {
			return len(b)
		}
		return 0
	}
	if i < len(b) {
		i++ // the newline
	}
	if !answered {
		return i
	}
	if batch {
		s.out = append(s.out, ']', '\n')
		return i
	}
	if req.paramsEnd-req.paramsStart >= bigValue && req.method == methodEcho {
		// Write a large result from where it lies.
		s.out = append(s.out, respHead...)
		s.out = append(s.out, b[req.idStart:req.idEnd]...)
		s.out = append(s.out, respResult...)
		s.flush()
		if s.err == nil {
			_, s.err = s.w.Write(b[req.paramsStart:req.paramsEnd])
		}
		s.out = append(s.out, '}', '\n')
		return i
	}
	s.answer(b, &req)
	s.out = append(s.out, '\n')
	return i
}

// batch scans the array of requests at b[i] and appends the answers to
// those that have an id, the first preceded by '[' and the others by ','
// (the caller closes the array). It returns the index just past the array
// and whether it answered anything.
func (s *server) batch(b []byte, i int) (int, bool) {
	answered := false
	i++
	for {
		i = skipSpace(b, i)
		if i >= len(b) {
			return needMore, answered
		}
		switch b[i] {
		case ']':
			return i + 1, answered
		case ',':
			i++
		case '{':
			var req request
			if i = scanObject(b, i, &req, false); i < 0 {
				return i, answered
			}
			if req.idEnd > 0 {
				if answered {
					s.out = append(s.out, ',')
				} else {
					s.out = append(s.out, '[')
					answered = true
				}
				s.answer(b, &req)
			}
		default:
			return malformed, answered
		}
	}
}

var (
	quotedID    = []byte(`"id"`)
	respHead    = []byte(`{"jsonrpc":"2.0","id":`)
	respResult  = []byte(`,"result":`)
	respUnknown = []byte(`,"error":{"code":-32601,"message":"method not found"}}`)
)

// answer appends the response to req, a request scanned from b.
func (s *server) answer(b []byte, req *request) {
	out := append(s.out, respHead...)
	out = append(out, b[req.idStart:req.idEnd]...)
	switch req.method {
	case methodEcho:
		out = append(out, respResult...)
		if req.paramsEnd == 0 {
			out = append(out, "null"...)
		} else {
			out = append(out, b[req.paramsStart:req.paramsEnd]...)
		}
		out = append(out, '}')
	case methodSubtract:
		out = append(out, respResult...)
		out = strconv.AppendInt(out, req.minuend-req.subtrahend, 10)
		out = append(out, '}')
	default:
		out = append(out, respUnknown...)
	}
	s.out = out
}

// Methods and members, as scanObject tells them apart.
const (
	methodOther = iota
	methodEcho
	methodSubtract
)

const (
	memberOther = iota
	memberID
	memberMethod
	memberParams
	memberMinuend
	memberSubtrahend
)

// scanObject scans the request object at b[i] ('{') in one pass, filling
// in req, and returns the index just past it (or needMore, or malformed).
//
// For a line that is one object (whole), the params of a request whose
// id has not been seen before them are not scanned if the rest of the line
// holds no "id" (so the request is a notification, which gets no answer):
// scanObject then returns the index of the newline, having found it and
// looked for the id with two vectorised searches.
// The member names it looks for, and the method names, are compared whole
// where they start (a few word compares) rather than read byte by byte.
func scanObject(b []byte, i int, req *request, whole bool) int {
	i++
	for {
		i = skipSpace(b, i)
		if i >= len(b) {
			return needMore
		}
		switch b[i] {
		case '}':
			return i + 1
		case ',':
			i++
			continue
		case '"':
		default:
			return malformed
		}
		// The member's name, then its value at b[i].
		var member int
		switch c := at(b, i+1); {
		case c == 'j' && hasAt(b, i, `"jsonrpc":"2.0"`):
			i += len(`"jsonrpc":"2.0"`)
			continue
		case c == 'i' && hasAt(b, i, `"id":`):
			member, i = memberID, i+len(`"id":`)
		case c == 'm' && hasAt(b, i, `"method":`):
			member, i = memberMethod, i+len(`"method":`)
		case c == 'p' && hasAt(b, i, `"params":`):
			member, i = memberParams, i+len(`"params":`)
		default:
			// Any other member, or one of these written with spaces or
			// escapes: read its name whole.
			var key []byte
			if key, i = memberName(b, i); i < 0 {
				return i
			}
			switch string(key) {
			case "id":
				member = memberID
			case "method":
				member = memberMethod
			case "params":
				member = memberParams
			}
		}
		if i = skipSpace(b, i); i >= len(b) {
			return needMore
		}
		switch v := i; member {
		case memberID:
			i = skipValue(b, i)
			req.idStart, req.idEnd = v, i
		case memberMethod:
			switch {
			case hasAt(b, i, `"echo"`):
				req.method = methodEcho
				i += len(`"echo"`)
			case hasAt(b, i, `"subtract"`):
				req.method = methodSubtract
				i += len(`"subtract"`)
			default:
				req.method = methodOther
				i = skipValue(b, i)
			}
		case memberParams:
			if whole && req.idEnd == 0 {
				if nl := bytes.IndexByte(b[i:], '\n'); nl >= 0 && !bytes.Contains(b[i:i+nl], quotedID) {
					req.notification = true
					return i + nl
				}
			}
			if b[i] == '{' {
				i = scanSubtract(b, i, req)
			} else {
				i = skipValue(b, i)
			}
			req.paramsStart, req.paramsEnd = v, i
		default:
			i = skipValue(b, i)
		}
		if i < 0 {
			return i
		}
	}
}

// at returns b[i], or 0 past the end of b.
func at(b []byte, i int) byte {
	if i < len(b) {
		return b[i]
	}
	return 0
}

// hasAt reports whether b holds s at i.
func hasAt(b []byte, i int, s string) bool {
	return len(b)-i >= len(s) && string(b[i:i+len(s)]) == s
}

// scanSubtract skips the object at b[i] ('{') and parses the integers of
// its "minuend" and "subtrahend" members on the way.
func scanSubtract(b []byte, i int, req *request) int {
	i++
	for {
		i = skipSpace(b, i)
		if i >= len(b) {
			return needMore
		}
		switch b[i] {
		case '}':
			return i + 1
		case ',':
			i++
			continue
		case '"':
		default:
			return malformed
		}
		var member int
		switch c := at(b, i+1); {
		case c == 'm' && hasAt(b, i, `"minuend":`):
			member, i = memberMinuend, i+len(`"minuend":`)
		case c == 's' && hasAt(b, i, `"subtrahend":`):
			member, i = memberSubtrahend, i+len(`"subtrahend":`)
		default:
			var key []byte
			if key, i = memberName(b, i); i < 0 {
				return i
			}
			switch string(key) {
			case "minuend":
				member = memberMinuend
			case "subtrahend":
				member = memberSubtrahend
			}
		}
		if i = skipSpace(b, i); i >= len(b) {
			return needMore
		}
		switch member {
		case memberMinuend:
			req.minuend, i = parseInt(b, i)
		case memberSubtrahend:
			req.subtrahend, i = parseInt(b, i)
		}
		if i = skipValue(b, i); i < 0 {
			return i
		}
	}
}

// memberName reads the member name whose opening quote is b[i], and the
// colon after it, and returns the name and the index of the value.
func memberName(b []byte, i int) ([]byte, int) {
	// The usual case, a short name without escapes and a colon right
	// after it, byte by byte.
	start := i + 1
	for j := start; j < len(b) && j < start+16; j++ {
		switch b[j] {
		case '"':
			if j+2 < len(b) && b[j+1] == ':' && b[j+2] != ' ' && b[j+2] != '\t' && b[j+2] != '\r' {
				return b[start:j], j + 2
			}
			return b[start:j], skipColon(b, j+1)
		case '\\':
			j = len(b) // escapes: the general case
		}
	}
	end := stringEnd(b, start)
	if end < 0 {
		return nil, end
	}
	return b[start : end-1], skipColon(b, end)
}

// skipColon skips the ':' after a member name, and the spaces around it.
func skipColon(b []byte, i int) int {
	i = skipSpace(b, i)
	if i >= len(b) {
		return needMore
	}
	if b[i] != ':' {
		return malformed
	}
	i = skipSpace(b, i+1)
	if i >= len(b) {
		return needMore
	}
	return i
}

// parseInt parses the decimal integer at b[i] and returns it with the
// index just past its digits.
func parseInt(b []byte, i int) (int64, int) {
	neg := i < len(b) && b[i] == '-'
	if neg {
		i++
	}
	var n int64
	for ; i < len(b) && b[i] >= '0' && b[i] <= '9'; i++ {
		n = n*10 + int64(b[i]-'0')
	}
	if neg {
		n = -n
	}
	return n, i
}

// skipSpace skips spaces, tabs and carriage returns, but not a newline,
// which ends the line.
func skipSpace(b []byte, i int) int {
	for i < len(b) && b[i] <= ' ' && (b[i] == ' ' || b[i] == '\t' || b[i] == '\r') {
		i++
	}
	return i
}

// skipValue returns the index just past the JSON value at b[i] (a scalar
// ends before the next ',' '}' ']', space or newline).
func skipValue(b []byte, i int) int {
	if i >= len(b) {
		return needMore
	}
	switch b[i] {
	case '"':
		return stringEnd(b, i+1)
	case '{', '[':
		return skipNested(b, i)
	}
	// A scalar: a number (digits first, the usual case) or a literal.
	for i < len(b) && (b[i] >= '0' && b[i] <= '9' || b[i] == '-') {
		i++
	}
	for ; i < len(b); i++ {
		switch b[i] {
		case ',', '}', ']', ' ', '\t', '\r', '\n':
			return i
		}
	}
	return needMore
}

// skipNested returns the index just past the object or array at b[i].
func skipNested(b []byte, i int) int {
	depth := 0
	for i < len(b) {
		// Skip the bytes that mean nothing here (digits, letters, commas,
		// colons, spaces) through a table.
		for i < len(b) && !nesting[b[i]] {
			i++
		}
		if i == len(b) {
			break
		}
		switch b[i] {
		case '"':
			if i = stringEnd(b, i+1); i < 0 {
				return i
			}
			continue
		case '{', '[':
			depth++
		case '}', ']':
			depth--
			if depth == 0 {
				return i + 1
			}
		case '\n':
			return malformed
		}
		i++
	}
	return needMore
}

// nesting marks the bytes skipNested must look at.
var nesting = [256]bool{'"': true, '{': true, '[': true, '}': true, ']': true, '\n': true}

// stringEnd returns the index just past the closing quote of the string
// whose contents start at b[i].
func stringEnd(b []byte, i int) int {
	start := i
	// Short strings (keys, methods, "2.0") end within a few bytes: look
	// at them one by one before paying for a vectorised search.
	for n := min(len(b), i+16); i < n; i++ {
		switch b[i] {
		case '"':
			return i + 1
		case '\\':
			i++
		}
	}
	for i < len(b) {
		j := bytes.IndexByte(b[i:], '"')
		if j < 0 {
			break
		}
		k := i + j
		// The quote is escaped if an odd number of backslashes precede it.
		bs := 0
		for k-bs-1 >= start && b[k-bs-1] == '\\' {
			bs++
		}
		if bs%2 == 0 {
			return k + 1
		}
		i = k + 1
	}
	return needMore
}
