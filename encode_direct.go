package jsonrpc

// This file holds the direct encoder: for the usual shapes of a call's
// params and of a handler's result (structs of bools, integers, floats
// and strings, and the structs, pointers, slices, arrays and maps with
// string keys made of them, and interfaces holding any of these), a
// plan built once per type writes the JSON by the values' offsets, as
// encoding/json would write it, byte for byte, without reflection (but
// for a map's entries) and, for params, without a second scan of the
// output. Any other type (a map with other keys, a type with a method
// encoding/json would call, ...), and any value a plan cannot write as
// encoding/json does (a NaN, which encoding/json refuses, an interface
// holding a type without a plan, or nesting deep enough to be a cycle),
// goes to encoding/json as before. TestDirectEncoder, FuzzDirectEncoder
// and FuzzDirectEncoderTypes hold the two to the same bytes. What an
// interface holds and a map's entries are found as they are written
// (encode_dynamic.go).

import (
	"encoding"
	"encoding/json"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"unicode/utf8"
	"unsafe"
)

// An encPlan writes the JSON of one Go type.
type encPlan struct {
	typ  reflect.Type
	kind reflect.Kind // the kind of typ
	// inWord: an interface holding a value of typ holds it in its data
	// word, not a pointer to it (storedInWord).
	inWord bool
	// itab: typ is an interface with methods, whose first word is an
	// itab rather than a type. Interface: the entries of the types (or
	// itabs) it held last, by their key.
	itab   bool
	recent [4]atomic.Pointer[ifaceEntry]
	// Struct: the fields encoding/json writes, in its order.
	fields []encField
	// Pointer, Slice, Array, Map: the plan of the element (a map's
	// values); Slice, Array and Map: the size of one, and Array its
	// length.
	elem *encPlan
	size uintptr
	n    int
	// Map: the type word of an interface holding one, its key type, the
	// type of a slice of its values, and a pool of *mapBuf.
	mapWord unsafe.Pointer
	mapKey  reflect.Type
	mapVals reflect.Type
	mapBufs sync.Pool
}

// An encField is a field of a struct, at offset within it.
type encField struct {
	key       string // the member's name, quoted, and the colon
	offset    uintptr
	omitEmpty bool
	plan      *encPlan
}

// maxEncDepth is the deepest nesting a plan writes (pointers, slices,
// arrays and structs within each other); a value nested deeper, which may
// be a cycle, goes to encoding/json, which finds cycles.
const maxEncDepth = 200

var (
	paramBufs  sync.Pool               // of *[]byte, for encodeParamsPooled
	encPlans   sync.Map                // reflect.Type → *encPlan, nil where there is none
	lastEnc    atomic.Pointer[encPlan] // the plan used last, tried first
	numberType = reflect.TypeFor[json.Number]()
	jsonMar    = reflect.TypeFor[json.Marshaler]()
	textMar    = reflect.TypeFor[encoding.TextMarshaler]()
)

// directPlan returns the plan that encodeDirect writes a value of type t
// by (a Func's result too), or nil: t is not a struct, pointer, slice,
// array or map (a scalar, ...: no need to look), has no plan, or the
// direct encoder is off.
func directPlan(t reflect.Type) *encPlan {
	if jsonV2 {
		return nil // see jsonv2_off.go
	}
	switch t.Kind() {
	case reflect.Struct, reflect.Pointer, reflect.Slice, reflect.Array, reflect.Map:
		return encPlanFor(t)
	}
	return nil
}

// encodeDirect encodes v as json.Marshal would when a plan can write it,
// and reports whether it did: html escapes <, > and & in strings, as
// json.Marshal does and a json.Encoder told SetEscapeHTML(false) does
// not. The JSON is appended to b.
func encodeDirect(b []byte, v any, html bool) ([]byte, bool) {
	t := reflect.TypeOf(v)
	p := lastEnc.Load()
	if p == nil || p.typ != t {
		if t == nil {
			return nil, false
		}
		if p = directPlan(t); p == nil {
			return nil, false
		}
		lastEnc.Store(p) // never under jsonV2, where no plan is taken
	}
	return p.appendBoxed(b, v, html, 0)
}

