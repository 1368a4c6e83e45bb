package openrpc_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"iter"
	"maps"
	"strings"
	"testing"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/ndjsonrpc/jsonrpc"
	"github.com/ndjsonrpc/jsonrpc/openrpc"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

type user struct {
	Name  string   `json:"name" jsonschema:"the user's name"`
	Age   int      `json:"age,omitempty"`
	Tags  []string `json:"tags,omitzero"`
	Admin *bool    `json:"admin"`
}

type created struct {
	ID int64 `json:"id"`
}

// pair decodes [a, b] and {"a": a, "b": b} alike.
type pair struct{ A, B float64 }

func (p *pair) UnmarshalJSON(b []byte) error {
	var a [2]float64
	if json.Unmarshal(b, &a) == nil {
		p.A, p.B = a[0], a[1]
		return nil
	}
	var o struct{ A, B float64 }
	err := json.Unmarshal(b, &o)
	p.A, p.B = o.A, o.B
	return err
}

var (
	createUser = jsonrpc.NewMethod[user, created]("createUser")
	subtract   = jsonrpc.NewMethod[[2]float64, float64]("subtract")
	minus      = jsonrpc.NewMethod[pair, float64]("minus")
	sum        = jsonrpc.NewMethod[[]float64, float64]("sum")
	tail       = jsonrpc.NewStreamMethod[*struct {
		N int `json:"n"`
	}, created]("tail")
)

// schema returns the schema jsonschema-go gives for T.
func schema[T any](t *testing.T) *jsonschema.Schema {
	t.Helper()
	s, err := jsonschema.For[T](nil)
	require.NoError(t, err)
	return s
}

// jsonOf encodes v.
func jsonOf(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	require.NoError(t, err)
	return string(b)
}

func TestDescribeByName(t *testing.T) {
	m := openrpc.Describe(createUser, openrpc.Method{
		Summary:  "Creates a user.",
		Examples: []openrpc.Example{{Name: "ann", Params: openrpc.Values("ann", 42), Result: openrpc.Value(created{ID: 7})}},
	})
	u := schema[user](t)
	assert.Equal(t, "createUser", m.Name)
	assert.Equal(t, "Creates a user.", m.Summary)
	assert.Equal(t, openrpc.ByName, m.ParamStructure)
	require.Len(t, m.Params, 4)
	for i, want := range []struct {
		name     string
		required bool
	}{{"name", true}, {"age", false}, {"tags", false}, {"admin", true}} {
		p := m.Params[i]
		assert.Equal(t, want.name, p.Name)
		assert.Equal(t, want.required, p.Required, p.Name)
		assert.Equal(t, u.Properties[want.name], p.Schema, p.Name)
		assert.False(t, p.Variadic)
	}
	assert.Equal(t, "the user's name", m.Params[0].Description)
	require.NotNil(t, m.Result)
	assert.Equal(t, "result", m.Result.Name)
	assert.Equal(t, schema[created](t), m.Result.Schema)
	assert.Nil(t, m.Stream)
	require.Len(t, m.Examples, 1)
	assert.Equal(t, []openrpc.ExampleValue{{Name: "name", Value: "ann"}, {Name: "age", Value: 42}}, m.Examples[0].Params)
	assert.Equal(t, &openrpc.ExampleValue{Name: "result", Value: created{ID: 7}}, m.Examples[0].Result)

	assert.JSONEq(t, `{
		"name": "createUser", "summary": "Creates a user.", "paramStructure": "by-name",
		"params": [
			{"name": "name", "description": "the user's name", "required": true, "schema": {"type": "string", "description": "the user's name"}},
			{"name": "age", "schema": {"type": "integer"}},
			{"name": "tags", "schema": {"type": ["null", "array"], "items": {"type": "string"}}},
			{"name": "admin", "required": true, "schema": {"type": ["null", "boolean"]}}
		],
		"result": {"name": "result", "schema": {"type": "object", "properties": {"id": {"type": "integer"}}, "required": ["id"], "additionalProperties": false}},
		"examples": [{"name": "ann", "params": [{"name": "name", "value": "ann"}, {"name": "age", "value": 42}], "result": {"name": "result", "value": {"id": 7}}}]
	}`, jsonOf(t, m))
}

