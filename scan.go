package jsonrpc

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"unicode/utf8"
)

// This file holds the single-pass scanner behind every message the package
// reads. It validates the whole line as JSON (RFC 8259, with strings held
// to valid UTF-8) and, in the same pass, records where the members of the
// JSON-RPC envelope lie, as sub-slices of the line. Nothing is copied and
// nothing is decoded until a handler asks for it.
//
// The scanner is iterative: nesting depth costs one bit of stack per level,
// never a Go stack frame, so deeply nested input cannot exhaust the stack.

// envelope holds the raw members of one JSON object read from the wire.
// Each field is the member's value exactly as it appeared (nil if absent).
type envelope struct {
	version []byte // "jsonrpc"
	method  []byte // "method", including quotes
	params  []byte
	id      []byte
	result  []byte
	err     []byte // "error"
	dup     bool   // a member appeared twice
	dupID   bool   // "id" appeared twice
	object  bool   // the value was a JSON object

	others [][]byte            // names of the members the envelope ignores
	seen   map[string]struct{} // the same, once there are many
}

func (e *envelope) reset() {
	others, seen := e.others[:0], e.seen
	clear(seen)
	*e = envelope{others: others, seen: seen}
}

// other records the name of a member the envelope ignores, noting a
// duplicate. Up to a few names are compared one by one; past that, a map
// keeps the check linear whatever the input.
func (e *envelope) other(name []byte) {
	if e.dup {
		return
	}
	if len(e.others) < 16 {
		for _, o := range e.others {
			if bytes.Equal(o, name) {
				e.dup = true
				return
			}
		}
		e.others = append(e.others, name)
		return
	}
	if e.seen == nil {
		e.seen = make(map[string]struct{})
	}
	if len(e.seen) == 0 {
		for _, o := range e.others {
			e.seen[string(o)] = struct{}{}
		}
	}
	if _, ok := e.seen[string(name)]; ok {
		e.dup = true
		return
	}
	e.seen[string(name)] = struct{}{}
}

// isSpace reports whether c is JSON whitespace.
func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\r' || c == '\n' }

func skipSpace(b []byte, i int) int {
	start := i
	for i < len(b) && isSpace(b[i]) {
		i++
	}
	countSteps(i - start + 1)
	return i
}

// scanString validates the string that starts at b[i] (which must be '"')
// and returns the index just past its closing quote, whether it contains
// escapes, and ok=false if it is not a valid JSON string.
//
// Every byte is looked at a bounded number of times whatever the input:
// the search for the next quote starts where the last one stopped, and the
// bulk path is only ever handed text up to that quote, so a long string
// full of escapes and with no quote costs time linear in its length.
func scanString(b []byte, i int) (end int, escaped, ok bool) {
	i++         // opening quote
	quote := -1 // index of the next '"' at or past i once searched for; len(b) if none
	run := 0
	for i < len(b) {
		c := b[i]
		if c >= 0x20 && c != '"' && c != '\\' && c < utf8.RuneSelf {
			i++
			countSteps(1)
			if run++; run == 16 {
				// A long string: take the rest of the run in bulk.
				if quote < i {
					quote = bytes.IndexByte(b[i:], '"')
					if quote < 0 {
						countSteps(len(b) - i)
						quote = len(b)
					} else {
						countSteps(quote + 1)
						quote += i
					}
				}
				n, valid := plainRun(b[i:quote])
				if !valid {
					return 0, false, false
				}
				i += n
				run = 0
			}
			continue
		}
		countSteps(1)
		switch {
		case c == '"':
			return i + 1, escaped, true
		case c == '\\':
			escaped = true
			if i+1 >= len(b) {
				return 0, false, false
			}
			switch b[i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				i += 2
			case 'u':
				if i+6 > len(b) {
					return 0, false, false
				}
				for _, h := range b[i+2 : i+6] {
					if !isHex(h) {
						return 0, false, false
					}
				}
				i += 6
			default:
				return 0, false, false
			}
		case c < 0x20:
			return 0, false, false
		default:
			r, size := utf8.DecodeRune(b[i:])
			if r == utf8.RuneError && size == 1 {
				return 0, false, false
			}
			i += size
		}
	}
	return 0, false, false
}