// appendBoxed appends the JSON of v, whose dynamic type is p's.
func (p *encPlan) appendBoxed(b []byte, v any, html bool, depth int) ([]byte, bool) {
	// The data word of an interface points to the value it holds, or,
	// for a type of one pointer-shaped word (a pointer, a map, a struct
	// of one such field), is the value.
	data := (*[2]unsafe.Pointer)(unsafe.Pointer(&v))[1]
	if p.inWord {
		return p.append(b, unsafe.Pointer(&data), html, depth)
	}
	return p.append(b, data, html, depth)
}

// encodeParamsPooled is encodeDirect for a call's params: the object or
// array, or nil for null (a nil pointer or slice). The params, when there
// are any, lie in the pooled buffer *bp, which the caller gives back with
// releaseParams once it is done with them (a caller that keeps them
// copies them first: one allocation of their size, as json.Marshal's). bp
// is nil when there are no params or when ok is false.
func encodeParamsPooled(v any) (params []byte, bp *[]byte, ok bool) {
	bp, _ = paramBufs.Get().(*[]byte)
	if bp == nil {
		bp = new([]byte)
	}
	b, ok := encodeDirect((*bp)[:0], v, true)
	switch {
	case !ok:
	case b[0] == 'n':
		// null: no params
	case b[0] == '{' || b[0] == '[':
		return b, bp, true
	default:
		ok = false // a pointer to a scalar: encodeParams says it is invalid
	}
	releaseParams(bp, b)
	return nil, nil, ok
}

// releaseParams gives back to the pool the buffer bp of params written
// by encodeParamsPooled, b, which must not be used after.
func releaseParams(bp *[]byte, b []byte) {
	if b != nil { // nil when a plan gave up, which drops what it wrote
		*bp = b[:0]
	}
	if cap(*bp) <= 64<<10 {
		paramBufs.Put(bp)
	}
}

// append appends the JSON of the value of p's type at ptr, and reports
// whether it could: false for a float that is NaN or infinite, or
// nesting deeper than maxEncDepth.
func (p *encPlan) append(b []byte, ptr unsafe.Pointer, html bool, depth int) ([]byte, bool) {
	if depth > maxEncDepth {
		return nil, false
	}
	switch p.kind {
	case reflect.Bool:
		return strconv.AppendBool(b, *(*bool)(ptr)), true
	case reflect.Int:
		return strconv.AppendInt(b, int64(*(*int)(ptr)), 10), true
	case reflect.Int8:
		return strconv.AppendInt(b, int64(*(*int8)(ptr)), 10), true
	case reflect.Int16:
		return strconv.AppendInt(b, int64(*(*int16)(ptr)), 10), true
	case reflect.Int32:
		return strconv.AppendInt(b, int64(*(*int32)(ptr)), 10), true
	case reflect.Int64:
		return strconv.AppendInt(b, *(*int64)(ptr), 10), true
	case reflect.Uint, reflect.Uintptr:
		return strconv.AppendUint(b, uint64(*(*uintptr)(ptr)), 10), true
	case reflect.Uint8:
		return strconv.AppendUint(b, uint64(*(*uint8)(ptr)), 10), true
	case reflect.Uint16:
		return strconv.AppendUint(b, uint64(*(*uint16)(ptr)), 10), true
	case reflect.Uint32:
		return strconv.AppendUint(b, uint64(*(*uint32)(ptr)), 10), true
	case reflect.Uint64:
		return strconv.AppendUint(b, *(*uint64)(ptr), 10), true
	case reflect.Float32:
		return appendFloat(b, float64(*(*float32)(ptr)), 32)
	case reflect.Float64:
		return appendFloat(b, *(*float64)(ptr), 64)
	case reflect.String:
		return appendMarshaledString(b, *(*string)(ptr), html), true
	case reflect.Pointer:
		if ptr = *(*unsafe.Pointer)(ptr); ptr == nil {
			return append(b, "null"...), true
		}
		return p.elem.append(b, ptr, html, depth+1)
	case reflect.Slice:
		s := (*sliceHeader)(ptr)
		if s.data == nil {
			return append(b, "null"...), true
		}
		return p.appendElems(b, s.data, s.len, html, depth)
	case reflect.Array:
		return p.appendElems(b, ptr, p.n, html, depth)
	case reflect.Map:
		m := *(*unsafe.Pointer)(ptr)
		if m == nil {
			return append(b, "null"...), true
		}
		return p.appendMap(b, m, html, depth)
	case reflect.Interface:
		// As encoding/json: the value it holds, by the plan of its
		// dynamic type, and null for none.
		w := (*[2]unsafe.Pointer)(ptr)
		if w[0] == nil {
			return append(b, "null"...), true
		}
		slot := &p.recent[uintptr(w[0])>>4&3]
		e := slot.Load()
		if e == nil || e.key != w[0] {
			e = p.ifaceEntryFor(w)
			slot.Store(e)
		}
		if e.plan == nil {
			return nil, false
		}
		// The same value in an empty interface.
		var v any
		ew := (*[2]unsafe.Pointer)(unsafe.Pointer(&v))
		ew[0], ew[1] = e.word, w[1]
		return e.plan.appendBoxed(b, v, html, depth+1)
	}
	// A struct.
	b = append(b, '{')
	first := true
	var ok bool
	for i := range p.fields {
		f := &p.fields[i]
		at := unsafe.Add(ptr, f.offset)
		if f.omitEmpty && f.plan.isEmpty(at) {
			continue
		}
		if !first {
			b = append(b, ',')
		}
		first = false
		b = append(b, f.key...)
		if b, ok = f.plan.append(b, at, html, depth+1); !ok {
			return nil, false
		}
	}
	return append(b, '}'), true
}

