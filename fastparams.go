package jsonrpc

// This file holds the direct decoder of params: for the common shapes of
// a handler's params (structs of numbers, strings, bools, empty
// interfaces and json.RawMessages, and the slices, arrays, maps, pointers
// and structs made of them), a decoder built once per type reads input
// the scanner has validated in one pass, applies the strict rules
// (strict.go) as it goes, and stores each value straight into the Go
// value, where encoding/json would scan the input again and look each
// field up by reflection. Members that name no field are skipped, as
// encoding/json skips them, once the strict check has found no name
// repeated in them.
//
// It takes only input that it can decode exactly as the strict check
// followed by encoding/json would, with the same value: a value of the
// wrong kind, a number out of range, an escaped member name, a name given
// twice, more than a few unknown members in one object, a member of a type
// it does not decode (an interface with methods, a type with an
// UnmarshalJSON or UnmarshalText method other than json.RawMessage, a
// []byte, a json.Number, a field with the string option or behind an
// embedded pointer) all make it give up, and the params are decoded from
// the start by that path, which says what is wrong. Giving up costs the
// work done so far; the errors, and everything the direct decoder does
// not take, stay exactly those of encoding/json. The differential fuzz
// target FuzzDirectParams holds the two paths to the same results. How a
// type's decoder is made is in fastparams_plan.go, and how numbers and
// escaped strings are stored in fastparams_scalar.go.

import (
	"encoding/json"
	"reflect"
	"strconv"
	"sync"
	"unsafe"
)

// maxDirectDepth is the deepest nesting the direct decoder follows;
// deeper input is left to encoding/json.
const maxDirectDepth = 256

// A direct is the decoder of one Go type.
type direct struct {
	kind directKind
	typ  reflect.Type
	// dirStruct: the fields, and for many of them an index by name.
	fields []directField
	byName map[string]int
	// dirSlice, dirArray, dirPointer, dirMap: the decoder of the elements
	// (pointed to, values); dirMap: of the keys.
	elem *direct
	key  directKind
	// dirArray: the length; dirSlice, dirArray: the size of an element.
	n    int
	size uintptr
}

type directKind uint8

const (
	dirBool directKind = iota
	dirInt
	dirInt8
	dirInt16
	dirInt32
	dirInt64
	dirUint
	dirUint8
	dirUint16
	dirUint32
	dirUint64
	dirUintptr
	dirFloat32
	dirFloat64
	dirString
	dirStruct
	dirSlice
	dirArray
	dirPointer
	dirMap
	dirAny // an empty interface
	dirRaw // json.RawMessage
)

// A directField is a field of a struct: its JSON name, where it lies in
// the struct, and its decoder.
type directField struct {
	name   string
	offset uintptr
	dec    *direct
}

var (
	directs    sync.Map   // reflect.Type → *direct, nil for a type not taken
	directsMu  sync.Mutex // held while decoders are built
	rawMessage = reflect.TypeFor[json.RawMessage]()
)

// decodeDirect decodes params, one valid JSON object or array, into the
// value of d's type at p, which is zero, and reports whether it did. If
// it did not, the value at p may have been partly written.
func decodeDirect(params []byte, d *direct, p unsafe.Pointer) bool {
	r := directReader{b: params}
	_, ok := r.value(skipWS(params, 0), d, p)
	return ok
}

// A directReader decodes one input.
type directReader struct {
	b       []byte
	depth   int
	unknown bool // a member that names no field was skipped
	// hdrs are where slices are built (see header), so that the value
	// decoded into, which may be a caller's variable on its stack, is
	// never handed to package reflect (which would make it escape).
	hdrs []sliceHeader
}