func TestDescribeByPosition(t *testing.T) {
	m := openrpc.Describe(subtract, openrpc.Method{
		Params:   []openrpc.ContentDescriptor{{Name: "minuend"}, {Name: "subtrahend", Description: "taken away"}},
		Result:   &openrpc.ContentDescriptor{Name: "difference"},
		Examples: []openrpc.Example{{Name: "42 - 23", Params: openrpc.Values(42, 23), Result: openrpc.Value(19)}},
	})
	assert.Equal(t, openrpc.ByPosition, m.ParamStructure)
	number := schema[float64](t)
	assert.Equal(t, []openrpc.ContentDescriptor{
		{Name: "minuend", Required: true, Schema: number},
		{Name: "subtrahend", Description: "taken away", Required: true, Schema: number},
	}, m.Params)
	assert.Equal(t, &openrpc.ContentDescriptor{Name: "difference", Schema: number}, m.Result)
	assert.Equal(t, []openrpc.ExampleValue{{Name: "minuend", Value: 42}, {Name: "subtrahend", Value: 23}}, m.Examples[0].Params)
	assert.Equal(t, "difference", m.Examples[0].Result.Name)

	// Without names, the positions name them.
	m = openrpc.Describe(subtract, openrpc.Method{})
	assert.Equal(t, []string{"param0", "param1"}, []string{m.Params[0].Name, m.Params[1].Name})

	// A slice takes any number of positions, each of its element's schema.
	m = openrpc.Describe(sum, openrpc.Method{
		Params:   []openrpc.ContentDescriptor{{Name: "numbers"}},
		Examples: []openrpc.Example{{Name: "1+2+3", Params: openrpc.Values(1, 2, 3), Result: openrpc.Value(6)}},
	})
	assert.Equal(t, openrpc.ByPosition, m.ParamStructure)
	assert.Equal(t, []openrpc.ContentDescriptor{{Name: "numbers", Schema: number, Variadic: true}}, m.Params)
	assert.Equal(t, []openrpc.ExampleValue{{Name: "numbers", Value: 1}, {Name: "numbers", Value: 2}, {Name: "numbers", Value: 3}}, m.Examples[0].Params)
	assert.JSONEq(t, `[{"name": "numbers", "schema": {"type": "number"}, "x-variadic": true}]`, jsonOf(t, m.Params))
}

func TestDescribeEither(t *testing.T) {
	// The type decodes itself: nothing is guessed from its fields.
	m := openrpc.Describe(minus, openrpc.Method{})
	assert.Equal(t, openrpc.Either, m.ParamStructure)
	assert.Empty(t, m.Params)
	assert.Contains(t, jsonOf(t, m), `"params":[]`)

	number := openrpc.SchemaFor[float64]()
	m = openrpc.Describe(minus, openrpc.Method{
		Params: []openrpc.ContentDescriptor{{Name: "a", Required: true, Schema: number}, {Name: "b", Required: true, Schema: number}},
	})
	assert.Equal(t, openrpc.Either, m.ParamStructure)
	assert.Equal(t, []string{"a", "b"}, []string{m.Params[0].Name, m.Params[1].Name})
	assert.Same(t, number, m.Params[0].Schema)

	// A given structure wins over the one of the type.
	m = openrpc.Describe(subtract, openrpc.Method{ParamStructure: openrpc.Either})
	assert.Equal(t, openrpc.Either, m.ParamStructure)
	assert.Len(t, m.Params, 2)
}

