package jsonrpc

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"
)

// The shapes that the strict fuzz targets decode into: a struct of each
// kind that the strict check walks into.
type (
	fzUser struct {
		Name  string `json:"name"`
		Admin bool   `json:"admin"`
		ID    int    `json:"id"`
		Plain string // named "Plain", exactly
	}
	fzNested struct {
		User fzUser `json:"user"`
		Note string `json:"note"`
	}
	fzPointer struct {
		User *fzUser `json:"user"`
		N    *int    `json:"n"`
	}
	fzSlice struct {
		Users []fzUser `json:"users"`
	}
	fzMap struct {
		ByName map[string]fzUser `json:"byName"`
	}
	FzBase struct {
		ID   int    `json:"id"`
		Kind string `json:"kind"`
	}
	fzEmbedded struct {
		FzBase
		Name string `json:"name"`
	}
	fzRaw struct {
		Raw  json.RawMessage `json:"raw"`
		Name string          `json:"name"`
	}
	fzAny struct {
		Any  any    `json:"any"`
		Name string `json:"name"`
	}
	// fzSelf decodes itself: it has no plan, so only duplicates are
	// refused in its input, as in a map's (see distinctFlat).
	fzSelf map[string]any
)

func (s *fzSelf) UnmarshalJSON(b []byte) error {
	var m map[string]any
	err := json.Unmarshal(b, &m)
	*s = m
	return err
}

// A fuzzShape decodes params into one shape by the strict rules.
type fuzzShape struct {
	name   string
	typ    reflect.Type
	fresh  func() any                              // a new *T
	strict func(b []byte, valid bool) (any, error) // as Func does; valid as a server passes it
}

func shapeOf[T any](name string) fuzzShape {
	rules := rulesFor(reflect.TypeFor[T](), nil)
	ds := new(paramDecoders)
	return fuzzShape{
		name:  name,
		typ:   reflect.TypeFor[T](),
		fresh: func() any { return new(T) },
		strict: func(b []byte, valid bool) (any, error) {
			p := new(T)
			err := ds.decode(b, p, valid, rules)
			return p, err
		},
	}
}

var fuzzShapes = []fuzzShape{
	shapeOf[fzUser]("flat"), shapeOf[fzNested]("nested"), shapeOf[fzPointer]("pointer"),
	shapeOf[fzSlice]("slice"), shapeOf[fzMap]("map"), shapeOf[fzEmbedded]("embedded"),
	shapeOf[fzRaw]("raw"), shapeOf[fzAny]("any"),
	shapeOf[fzSelf]("self-decoding"), shapeOf[map[string]any]("map of any"),
}

// strictSeeds are inputs for the strict fuzz targets: the issue's
// examples, and names that differ by case, by escape, or not at all, at
// each depth of the shapes.
var strictSeeds = []string{
	`{"NAME":"x","ADMIN":true}`, `{"name":"a","name":"b"}`, `{"name":"a","Name":"b"}`, `{"Name":"b","name":"a"}`,
	`{"name":"x","admin":true,"id":7,"Plain":"p"}`, `{"plain":"p","PLAIN":"q"}`, `{"n\u0061me":"a","name":"b"}`,
	`{"\u004eame":"x"}`, `{"id":1,"ID":2,"Id":3}`, `{"user":{"name":"a","name":"b"}}`, `{"user":{"NAME":"x"},"note":"n"}`,
	`{"user":{"admin":true},"n":3}`, `{"user":null,"n":null}`, `{"users":[{"name":"a"},{"NAME":"b"},{"id":1,"id":2}]}`,
	`{"byName":{"a":{"name":"x"},"A":{"NAME":"y"}}}`, `{"byName":{"a":{},"a":{}}}`, `{"id":1,"kind":"k","name":"n"}`,
	`{"ID":1,"KIND":"k"}`, `{"raw":{"a":1,"A":2},"name":"n"}`, `{"raw":{"a":1,"a":2}}`, `{"raw":[{"x":{"y":1,"y":2}}]}`,
	`{"any":{"k":[1,{"k":2,"k":3}]}}`, `{"any":"\ud800"}`, `{"\ud800":1,"\udc00":2}`, `{"name":"\u212A"}`, `{"\u212Aind":"k"}`,
	`{"extra":{"a":1,"a":2}}`, `{"extra":{"A":1,"a":2}}`, `[1,2]`, `null`, `{}`, `[]`, `"s"`, ` {"name" : "a" , "name" : "b" } `,
	`{"name":"a"`, `{"name":"a",}`, "{\"name\":\"\xff\"}", `{"id":1.5}`, `{"id":"1"}`, `{"admin":"true"}`,
	`{"raw":null}`, `{"raw":1e2}`, `{"id":1e2}`, `{"id":-0}`, `{"id":1.0}`, `{"id":99999999999999999999}`, `{"any":1e400}`,
	`{"a":1,"b":"x","a":true}`, `{"a":1,"b":2,"c":3,"d":4,"e":5,"f":6,"g":7,"h":8,"a":9}`, `{"a":1,"\u0061":2}`, `{"a":{"b":1},"a":2}`,
	`{"n":null,"user":{}}`, `{"name":null}`, `{"users":null}`, `{"byName":null}`, `{"byName":{"a":null}}`,
	strings.Repeat(`{"any":`, 20) + `{"a":1,"a":2}` + strings.Repeat(`}`, 20),
}