// plainRun looks at s, string content that holds no quote, up to its first
// backslash, and returns the length of that span; valid is false if the
// span holds a control character or invalid UTF-8, which makes the string
// invalid (a span ends at an ASCII byte or the end of the line, so it never
// cuts a valid character in two).
func plainRun(s []byte) (n int, valid bool) {
	n = bytes.IndexByte(s, '\\')
	if n < 0 {
		n = len(s)
	}
	countSteps(2 * n)
	const ones, highs = 0x0101010101010101, 0x8080808080808080
	var control, high uint64
	k := 0
	for ; k+32 <= n; k += 32 {
		w := s[k : k+32 : k+32]
		x0 := binary.LittleEndian.Uint64(w[0:])
		x1 := binary.LittleEndian.Uint64(w[8:])
		x2 := binary.LittleEndian.Uint64(w[16:])
		x3 := binary.LittleEndian.Uint64(w[24:])
		control |= (x0-ones*0x20)&^x0 | (x1-ones*0x20)&^x1 | (x2-ones*0x20)&^x2 | (x3-ones*0x20)&^x3
		high |= x0 | x1 | x2 | x3
	}
	for ; k+8 <= n; k += 8 {
		x := binary.LittleEndian.Uint64(s[k:])
		control |= (x - ones*0x20) &^ x
		high |= x
	}
	for ; k < n; k++ {
		if s[k] < 0x20 {
			return 0, false
		}
		high |= uint64(s[k])
	}
	if control&highs != 0 {
		return 0, false
	}
	if high&highs != 0 {
		countSteps(n)
		if !utf8.Valid(s[:n]) {
			return 0, false
		}
	}
	return n, true
}

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

func isDigit(c byte) bool { return '0' <= c && c <= '9' }

// scanNumber validates the number that starts at b[i].
func scanNumber(b []byte, i int) (int, bool) {
	end, ok := number(b, i)
	countSteps(max(end-i, 0) + 1)
	return end, ok
}

// number is scanNumber without the count of steps.
func number(b []byte, i int) (int, bool) {
	if i < len(b) && b[i] == '-' {
		i++
	}
	switch {
	case i < len(b) && b[i] == '0':
		i++
	case i < len(b) && '1' <= b[i] && b[i] <= '9':
		for i < len(b) && isDigit(b[i]) {
			i++
		}
	default:
		return 0, false
	}
	if i < len(b) && b[i] == '.' {
		i++
		if i >= len(b) || !isDigit(b[i]) {
			return 0, false
		}
		for i < len(b) && isDigit(b[i]) {
			i++
		}
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		if i >= len(b) || !isDigit(b[i]) {
			return 0, false
		}
		for i < len(b) && isDigit(b[i]) {
			i++
		}
	}
	return i, true
}

// bitStack records, for each open container, whether it is an object.
// The first 256 levels live in the struct; deeper input spills to the heap.
type bitStack struct {
	depth int
	low   [4]uint64
	high  []uint64
}

func (s *bitStack) push(object bool) {
	d := s.depth
	s.depth++
	var w *uint64
	if d < 256 {
		w = &s.low[d/64]
	} else {
		k := (d - 256) / 64
		if k == len(s.high) {
			s.high = append(s.high, 0)
		}
		w = &s.high[k]
	}
	bit := uint64(1) << (d % 64)
	if object {
		*w |= bit
	} else {
		*w &^= bit
	}
}

func (s *bitStack) top() (object bool) {
	d := s.depth - 1
	if d < 256 {
		return s.low[d/64]&(1<<(d%64)) != 0
	}
	return s.high[(d-256)/64]&(1<<(d%64)) != 0
}

