package jsonrpc

// This file holds the plans of the strict check (strict.go): for each Go
// type, which objects of its JSON encoding/json decodes into structs, and
// the names it gives their fields, found by its documented rules for tags
// and embedded structs.

import (
	"bytes"
	"encoding"
	"encoding/json"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"

	"github.com/ndjsonrpc/jsonrpc/internal/jsontag"
)

// maxLinearFields is how many fields a struct's plan looks through one by
// one for a name; a struct with more has maps.
const maxLinearFields = 16

// A plan tells the strict check, for a Go type, which of the objects in
// an input encoding/json decodes into structs, and with which fields. A
// nil plan stands for a type that has no struct in it (a scalar, an any, a
// json.RawMessage, a json.Unmarshaler): only duplicates are checked in its
// input.
type plan struct {
	kind planKind
	// planStruct: the fields encoding/json decodes members into, by
	// name; for a struct with many, the same by name and by folded name.
	fields []planField
	byName map[string]int // index in fields
	folded map[string]struct{}
	// planMap: how keys are compared; planMap and planList: the plan of
	// the values.
	keys    keyKind
	keyType reflect.Type // keysText, keysJSON: the map's key type
	elem    *plan
	// flat says that no field of a struct holds a struct, and that
	// there are at most 64 fields.
	flat bool
}

type planKind uint8

const (
	planStruct planKind = iota
	planMap
	planList
)

// keyKind says how the keys of a map are compared for duplicates.
type keyKind uint8

const (
	keysExact keyKind = iota // as the decoded names
	keysInt                  // as the integers they parse to, as encoding/json does
	keysUint
	keysText // as the keys UnmarshalText makes of them (see decodedKey)
	keysJSON // as the keys UnmarshalJSON makes of them, as written
)

// A planField is a field of a struct, under its JSON name.
type planField struct {
	name []byte
	plan *plan
}

// field returns the index of the field called exactly name, or -1.
func (p *plan) field(name []byte) int {
	if p.byName != nil {
		countSteps(1)
		if i, ok := p.byName[string(name)]; ok {
			return i
		}
		return -1
	}
	countSteps(len(p.fields))
	for i := range p.fields {
		if string(p.fields[i].name) == string(name) {
			return i
		}
	}
	return -1
}

// folds reports whether name matches a field's name when case is ignored,
// as encoding/json matches them (bytes.EqualFold).
func (p *plan) folds(name []byte) bool {
	if p.folded != nil {
		var buf [64]byte
		countSteps(len(name))
		_, ok := p.folded[string(appendFolded(buf[:0], name))]
		return ok
	}
	countSteps(len(p.fields))
	for i := range p.fields {
		if bytes.EqualFold(name, p.fields[i].name) {
			return true
		}
	}
	return false
}

// appendFolded appends to b a form of name that is the same for two names
// exactly when bytes.EqualFold holds for them: each character replaced by
// the smallest in its case-folding orbit.
func appendFolded(b, name []byte) []byte {
	for len(name) > 0 {
		c := name[0]
		if c < utf8.RuneSelf {
			if 'a' <= c && c <= 'z' {
				c -= 'a' - 'A' // the smallest of {c, its upper case, K or ſ}
			}
			b = append(b, c)
			name = name[1:]
			continue
		}
		r, n := utf8.DecodeRune(name)
		least := r
		for f := unicode.SimpleFold(r); f != r; f = unicode.SimpleFold(f) {
			least = min(least, f)
		}
		b = utf8.AppendRune(b, least)
		name = name[n:]
	}
	return b
}

// elemPlan returns the plan of the elements of an array decoded with p.
func (p *plan) elemPlan() *plan {
	if p != nil && p.kind == planList {
		return p.elem
	}
	return nil
}

var (
	plans   sync.Map   // reflect.Type → *plan, built once for each type
	plansMu sync.Mutex // held while plans are built
	jsonUnm = reflect.TypeFor[json.Unmarshaler]()
	textUnm = reflect.TypeFor[encoding.TextUnmarshaler]()
)

