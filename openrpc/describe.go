package openrpc

// This file makes Method descriptions from the Go types of typed method
// descriptors.

import (
	"encoding/json"
	"fmt"
	"reflect"
	"slices"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/ndjsonrpc/jsonrpc"
)

// StreamNotification is the method of the notifications that carry a
// streaming method's items (see [jsonrpc.Stream]).
const StreamNotification = "$/stream"

// Describe returns the description of the method m: doc, with the fields
// it leaves empty filled from m's name and types. Params and
// ParamStructure come from P as the package doc says; given params
// without a schema take the schema, Required and description of the
// param of the same name (by name) or position (by position). Result,
// when nil, is named "result" with R's schema; a given Result without a
// schema takes R's. Examples' values without a name take the names of
// the params at their positions and of the result.
//
// A type that contains itself (a tree whose nodes hold nodes) is
// defined once under the document's components (see
// [Document.MarshalJSON]), named as [SchemaFor] names it, and referred
// to as "#/components/schemas/" and its name from wherever it occurs.
//
// Describe panics if a schema cannot be made for P or R (a channel, a
// func, a map whose keys JSON cannot hold, two types of one name that
// contain themselves, declared in functions), a programming error.
func Describe[P, R any](m jsonrpc.Method[P, R], doc Method) Method {
	sm := newSchemaMaker(componentRefs)
	fillParams(sm, &doc, m.Name(), reflect.TypeFor[P]())
	doc.Result = fillDescriptor(sm, doc.Result, "result", reflect.TypeFor[R](), m.Name())
	nameExamples(&doc)
	doc.schemas = sm.defs
	return doc
}

// DescribeStream returns the description of the streaming method m, as
// [Describe] does, with its result (the number of items, an integer,
// named "count" unless given) and its items under Stream, whose Item is
// named "item" with T's schema unless given. It panics as Describe does.
func DescribeStream[P, T any](m jsonrpc.StreamMethod[P, T], doc Method) Method {
	sm := newSchemaMaker(componentRefs)
	fillParams(sm, &doc, m.Name(), reflect.TypeFor[P]())
	if doc.Result == nil {
		doc.Result = &ContentDescriptor{Name: "count"}
	}
	if doc.Result.Schema == nil {
		doc.Result.Schema = &jsonschema.Schema{Type: "integer", Minimum: jsonschema.Ptr(0.0)}
	}
	if doc.Stream == nil {
		doc.Stream = new(Stream)
	}
	if doc.Stream.Notification == "" {
		doc.Stream.Notification = StreamNotification
	}
	item := fillDescriptor(sm, &doc.Stream.Item, "item", reflect.TypeFor[T](), m.Name())
	doc.Stream.Item = *item
	nameExamples(&doc)
	doc.schemas = sm.defs
	return doc
}

// DescribeNotification returns the description of the notification
// called name whose params are of type P, as [Describe] does, without a
// result. It panics as Describe does.
func DescribeNotification[P any](name string, doc Method) Method {
	sm := newSchemaMaker(componentRefs)
	fillParams(sm, &doc, name, reflect.TypeFor[P]())
	nameExamples(&doc)
	doc.schemas = sm.defs
	return doc
}

// SchemaFor returns the JSON Schema of T, as the descriptions use it: the
// schema of the JSON that encoding/json makes of a T.
//
// A struct is an object whose members follow encoding/json's field
// rules, each required unless it is omitempty or omitzero or promoted
// from an embedded pointer; a number, bool or string member with the
// string option is a string. A nil pointer, slice or map is null. A
// []byte is a base64 string, and a map with integer keys an object. A
// type whose values have a MarshalText method and no MarshalJSON is a
// string; one with a MarshalJSON method (other than time.Time, a
// string), and a json.RawMessage, is any JSON value. Other types have
// the schemas [jsonschema.ForType] gives them.
//
// A type that contains itself, directly or through others, is defined
// once under the schema's "$defs", named by its package's path and
// name ("main.node", "example.com.lsp.DocumentSymbol": '/' becomes '.',
// '-' "--", and a rune OpenRPC does not allow in a name '-', its code
// point in hex and '-'), and referred to from wherever it occurs within
// as "#/$defs/main.node";
// when T is such a type, the root is a copy of its definition. The types
// that do not contain themselves are written in place wherever they
// occur.
//
// SchemaFor panics if T has no schema, as [Describe] does.
func SchemaFor[T any]() *jsonschema.Schema {
	sm := newSchemaMaker("#/$defs/")
	s := sm.schema(reflect.TypeFor[T](), "SchemaFor")
	if def := sm.definition(s); def != s {
		// The root says what it is, not only where that is written:
		// some readers (MCP's tool schemas) look for its type there.
		s = def.CloneSchemas()
	}
	s.Defs = sm.defs
	return s
}