// scanValue validates the JSON value that starts at b[i], which must not be
// whitespace, and returns the index just past it.
func scanValue(b []byte, i int) (int, bool) {
	// Fast paths for the scalars that make up most ids and params.
	if i < len(b) {
		switch c := b[i]; {
		case c == '"':
			end, _, ok := scanString(b, i)
			return end, ok
		case c == '-' || isDigit(c):
			return scanNumber(b, i)
		}
	}
	var st bitStack
	for {
		// A value is expected at b[i].
		countSteps(1)
		if i >= len(b) {
			return 0, false
		}
		ok := true
		switch c := b[i]; c {
		case '{':
			i = skipSpace(b, i+1)
			if i < len(b) && b[i] == '}' {
				i++
				break
			}
			st.push(true)
			if i, ok = scanKey(b, i); !ok {
				return 0, false
			}
			continue
		case '[':
			i = skipSpace(b, i+1)
			if i < len(b) && b[i] == ']' {
				i++
				break
			}
			st.push(false)
			continue
		case '"':
			i, _, ok = scanString(b, i)
		case 't':
			i, ok = scanLiteral(b, i, "true")
		case 'f':
			i, ok = scanLiteral(b, i, "false")
		case 'n':
			i, ok = scanLiteral(b, i, "null")
		default:
			i, ok = scanNumber(b, i)
		}
		if !ok {
			return 0, false
		}
		// A value has ended: close containers as far as possible.
		for {
			if st.depth == 0 {
				return i, true
			}
			i = skipSpace(b, i)
			if i >= len(b) {
				return 0, false
			}
			if st.top() {
				switch b[i] {
				case ',':
					if i, ok = scanKey(b, skipSpace(b, i+1)); !ok {
						return 0, false
					}
				case '}':
					i++
					st.depth--
					continue
				default:
					return 0, false
				}
			} else {
				switch b[i] {
				case ',':
					i = skipSpace(b, i+1)
				case ']':
					i++
					st.depth--
					continue
				default:
					return 0, false
				}
			}
			break
		}
	}
}

// scanKey validates an object key and its colon at b[i] and returns the
// index of the member's value, past any whitespace.
func scanKey(b []byte, i int) (int, bool) {
	if i >= len(b) || b[i] != '"' {
		return 0, false
	}
	i, _, ok := scanString(b, i)
	if !ok {
		return 0, false
	}
	i = skipSpace(b, i)
	if i >= len(b) || b[i] != ':' {
		return 0, false
	}
	return skipSpace(b, i+1), true
}

func scanLiteral(b []byte, i int, lit string) (int, bool) {
	if hasLiteral(b, i, lit) {
		return i + len(lit), true
	}
	return 0, false
}

// validJSON reports whether b holds exactly one JSON value, with optional
// whitespace around it, and every string in it is valid UTF-8.
func validJSON(b []byte) bool {
	i := skipSpace(b, 0)
	end, ok := scanValue(b, i)
	return ok && skipSpace(b, end) == len(b)
}

// scanObject scans the object that starts at b[i] (which must be '{') into
// e, recording the envelope's members, and returns the index past it.
func scanObject(b []byte, i int, e *envelope) (int, bool) {
	e.object = true
	i = skipSpace(b, i+1)
	if i < len(b) && b[i] == '}' {
		return i + 1, true
	}
	for {
		if i >= len(b) || b[i] != '"' {
			return 0, false
		}
		var vstart, vend int
		var ok bool
		// The usual member names, written compactly, skip the general
		// path; so does the usual "2.0".
		slot, n := e.knownKey(b[i:])
		if slot != nil {
			vstart = skipSpace(b, i+n)
			if slot == &e.version && hasLiteral(b, vstart, `"2.0"`) {
				vend, ok = vstart+5, true
			} else {
				vend, ok = scanValue(b, vstart)
			}
			if !ok {
				return 0, false
			}
			e.set(slot, b[vstart:vend])
		} else {
			kstart := i
			kend, escaped, ok := scanString(b, i)
			if !ok {
				return 0, false
			}
			i = skipSpace(b, kend)
			if i >= len(b) || b[i] != ':' {
				return 0, false
			}
			vstart = skipSpace(b, i+1)
			if vend, ok = scanValue(b, vstart); !ok {
				return 0, false
			}
			name := b[kstart+1 : kend-1]
			if escaped {
				name = unescapeKey(b[kstart:kend])
			}
			if slot := e.member(name); slot != nil {
				e.set(slot, b[vstart:vend])
			} else {
				e.other(name)
			}
		}
		i = skipSpace(b, vend)
		if i >= len(b) {
			return 0, false
		}
		switch b[i] {
		case ',':
			i = skipSpace(b, i+1)
		case '}':
			return i + 1, true
		default:
			return 0, false
		}
	}
}