// value decodes the value that starts at r.b[i] into the zero value at p
// of d's type, and returns the index just past it.
func (r *directReader) value(i int, d *direct, p unsafe.Pointer) (int, bool) {
	b := r.b
	c := b[i]
	switch {
	case d.kind >= dirAny:
		return r.dynamic(i, d, p)
	case c == 'n':
		return i + len("null"), true // the value is zero already
	case d.kind == dirPointer:
		return r.pointer(i, d, p)
	}
	switch {
	case c == 't' || c == 'f':
		if d.kind != dirBool {
			return 0, false
		}
		*(*bool)(p) = c == 't'
		if c == 't' {
			return i + len("true"), true
		}
		return i + len("false"), true
	case c == '"':
		if d.kind != dirString {
			return 0, false
		}
		end, escaped := skipString(b, i)
		if !escaped {
			*(*string)(p) = string(b[i+1 : end-1])
			return end, true
		}
		s, ok := unquoteDirect(b[i+1 : end-1])
		*(*string)(p) = s
		return end, ok
	case c == '{':
		switch d.kind {
		case dirStruct:
			return r.object(i, d, p)
		case dirMap:
			return r.mapObject(i, d, p)
		}
		return 0, false
	case c == '[':
		switch d.kind {
		case dirSlice, dirArray:
			return r.array(i, d, p)
		}
		return 0, false
	}
	end := skipNumber(b, i)
	return end, storeNumber(b[i:end], d, p)
}

// dynamic decodes the value at r.b[i] into the empty interface or the
// json.RawMessage at p. A RawMessage takes null too: encoding/json hands
// it "null".
func (r *directReader) dynamic(i int, d *direct, p unsafe.Pointer) (int, bool) {
	if d.kind == dirAny {
		v, end, ok := r.anyValue(i)
		*(*any)(p) = v
		return end, ok
	}
	end, ok := r.skip(i)
	if ok {
		*(*json.RawMessage)(p) = append(json.RawMessage(nil), r.b[i:end]...)
	}
	return end, ok
}

// pointer decodes a value other than null into a new value pointed to
// from p, as encoding/json allocates one.
func (r *directReader) pointer(i int, d *direct, p unsafe.Pointer) (int, bool) {
	v := reflect.New(d.elem.typ).UnsafePointer()
	*(*unsafe.Pointer)(p) = v
	return r.value(i, d.elem, v)
}

// enter and leave count the containers open; past maxDirectDepth, the
// input is left to encoding/json.
func (r *directReader) enter() bool {
	r.depth++
	return r.depth <= maxDirectDepth
}

func (r *directReader) leave() { r.depth-- }

// name reads the member name at r.b[i] and returns it, without its
// quotes, and the index of the member's value. A name with escapes is
// not taken.
func (r *directReader) name(i int) ([]byte, int, bool) {
	b := r.b
	end, escaped := skipString(b, i)
	if escaped {
		return nil, 0, false
	}
	return b[i+1 : end-1], skipWS(b, skipWS(b, end)+1), true // past the colon
}

// next reads what follows a member or an element: it returns the index
// of the next one, or, with more false, the index past the closing
// bracket.
func (r *directReader) next(i int) (j int, more bool) {
	b := r.b
	i = skipWS(b, i)
	if b[i] == ',' {
		return skipWS(b, i+1), true
	}
	return i + 1, false
}

// object decodes an object into the struct at p. Each member must name a
// field exactly, and once.
func (r *directReader) object(i int, d *direct, p unsafe.Pointer) (int, bool) {
	if !r.enter() {
		return 0, false
	}
	defer r.leave()
	b := r.b
	i = skipWS(b, i+1)
	if b[i] == '}' {
		return i + 1, true
	}
	var seen uint64
	var unknown [maxUnknown]uint64 // the names that are no field's, as spans of b
	nu := 0
	for {
		name, j, ok := r.name(i)
		if !ok {
			return 0, false
		}
		k := d.field(name)
		if k < 0 {
			// Ignored, as encoding/json ignores it, if neither its name
			// nor any name in its value is given twice.
			for _, u := range unknown[:nu] {
				if string(b[u>>32:u&(1<<32-1)]) == string(name) {
					return 0, false
				}
			}
			if nu == maxUnknown || uint64(j) >= 1<<32 {
				return 0, false
			}
			unknown[nu], nu = uint64(i+1)<<32|uint64(i+1+len(name)), nu+1 // name is b[i+1:]
			r.unknown = true
			i, ok = r.skip(j)
		} else {
			if seen&(1<<k) != 0 {
				return 0, false // given twice
			}
			seen |= 1 << k
			f := &d.fields[k]
			i, ok = r.value(j, f.dec, unsafe.Add(p, f.offset))
		}
		if !ok {
			return 0, false
		}
		more := false
		if i, more = r.next(i); !more {
			return i, true
		}
	}
}

