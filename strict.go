package jsonrpc

// This file holds strict decoding: the rules for member names that
// encoding/json/v2 applies by default, checked before encoding/json
// decodes params into a handler's argument ([Func], [Stream]) and a result
// into a caller's value ([Conn.Call] and the other calls).
//
//   - Names match fields exactly. A member whose name differs from a
//     field's only by case is an unknown member, ignored like any other;
//     encoding/json would fill the field with it.
//   - A name given twice in one object, at any depth, rejects the input;
//     encoding/json would keep the last. So does one given twice in a
//     value that a json.RawMessage, an any or a json.Unmarshaler takes:
//     v2 checks the whole input.
//   - Unknown members are ignored, and nesting deeper than encoding/json's
//     limit (10,000) is rejected, as encoding/json does.
//
// A proxy or a policy check that reads one member and a handler that reads
// another is how a message is smuggled past a check (CVE-2026-27896); with
// these rules every reader of the input sees the same members.
//
// The check is one pass over input already validated as JSON (by the
// scanner, for what a connection reads), driven by the plan of the Go
// type the input is decoded into (fields.go). Most params are an object
// of a few scalar members for a struct of scalars: a quick pass with no
// state matches those against the fields and keeps a bit for each field
// seen. Anything else goes to a checker, which walks any JSON without
// recursing: names are compared as sub-slices of the input, without making
// strings, and the names of one object are compared one by one while they
// are few, then kept in a map, so that a hostile object of 100,000 members
// costs time linear in its length (strict_steps_test.go counts the steps).
// A member that only matches a field by case is blanked (its name becomes
// "", which names no field) in a copy of the input, which encoding/json
// then decodes: only such input is copied. Params of the common shapes
// skip all this: the direct decoder (fastparams.go) decodes them in one
// pass, checking names as it goes, and leaves to this path any input it
// would refuse.
//
// What stays as encoding/json has it, deliberately: everything about
// values rather than names (an array shorter than a Go array, the string
// option on a bool, an escaped lone surrogate read as U+FFFD, all of which
// v2 refuses), the names in a struct whose tags say what only json/v2
// reads (a quoted name; the options inline, unknown, case, format: see
// jsonFields), and the names inside a type with its own UnmarshalJSON. A
// plan follows types, not values: a struct that an interface field of a
// caller's result value already points to is decoded into by
// encoding/json's rules for names; duplicates in it are still refused.

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"math/bits"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"
)

// ErrDuplicateMember is wrapped by the error of a call whose result gives
// a member name twice in one object, at any depth (see [Conn.Call]).
// Params that do are answered with [CodeInvalidParams] (see [Func]).
var ErrDuplicateMember = errors.New("jsonrpc: duplicate member")

// A ParamsOption changes how [Func] and [Stream] decode params.
type ParamsOption uint8

// LaxParams has [Func] and [Stream] decode params as encoding/json does by
// default, rather than strictly: a member name matches a field whatever
// its case, and of a member given twice in one object the last wins. It
// is for peers that rely on those rules; an endpoint whose params are
// checked by anything else before the handler (a proxy, a policy, a log)
// should not use it.
const LaxParams ParamsOption = 1

// maxStrictDepth is the deepest nesting accepted, that of encoding/json.
const maxStrictDepth = 10000

// maxLinearNames is how many names of one object are compared one by one
// with each new name before they go into a map.
const maxLinearNames = 16

// nameRules says how the member names of an input are checked before it
// is decoded.
type nameRules struct {
	lax    bool    // none: encoding/json's own rules
	plan   *plan   // the plan of the type decoded into, for strict rules
	direct *direct // its direct decoder (fastparams.go), if it has one
}

// rulesFor returns the rules for decoding into a value of type t, with the
// options given to Func or Stream.
func rulesFor(t reflect.Type, opts []ParamsOption) nameRules {
	for _, o := range opts {
		if o == LaxParams {
			return nameRules{lax: true}
		}
	}
	return nameRules{plan: planFor(t), direct: directFor(t)}
}

// A memberError is input that the strict rules reject.
type memberError struct {
	reason string // one of the reasons below
	member string // reasonDuplicate: the name, decoded
	path   string // reasonDuplicate: a JSON Pointer (RFC 6901) to it
}

const (
	reasonDuplicate = "duplicate member"
	reasonDeep      = "nesting too deep"
	reasonUTF8      = "invalid UTF-8"
)