func TestDescribeStream(t *testing.T) {
	m := openrpc.DescribeStream(tail, openrpc.Method{Description: "Streams the last n records."})
	assert.Equal(t, "tail", m.Name)
	assert.Equal(t, openrpc.ByName, m.ParamStructure)
	require.Len(t, m.Params, 1)
	assert.Equal(t, "n", m.Params[0].Name)
	assert.True(t, m.Params[0].Required)
	require.NotNil(t, m.Stream)
	assert.Equal(t, "$/stream", m.Stream.Notification)
	assert.Equal(t, openrpc.ContentDescriptor{Name: "item", Schema: schema[created](t)}, m.Stream.Item)
	assert.JSONEq(t, `{"name": "count", "schema": {"type": "integer", "minimum": 0}}`, jsonOf(t, m.Result))
	assert.JSONEq(t, `{"notification": "$/stream", "item": {"name": "item", "schema": {"type": "object", "properties": {"id": {"type": "integer"}}, "required": ["id"], "additionalProperties": false}}}`,
		jsonOf(t, m.Stream))
}

func TestDescribeNotification(t *testing.T) {
	m := openrpc.DescribeNotification[user]("userChanged", openrpc.Method{
		Examples: []openrpc.Example{{Name: "bob", Params: openrpc.Values("bob")}},
	})
	assert.Equal(t, "userChanged", m.Name)
	assert.Equal(t, openrpc.ByName, m.ParamStructure)
	assert.Len(t, m.Params, 4)
	assert.Nil(t, m.Result)
	assert.Nil(t, m.Examples[0].Result)
	var wire map[string]json.RawMessage
	require.NoError(t, json.Unmarshal([]byte(jsonOf(t, m)), &wire))
	assert.NotContains(t, wire, "result")
	assert.NotContains(t, wire, "x-stream")
}

func TestDescribePanicsWithoutSchema(t *testing.T) {
	bad := jsonrpc.NewMethod[struct{ C chan int }, int]("bad")
	assert.Panics(t, func() { openrpc.Describe(bad, openrpc.Method{}) })
}

func TestDocumentJSON(t *testing.T) {
	doc := openrpc.Document{Info: openrpc.Info{Title: "t", Version: "1"}}
	assert.JSONEq(t, `{"openrpc": "1.3.2", "info": {"title": "t", "version": "1"}, "methods": []}`, jsonOf(t, doc))
	doc.Methods = []openrpc.Method{{Name: "ping"}}
	assert.JSONEq(t, `{"openrpc": "1.3.2", "info": {"title": "t", "version": "1"}, "methods": [{"name": "ping", "params": []}]}`, jsonOf(t, &doc))
}