// field returns the index of the field called exactly name, or -1.
func (d *direct) field(name []byte) int {
	if d.byName != nil {
		if k, ok := d.byName[string(name)]; ok {
			return k
		}
		return -1
	}
	for k := range d.fields {
		if d.fields[k].name == string(name) {
			return k
		}
	}
	return -1
}

// mapObject decodes an object into a new map, stored at p (which holds
// a nil map, as every value decoded into is zero). A key given twice (for
// integer keys, two that parse to the same integer) is not taken.
//
// Neither it nor array hands p to package reflect, which would make it
// escape: a Func's params, decoded into a variable of its own, stay on
// its stack.
func (r *directReader) mapObject(i int, d *direct, p unsafe.Pointer) (int, bool) {
	if !r.enter() {
		return 0, false
	}
	defer r.leave()
	b := r.b
	m := reflect.MakeMap(d.typ)
	// A map value is one pointer, which Value.UnsafePointer returns.
	*(*unsafe.Pointer)(p) = m.UnsafePointer()
	i = skipWS(b, i+1)
	if b[i] == '}' {
		return i + 1, true
	}
	kt := d.typ.Key()
	elem := reflect.New(d.elem.typ)
	ep := elem.UnsafePointer()
	for {
		name, j, ok := r.name(i)
		if !ok {
			return 0, false
		}
		key := reflect.New(kt)
		switch kp := key.UnsafePointer(); {
		case d.key == dirString:
			*(*string)(kp) = string(name)
		case len(name) == 0:
			return 0, false
		case d.key <= dirInt64:
			n, err := strconv.ParseInt(string(name), 10, 64)
			if err != nil || !storeInt(n, d.key, kp) {
				return 0, false
			}
		default:
			n, err := strconv.ParseUint(string(name), 10, 64)
			if err != nil || !storeUint(n, d.key, kp) {
				return 0, false
			}
		}
		if m.MapIndex(key.Elem()).IsValid() {
			return 0, false // given twice
		}
		elem.Elem().SetZero()
		if i, ok = r.value(j, d.elem, ep); !ok {
			return 0, false
		}
		m.SetMapIndex(key.Elem(), elem.Elem())
		more := false
		if i, more = r.next(i); !more {
			return i, true
		}
	}
}

// array decodes an array into the slice or array at p: a slice grows as
// encoding/json grows it, and elements past the end of an array are
// skipped.
func (r *directReader) array(i int, d *direct, p unsafe.Pointer) (int, bool) {
	if !r.enter() {
		return 0, false
	}
	defer r.leave()
	b := r.b
	i = skipWS(b, i+1)
	// A slice is built in a header of r's, and stored at p once whole.
	var h *sliceHeader
	var s reflect.Value
	if d.kind == dirSlice {
		h = r.header()
		s = reflect.NewAt(d.typ, unsafe.Pointer(h)).Elem()
	}
	if b[i] == ']' {
		if d.kind == dirSlice {
			s.Set(reflect.MakeSlice(d.typ, 0, 0))
			*(*sliceHeader)(p) = *h
		}
		return i + 1, true
	}
	for n := 0; ; n++ {
		var ep unsafe.Pointer
		switch {
		case d.kind == dirSlice:
			if n >= s.Cap() {
				s.Grow(1)
			}
			s.SetLen(n + 1)
			ep = unsafe.Add(s.UnsafePointer(), uintptr(n)*d.size)
		case n < d.n:
			ep = unsafe.Add(p, uintptr(n)*d.size)
		}
		var ok bool
		if ep != nil {
			i, ok = r.value(i, d.elem, ep)
		} else {
			i, ok = r.skip(i)
		}
		if !ok {
			return 0, false
		}
		more := false
		if i, more = r.next(i); !more {
			if d.kind == dirSlice {
				*(*sliceHeader)(p) = *h
			}
			return i, true
		}
	}
}