func (e *memberError) text() string {
	switch e.reason {
	case reasonDuplicate:
		return "duplicate member " + strconv.Quote(e.member) + " at " + e.path
	case reasonDeep:
		return "nesting deeper than " + strconv.Itoa(maxStrictDepth) + " levels"
	}
	return "invalid UTF-8 in a string"
}

func (e *memberError) Error() string { return "jsonrpc: " + e.text() }

func (e *memberError) Unwrap() error {
	if e.reason == reasonDuplicate {
		return ErrDuplicateMember
	}
	return nil
}

// invalidParams returns the Invalid params error that answers params the
// strict rules reject. Its data says why, and for a duplicate which
// member and where: {"reason":"duplicate member","member":"name",
// "path":"/user/name"}.
func (e *memberError) invalidParams() *Error {
	data := struct {
		Reason string `json:"reason"`
		Member string `json:"member,omitempty"`
		Path   string `json:"path,omitempty"`
		Limit  int    `json:"limit,omitempty"`
	}{Reason: e.reason}
	switch e.reason {
	case reasonDuplicate:
		data.Member, data.Path = e.member, e.path
	case reasonDeep:
		data.Limit = maxStrictDepth
	}
	return NewError(CodeInvalidParams, "Invalid params: "+e.text()).WithData(data)
}

// strictInput checks b, the JSON text of a value to be decoded into a
// type with plan p, against the strict rules, and returns what
// encoding/json should decode: b itself, or a copy in which the members
// that match a field only by case are renamed "", which no field is
// called. valid says that b is known to be valid JSON; input that is not
// comes back as it is, for encoding/json to report, unless only its UTF-8
// is at fault, which encoding/json would let pass. c does the check (see
// strictResult for c.badUTF8); nil takes one from a pool.
func strictInput(b []byte, p *plan, valid bool, c *checker) ([]byte, *memberError) {
	if !valid && !validJSON(b) {
		if json.Valid(b) {
			return nil, &memberError{reason: reasonUTF8}
		}
		return b, nil
	}
	// distinctFlat compares names as written, which input with invalid
	// UTF-8 (c.badUTF8) must not have; quick takes no name that holds
	// it, as no field's does.
	// Input without an object has no names to check, and, shorter than
	// two bytes a level, cannot nest too deep either.
	if p != nil && p.flat && p.quick(b) || p == nil && (c == nil || !c.badUTF8) && distinctFlat(b) || bytes.IndexByte(b, '{') < 0 && len(b) < 2*maxStrictDepth {
		return b, nil // fields given once each, or no object at all
	}
	pooled := c == nil
	if pooled {
		c = checkers.Get().(*checker)
	}
	err := c.check(b, p)
	blank := c.blank
	if c.reset() && pooled {
		checkers.Put(c)
	}
	switch {
	case err != nil:
		return nil, err
	case blank != nil:
		return blankNames(b, blank), nil
	}
	return b, nil
}

// strictResult applies the strict rules to raw, a result to be decoded
// into dest, and returns what encoding/json should decode. A dest that is
// not a pointer is left for encoding/json to refuse. badUTF8 says that
// raw, valid JSON otherwise, holds invalid UTF-8 (a result that no
// scanner of ours read): its names are then compared as encoding/json
// decodes them, each invalid byte as U+FFFD, so that two names that
// decode alike are a duplicate.
func strictResult(raw []byte, dest any, badUTF8 bool) ([]byte, error) {
	t := reflect.TypeOf(dest)
	if t == nil || t.Kind() != reflect.Pointer {
		return raw, nil
	}
	var c *checker
	if badUTF8 {
		c = checkers.Get().(*checker)
		c.badUTF8 = true
	}
	checked, err := strictInput(raw, planFor(t), true, c)
	if c != nil {
		// Reset by strictInput if it ran the check (its large buffers
		// let go), and otherwise untouched.
		c.badUTF8 = false
		checkers.Put(c)
	}
	if err != nil {
		return nil, err
	}
	return checked, nil
}

// blankNames returns a copy of b in which each span of spans, given as
// pairs of offsets in order, is replaced with "".
func blankNames(b []byte, spans []int) []byte {
	out := make([]byte, 0, len(b))
	last := 0
	for k := 0; k+1 < len(spans); k += 2 {
		out = append(out, b[last:spans[k]]...)
		out = append(out, `""`...)
		last = spans[k+1]
	}
	return append(out, b[last:]...)
}