// componentRefs starts a reference to a schema under the document's
// components.
const componentRefs = "#/components/schemas/"

var unmarshalerType = reflect.TypeFor[json.Unmarshaler]()

// paramsOf returns how params of type p are taken, and their descriptors
// as far as the type tells them.
func paramsOf(sm *schemaMaker, p reflect.Type, method string) (ParamStructure, []ContentDescriptor) {
	t := p
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t.Implements(unmarshalerType) || reflect.PointerTo(t).Implements(unmarshalerType) {
		return Either, nil // its own decoder decides what it takes
	}
	switch t.Kind() {
	case reflect.Struct:
		s := sm.definition(sm.schema(t, method+" params"))
		cds := make([]ContentDescriptor, 0, len(s.PropertyOrder))
		for _, name := range s.PropertyOrder {
			prop := s.Properties[name]
			cds = append(cds, ContentDescriptor{
				Name:        name,
				Description: prop.Description,
				Required:    slices.Contains(s.Required, name),
				Schema:      prop,
			})
		}
		return ByName, cds
	case reflect.Array:
		cds := make([]ContentDescriptor, t.Len())
		for i := range cds {
			cds[i] = ContentDescriptor{
				Name:     fmt.Sprintf("param%d", i),
				Required: true,
				Schema:   sm.schema(t.Elem(), method+" params"),
			}
		}
		return ByPosition, cds
	case reflect.Slice:
		return ByPosition, []ContentDescriptor{{
			Name:     "params",
			Schema:   sm.schema(t.Elem(), method+" params"),
			Variadic: true,
		}}
	}
	return Either, nil
}

// fillParams fills doc's name, param structure and params from the method
// name and the params type p.
func fillParams(sm *schemaMaker, doc *Method, name string, p reflect.Type) {
	if doc.Name == "" {
		doc.Name = name
	}
	structure, derived := paramsOf(sm, p, doc.Name)
	if doc.ParamStructure == "" {
		doc.ParamStructure = structure
	}
	if doc.Params == nil {
		doc.Params = derived
		return
	}
	for i := range doc.Params {
		cd := &doc.Params[i]
		if cd.Schema != nil {
			continue
		}
		var from *ContentDescriptor
		switch {
		case structure == ByName:
			if j := slices.IndexFunc(derived, func(d ContentDescriptor) bool { return d.Name == cd.Name }); j >= 0 {
				from = &derived[j]
			}
		case len(derived) == 1 && derived[0].Variadic:
			from = &derived[0]
		case i < len(derived):
			from = &derived[i]
		}
		if from == nil {
			cd.Schema = &jsonschema.Schema{} // any value
			continue
		}
		cd.Schema = from.Schema
		cd.Required = cd.Required || from.Required
		cd.Variadic = cd.Variadic || from.Variadic
		if cd.Description == "" {
			cd.Description = from.Description
		}
	}
}

// fillDescriptor returns cd, or a new descriptor if it is nil, with the
// name name and the schema of t unless they are set.
func fillDescriptor(sm *schemaMaker, cd *ContentDescriptor, name string, t reflect.Type, method string) *ContentDescriptor {
	if cd == nil {
		cd = new(ContentDescriptor)
	}
	if cd.Name == "" {
		cd.Name = name
	}
	if cd.Schema == nil {
		cd.Schema = sm.schema(t, method+" "+name)
	}
	return cd
}

// nameExamples names the example values without a name after the params
// at their positions and the result.
func nameExamples(doc *Method) {
	for i := range doc.Examples {
		ex := &doc.Examples[i]
		for j := range ex.Params {
			if ex.Params[j].Name != "" {
				continue
			}
			switch {
			case j < len(doc.Params):
				ex.Params[j].Name = doc.Params[j].Name
			case len(doc.Params) > 0 && doc.Params[len(doc.Params)-1].Variadic:
				ex.Params[j].Name = doc.Params[len(doc.Params)-1].Name
			default:
				ex.Params[j].Name = fmt.Sprintf("param%d", j)
			}
		}
		if ex.Result != nil && ex.Result.Name == "" {
			ex.Result.Name = "result"
			if doc.Result != nil {
				ex.Result.Name = doc.Result.Name
			}
		}
	}
}