// planFor returns the plan of t, from the cache or built.
func planFor(t reflect.Type) *plan {
	if p, ok := plans.Load(t); ok {
		return p.(*plan)
	}
	plansMu.Lock()
	defer plansMu.Unlock()
	if p, ok := plans.Load(t); ok {
		return p.(*plan)
	}
	b := planBuilder{built: make(map[reflect.Type]*plan)}
	p := b.build(t)
	for t, p := range b.built {
		plans.Store(t, p)
	}
	plans.Store(t, p)
	return p
}

// planBuilder builds the plans of a type and of the types in it. A type
// is entered in built before its parts are built, so that a type that
// contains itself gets its own plan.
type planBuilder struct {
	built map[reflect.Type]*plan
}

func (b *planBuilder) build(t reflect.Type) *plan {
	// encoding/json follows pointers, and at each step uses the methods
	// of what it reached.
	for n := 0; ; n++ {
		if decodesItself(t) || n == 100 { // 100: a pointer type that points to itself
			return nil
		}
		if t.Kind() != reflect.Pointer {
			break
		}
		t = t.Elem()
	}
	if p, ok := b.built[t]; ok {
		return p
	}
	if p, ok := plans.Load(t); ok {
		return p.(*plan)
	}
	var p *plan
	switch t.Kind() {
	case reflect.Slice, reflect.Array:
		p = &plan{kind: planList}
		b.built[t] = p
		if p.elem = b.build(t.Elem()); p.elem == nil {
			p = nil
		}
	case reflect.Map:
		p = &plan{kind: planMap, keys: mapKeys(t.Key())}
		if p.keys == keysText || p.keys == keysJSON {
			p.keyType = t.Key()
		}
		b.built[t] = p
		if p.elem = b.build(t.Elem()); p.elem == nil && p.keys == keysExact {
			p = nil
		}
	case reflect.Struct:
		p = &plan{kind: planStruct}
		b.built[t] = p
		fields, plain := jsonFields(t)
		if !plain {
			p = nil // its names are left to encoding/json (see strict.go)
			break
		}
		for _, f := range fields {
			p.fields = append(p.fields, planField{name: []byte(f.name), plan: b.build(f.typ)})
		}
		p.flat = len(p.fields) <= 64
		for _, f := range p.fields {
			p.flat = p.flat && f.plan == nil
		}
		if len(p.fields) == 0 {
			p = nil
		} else if len(p.fields) > maxLinearFields {
			p.byName = make(map[string]int, len(p.fields))
			p.folded = make(map[string]struct{}, len(p.fields))
			for i, f := range p.fields {
				p.byName[string(f.name)] = i
				p.folded[string(appendFolded(nil, f.name))] = struct{}{}
			}
		}
	}
	b.built[t] = p
	return p
}

// decodesItself reports whether encoding/json hands a value of type t the
// JSON text to decode, or refuses objects and arrays for it: t has an
// UnmarshalJSON or UnmarshalText method, or *t has.
func decodesItself(t reflect.Type) bool {
	if t.Implements(jsonUnm) || t.Implements(textUnm) {
		return true
	}
	if k := t.Kind(); k == reflect.Pointer || k == reflect.Interface {
		return false
	}
	pt := reflect.PointerTo(t)
	return pt.Implements(jsonUnm) || pt.Implements(textUnm)
}

// mapKeys returns how encoding/json reads the keys of a map with key type
// k: integers are parsed, so "1" and "+1" name the same entry, and a key
// type with UnmarshalText decodes itself, so "::1" and "0::1" name the
// same netip.Addr. If that type also has UnmarshalJSON, the default
// encoding/json calls it instead, with the key as written (quotes and
// escapes included); encoding/json built on json/v2 calls UnmarshalText.
// A key type with UnmarshalJSON alone is a string or an integer to both.
func mapKeys(k reflect.Type) keyKind {
	if pk := reflect.PointerTo(k); pk.Implements(textUnm) {
		if pk.Implements(jsonUnm) && !jsonV2 {
			return keysJSON
		}
		return keysText
	}
	switch k.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return keysInt
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return keysUint
	}
	return keysExact
}