// quick reports whether b, valid JSON decoded with the flat struct plan
// p, is an object whose members are fields of p, each given once, with
// values other than objects and arrays: what most params are. Such input
// passes the strict rules; anything else is left to the checker.
func (p *plan) quick(b []byte) bool {
	i := skipWS(b, 0)
	if i >= len(b) || b[i] != '{' {
		return false
	}
	i = skipWS(b, i+1)
	if i < len(b) && b[i] == '}' {
		return true
	}
	var seen uint64 // the fields given, by index
	for i < len(b) && b[i] == '"' {
		k := p.keyAt(b, i+1)
		if k < 0 || seen&(1<<k) != 0 {
			return false
		}
		seen |= 1 << k
		var ok, more bool
		if i, ok, more = skipFlatMember(b, i+len(p.fields[k].name)+2); !more {
			return ok
		}
	}
	return false
}

// skipFlatMember skips, in b, valid JSON, from just past a member's name
// (its closing quote) over its value: ok says whether the value was a
// string, number, bool or null; more, which needs ok, that another member
// follows, whose name then starts at i. With ok and not more, the object
// has ended.
func skipFlatMember(b []byte, i int) (next int, ok, more bool) {
	i = skipWS(b, i) + 1 // past the colon
	if i = skipWS(b, i); i >= len(b) {
		return i, false, false
	}
	switch b[i] {
	case '{', '[':
		return i, false, false
	case '"':
		i, _ = skipString(b, i)
	case 't', 'n':
		i += len("true")
	case 'f':
		i += len("false")
	default:
		i = skipNumber(b, i)
	}
	if i = skipWS(b, i); i >= len(b) || b[i] != ',' {
		return i, i < len(b) && b[i] == '}', false
	}
	return skipWS(b, i+1), true, true
}

// maxDistinct is how many members distinctFlat compares, each with
// every other.
const maxDistinct = 8

// distinctFlat reports whether b, valid JSON for a type without a plan
// (where the strict rules refuse only duplicates), is an object of at
// most maxDistinct members whose values are not objects or arrays and
// whose names, written without escapes, all differ: such input passes
// the rules. Anything else is left to the checker, as is a name with an
// escape, which may equal another written otherwise.
func distinctFlat(b []byte) bool {
	i := skipWS(b, 0)
	if i >= len(b) || b[i] != '{' {
		return false
	}
	if bytes.IndexByte(b[i+1:], '{') >= 0 {
		// Nested, most likely (or a string holds a brace): the
		// checker's. An array among the values ends the walk below.
		return false
	}
	if i = skipWS(b, i+1); i < len(b) && b[i] == '}' {
		return true
	}
	var names [maxDistinct][]byte
	for n := 0; i < len(b) && b[i] == '"' && n < maxDistinct; n++ {
		end, escaped := skipString(b, i)
		if escaped {
			return false
		}
		name := b[i+1 : end-1]
		countSteps(n)
		for _, seen := range names[:n] {
			if string(seen) == string(name) {
				return false
			}
		}
		names[n] = name
		var ok, more bool
		if i, ok, more = skipFlatMember(b, end); !more {
			return ok
		}
	}
	return false
}

// keyAt returns the index of the field of p whose name, then a quote,
// starts at b[i], or -1 if there is none. No field's name holds a quote
// or a backslash (see jsontag.ValidName), so the member name that starts at
// b[i] is exactly that field's, without escapes. Structs with many fields
// find the name in their map.
func (p *plan) keyAt(b []byte, i int) int {
	if p.byName != nil {
		end, escaped := skipString(b, i-1)
		if escaped || end < i+1 {
			return -1
		}
		return p.field(b[i : end-1])
	}
	countSteps(len(p.fields))
	for k := range p.fields {
		n := p.fields[k].name
		if end := i + len(n); end < len(b) && b[end] == '"' && string(b[i:end]) == string(n) {
			return k
		}
	}
	return -1
}

// A checkFrame is an array or object open at some point of the check.
type checkFrame struct {
	plan   *plan
	seen   map[string]struct{} // object: its names, once it has many
	keys   map[any]struct{}    // a map's object with keysText or keysJSON: its keys
	first  int                 // object: the index in names of its first member's name
	index  int                 // array: the index of the element being read
	key    int                 // object: the offset of the name of the member being read
	object bool
}

