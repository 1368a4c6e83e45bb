package openrpc

// This file makes JSON Schemas from Go types, following the rules by
// which encoding/json encodes them.

import (
	"cmp"
	"encoding"
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/ndjsonrpc/jsonrpc/internal/jsontag"
)

var (
	marshalerType     = reflect.TypeFor[json.Marshaler]()
	textMarshalerType = reflect.TypeFor[encoding.TextMarshaler]()
)

// knownSchemas are the schemas of types whose MarshalJSON is known.
var knownSchemas = map[reflect.Type]*jsonschema.Schema{
	reflect.TypeFor[json.RawMessage](): {}, // any JSON value
	reflect.TypeFor[time.Time]():       {Type: "string"},
}

// newSchemaMaker returns a schemaMaker whose references to definitions
// start with refs.
func newSchemaMaker(refs string) *schemaMaker {
	return &schemaMaker{refs: refs, looped: map[reflect.Type]bool{}, defined: map[reflect.Type]string{}, names: map[string]reflect.Type{}}
}

// schema returns the schema of t, and panics, naming what it was for, if
// there is none.
func (m *schemaMaker) schema(t reflect.Type, what string) *jsonschema.Schema {
	s, err := m.typeSchema(t)
	if err != nil {
		panic(fmt.Sprintf("openrpc: %s: %v", what, err))
	}
	return s
}

// definition returns the schema that s refers to, if it is a reference
// to a definition, and s otherwise.
func (m *schemaMaker) definition(s *jsonschema.Schema) *jsonschema.Schema {
	if def := m.defs[strings.TrimPrefix(s.Ref, m.refs)]; s.Ref != "" && def != nil {
		return def
	}
	return s
}

// A schemaMaker makes the schemas of Go types. The named types on a
// cycle (those that contain themselves, through the types their schemas
// are made of: see onCycle) are defined once each, in defs, and referred
// to from everywhere they occur; so a type's definition is the same
// whichever type the walk started from.
type schemaMaker struct {
	refs    string                  // what a reference to a definition starts with
	path    []reflect.Type          // the named types being described, outermost first
	looped  map[reflect.Type]bool   // the named types met, and whether each is on a cycle
	defined map[reflect.Type]string // those of them defined, and their names
	names   map[string]reflect.Type // the types of those names
	defs    map[string]*jsonschema.Schema
}

// defName returns the name under which t is defined: its package's path
// and its name, such as "example.com/lsp.DocumentSymbol", with '/'
// replaced by '.', '-' by "--", and the other characters that OpenRPC
// does not allow in a component's name (non-ASCII letters, a generic
// type's brackets) by '-', their code point in hex and '-'. Two types
// get one name only if declared in functions of one package, or from
// packages whose paths differ only in '/' against '.'; that is an
// error.
func (m *schemaMaker) defName(t reflect.Type) (string, error) {
	full := t.String()
	if t.PkgPath() != "" {
		full = t.PkgPath() + "." + t.Name()
	}
	var b strings.Builder
	for _, r := range full {
		switch {
		case r == '/':
			b.WriteByte('.')
		case r == '-':
			b.WriteString("--")
		case r == '.' || r == '_' || r < utf8.RuneSelf && (unicode.IsLetter(r) || unicode.IsDigit(r)):
			b.WriteRune(r)
		default:
			fmt.Fprintf(&b, "-%x-", r)
		}
	}
	name := b.String()
	if other, ok := m.names[name]; ok && other != t {
		return "", fmt.Errorf("types %v and %v that contain themselves have one name, %s", other, t, name)
	}
	m.names[name] = t
	return name, nil
}