// sliceHeader is the layout of a slice value.
type sliceHeader struct {
	data     unsafe.Pointer
	len, cap int
}

// header returns a zero slice header for the slice decoded at r's depth.
// The slices being decoded at once are one per depth, each in a header of
// its own; when hdrs is made anew, deeper, those of the outer ones stay
// where they are, in the old array, which their reflect.Values point to.
func (r *directReader) header() *sliceHeader {
	if len(r.hdrs) <= r.depth {
		r.hdrs = make([]sliceHeader, max(8, 2*r.depth))
	}
	h := &r.hdrs[r.depth]
	*h = sliceHeader{}
	return h
}

// maxUnknown is how many members of one object that name no field the
// direct decoder skips; past that, it gives up.
const maxUnknown = 8

// skip returns the index just past the value at r.b[i], which is not
// decoded, once the strict check has found no name given twice in it.
func (r *directReader) skip(i int) (int, bool) {
	b := r.b
	switch b[i] {
	case '"':
		end, _ := skipString(b, i)
		return end, true
	case 't', 'n':
		return i + len("true"), true
	case 'f':
		return i + len("false"), true
	case '{', '[':
		end, ok := scanValue(b, i)
		// Checked on its own, the value must not be deep enough to pass
		// where the whole input, nested deeper, would not.
		if !ok || r.depth+(end-i)/2+1 >= maxStrictDepth {
			return 0, false
		}
		if _, err := strictInput(b[i:end], nil, true, nil); err != nil {
			return 0, false
		}
		return end, true
	}
	return skipNumber(b, i), true
}

// anyValue decodes the value at r.b[i] as encoding/json decodes it into
// an empty interface: an object into a map[string]any, an array into a
// []any, a number into a float64.
func (r *directReader) anyValue(i int) (any, int, bool) {
	b := r.b
	switch c := b[i]; c {
	case 'n':
		return nil, i + len("null"), true
	case 't':
		return true, i + len("true"), true
	case 'f':
		return false, i + len("false"), true
	case '"':
		end, escaped := skipString(b, i)
		if !escaped {
			return string(b[i+1 : end-1]), end, true
		}
		s, ok := unquoteDirect(b[i+1 : end-1])
		return s, end, ok
	case '{', '[':
		if !r.enter() {
			return nil, 0, false
		}
		defer r.leave()
		i = skipWS(b, i+1)
		if c == '[' {
			a := make([]any, 0)
			if b[i] == ']' {
				return a, i + 1, true
			}
			for {
				v, end, ok := r.anyValue(i)
				if !ok {
					return nil, 0, false
				}
				a = append(a, v)
				more := false
				if i, more = r.next(end); !more {
					return a, i, true
				}
			}
		}
		m := make(map[string]any)
		if b[i] == '}' {
			return m, i + 1, true
		}
		for {
			name, j, ok := r.name(i)
			if !ok {
				return nil, 0, false
			}
			if _, dup := m[string(name)]; dup {
				return nil, 0, false
			}
			v, end, ok := r.anyValue(j)
			if !ok {
				return nil, 0, false
			}
			m[string(name)] = v
			more := false
			if i, more = r.next(end); !more {
				return m, i, true
			}
		}
	}
	end := skipNumber(b, i)
	f, err := strconv.ParseFloat(unsafe.String(&b[i], end-i), 64)
	return f, end, err == nil
}