// appendElems appends the JSON array of the n elements from ptr on.
func (p *encPlan) appendElems(b []byte, ptr unsafe.Pointer, n int, html bool, depth int) ([]byte, bool) {
	b = append(b, '[')
	var ok bool
	for i := range n {
		if i > 0 {
			b = append(b, ',')
		}
		if b, ok = p.elem.append(b, unsafe.Add(ptr, uintptr(i)*p.size), html, depth+1); !ok {
			return nil, false
		}
	}
	return append(b, ']'), true
}

// isEmpty reports whether the value of p's type at ptr is empty as
// encoding/json's omitempty option understands it: false, 0 (-0 too), "",
// a nil pointer or interface, an empty slice, array or map; a struct
// never is.
func (p *encPlan) isEmpty(ptr unsafe.Pointer) bool {
	switch p.kind {
	case reflect.Bool, reflect.Int8, reflect.Uint8:
		return *(*uint8)(ptr) == 0
	case reflect.Int16, reflect.Uint16:
		return *(*uint16)(ptr) == 0
	case reflect.Int32, reflect.Uint32:
		return *(*uint32)(ptr) == 0
	case reflect.Int64, reflect.Uint64:
		return *(*uint64)(ptr) == 0
	case reflect.Int, reflect.Uint, reflect.Uintptr:
		return *(*uintptr)(ptr) == 0 // all three have a pointer's size
	case reflect.Float32:
		return *(*float32)(ptr) == 0
	case reflect.Float64:
		return *(*float64)(ptr) == 0
	case reflect.String:
		return len(*(*string)(ptr)) == 0
	case reflect.Pointer:
		return *(*unsafe.Pointer)(ptr) == nil
	case reflect.Interface:
		return (*[2]unsafe.Pointer)(ptr)[0] == nil // no type or itab: nil
	case reflect.Slice:
		return (*sliceHeader)(ptr).len == 0
	case reflect.Array:
		return p.n == 0
	case reflect.Map:
		m := *(*unsafe.Pointer)(ptr)
		return m == nil || p.mapValue(m).Len() == 0
	}
	return false
}

