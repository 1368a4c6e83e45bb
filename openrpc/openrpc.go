// Package openrpc describes a JSON-RPC service built with package jsonrpc
// as an OpenRPC 1.3 document (https://spec.open-rpc.org), and answers the
// method rpc.discover with it.
//
// The description of a method is made from its typed descriptor, a
// [jsonrpc.Method] or [jsonrpc.StreamMethod]: the JSON Schemas of its
// params and result (github.com/google/jsonschema-go schemas) are made
// from the Go types as encoding/json encodes them (see [SchemaFor]), and
// what the types cannot say (a summary, examples, the names of
// positional params) is given in a [Method] whose empty fields are
// filled:
//
//	var Subtract = jsonrpc.NewMethod[[2]float64, float64]("subtract")
//
//	doc := &openrpc.Document{
//		Info: openrpc.Info{Title: "calculator", Version: "1.0.0"},
//		Methods: []openrpc.Method{
//			openrpc.Describe(Subtract, openrpc.Method{
//				Summary: "Subtracts the second number from the first.",
//				Params:  []openrpc.ContentDescriptor{{Name: "minuend"}, {Name: "subtrahend"}},
//				Examples: []openrpc.Example{
//					{Name: "42 - 23", Params: openrpc.Values(42, 23), Result: openrpc.Value(19)},
//				},
//			}),
//		},
//	}
//	mux.Use(doc.Middleware()) // answers rpc.discover with doc
//
// # Params
//
// How a method takes its params follows from the type P of its params:
//   - a struct, or a pointer to one, is taken by name ("by-name"): one
//     content descriptor per member, in the order of the fields, required
//     unless the field is omitempty or omitzero or promoted from an
//     embedded pointer;
//   - an array type [N]T is taken by position ("by-position"): N
//     descriptors, named param0, param1, ... unless names are given;
//   - a slice []T is taken by position, any number of T: one descriptor
//     whose Variadic is set ("x-variadic" in the document), which stands
//     for every position;
//   - any other type (a map, an interface, json.RawMessage, or a type with
//     its own UnmarshalJSON, whose JSON shape its Go type does not tell)
//     gives "either" and no descriptors: give them in [Method.Params].
//
// A method that takes both forms, such as one whose params type decodes
// [a, b] and {"a": a, "b": b} alike, says ParamStructure [Either] and
// lists its params in their positional order with their schemas.
//
// # Streams and notifications
//
// A streaming method's result is the number of items it sent, and its
// items are described under the extension "x-stream" (see [Stream]). A
// notification has no result, as OpenRPC 1.3 describes one.
package openrpc

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/ndjsonrpc/jsonrpc"
)

// Version is the version of the OpenRPC specification that documents
// follow when their OpenRPC field is empty.
const Version = "1.3.2"

// DiscoverMethod is the name of the method that answers with the document.
const DiscoverMethod = "rpc.discover"

// A Document is an OpenRPC document: the description of a service and its
// methods. It encodes as the specification's OpenRPC Object; an empty
// OpenRPC field encodes as [Version].
type Document struct {
	OpenRPC string   `json:"openrpc"`
	Info    Info     `json:"info"`
	Servers []Server `json:"servers,omitempty"`
	Methods []Method `json:"methods"`
}

// MarshalJSON encodes d, with [Version] for an empty OpenRPC field and an
// empty array for no methods. The schemas of the types that contain
// themselves, which the methods' schemas refer to, go under the
// document's components: it is an error for two methods to define
// different schemas of one name (two types of one name that contain
// themselves).
func (d Document) MarshalJSON() ([]byte, error) {
	type plain Document
	if d.OpenRPC == "" {
		d.OpenRPC = Version
	}
	if d.Methods == nil {
		d.Methods = []Method{}
	}
	type components struct {
		Schemas map[string]*jsonschema.Schema `json:"schemas"`
	}
	var comps *components
	defined := map[string][]byte{}
	for _, m := range d.Methods {
		for name, s := range m.schemas {
			b, err := json.Marshal(s)
			if err != nil {
				return nil, err
			}
			if prev, ok := defined[name]; ok {
				if !bytes.Equal(prev, b) {
					return nil, fmt.Errorf("openrpc: two schemas named %s (two types of one name that contain themselves)", name)
				}
				continue
			}
			defined[name] = b
			if comps == nil {
				comps = &components{Schemas: map[string]*jsonschema.Schema{}}
			}
			comps.Schemas[name] = s
		}
	}
	return json.Marshal(struct {
		plain
		Components *components `json:"components,omitempty"`
	}{plain(d), comps})
}

// Info is the document's Info Object: the service's title and the
// version of its API (not of OpenRPC), both required.
type Info struct {
	Title       string `json:"title"`
	Version     string `json:"version"`
	Description string `json:"description,omitempty"`
}