// typeSchema returns the schema of the JSON that encoding/json makes of
// values of type t.
func (m *schemaMaker) typeSchema(t reflect.Type) (*jsonschema.Schema, error) {
	if t.Kind() == reflect.Pointer {
		if pointsToItself(t) {
			// type p *p: no value but nil ends, so every value
			// encodes as null.
			return &jsonschema.Schema{Type: "null"}, nil
		}
		s, err := m.typeSchema(t.Elem())
		if err != nil {
			return nil, err
		}
		return nullable(s), nil
	}
	if t.Name() == "" {
		return m.shapeSchema(t)
	}
	if name, ok := m.defined[t]; ok {
		return &jsonschema.Schema{Ref: m.refs + name}, nil
	}
	if slices.Contains(m.path, t) {
		// Inside itself: it is defined once its schema is made.
		name, err := m.defName(t)
		if err != nil {
			return nil, err
		}
		return &jsonschema.Schema{Ref: m.refs + name}, nil
	}
	m.path = append(m.path, t)
	s, err := m.shapeSchema(t)
	m.path = m.path[:len(m.path)-1]
	if err != nil || !m.onCycle(t) {
		return s, err
	}
	name, err := m.defName(t)
	if err != nil {
		return nil, err
	}
	if m.defs == nil {
		m.defs = make(map[string]*jsonschema.Schema)
	}
	m.defs[name] = s
	m.defined[t] = name
	return &jsonschema.Schema{Ref: m.refs + name}, nil
}

// onCycle reports whether the named type t contains itself, through the
// types whose schemas its schema is made of. It depends on t alone, not
// on where the walk started, so that every walk defines the same types,
// each the same way.
func (m *schemaMaker) onCycle(t reflect.Type) bool {
	if c, ok := m.looped[t]; ok {
		return c
	}
	seen := map[reflect.Type]bool{}
	var reaches func(u reflect.Type) bool
	reaches = func(u reflect.Type) bool {
		for _, v := range schemaParts(u) {
			if v == t {
				return true
			}
			if !seen[v] {
				seen[v] = true
				if reaches(v) {
					return true
				}
			}
		}
		return false
	}
	c := reaches(t)
	m.looped[t] = c
	return c
}

// schemaParts returns the types whose schemas typeSchema makes to make
// that of t: it follows typeSchema and shapeSchema, and must be kept in
// step with them.
func schemaParts(t reflect.Type) []reflect.Type {
	if t.Kind() == reflect.Pointer {
		if pointsToItself(t) {
			return nil
		}
		return []reflect.Type{t.Elem()}
	}
	if _, ok := knownSchemas[t]; ok || hasMarshaler(t) {
		return nil
	}
	switch t.Kind() {
	case reflect.Slice:
		if t.Elem().Kind() == reflect.Uint8 && !hasMarshaler(t.Elem()) {
			return nil
		}
		return []reflect.Type{t.Elem()}
	case reflect.Array, reflect.Map:
		return []reflect.Type{t.Elem()}
	case reflect.Struct:
		var parts []reflect.Type
		for _, f := range jsonFields(t) {
			parts = append(parts, f.typ)
		}
		return parts
	}
	return nil
}

// pointsToItself reports whether the pointer type t leads, through
// pointers alone, back to a type met on the way (type p *p).
func pointsToItself(t reflect.Type) bool {
	var met []reflect.Type
	for ; t.Kind() == reflect.Pointer; t = t.Elem() {
		if slices.Contains(met, t) {
			return true
		}
		met = append(met, t)
	}
	return false
}