// set records value for a member, noting a duplicate.
func (e *envelope) set(slot *[]byte, value []byte) {
	if *slot != nil {
		e.dup = true
		e.dupID = e.dupID || slot == &e.id
	}
	*slot = value
}

// knownKey recognises a usual member name followed at once by its colon,
// at the start of b, and returns its field and the length of name and
// colon; it returns nil for anything else, which the general path takes.
func (e *envelope) knownKey(b []byte) (*[]byte, int) {
	if len(b) < 5 {
		return nil, 0
	}
	switch b[1] {
	case 'j':
		if hasLiteral(b, 0, `"jsonrpc":`) {
			return &e.version, 10
		}
	case 'm':
		if hasLiteral(b, 0, `"method":`) {
			return &e.method, 9
		}
	case 'p':
		if hasLiteral(b, 0, `"params":`) {
			return &e.params, 9
		}
	case 'i':
		if hasLiteral(b, 0, `"id":`) {
			return &e.id, 5
		}
	case 'r':
		if hasLiteral(b, 0, `"result":`) {
			return &e.result, 9
		}
	case 'e':
		if hasLiteral(b, 0, `"error":`) {
			return &e.err, 8
		}
	}
	return nil, 0
}

// hasLiteral reports whether b holds lit at i.
func hasLiteral(b []byte, i int, lit string) bool {
	countSteps(len(lit))
	return len(b)-i >= len(lit) && string(b[i:i+len(lit)]) == lit
}

// member returns the field of e that holds the member called name, or nil
// for a member the envelope ignores. Names are case-sensitive.
func (e *envelope) member(name []byte) *[]byte {
	switch len(name) {
	case 2:
		if string(name) == "id" {
			return &e.id
		}
	case 5:
		if string(name) == "error" {
			return &e.err
		}
	case 6:
		switch string(name) {
		case "method":
			return &e.method
		case "params":
			return &e.params
		case "result":
			return &e.result
		}
	case 7:
		if string(name) == "jsonrpc" {
			return &e.version
		}
	}
	return nil
}

// unescapeKey decodes a valid JSON string that contains escapes.
func unescapeKey(quoted []byte) []byte {
	var s string
	if json.Unmarshal(quoted, &s) != nil {
		return nil
	}
	return []byte(s)
}

// memberValue returns the value of the member called name in obj, a valid
// JSON object, or nil if it has none (or obj is not an object). Names are
// compared as decoded.
func memberValue(obj []byte, name string) []byte {
	i := skipSpace(obj, 0)
	if i >= len(obj) || obj[i] != '{' {
		return nil
	}
	i = skipSpace(obj, i+1)
	for i < len(obj) && obj[i] == '"' {
		kend, escaped, ok := scanString(obj, i)
		if !ok {
			return nil
		}
		key := obj[i+1 : kend-1]
		if escaped {
			key = unescapeKey(obj[i:kend])
		}
		i = skipSpace(obj, kend)
		if i >= len(obj) || obj[i] != ':' {
			return nil
		}
		vstart := skipSpace(obj, i+1)
		vend, ok := scanValue(obj, vstart)
		if !ok {
			return nil
		}
		if string(key) == name {
			return obj[vstart:vend]
		}
		i = skipSpace(obj, vend)
		if i >= len(obj) || obj[i] != ',' {
			return nil
		}
		i = skipSpace(obj, i+1)
	}
	return nil
}

// lineKind says what a scanned line holds.
type lineKind int

const (
	lineInvalidJSON  lineKind = iota // not a single valid JSON value: -32700
	lineObject                       // one object, scanned into an envelope
	lineBatch                        // a non-empty array, its elements scanned
	lineEmptyBatch                   // []
	lineBatchTooLong                 // a valid array of more elements than allowed
	lineOther                        // valid JSON, but neither object nor array
)