// encPlanFor returns the plan of t, from the cache or built; nil if t
// has none.
func encPlanFor(t reflect.Type) *encPlan {
	if p, ok := encPlans.Load(t); ok {
		return p.(*encPlan)
	}
	b := encBuilder{built: make(map[reflect.Type]*encPlan)}
	p := b.build(t)
	if b.failed {
		p = nil
	}
	stored, _ := encPlans.LoadOrStore(t, p)
	return stored.(*encPlan)
}

// storedInWord reports whether an interface holds a value of type t in
// its data word rather than a pointer to it. The compiler does so for a
// type of a word's size whose word is a pointer the GC scans: not for a
// pointer to a type the heap cannot hold (cgo.Incomplete, an incomplete C
// struct), which it boxes as it does an integer. Asked rather than
// restated: reflect boxes the zero value of such a type as the nil word
// itself, and that of any other type as a pointer to a zero value.
func storedInWord(t reflect.Type) bool {
	if t.Size() != unsafe.Sizeof(uintptr(0)) {
		return false // and no zero value of a large type is made
	}
	z := reflect.Zero(t).Interface()
	return (*[2]unsafe.Pointer)(unsafe.Pointer(&z))[1] == nil
}

// encBuilder builds the plans of a type and of the types in it; one that
// cannot be planned fails the whole type. A type is entered in built
// before its parts, so that a type that contains itself gets its plan.
type encBuilder struct {
	built  map[reflect.Type]*encPlan
	failed bool
}

// build returns the plan of t: a bool, an integer, a float, a string, an
// interface, or a pointer, slice, array, struct or map with keys
// of string kind of what has a plan, with no method
// that encoding/json would call, no []byte (base64) or [N]byte, no
// field with the string or omitzero option or behind an embedded
// pointer, and no member name that needs escaping.
func (b *encBuilder) build(t reflect.Type) *encPlan {
	if b.failed {
		return nil
	}
	if p, ok := b.built[t]; ok {
		return p
	}
	if marshalsItself(t) || t == numberType {
		b.failed = true // a json.Number is written as the number it holds
		return nil
	}
	p := &encPlan{typ: t, kind: t.Kind(), inWord: storedInWord(t)}
	b.built[t] = p
	switch p.kind {
	case reflect.Bool, reflect.String,
		reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr,
		reflect.Float32, reflect.Float64:
	case reflect.Pointer:
		p.elem = b.build(t.Elem())
	case reflect.Slice, reflect.Array:
		if t.Elem().Kind() == reflect.Uint8 {
			b.failed = true // []byte is base64; [N]byte is rare
			return nil
		}
		p.elem, p.size = b.build(t.Elem()), t.Elem().Size()
		if p.kind == reflect.Array {
			p.n = t.Len()
		}
	case reflect.Struct:
		b.buildStruct(p, t)
	case reflect.Map:
		// Keys of other kinds are written as encoding/json converts
		// them (integers, MarshalText); a key of string kind is the
		// string, whatever its methods.
		if t.Key().Kind() != reflect.String {
			b.failed = true
			return nil
		}
		p.elem, p.size = b.build(t.Elem()), t.Elem().Size()
		p.mapKey, p.mapVals = t.Key(), reflect.SliceOf(t.Elem())
		z := reflect.Zero(t).Interface() // nil: the type word alone
		p.mapWord = (*[2]unsafe.Pointer)(unsafe.Pointer(&z))[0]
	case reflect.Interface:
		// What it holds is planned as it is written.
		p.itab = t.NumMethod() > 0
	default:
		b.failed = true
	}
	return p
}