// shapeSchema returns the schema of t, which is not a pointer, by its
// methods and kind.
func (m *schemaMaker) shapeSchema(t reflect.Type) (*jsonschema.Schema, error) {
	if s, ok := knownSchemas[t]; ok {
		return s.CloneSchemas(), nil
	}
	if hasMarshaler(t) {
		if t.Implements(textMarshalerType) && !reflect.PointerTo(t).Implements(marshalerType) {
			return &jsonschema.Schema{Type: "string"}, nil
		}
		// Its own MarshalJSON, or a method of *t that is called only on
		// addressable values, decides: any JSON value.
		return &jsonschema.Schema{}, nil
	}
	switch t.Kind() {
	case reflect.Slice:
		if t.Elem().Kind() == reflect.Uint8 && !hasMarshaler(t.Elem()) {
			return &jsonschema.Schema{Types: []string{"null", "string"}, ContentEncoding: "base64"}, nil
		}
		items, err := m.typeSchema(t.Elem())
		if err != nil {
			return nil, err
		}
		return &jsonschema.Schema{Types: []string{"null", "array"}, Items: items}, nil
	case reflect.Array:
		items, err := m.typeSchema(t.Elem())
		if err != nil {
			return nil, err
		}
		return &jsonschema.Schema{Type: "array", Items: items, MinItems: jsonschema.Ptr(t.Len()), MaxItems: jsonschema.Ptr(t.Len())}, nil
	case reflect.Map:
		s := &jsonschema.Schema{Types: []string{"null", "object"}}
		switch k := t.Key(); {
		case k.Kind() == reflect.String:
		case k.Implements(textMarshalerType): // before the integers, as encoding/json
		case k.Kind() >= reflect.Int && k.Kind() <= reflect.Int64:
			s.PropertyNames = &jsonschema.Schema{Pattern: "^-?[0-9]+$"}
		case k.Kind() >= reflect.Uint && k.Kind() <= reflect.Uintptr:
			s.PropertyNames = &jsonschema.Schema{Pattern: "^[0-9]+$"}
		default:
			return nil, fmt.Errorf("unsupported map key type %v", k)
		}
		var err error
		s.AdditionalProperties, err = m.typeSchema(t.Elem())
		if err != nil {
			return nil, err
		}
		return s, nil
	case reflect.Struct:
		return m.structSchema(t)
	}
	return jsonschema.ForType(t, nil)
}

// hasMarshaler reports whether a value of type t, at least when it is
// addressable, encodes itself with a MarshalJSON or MarshalText method.
func hasMarshaler(t reflect.Type) bool {
	p := reflect.PointerTo(t)
	return p.Implements(marshalerType) || p.Implements(textMarshalerType)
}

// nullable returns s, made to allow null as well: the schema of a
// pointer to what s describes. A reference to a definition, which cannot
// be widened in place, becomes one of null and it.
func nullable(s *jsonschema.Schema) *jsonschema.Schema {
	switch {
	case s.Ref != "":
		return &jsonschema.Schema{AnyOf: []*jsonschema.Schema{{Type: "null"}, s}}
	case s.Type != "":
		s.Types = []string{"null", s.Type}
		s.Type = ""
	case len(s.Types) > 0 && !slices.Contains(s.Types, "null"):
		s.Types = append([]string{"null"}, s.Types...)
	}
	return s // without a type, s allows null already
}

// A jsonField is a struct field that encoding/json encodes as a member.
type jsonField struct {
	name     string
	index    []int // as reflect.Value.FieldByIndex takes it
	typ      reflect.Type
	tagged   bool // named by its json tag
	optional bool // omitempty, omitzero, or in an embedded pointer
	quoted   bool // a number, bool or string encoded in a string
	desc     string
}