// canonicalKey returns the form of a key of the map that op plans that
// encoding/json decodes to the same Go key as every other form of it:
// integers are parsed, so "01", "+1" and "1" are one key. (Keys that
// decode themselves are compared as the Go keys they decode to: see
// decodedKey.)
func canonicalKey(name []byte, op *plan) []byte {
	var buf [24]byte
	var canon []byte
	switch op.keys {
	case keysInt:
		n, err := strconv.ParseInt(string(name), 10, 64)
		if err != nil {
			return name // encoding/json refuses it
		}
		canon = strconv.AppendInt(buf[:0], n, 10)
	case keysUint:
		n, err := strconv.ParseUint(string(name), 10, 64)
		if err != nil {
			return name
		}
		canon = strconv.AppendUint(buf[:0], n, 10)
	default:
		return name
	}
	if string(canon) == string(name) {
		return name
	}
	return bytes.Clone(canon)
}

// decodedKey returns the Go key of the map that op plans that a member
// name decodes to, as encoding/json decodes it, and false if it does not
// decode (encoding/json refuses it then). name is the name unescaped;
// written is the name as it stands in the object, quotes included.
func decodedKey(name, written []byte, op *plan) (any, bool) {
	v := reflect.New(op.keyType)
	var err error
	if op.keys == keysJSON {
		err = v.Interface().(json.Unmarshaler).UnmarshalJSON(written)
	} else {
		err = v.Interface().(encoding.TextUnmarshaler).UnmarshalText(name)
	}
	if err != nil {
		return nil, false
	}
	return v.Elem().Interface(), true
}

// A jsonField is a field of a struct as encoding/json sees it: its name
// in JSON and its Go type.
type jsonField struct {
	name   string
	typ    reflect.Type
	depth  int  // how deeply embedded: 1 for a field of the struct itself
	tagged bool // the name comes from a json tag
	// index is the field's index sequence in the struct (as for
	// reflect.Type.FieldByIndex); viaPointer says that it passes through
	// an embedded pointer; quoted, that the tag's string option applies.
	index      []int
	viaPointer bool
	quoted     bool
	opts       string // the tag's options, after its name
}

// offset returns where f lies in a value of t, the struct it was found
// in, following its index through the embedded structs.
func (f jsonField) offset(t reflect.Type) uintptr {
	var off uintptr
	for _, i := range f.index {
		sf := t.Field(i)
		off += sf.Offset
		t = sf.Type
	}
	return off
}