func (b *encBuilder) buildStruct(p *encPlan, t reflect.Type) {
	fields, plain := jsonFields(t)
	if !plain {
		b.failed = true
		return
	}
	for _, f := range fields {
		if f.viaPointer || f.quoted || !plainName(f.name) {
			b.failed = true
			return
		}
		// An embedded struct's methods are its own: encoding/json calls
		// them only when they are promoted to t, and build checked t.
		ef := encField{key: `"` + f.name + `":`, offset: f.offset(t)}
		for o := range strings.SplitSeq(f.opts, ",") {
			switch o {
			case "omitempty":
				ef.omitEmpty = true
			case "omitzero":
				b.failed = true
				return
			}
		}
		if ef.plan = b.build(f.typ); b.failed {
			return
		}
		p.fields = append(p.fields, ef)
	}
	// encoding/json writes the fields in the order of their index
	// sequences, where jsonFields finds them level by level.
	order := make([]int, len(fields))
	for i := range order {
		order[i] = i
	}
	slices.SortFunc(order, func(x, y int) int { return slices.Compare(fields[x].index, fields[y].index) })
	sorted := make([]encField, len(order))
	for i, k := range order {
		sorted[i] = p.fields[k]
	}
	p.fields = sorted
}

// marshalsItself reports whether encoding/json may call a method of a
// value of type t, or of a pointer to it, to encode it.
func marshalsItself(t reflect.Type) bool {
	pt := reflect.PointerTo(t)
	return t.Implements(jsonMar) || t.Implements(textMar) || pt.Implements(jsonMar) || pt.Implements(textMar)
}

// plainName reports whether encoding/json writes name as it is, between
// quotes: printable ASCII other than a quote, a backslash and the three
// characters it escapes for HTML.
func plainName(name string) bool {
	for i := 0; i < len(name); i++ {
		if c := name[i]; c < 0x20 || c > 0x7e || strings.IndexByte(`"\<>&`, c) >= 0 {
			return false
		}
	}
	return true
}

// appendMarshaledString appends s as a JSON string the way encoding/json
// writes one: U+2028 and U+2029 escaped, each byte of invalid UTF-8 as
// U+FFFD, the short escapes for the control characters that have one,
// and, if html is set, <, > and & escaped.
func appendMarshaledString(b []byte, s string, html bool) []byte {
	b = append(b, '"')
	done := 0 // s[:done] is in b
	for i := 0; i < len(s); {
		for i+8 <= len(s) { // eight plain bytes at a time
			n := plainBytes(load64(s, i))
			if html && n > 0 {
				n = htmlFree(s[i : i+n])
			}
			i += n
			if n < 8 {
				break
			}
		}
		if i == len(s) {
			break
		}
		c := s[i]
		if c >= 0x20 && c < utf8.RuneSelf && c != '"' && c != '\\' && (!html || c != '<' && c != '>' && c != '&') {
			i++
			continue
		}
		var esc string
		n := 1
		switch {
		case c == '"':
			esc = `\"`
		case c == '\\':
			esc = `\\`
		case c == '\b':
			esc = `\b`
		case c == '\f':
			esc = `\f`
		case c == '\n':
			esc = `\n`
		case c == '\r':
			esc = `\r`
		case c == '\t':
			esc = `\t`
		case c < utf8.RuneSelf: // another control character, or <, > or &
		default:
			r, size := utf8.DecodeRuneInString(s[i:])
			switch {
			case r == utf8.RuneError && size == 1:
				esc = `\ufffd`
				if jsonV2 {
					esc = string(utf8.RuneError) // see jsonv2_off.go
				}
			case r == '\u2028':
				esc, n = `\u2028`, size
			case r == '\u2029':
				esc, n = `\u2029`, size
			default:
				i += size
				continue
			}
		}
		b = append(b, s[done:i]...)
		if esc == "" {
			b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
		} else {
			b = append(b, esc...)
		}
		i += n
		done = i
	}
	b = append(b, s[done:]...)
	return append(b, '"')
}

// load64 returns the eight bytes of s from i on as a little-endian
// integer (one load, where the target allows it).
func load64(s string, i int) uint64 {
	s = s[i : i+8]
	return uint64(s[0]) | uint64(s[1])<<8 | uint64(s[2])<<16 | uint64(s[3])<<24 |
		uint64(s[4])<<32 | uint64(s[5])<<40 | uint64(s[6])<<48 | uint64(s[7])<<56
}

// htmlFree returns how many bytes of s come before the first <, > or &.
func htmlFree(s string) int {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c == '<' || c == '>' || c == '&' {
			return i
		}
	}
	return len(s)
}