// hasDuplicate reports whether the valid JSON b gives a name twice in one
// object, as decoded names, walking its tokens: a reference for the
// strict check that shares none of its code.
func hasDuplicate(b []byte) (bool, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	type frame struct {
		object bool
		names  map[string]bool
		key    bool // the next string is a name
	}
	var stack []*frame
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			return false, nil
		}
		if err != nil {
			return false, err
		}
		var top *frame
		if len(stack) > 0 {
			top = stack[len(stack)-1]
		}
		switch tok := tok.(type) {
		case json.Delim:
			switch tok {
			case '{':
				if top != nil && top.object {
					top.key = true
				}
				stack = append(stack, &frame{object: true, names: map[string]bool{}, key: true})
			case '[':
				if top != nil && top.object {
					top.key = true
				}
				stack = append(stack, &frame{})
			default:
				stack = stack[:len(stack)-1]
			}
		case string:
			if top != nil && top.object && top.key {
				if top.names[tok] {
					return true, nil
				}
				top.names[tok] = true
				top.key = false
				continue
			}
			if top != nil && top.object {
				top.key = true
			}
		default:
			if top != nil && top.object {
				top.key = true
			}
		}
	}
}

// exactMembers returns a copy of v, a value that encoding/json decoded
// into any, without the members that name no field exactly in the objects
// that encoding/json decodes into the structs of t: what a decoder that
// matches names exactly sees. v is left as it is, for the next shape.
func exactMembers(v any, t reflect.Type) any {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t.Implements(reflect.TypeFor[json.Unmarshaler]()) || reflect.PointerTo(t).Implements(reflect.TypeFor[json.Unmarshaler]()) {
		return v
	}
	switch t.Kind() {
	case reflect.Struct:
		m, ok := v.(map[string]any)
		if !ok {
			return v
		}
		fields := fieldTypes(t)
		out := make(map[string]any)
		for name, val := range m {
			if ft, ok := fields[name]; ok {
				out[name] = exactMembers(val, ft)
			}
		}
		return out
	case reflect.Slice, reflect.Array:
		if a, ok := v.([]any); ok {
			out := make([]any, len(a))
			for i := range a {
				out[i] = exactMembers(a[i], t.Elem())
			}
			return out
		}
	case reflect.Map:
		if m, ok := v.(map[string]any); ok {
			out := make(map[string]any, len(m))
			for k := range m {
				out[k] = exactMembers(m[k], t.Elem())
			}
			return out
		}
	}
	return v
}

// fieldTypes returns the JSON names of the fields of t, a struct of the
// fuzz shapes (whose embedded structs hold no conflicting names), and
// their types.
func fieldTypes(t reflect.Type) map[string]reflect.Type {
	fields := make(map[string]reflect.Type)
	for i := range t.NumField() {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		switch {
		case name == "-" || !f.IsExported():
		case f.Anonymous && name == "":
			for n, ft := range fieldTypes(f.Type) {
				fields[n] = ft
			}
		case name == "":
			fields[f.Name] = f.Type
		default:
			fields[name] = f.Type
		}
	}
	return fields
}

// canonical returns v encoded and decoded again into any, for comparing
// values whatever the order, spacing or escapes of their JSON text.
func canonical(t *testing.T, v any) any {
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatalf("marshal %#v: %v", v, err)
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var out any
	if err := dec.Decode(&out); err != nil {
		t.Fatalf("decode %s: %v", b, err)
	}
	return out
}

// FuzzStrictParams checks the strict rules on any input, for each shape,
// as a handler decodes params in process and as a server does: no panic;
// input with a duplicate name anywhere, or invalid UTF-8, is refused with
// Invalid params; and anything else decodes to what encoding/json decodes
// once the members that name no field exactly are taken out, so that a
// member that matches a field only by case never sets it.
func FuzzStrictParams(f *testing.F) {
	for _, s := range strictSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if len(b) == 0 {
			return // absent params
		}
		valid := json.Valid(b)
		dup := false
		if valid {
			var err error
			if dup, err = hasDuplicate(b); err != nil {
				t.Fatalf("hasDuplicate(%q): %v", b, err)
			}
		}
		var want any // b without the members that name no field, as decoded into any
		if valid && !dup && utf8.Valid(b) {
			dec := json.NewDecoder(bytes.NewReader(b))
			dec.UseNumber()
			if err := dec.Decode(&want); err != nil {
				t.Fatalf("decode %q: %v", b, err)
			}
		}
		for _, s := range fuzzShapes {
			check := func(how string, got any, err error) {
				t.Helper()
				var e *Error
				switch {
				case !valid:
					if err == nil {
						t.Fatalf("%s, %s: %q is not valid JSON but decoded", s.name, how, b)
					}
				case dup || !utf8.Valid(b):
					if !errors.As(err, &e) || e.Code != CodeInvalidParams {
						t.Fatalf("%s, %s: %q has a duplicate or invalid UTF-8 but decoded (%v)", s.name, how, b, err)
					}
				default:
					exact, merr := json.Marshal(exactMembers(want, s.typ))
					if merr != nil {
						t.Fatalf("marshal: %v", merr)
					}
					ref := s.fresh()
					refErr := json.Unmarshal(exact, ref)
					if (err == nil) != (refErr == nil) {
						t.Fatalf("%s, %s: %q gives error %v; its exact members %s give %v", s.name, how, b, err, exact, refErr)
					}
					if err == nil && !reflect.DeepEqual(canonical(t, got), canonical(t, ref)) {
						t.Fatalf("%s, %s: %q decodes to %#v; its exact members %s to %#v", s.name, how, b, got, exact, ref)
					}
				}
			}
			got, err := s.strict(b, false)
			check("in process", got, err)
			if validParams(b) {
				got, err := s.strict(b, true)
				check("as a server", got, err)
			}
		}
	})
}
