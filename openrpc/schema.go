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

	"github.com/google/jsonschema-go/jsonschema"
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

// schemaOf returns the schema of t, and panics, naming what it was for,
// if there is none.
func schemaOf(t reflect.Type, what string) *jsonschema.Schema {
	s, err := typeSchema(t, map[reflect.Type]bool{})
	if err != nil {
		panic(fmt.Sprintf("openrpc: %s: %v", what, err))
	}
	return s
}

// typeSchema returns the schema of the JSON that encoding/json makes of
// values of type t. Seen holds the named types being described, to
// detect a cycle.
func typeSchema(t reflect.Type, seen map[reflect.Type]bool) (*jsonschema.Schema, error) {
	if t.Kind() == reflect.Pointer {
		s, err := typeSchema(t.Elem(), seen)
		if err != nil {
			return nil, err
		}
		return nullable(s), nil
	}
	if t.Name() != "" {
		if seen[t] {
			return nil, fmt.Errorf("cycle detected for type %v", t)
		}
		seen[t] = true
		defer delete(seen, t)
	}
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
		items, err := typeSchema(t.Elem(), seen)
		if err != nil {
			return nil, err
		}
		return &jsonschema.Schema{Types: []string{"null", "array"}, Items: items}, nil
	case reflect.Array:
		items, err := typeSchema(t.Elem(), seen)
		if err != nil {
			return nil, err
		}
		return &jsonschema.Schema{Type: "array", Items: items, MinItems: jsonschema.Ptr(t.Len()), MaxItems: jsonschema.Ptr(t.Len())}, nil
	case reflect.Map:
		s := &jsonschema.Schema{Types: []string{"null", "object"}}
		switch k := t.Key(); {
		case k.Kind() == reflect.String:
		case k.Kind() >= reflect.Int && k.Kind() <= reflect.Int64:
			s.PropertyNames = &jsonschema.Schema{Pattern: "^-?[0-9]+$"}
		case k.Kind() >= reflect.Uint && k.Kind() <= reflect.Uintptr:
			s.PropertyNames = &jsonschema.Schema{Pattern: "^[0-9]+$"}
		case k.Implements(textMarshalerType):
		default:
			return nil, fmt.Errorf("unsupported map key type %v", k)
		}
		var err error
		s.AdditionalProperties, err = typeSchema(t.Elem(), seen)
		if err != nil {
			return nil, err
		}
		return s, nil
	case reflect.Struct:
		return structSchema(t, seen)
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
// pointer to what s describes.
func nullable(s *jsonschema.Schema) *jsonschema.Schema {
	switch {
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
func structSchema(t reflect.Type, seen map[reflect.Type]bool) (*jsonschema.Schema, error) {
	s := &jsonschema.Schema{Type: "object", AdditionalProperties: &jsonschema.Schema{Not: &jsonschema.Schema{}}}
	for _, f := range jsonFields(t) {
		fs, err := fieldSchema(f, seen)
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
func fieldSchema(f jsonField, seen map[reflect.Type]bool) (*jsonschema.Schema, error) {
	s, err := typeSchema(f.typ, seen)
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
