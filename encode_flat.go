package jsonrpc

// This file holds the direct encoder of params: for a struct (or a pointer
// to one) whose fields are all bools, integers, floats and strings, the
// usual shape of a call's params, a plan built once per type writes the
// JSON object by the fields' offsets, as json.Marshal would write it,
// byte for byte, without reflection and without a second scan of the
// output. Any other type, and any value the plan cannot write exactly as
// encoding/json does (a NaN, say, which encoding/json refuses), goes to
// encoding/json as before. TestFlatEncoder and FuzzFlatEncoder hold the
// two to the same bytes.

import (
	"bytes"
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

// A flatPlan writes the JSON object of one struct type.
type flatPlan struct {
	typ    reflect.Type // the struct type, or the pointer to it
	ptr    bool         // typ is a pointer to the struct
	fields []flatField  // in encoding/json's order
}

// A flatField is a field of the struct, at offset within it.
type flatField struct {
	key       string // the member's name, quoted, and the colon
	offset    uintptr
	kind      reflect.Kind
	omitEmpty bool
}

var (
	flatPlans sync.Map                 // reflect.Type → *flatPlan, nil where there is none
	lastFlat  atomic.Pointer[flatPlan] // the plan used last, tried first
	jsonMar   = reflect.TypeFor[json.Marshaler]()
	textMar   = reflect.TypeFor[encoding.TextMarshaler]()
)

// encodeFlat encodes v as json.Marshal would when v is a struct, or a
// pointer to one, that a flatPlan can write; it reports whether it did.
// A nil pointer, which encodes as null, returns nil.
func encodeFlat(v any) ([]byte, bool) {
	t := reflect.TypeOf(v)
	p := lastFlat.Load()
	if p == nil || p.typ != t {
		if t == nil || t.Kind() != reflect.Struct && t.Kind() != reflect.Pointer {
			return nil, false // a map, a slice, ...: no need to look
		}
		if p = flatPlanFor(t); p == nil {
			return nil, false
		}
		lastFlat.Store(p)
	}
	// The data word of an interface holding a struct of these fields
	// points to the struct (such a struct is never stored in the word
	// itself: it holds no pointer), and one holding a pointer is the
	// pointer.
	data := (*[2]unsafe.Pointer)(unsafe.Pointer(&v))[1]
	if p.ptr && data == nil {
		return nil, true
	}
	// Written on the stack, then copied, the object costs one allocation
	// of its own size, as json.Marshal's does.
	var buf [256]byte
	b, ok := p.append(buf[:0], data)
	if !ok {
		return nil, false
	}
	return bytes.Clone(b), true
}

// append appends the object of the struct at s to b, and reports whether
// it could: false for a float that is NaN or infinite.
func (p *flatPlan) append(b []byte, s unsafe.Pointer) ([]byte, bool) {
	b = append(b, '{')
	first := true
	for i := range p.fields {
		f := &p.fields[i]
		at := unsafe.Add(s, f.offset)
		if f.omitEmpty && isEmpty(f.kind, at) {
			continue
		}
		if !first {
			b = append(b, ',')
		}
		first = false
		b = append(b, f.key...)
		switch f.kind {
		case reflect.Bool:
			b = strconv.AppendBool(b, *(*bool)(at))
		case reflect.Int:
			b = strconv.AppendInt(b, int64(*(*int)(at)), 10)
		case reflect.Int8:
			b = strconv.AppendInt(b, int64(*(*int8)(at)), 10)
		case reflect.Int16:
			b = strconv.AppendInt(b, int64(*(*int16)(at)), 10)
		case reflect.Int32:
			b = strconv.AppendInt(b, int64(*(*int32)(at)), 10)
		case reflect.Int64:
			b = strconv.AppendInt(b, *(*int64)(at), 10)
		case reflect.Uint, reflect.Uintptr:
			b = strconv.AppendUint(b, uint64(*(*uintptr)(at)), 10)
		case reflect.Uint8:
			b = strconv.AppendUint(b, uint64(*(*uint8)(at)), 10)
		case reflect.Uint16:
			b = strconv.AppendUint(b, uint64(*(*uint16)(at)), 10)
		case reflect.Uint32:
			b = strconv.AppendUint(b, uint64(*(*uint32)(at)), 10)
		case reflect.Uint64:
			b = strconv.AppendUint(b, *(*uint64)(at), 10)
		case reflect.Float32, reflect.Float64:
			var ok bool
			if f.kind == reflect.Float32 {
				b, ok = appendFloat(b, float64(*(*float32)(at)), 32)
			} else {
				b, ok = appendFloat(b, *(*float64)(at), 64)
			}
			if !ok {
				return nil, false
			}
		case reflect.String:
			b = appendMarshaledString(b, *(*string)(at))
		}
	}
	return append(b, '}'), true
}

// isEmpty reports whether the field of kind k at p is empty as
// encoding/json's omitempty option understands it.
func isEmpty(k reflect.Kind, p unsafe.Pointer) bool {
	switch k {
	case reflect.Bool, reflect.Int8, reflect.Uint8:
		return *(*uint8)(p) == 0
	case reflect.Int16, reflect.Uint16:
		return *(*uint16)(p) == 0
	case reflect.Int32, reflect.Uint32:
		return *(*uint32)(p) == 0
	case reflect.Int64, reflect.Uint64:
		return *(*uint64)(p) == 0
	case reflect.Int, reflect.Uint, reflect.Uintptr:
		return *(*uintptr)(p) == 0 // all three have a pointer's size
	case reflect.Float32:
		return *(*float32)(p) == 0 // -0 too
	case reflect.Float64:
		return *(*float64)(p) == 0
	case reflect.String:
		return len(*(*string)(p)) == 0
	}
	return false
}

// flatPlanFor returns the plan of t, from the cache or built; nil if t
// has none.
func flatPlanFor(t reflect.Type) *flatPlan {
	if p, ok := flatPlans.Load(t); ok {
		return p.(*flatPlan)
	}
	p := buildFlatPlan(t)
	flatPlans.Store(t, p)
	return p
}

// buildFlatPlan returns the plan of t, or nil if t is not a struct, or a
// pointer to one, whose JSON a plan writes exactly as encoding/json does:
// every field encoding/json writes must be a bool, an integer, a float or
// a string, with no method of its own that encoding/json would call, no
// string or omitzero option, no embedded pointer on its way, and a name
// that needs no escaping.
func buildFlatPlan(t reflect.Type) *flatPlan {
	if t == nil {
		return nil
	}
	p := &flatPlan{typ: t}
	st := t
	if st.Kind() == reflect.Pointer {
		p.ptr, st = true, st.Elem()
	}
	if st.Kind() != reflect.Struct || marshalsItself(st) {
		return nil
	}
	fields := jsonFields(st)
	if len(fields) > 64 {
		return nil
	}
	for _, f := range fields {
		if f.viaPointer || f.quoted || !plainName(f.name) || marshalsItself(f.typ) {
			return nil
		}
		ff := flatField{key: `"` + f.name + `":`, kind: f.typ.Kind()}
		for o := range strings.SplitSeq(f.opts, ",") {
			switch o {
			case "omitempty":
				ff.omitEmpty = true
			case "omitzero":
				return nil
			}
		}
		// An embedded struct's methods, if the struct has them, are
		// its own: encoding/json calls them only when they are promoted
		// to st, and marshalsItself(st) said they are not.
		at := st
		for _, i := range f.index {
			sf := at.Field(i)
			ff.offset += sf.Offset
			at = sf.Type
		}
		switch ff.kind {
		case reflect.Bool, reflect.String,
			reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
			reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr,
			reflect.Float32, reflect.Float64:
		default:
			return nil
		}
		p.fields = append(p.fields, ff)
	}
	// encoding/json writes the fields in the order of their index
	// sequences, where jsonFields finds them level by level.
	order := make([]int, len(fields))
	for i := range order {
		order[i] = i
	}
	slices.SortFunc(order, func(a, b int) int { return slices.Compare(fields[a].index, fields[b].index) })
	sorted := make([]flatField, len(order))
	for i, k := range order {
		sorted[i] = p.fields[k]
	}
	p.fields = sorted
	return p
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

// appendMarshaledString appends s as a JSON string the way json.Marshal
// writes one: escaped HTML characters (<, > and &), U+2028 and U+2029
// escaped, each byte of invalid UTF-8 as U+FFFD, and the short escapes
// for the control characters that have one.
func appendMarshaledString(b []byte, s string) []byte {
	b = append(b, '"')
	done := 0 // s[:done] is in b
	for i := 0; i < len(s); {
		c := s[i]
		if c >= 0x20 && c < utf8.RuneSelf && c != '"' && c != '\\' && c != '<' && c != '>' && c != '&' {
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