// jsonFields returns the fields of the struct type t that encoding/json
// encodes, in its order: exported fields and the fields of embedded
// structs without a name in their json tag, the shallower field, then
// the tagged one, winning among fields of the same name, and no field
// when there is no single winner.
func jsonFields(t reflect.Type) []jsonField {
	type embedded struct {
		typ      reflect.Type
		index    []int
		optional bool
	}
	var fields []jsonField
	expanded := map[reflect.Type]bool{}
	for level := []embedded{{typ: t}}; len(level) > 0; {
		count := map[reflect.Type]int{}
		for _, e := range level {
			count[e.typ]++
		}
		var next []embedded
		for _, e := range level {
			if expanded[e.typ] {
				continue
			}
			expanded[e.typ] = true
			for i := range e.typ.NumField() {
				sf := e.typ.Field(i)
				ft := sf.Type
				if ft.Name() == "" && ft.Kind() == reflect.Pointer {
					ft = ft.Elem()
				}
				if !sf.IsExported() && !(sf.Anonymous && ft.Kind() == reflect.Struct) {
					continue
				}
				tag := sf.Tag.Get("json")
				if tag == "-" {
					continue
				}
				name, opts, _ := strings.Cut(tag, ",")
				if !jsontag.ValidName(name) {
					name = "" // encoding/json ignores it, and uses the field's
				}
				index := append(slices.Clone(e.index), i)
				optional := e.optional || sf.Anonymous && sf.Type.Kind() == reflect.Pointer
				if name == "" && sf.Anonymous && ft.Kind() == reflect.Struct {
					next = append(next, embedded{typ: ft, index: index, optional: optional})
					continue
				}
				f := jsonField{name: name, index: index, typ: sf.Type, tagged: name != "", optional: e.optional, desc: sf.Tag.Get("jsonschema")}
				if !f.tagged {
					f.name = sf.Name
				}
				for opt := range strings.SplitSeq(opts, ",") {
					switch opt {
					case "omitempty", "omitzero":
						f.optional = true
					case "string":
						switch ft.Kind() {
						case reflect.Bool, reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
							reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr,
							reflect.Float32, reflect.Float64, reflect.String:
							f.quoted = true
						}
					}
				}
				fields = append(fields, f)
				if count[e.typ] > 1 {
					fields = append(fields, f) // ambiguous: no single winner
				}
			}
		}
		level = next
	}

	slices.SortStableFunc(fields, func(a, b jsonField) int {
		return cmp.Or(strings.Compare(a.name, b.name), cmp.Compare(len(a.index), len(b.index)), compareBools(b.tagged, a.tagged))
	})
	var out []jsonField
	for i := 0; i < len(fields); {
		j := i + 1
		for j < len(fields) && fields[j].name == fields[i].name {
			j++
		}
		if j == i+1 || len(fields[i+1].index) > len(fields[i].index) || fields[i].tagged != fields[i+1].tagged {
			out = append(out, fields[i])
		}
		i = j
	}
	slices.SortFunc(out, func(a, b jsonField) int { return slices.Compare(a.index, b.index) })
	return out
}

// compareBools orders false before true.
func compareBools(a, b bool) int {
	switch {
	case a == b:
		return 0
	case a:
		return 1
	}
	return -1
}

// structSchema returns the schema of the struct type t: an object with
// the members that encoding/json writes, each required unless it may be
// left out.
func (m *schemaMaker) structSchema(t reflect.Type) (*jsonschema.Schema, error) {
	s := &jsonschema.Schema{Type: "object", AdditionalProperties: &jsonschema.Schema{Not: &jsonschema.Schema{}}}
	for _, f := range jsonFields(t) {
		fs, err := m.fieldSchema(f)
		if err != nil {
			return nil, err
		}
		if f.desc != "" {
			fs.Description = f.desc
		}
		if s.Properties == nil {
			s.Properties = make(map[string]*jsonschema.Schema)
		}
		s.Properties[f.name] = fs
		s.PropertyOrder = append(s.PropertyOrder, f.name)
		if !f.optional {
			s.Required = append(s.Required, f.name)
		}
	}
	return s, nil
}

// fieldSchema returns the schema of the member that f encodes as.
func (m *schemaMaker) fieldSchema(f jsonField) (*jsonschema.Schema, error) {
	s, err := m.typeSchema(f.typ)
	if err != nil || !f.quoted {
		return s, err
	}
	t := f.typ
	if t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if hasMarshaler(t) {
		return s, nil // its methods ignore the string option
	}
	if f.typ.Kind() == reflect.Pointer {
		return &jsonschema.Schema{Types: []string{"null", "string"}}, nil
	}
	return &jsonschema.Schema{Type: "string"}, nil
}