// A checker holds the state of one check, and keeps its buffers for the
// next: ordinary input then costs neither an allocation nor much stack.
// The zero checker is ready to use.
type checker struct {
	frames []checkFrame // the open arrays and objects, innermost last
	names  [][]byte     // the names of each open object's members, innermost last
	blank  []int        // the spans of names to blank, as pairs of offsets
	held   int          // the most names held at once
	maps   bool         // a frame has a map
	// badUTF8: the input may hold invalid UTF-8 (see strictResult), so
	// a name that does is read as encoding/json reads it.
	badUTF8 bool
}

// checkers holds checkers for the checks that have none of their own.
var checkers = sync.Pool{New: func() any { return new(checker) }}

// reset readies c for the next check, and reports whether its buffers
// are small enough to keep. It keeps no pointer into the last input, and
// no map.
func (c *checker) reset() bool {
	clear(c.names[:c.held])
	if c.maps {
		clear(c.frames[:cap(c.frames)])
	}
	keep := cap(c.frames) <= 64 && cap(c.names) <= 4*maxLinearNames
	if !keep {
		c.frames, c.names = nil, nil
	}
	c.frames, c.names, c.blank, c.held, c.maps, c.badUTF8 = c.frames[:0], c.names[:0], nil, 0, false, false
	return keep
}

// check walks b, one valid JSON value decoded into a type with plan root,
// recording in c.blank the spans of member names to blank, or returns
// why b is refused. Like the scanner, it does not recurse, and each byte
// is looked at a bounded number of times.
func (c *checker) check(b []byte, root *plan) *memberError {
	p := root
	i := skipWS(b, 0)
	for i < len(b) {
		// A value decoded with plan p starts at b[i].
		countSteps(1)
		switch ch := b[i]; ch {
		case '{', '[':
			if len(c.frames) == maxStrictDepth {
				return &memberError{reason: reasonDeep}
			}
			i = skipWS(b, i+1)
			if i < len(b) && b[i] == ch+2 { // '}' or ']'
				i++
				break
			}
			if ch == '[' {
				c.frames = append(c.frames, checkFrame{plan: p})
				p = p.elemPlan()
				continue
			}
			c.frames = append(c.frames, checkFrame{plan: p, object: true, first: len(c.names)})
			var err *memberError
			if i, p, err = c.member(b, i); err != nil {
				return err
			}
			continue
		case '"':
			i, _ = skipString(b, i)
		case 't', 'n':
			i += len("true")
		case 'f':
			i += len("false")
		default:
			i = skipNumber(b, i)
		}

		// A value has ended: close what it ends, and find the next.
		for i = skipWS(b, i); i < len(b) && len(c.frames) > 0; i = skipWS(b, i) {
			f := &c.frames[len(c.frames)-1]
			if b[i] != ',' {
				i++ // '}' or ']'
				if f.object {
					c.names = c.names[:f.first]
				}
				c.frames = c.frames[:len(c.frames)-1]
				continue
			}
			i = skipWS(b, i+1)
			if !f.object {
				f.index++
				p = f.plan.elemPlan()
				break
			}
			var err *memberError
			if i, p, err = c.member(b, i); err != nil {
				return err
			}
			break
		}
		if len(c.frames) == 0 {
			break
		}
	}
	return nil
}

// member reads the name of a member of the object open on top, at b[i],
// checks it against the object's other names and its plan, and returns
// where the member's value starts and the value's plan.
func (c *checker) member(b []byte, i int) (int, *plan, *memberError) {
	end, escaped := skipString(b, i)
	if end < i+2 {
		end = i + 2 // only if b were not valid JSON
	}
	name := b[i+1 : end-1]
	if escaped || c.badUTF8 && !utf8.Valid(name) {
		name = unescapeKey(b[i:end])
	}
	f := &c.frames[len(c.frames)-1]
	f.key = i
	var vp *plan
	if op := f.plan; op != nil {
		switch op.kind {
		case planStruct:
			if k := op.field(name); k >= 0 {
				vp = op.fields[k].plan
			} else if op.folds(name) {
				c.blank = append(c.blank, i, end)
			}
		case planMap:
			vp = op.elem
			if op.keyType != nil { // keys that decode themselves
				if k, ok := decodedKey(name, b[i:end], op); ok {
					// Compared as Go keys, as the map will hold them.
					countSteps(1)
					if _, dup := f.keys[k]; dup {
						return 0, nil, duplicate(b, c.frames)
					}
					if f.keys == nil {
						f.keys = make(map[any]struct{})
						c.maps = true // for reset, which lets it go
					}
					f.keys[k] = struct{}{}
					return skipWS(b, skipWS(b, end)+1), vp, nil
				}
			}
			name = canonicalKey(name, op)
		}
	}
	if c.repeated(f, name) {
		return 0, nil, duplicate(b, c.frames)
	}
	return skipWS(b, skipWS(b, end)+1), vp, nil // past the colon
}

