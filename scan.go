package jsonrpc

import (
	"bytes"
	"encoding/json"
)

// This file holds the single-pass scanner behind every message the package
// reads. It validates the whole line as JSON (RFC 8259, with strings held
// to valid UTF-8) and, in the same pass, records where the members of the
// JSON-RPC envelope lie, as sub-slices of the line. Nothing is copied and
// nothing is decoded until a handler asks for it. The scanning of the JSON
// values inside a message (strings, numbers, containers) is in
// scan_value.go.

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
	// plainMethod says that method is a string with no escape in it,
	// found so by the scan; false where unknown.
	plainMethod bool

	others [][]byte            // names of the members the envelope ignores
	seen   map[string]struct{} // the same, once there are many
}

func (e *envelope) reset() {
	*e = envelope{others: e.others[:0], seen: e.seen} // seen is empty: see forgetNames
}

// forgetNames drops the names of ignored members that e.seen holds (as
// copies) once the scan that needed them is over, so that none outlives
// it, on an idle connection say: a map of many is let go, a small one
// emptied for the next scan.
func (e *envelope) forgetNames() {
	if len(e.seen) > 64 {
		e.seen = nil
		return
	}
	clear(e.seen)
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

// scanObject scans the object that starts at b[i] (which must be '{') into
// e, recording the envelope's members, and returns the index past it.
// A caller that keeps e calls e.forgetNames after it when e.seen is set.
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
			escaped := true
			switch {
			case slot == &e.version && len(b)-vstart >= 5 && string(b[vstart:vstart+5]) == `"2.0"`:
				vend, ok = vstart+5, true
			case slot == &e.method && vstart < len(b) && b[vstart] == '"':
				vend, escaped, ok = scanString(b, vstart)
			default:
				vend, ok = scanValue(b, vstart)
			}
			if !ok {
				return 0, false
			}
			e.set(slot, b[vstart:vend])
			if slot == &e.method {
				e.plainMethod = !escaped
			}
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
				if slot == &e.method {
					e.plainMethod = false // not looked at
				}
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
		if len(b) >= 10 && string(b[:10]) == `"jsonrpc":` {
			return &e.version, 10
		}
	case 'm':
		if len(b) >= 9 && string(b[:9]) == `"method":` {
			return &e.method, 9
		}
	case 'p':
		if len(b) >= 9 && string(b[:9]) == `"params":` {
			return &e.params, 9
		}
	case 'i':
		if string(b[:5]) == `"id":` {
			return &e.id, 5
		}
	case 'r':
		if len(b) >= 9 && string(b[:9]) == `"result":` {
			return &e.result, 9
		}
	case 'e':
		if len(b) >= 8 && string(b[:8]) == `"error":` {
			return &e.err, 8
		}
	}
	return nil, 0
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
		if one.seen != nil {
			one.forgetNames()
		}
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
				e := &batch[len(batch)-1]
				end, ok = scanObject(line, i, e)
				if e.seen != nil {
					e.seen = nil // a new envelope's (see forgetNames)
				}
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

// notification reports whether e has the shape of a notification: a
// method and no id. It says nothing of whether e is valid.
func (e *envelope) notification() bool { return e.method != nil && e.id == nil }

// replyID returns the id to echo in an error response to e: its own when
// that is a valid id, and null otherwise.
func (e *envelope) replyID() []byte {
	if e.object && !e.dupID && e.id != nil && validID(e.id) {
		return e.id
	}
	return nullID
}

var nullID = []byte("null")

// methodName returns the decoded method of e, a valid request, as
// methodName does, without looking for escapes where the scan found none.
func (e *envelope) methodName() []byte {
	if e.plainMethod {
		return e.method[1 : len(e.method)-1]
	}
	return methodName(e.method)
}

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