// jsonFields returns the fields encoding/json decodes the members of an
// object into, for the struct type t, following its documented rules:
// exported fields, and the fields of embedded structs as if they were the
// struct's own, unless a tag names the embedded field; a tag's name
// replaces the Go name; "-" leaves the field out. Of several fields with
// one name, the least deeply embedded wins, and of several at that depth
// the one tagged; if that leaves more than one, none is decoded. An
// embedded struct type is visited once, at the shallowest depth it
// appears; one that appears twice at that depth loses its fields to each
// other.
//
// plain reports that these are surely the fields encoding/json decodes
// into. It is false only when encoding/json is built on json/v2, whose
// tags say more than the default's: a quoted name, or an option other than
// omitempty, omitzero and string (inline, unknown, case, format), in a
// tag of t or of a struct it embeds.
func jsonFields(t reflect.Type) (fields []jsonField, plain bool) {
	type embedded struct {
		typ        reflect.Type
		twice      bool  // found more than once at its depth
		index      []int // where it was found first
		viaPointer bool  // through an embedded pointer
	}
	var found []jsonField
	plain = true
	visited := make(map[reflect.Type]bool)
	level := []embedded{{typ: t}}
	for depth := 1; len(level) > 0; depth++ {
		var next []embedded
		nextIndex := make(map[reflect.Type]int)
		for _, e := range level {
			if visited[e.typ] {
				continue
			}
			visited[e.typ] = true
			for i := range e.typ.NumField() {
				sf := e.typ.Field(i)
				if sf.Anonymous {
					et := sf.Type
					if et.Kind() == reflect.Pointer {
						et = et.Elem()
					}
					if !sf.IsExported() && et.Kind() != reflect.Struct {
						continue
					}
				} else if !sf.IsExported() {
					continue
				}
				tag := sf.Tag.Get("json")
				if tag == "-" {
					continue
				}
				name, opts, _ := strings.Cut(tag, ",")
				if jsonV2 {
					plain = plain && plainV2Tag(name, opts)
				} else if !jsontag.ValidName(name) { // json/v2 takes more: see plainV2Tag
					name = ""
				}
				ft := sf.Type
				if ft.Kind() == reflect.Pointer && ft.Name() == "" {
					ft = ft.Elem()
				}
				index := append(e.index[:len(e.index):len(e.index)], i)
				if name == "" && sf.Anonymous && ft.Kind() == reflect.Struct {
					// Its fields are this struct's, one level down.
					if k, ok := nextIndex[ft]; ok {
						next[k].twice = true
					} else {
						nextIndex[ft] = len(next)
						next = append(next, embedded{typ: ft, index: index,
							viaPointer: e.viaPointer || sf.Type.Kind() == reflect.Pointer})
					}
					continue
				}
				f := jsonField{name: name, typ: sf.Type, depth: depth, tagged: name != "",
					index: index, viaPointer: e.viaPointer, quoted: quotable(opts, ft), opts: opts}
				if name == "" {
					f.name = sf.Name
				}
				found = append(found, f)
				if e.twice {
					found = append(found, f) // so that neither wins
				}
			}
		}
		level = next
	}
	return dominantFields(found), plain
}

// plainV2Tag reports whether json/v2 reads a tag of the given name and
// options as jsonFields does: it takes any name as written, unless it
// holds a quote or a backslash (a quoted name, or a malformed one), and
// the options must be ones that do not change which members decode into
// what.
func plainV2Tag(name, opts string) bool {
	if strings.ContainsAny(name, "'\"\\`") || !utf8.ValidString(name) {
		return false
	}
	for opts != "" {
		var o string
		o, opts, _ = strings.Cut(opts, ",")
		switch o {
		case "omitempty", "omitzero", "string":
		default:
			return false
		}
	}
	return true
}

// quotable reports whether the string option is among the tag options
// opts of a field of type t (a pointer's element, for an unnamed pointer),
// and applies to it: encoding/json then reads the value from inside a
// JSON string.
func quotable(opts string, t reflect.Type) bool {
	for opts != "" {
		var o string
		o, opts, _ = strings.Cut(opts, ",")
		if o != "string" {
			continue
		}
		switch t.Kind() {
		case reflect.Bool, reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
			reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr,
			reflect.Float32, reflect.Float64, reflect.String:
			return true
		}
	}
	return false
}

// dominantFields keeps, of the fields found with each name, the one that
// wins (see jsonFields), in the order found.
func dominantFields(found []jsonField) []jsonField {
	type best struct {
		at     int // index in found of the winner so far
		rivals int // fields that tie with it
	}
	byName := make(map[string]*best, len(found))
	for i, f := range found {
		b := byName[f.name]
		if b == nil {
			byName[f.name] = &best{at: i}
			continue
		}
		w := found[b.at]
		switch {
		case f.depth > w.depth, f.depth == w.depth && w.tagged && !f.tagged:
			// w wins
		case f.depth < w.depth, f.depth == w.depth && f.tagged && !w.tagged:
			*b = best{at: i}
		default:
			b.rivals++
		}
	}
	var fields []jsonField
	for i, f := range found {
		if b := byName[f.name]; b.at == i && b.rivals == 0 {
			fields = append(fields, f)
		}
	}
	return fields
}