// TestDescribeRecursive checks that the types that contain themselves
// are defined once under the document's components, and that the
// method's schemas, read with those definitions, hold what encoding/json
// makes of such values and no other.
func TestDescribeRecursive(t *testing.T) {
	grow := jsonrpc.NewMethod[tree, *forest]("grow")
	plant := jsonrpc.NewStreamMethod[[]tree, tree]("plant")
	doc := openrpc.Document{Info: openrpc.Info{Title: "t", Version: "1"}, Methods: []openrpc.Method{
		openrpc.Describe(grow, openrpc.Method{}),
		openrpc.DescribeStream(plant, openrpc.Method{}),
		openrpc.DescribeNotification[tree]("fell", openrpc.Method{}),
	}}
	var got struct {
		Methods []struct {
			ParamStructure openrpc.ParamStructure
			Params         []struct {
				Name   string
				Schema json.RawMessage
			}
			Result struct{ Schema json.RawMessage }
			Stream struct {
				Item struct{ Schema json.RawMessage }
			} `json:"x-stream"`
		}
		Components struct{ Schemas map[string]json.RawMessage }
	}
	require.NoError(t, json.Unmarshal([]byte(jsonOf(t, doc)), &got))
	require.Len(t, got.Methods, 3)
	assert.Len(t, got.Components.Schemas, 2)
	assert.JSONEq(t, jsonOf(t, openrpc.SchemaFor[tree]().Defs["github.com.ndjsonrpc.jsonrpc.openrpc_test.tree"]),
		strings.ReplaceAll(string(got.Components.Schemas["github.com.ndjsonrpc.jsonrpc.openrpc_test.tree"]), "#/components/schemas/", "#/$defs/"))

	// A tree's params are its members, by name.
	grown := got.Methods[0]
	assert.Equal(t, openrpc.ByName, grown.ParamStructure)
	var names []string
	for _, p := range grown.Params {
		names = append(names, p.Name)
	}
	assert.Equal(t, []string{"name", "kids", "woods"}, names)

	// under validates v against the schema s of the document.
	under := func(s json.RawMessage, v any) error { return underComponents(t, got.Components.Schemas, s, v) }
	kids := []tree{{Name: "b", Woods: &forest{Trees: map[string]tree{"c": {Name: "c"}}}}}
	assert.NoError(t, under(grown.Params[1].Schema, kids))
	assert.Error(t, under(grown.Params[1].Schema, []any{map[string]any{"name": 1, "kids": nil}}))
	assert.NoError(t, under(grown.Result.Schema, &forest{Parent: &forest{}}))
	assert.NoError(t, under(grown.Result.Schema, nil))
	assert.Error(t, under(grown.Result.Schema, map[string]any{"trees": nil, "parent": 1}))
	assert.NoError(t, under(got.Methods[1].Params[0].Schema, kids[0]))
	assert.NoError(t, under(got.Methods[1].Stream.Item.Schema, kids[0]))
	assert.Error(t, under(got.Methods[1].Stream.Item.Schema, []tree{}))
	assert.Equal(t, "woods", got.Methods[2].Params[2].Name)
}

// underComponents validates what encoding/json makes of v against the
// schema s of a document whose components' schemas are schemas.
func underComponents(t *testing.T, schemas map[string]json.RawMessage, s json.RawMessage, v any) error {
	t.Helper()
	root := map[string]any{"$defs": schemas}
	var own map[string]any
	require.NoError(t, json.Unmarshal(s, &own))
	maps.Copy(root, own)
	b := strings.ReplaceAll(jsonOf(t, root), "#/components/schemas/", "#/$defs/")
	var schema jsonschema.Schema
	require.NoError(t, json.Unmarshal([]byte(b), &schema))
	rs, err := schema.Resolve(nil)
	require.NoError(t, err)
	var value any
	require.NoError(t, json.Unmarshal([]byte(jsonOf(t, v)), &value))
	return rs.Validate(value)
}

// alpha and beta contain each other, and alpha itself.
type alpha struct {
	B    *beta  `json:"b"`
	Next *alpha `json:"next"`
}

type beta struct {
	A *alpha `json:"a"`
}

// TestDescribeMutualRecursion checks that the types of one cycle are
// defined alike whichever method met which first: the document encodes,
// and its schemas hold what encoding/json makes and no other.
func TestDescribeMutualRecursion(t *testing.T) {
	doc := openrpc.Document{Info: openrpc.Info{Title: "t", Version: "1"}, Methods: []openrpc.Method{
		openrpc.Describe(jsonrpc.NewMethod[struct{}, alpha]("getAlpha"), openrpc.Method{}),
		openrpc.Describe(jsonrpc.NewMethod[struct{}, beta]("getBeta"), openrpc.Method{}),
	}}
	b, err := json.Marshal(doc)
	require.NoError(t, err)
	var got struct {
		Methods []struct {
			Result struct{ Schema json.RawMessage }
		}
		Components struct{ Schemas map[string]json.RawMessage }
	}
	require.NoError(t, json.Unmarshal(b, &got))
	assert.Len(t, got.Components.Schemas, 2)
	a := alpha{B: &beta{A: &alpha{Next: &alpha{}}}, Next: &alpha{B: &beta{}}}
	assert.NoError(t, underComponents(t, got.Components.Schemas, got.Methods[0].Result.Schema, a))
	assert.NoError(t, underComponents(t, got.Components.Schemas, got.Methods[1].Result.Schema, beta{A: &a}))
	assert.Error(t, underComponents(t, got.Components.Schemas, got.Methods[1].Result.Schema, map[string]any{"a": map[string]any{"b": 1, "next": nil}}))
}