// skipString returns the index just past the valid JSON string at b[i],
// and whether it holds escapes. Up to the first quote or backslash, the
// bytes are looked at eight at a time; past a backslash, the string is
// searched in bulk for quotes, one of which ends the string unless an odd
// number of backslashes precedes it. Each run of backslashes is counted
// once, so the cost is linear in the length.
func skipString(b []byte, i int) (end int, escaped bool) {
	start := i
	i = plainSpan(b, i+1)
	if i < len(b) && b[i] == '"' {
		countSteps(i - start)
		return i + 1, false
	}
	escaped = true
	for i < len(b) {
		q := bytes.IndexByte(b[i:], '"')
		if q < 0 {
			break
		}
		q += i
		k := q
		for k > i && b[k-1] == '\\' {
			k--
		}
		countSteps(q - i + 1)
		if (q-k)%2 == 0 {
			return q + 1, escaped
		}
		i = q + 1
	}
	countSteps(len(b) - start)
	return len(b), escaped // not valid JSON: never for checked input
}

// skipWS returns the index of the first byte at or after i that is not
// whitespace, in valid JSON: outside strings, that is every byte up to
// the space.
func skipWS(b []byte, i int) int {
	start := i
	for i < len(b) && b[i] <= ' ' {
		i++
	}
	countSteps(i - start + 1)
	return i
}

// plainSpan returns the index of the first quote or backslash in b at or
// after i, or len(b) if there is none.
func plainSpan(b []byte, i int) int {
	const ones, highs = 0x0101010101010101, 0x8080808080808080
	start := i
	for ; i+8 <= len(b); i += 8 {
		x := binary.LittleEndian.Uint64(b[i:])
		q, bs := x^(ones*'"'), x^(ones*'\\')
		// The lowest byte flagged is the first that is zero in q or bs.
		if m := ((q-ones)&^q | (bs-ones)&^bs) & highs; m != 0 {
			i += bits.TrailingZeros64(m) / 8
			countSteps(i - start)
			return i
		}
	}
	for i < len(b) && b[i] != '"' && b[i] != '\\' {
		i++
	}
	countSteps(i - start)
	return i
}

// skipNumber returns the index just past the valid JSON number at b[i].
func skipNumber(b []byte, i int) int {
	start := i
	for i < len(b) {
		switch c := b[i]; {
		case isDigit(c), c == '-', c == '+', c == '.', c == 'e', c == 'E':
			i++
			continue
		}
		break
	}
	countSteps(i - start + 1)
	return i
}

// repeated reports whether the object of frame f already has a member
// called name, and records name if not, in c.names or in f.seen. The
// first names of an object are compared one by one; past maxLinearNames,
// they go into a map.
func (c *checker) repeated(f *checkFrame, name []byte) bool {
	if f.seen != nil {
		countSteps(1)
		if _, dup := f.seen[string(name)]; dup {
			return true
		}
		f.seen[string(name)] = struct{}{}
		return false
	}
	prior := c.names[f.first:]
	countSteps(len(prior))
	for _, n := range prior {
		if string(n) == string(name) {
			return true
		}
	}
	if len(prior) < maxLinearNames {
		c.names = append(c.names, name)
		c.held = max(c.held, len(c.names))
		return false
	}
	c.maps = true
	f.seen = make(map[string]struct{}, 4*maxLinearNames)
	for _, n := range prior {
		f.seen[string(n)] = struct{}{}
	}
	f.seen[string(name)] = struct{}{}
	c.names = c.names[:f.first]
	return false
}

// duplicate returns the error for the duplicate member just read, the
// innermost frame's: the path to it is made of each open frame's member
// or element.
func duplicate(b []byte, frames []checkFrame) *memberError {
	var path strings.Builder
	var name string
	for _, f := range frames {
		path.WriteByte('/')
		if !f.object {
			path.WriteString(strconv.Itoa(f.index))
			continue
		}
		end, _ := skipString(b, f.key)
		name = string(unescapeKey(b[f.key:end]))
		for _, r := range name {
			switch r {
			case '~':
				path.WriteString("~0")
			case '/':
				path.WriteString("~1")
			default:
				path.WriteRune(r)
			}
		}
	}
	return &memberError{reason: reasonDuplicate, member: name, path: path.String()}
}