// A Server is a Server Object: where the service is served.
type Server struct {
	Name        string `json:"name,omitempty"`
	URL         string `json:"url"`
	Summary     string `json:"summary,omitempty"`
	Description string `json:"description,omitempty"`
}

// ParamStructure says whether a method takes its params as an array, an
// object or either.
type ParamStructure string

// The param structures of OpenRPC.
const (
	ByName     ParamStructure = "by-name"
	ByPosition ParamStructure = "by-position"
	Either     ParamStructure = "either"
)

// A Method is a Method Object: one method of the service. [Describe],
// [DescribeStream] and [DescribeNotification] fill one from a method's
// types.
//
// Result is nil for a notification. Stream is set for a streaming
// method, and encodes as the extension "x-stream".
type Method struct {
	Name           string              `json:"name"`
	Summary        string              `json:"summary,omitempty"`
	Description    string              `json:"description,omitempty"`
	Tags           []Tag               `json:"tags,omitempty"`
	ParamStructure ParamStructure      `json:"paramStructure,omitempty"`
	Params         []ContentDescriptor `json:"params"`
	Result         *ContentDescriptor  `json:"result,omitempty"`
	Errors         []Error             `json:"errors,omitempty"`
	Examples       []Example           `json:"examples,omitempty"`
	Deprecated     bool                `json:"deprecated,omitempty"`
	Stream         *Stream             `json:"x-stream,omitempty"`

	// schemas are the definitions of the types that contain themselves,
	// which the schemas above refer to under the document's components.
	schemas map[string]*jsonschema.Schema
}

// MarshalJSON encodes m, with an empty array for no params, which the
// specification requires.
func (m Method) MarshalJSON() ([]byte, error) {
	type plain Method
	if m.Params == nil {
		m.Params = []ContentDescriptor{}
	}
	return json.Marshal(plain(m))
}

// A Tag is a Tag Object, which groups methods.
type Tag struct {
	Name        string `json:"name"`
	Summary     string `json:"summary,omitempty"`
	Description string `json:"description,omitempty"`
}

// A ContentDescriptor is a Content Descriptor Object: a named value (a
// param, a result, a stream's item) and its JSON Schema.
//
// Variadic, the extension "x-variadic", marks the one descriptor of
// params taken by position in any number, each with its schema (a Go
// slice).
type ContentDescriptor struct {
	Name        string             `json:"name"`
	Summary     string             `json:"summary,omitempty"`
	Description string             `json:"description,omitempty"`
	Required    bool               `json:"required,omitempty"`
	Schema      *jsonschema.Schema `json:"schema"`
	Deprecated  bool               `json:"deprecated,omitempty"`
	Variadic    bool               `json:"x-variadic,omitempty"`
}

// An Error is an Error Object: an error the method may answer with.
type Error struct {
	Code    jsonrpc.Code `json:"code"`
	Message string       `json:"message"`
	Data    any          `json:"data,omitempty"`
}

// An Example is an Example Pairing Object: params and the result they
// give. Result is nil for a notification. [Describe] and the others name
// the values left without a name after the params they stand for and the
// result.
type Example struct {
	Name        string         `json:"name"`
	Summary     string         `json:"summary,omitempty"`
	Description string         `json:"description,omitempty"`
	Params      []ExampleValue `json:"params"`
	Result      *ExampleValue  `json:"result,omitempty"`
}

// MarshalJSON encodes e, with an empty array for no params.
func (e Example) MarshalJSON() ([]byte, error) {
	type plain Example
	if e.Params == nil {
		e.Params = []ExampleValue{}
	}
	return json.Marshal(plain(e))
}

// An ExampleValue is an Example Object: a named value.
type ExampleValue struct {
	Name    string `json:"name"`
	Summary string `json:"summary,omitempty"`
	Value   any    `json:"value"`
}

// Values returns the example values vs, without names, for
// [Example.Params]: in the order of the method's params, or for a
// variadic method, one per position.
func Values(vs ...any) []ExampleValue {
	out := make([]ExampleValue, len(vs))
	for i, v := range vs {
		out[i].Value = v
	}
	return out
}

// Value returns the example value v, without a name, for
// [Example.Result].
func Value(v any) *ExampleValue { return &ExampleValue{Value: v} }

// Stream describes the items of a streaming method, under the extension
// "x-stream" of its Method: each item goes out, before the response, as
// the notification named Notification ("$/stream") with params
// {"id": the request's id, "item": the item}, and Item describes the
// item.
type Stream struct {
	Notification string            `json:"notification"`
	Item         ContentDescriptor `json:"item"`
}