// TestDocumentRecursiveNameClash checks that a document whose methods
// define two types of one name that contain themselves does not encode.
func TestDocumentRecursiveNameClash(t *testing.T) {
	type node struct {
		Kids []node `json:"kids"`
	}
	first := openrpc.DescribeNotification[node]("first", openrpc.Method{})
	{
		type node struct {
			Next *node `json:"next"`
		}
		second := openrpc.DescribeNotification[node]("second", openrpc.Method{})
		doc := &openrpc.Document{Methods: []openrpc.Method{first, second}}
		_, err := json.Marshal(doc)
		assert.ErrorContains(t, err, "openrpc_test.node")
		assert.Panics(t, func() { doc.Middleware() })
		// The same type in two methods is defined once.
		doc.Methods = []openrpc.Method{first, first}
		assert.Equal(t, 1, strings.Count(jsonOf(t, doc), `"github.com.ndjsonrpc.jsonrpc.openrpc_test.node":`))
	}
}

// newConn serves h on one end of a pair of pipes and returns a Conn on
// the other; both end with the test.
func newConn(t *testing.T, h jsonrpc.Handler) *jsonrpc.Conn {
	serverIn, clientOut := io.Pipe()
	clientIn, serverOut := io.Pipe()
	done := make(chan error, 1)
	go func() {
		done <- jsonrpc.Serve(context.Background(), serverIn, serverOut, h)
		serverOut.Close()
	}()
	conn := jsonrpc.NewConn(clientIn, clientOut, nil)
	t.Cleanup(func() {
		conn.Close()
		clientOut.Close()
		<-done
	})
	return conn
}

func TestDiscoverOverConn(t *testing.T) {
	doc := &openrpc.Document{
		Info: openrpc.Info{Title: "test", Version: "0.1.0"},
		Methods: []openrpc.Method{
			openrpc.Describe(subtract, openrpc.Method{}),
			openrpc.DescribeStream(tail, openrpc.Method{}),
		},
	}
	want := jsonOf(t, doc)
	mux := new(jsonrpc.Mux)
	subtract.Register(mux, func(_ context.Context, p [2]float64) (float64, error) { return p[0] - p[1], nil })
	tail.Register(mux, func(context.Context, *struct {
		N int `json:"n"`
	}) iter.Seq2[created, error] {
		return func(func(created, error) bool) {}
	})
	mux.Use(doc.Middleware())
	doc.Info.Title = "changed after" // not seen: the document was encoded
	conn := newConn(t, mux)
	ctx := t.Context()

	var got json.RawMessage
	require.NoError(t, conn.Call(ctx, "rpc.discover", nil, &got))
	assert.JSONEq(t, want, string(got))
	var decoded map[string]any
	require.NoError(t, json.Unmarshal(got, &decoded))
	assert.Equal(t, "1.3.2", decoded["openrpc"])
	assert.Len(t, decoded["methods"], 2)

	// The other methods are served as before.
	diff, err := subtract.Call(ctx, conn, [2]float64{42, 23})
	require.NoError(t, err)
	assert.Equal(t, 19.0, diff)

	// Other reserved names and unknown methods are still not found.
	for _, method := range []string{"rpc.other", "rpc.discovery", "discover", "nope"} {
		err := conn.Call(ctx, method, nil, nil)
		assert.Truef(t, errors.Is(err, jsonrpc.ErrMethodNotFound), "%s: %v", method, err)
	}
}

func TestMiddlewarePanicsOnBadDocument(t *testing.T) {
	doc := &openrpc.Document{Methods: []openrpc.Method{{Name: "x", Examples: []openrpc.Example{{Name: "e", Result: openrpc.Value(make(chan int))}}}}}
	assert.Panics(t, func() { doc.Middleware() })
}