// scanLine validates line and scans it. For lineObject, one is filled. For
// lineBatch, batch is reused and extended with one envelope per element (an
// element that is not an object has object=false); it is returned. An
// array of more than maxBatch elements is only validated, with nothing
// recorded past its first maxBatch elements: it costs no more memory than
// a batch of maxBatch, however long it is.
func scanLine(line []byte, one *envelope, batch []envelope, maxBatch int) (lineKind, []envelope) {
	i := skipSpace(line, 0)
	if i >= len(line) {
		return lineInvalidJSON, batch
	}
	switch line[i] {
	case '{':
		one.reset()
		end, ok := scanObject(line, i, one)
		if !ok || skipSpace(line, end) != len(line) {
			return lineInvalidJSON, batch
		}
		return lineObject, batch
	case '[':
		batch = batch[:0]
		i = skipSpace(line, i+1)
		if i < len(line) && line[i] == ']' {
			if skipSpace(line, i+1) != len(line) {
				return lineInvalidJSON, batch
			}
			return lineEmptyBatch, batch
		}
		kind := lineBatch
		for {
			var end int
			var ok bool
			if len(batch) == maxBatch {
				kind = lineBatchTooLong
			}
			if kind == lineBatch && i < len(line) && line[i] == '{' {
				batch = append(batch, envelope{})
				end, ok = scanObject(line, i, &batch[len(batch)-1])
			} else {
				if kind == lineBatch {
					batch = append(batch, envelope{})
				}
				end, ok = scanValue(line, i)
			}
			if !ok {
				return lineInvalidJSON, batch
			}
			i = skipSpace(line, end)
			if i >= len(line) {
				return lineInvalidJSON, batch
			}
			if line[i] == ']' {
				if skipSpace(line, i+1) != len(line) {
					return lineInvalidJSON, batch
				}
				return kind, batch
			}
			if line[i] != ',' {
				return lineInvalidJSON, batch
			}
			i = skipSpace(line, i+1)
		}
	}
	if validJSON(line) {
		return lineOther, batch
	}
	return lineInvalidJSON, batch
}

// validID reports whether raw is a valid id: a string, a number or null.
// raw is a value the scanner has already validated.
func validID(raw []byte) bool {
	if len(raw) == 0 {
		return false
	}
	c := raw[0]
	return c == '"' || c == '-' || isDigit(c) || c == 'n'
}

// isVersion reports whether raw is the JSON string "2.0".
func isVersion(raw []byte) bool {
	if string(raw) == `"2.0"` {
		return true
	}
	if len(raw) == 0 || raw[0] != '"' || bytes.IndexByte(raw, '\\') < 0 {
		return false
	}
	var s string
	return json.Unmarshal(raw, &s) == nil && s == Version
}

// checkRequest reports why e is not a valid Request object, or "" if it is.
func (e *envelope) checkRequest() string {
	switch {
	case !e.object:
		return "request is not an object"
	case e.dup:
		return "member appears more than once"
	case e.version == nil:
		return `missing "jsonrpc" member`
	case !isVersion(e.version):
		return `"jsonrpc" must be exactly "2.0"`
	case e.method == nil:
		return `missing "method" member`
	case e.method[0] != '"':
		return `"method" must be a string`
	case e.params != nil && e.params[0] != '{' && e.params[0] != '[':
		return `"params" must be an object or an array`
	case e.id != nil && !validID(e.id):
		return `"id" must be a string, a number or null`
	case e.result != nil || e.err != nil:
		return `a request cannot carry "result" or "error"`
	}
	return ""
}

// replyID returns the id to echo in an error response to e: its own when
// that is a valid id, and null otherwise.
func (e *envelope) replyID() []byte {
	if e.object && !e.dupID && e.id != nil && validID(e.id) {
		return e.id
	}
	return nullID
}

var nullID = []byte("null")

// methodName returns the decoded method of a valid request. Unescaped
// names, the common case, come back as a sub-slice without allocating.
func methodName(raw []byte) []byte {
	inner := raw[1 : len(raw)-1]
	if bytes.IndexByte(inner, '\\') < 0 {
		return inner
	}
	var s string
	if json.Unmarshal(raw, &s) != nil {
		return inner
	}
	return []byte(s)
}
