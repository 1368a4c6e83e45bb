package openrpc_test

import (
	"encoding/json"
	"fmt"
	"maps"
	"math/big"
	"net/netip"
	"slices"
	"testing"
	"time"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/ndjsonrpc/jsonrpc"
	"github.com/ndjsonrpc/jsonrpc/openrpc"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

type inner struct {
	N string `json:"n"`
	X int    `json:"x"`
}

type shadowed struct {
	Count int `json:"n"` // shallower than inner's "n"
	inner
}

type taggedEmbed struct {
	inner `json:"inner"` // a member, not promoted
}

type pointerEmbed struct {
	*inner
	Y int `json:"y"`
}

type left struct{ A, B int }

type right struct {
	A int
	B int `json:"B"`
}

// ambiguous has two A at the same depth, neither tagged (dropped), and
// two B of which one is tagged (it wins).
type ambiguous struct {
	left
	right
}

type twiceA struct{ inner }

type twiceB struct{ inner }

// twice has inner's fields twice at the same depth: neither is encoded.
type twice struct {
	twiceA
	twiceB
	Z int
}

// withInterface embeds interfaces: an exported one is a member.
type withInterface struct {
	fmt.Stringer
	error
	Q int
}

// Label is embedded in labeled, where it is a member named Label.
type Label string

type labeled struct {
	Label
	X int `json:"x"`
}

type quoted struct {
	I  int       `json:"i,string"`
	P  *int      `json:"p,string"`
	B  bool      `json:"b,string"`
	F  float64   `json:"f,string"`
	S  string    `json:"s,string"`
	T  time.Time `json:"t,string"` // a Marshaler ignores the option
	No int       `json:"-"`
	Om int       `json:"om,omitempty"`
}

// addressed has a MarshalText method that encoding/json calls only on
// addressable values.
type addressed struct{ V int }

func (a *addressed) MarshalText() ([]byte, error) { return []byte("text"), nil }

// point has its own MarshalJSON, which makes an array.
type point struct{ X, Y int }

func (p point) MarshalJSON() ([]byte, error) { return json.Marshal([2]int{p.X, p.Y}) }

type withRaw struct {
	R  json.RawMessage  `json:"r"`
	RP *json.RawMessage `json:"rp"`
}

type keyed struct {
	Ints  map[int]string     `json:"ints"`
	Uints map[uint8]bool     `json:"uints"`
	Addrs map[netip.Addr]int `json:"addrs"`
}

// level is an integer that encodes itself as text: as a map key too.
type level int

func (l level) MarshalText() ([]byte, error) { return fmt.Appendf(nil, "level-%d", l), nil }

// badTag's tags name no member: encoding/json takes the Go names, and
// promotes inner's fields.
type badTag struct {
	A     int `json:"a'b"`
	inner `json:"in\\ner"`
}

// tree contains itself through a slice, and through forest.
type tree struct {
	Name  string  `json:"name"`
	Kids  []tree  `json:"kids"`
	Woods *forest `json:"woods,omitempty"`
}

// forest contains itself through tree: the two refer to each other.
type forest struct {
	Trees  map[string]tree `json:"trees"`
	Parent *forest         `json:"parent"`
}

// emNode contains itself through the struct it embeds, whose fields it
// takes, and through a map.
type emNode struct {
	emMeta
	Kids map[string]emNode `json:"kids"`
	N    int               `json:"n,string"`
}

type emMeta struct {
	Parent *emNode `json:"parent,omitempty"`
}

// gbox is generic and contains itself, and another instance of itself.
type gbox[T any] struct {
	V    T           `json:"v"`
	Next *gbox[T]    `json:"next"`
	All  []gbox[int] `json:"all"`
}

// selfPtr points to itself: its values, nil or not, encode as null.
type selfPtr *selfPtr

// Two types whose names differ in non-ASCII letters, and two whose names
// differ in a generic type's brackets, all containing themselves.
type (
	Ábol         struct{ Kids []Ábol }
	Ébol         struct{ Kids []Ébol }
	gtree[T any] struct{ Kids []gtree[T] }
	gtree_int_   struct{ Kids []gtree_int_ }
	alikeNames   struct {
		A Ábol
		E Ébol
		G gtree[int]
		H gtree_int_
	}
)

// schemaCase is a value and SchemaFor of its type.
type schemaCase struct {
	name   string
	value  any
	schema func() *jsonschema.Schema
}

func caseOf[T any](name string, v T) schemaCase {
	return schemaCase{name: name, value: v, schema: openrpc.SchemaFor[T]}
}

// TestSchemaForMatchesEncoding checks that what encoding/json makes of
// each value is valid under SchemaFor's schema of its type.
func TestSchemaForMatchesEncoding(t *testing.T) {
	raw := json.RawMessage(`{"any": [1]}`)
	seven := 7
	addr := netip.MustParseAddr("1.2.3.4")
	for _, tc := range []schemaCase{
		caseOf("shadowed field", shadowed{Count: 5, inner: inner{N: "a", X: 1}}),
		caseOf("tagged embedded struct", taggedEmbed{inner{N: "a", X: 1}}),
		caseOf("nil embedded pointer", pointerEmbed{Y: 1}),
		caseOf("embedded pointer", pointerEmbed{inner: &inner{N: "a"}, Y: 1}),
		caseOf("ambiguous fields", ambiguous{left{1, 2}, right{3, 4}}),
		caseOf("same struct twice", twice{twiceA{inner{N: "a"}}, twiceB{inner{X: 1}}, 1}),
		caseOf("embedded interfaces", withInterface{Q: 1}),
		caseOf("embedded string", labeled{Label: "a", X: 1}),
		caseOf("string option", quoted{I: 1, P: &seven, B: true, F: 1.5, S: "s", T: time.Unix(0, 0).UTC()}),
		caseOf("string option, nil", quoted{Om: 1}),
		caseOf("bytes", []byte("hi")),
		caseOf("nil bytes", []byte(nil)),
		caseOf("byte array", [2]byte{1, 2}),
		caseOf("text marshaler", addr),
		caseOf("pointer to text marshaler", &addr),
		caseOf("pointer text marshaler", addressed{1}),
		caseOf("addressable pointer text marshaler", []addressed{{1}}),
		caseOf("json marshaler", point{1, 2}),
		caseOf("json marshaler number", big.NewInt(42)),
		caseOf("raw messages", withRaw{R: raw, RP: &raw}),
		caseOf("null raw messages", withRaw{}),
		caseOf("map keys", keyed{Ints: map[int]string{-1: "a"}, Uints: map[uint8]bool{2: true}, Addrs: map[netip.Addr]int{addr: 1}}),
		caseOf("nil maps", keyed{}),
		caseOf("nil slice", []int(nil)),
		caseOf("nil pointer", (*inner)(nil)),
		caseOf("any", []any{1, "a", nil}),
		caseOf("integer map key with MarshalText", map[level]int{1: 1}),
		caseOf("json tag names encoding/json ignores", badTag{A: 1, inner: inner{N: "n", X: 2}}),
		caseOf("tree", tree{Name: "a", Kids: []tree{{Name: "b"}, {Name: "c", Kids: []tree{}, Woods: &forest{Trees: map[string]tree{"d": {Name: "d"}}}}}}),
		caseOf("forest", forest{Trees: map[string]tree{}, Parent: &forest{}}),
		caseOf("pointer to tree", &tree{Name: "a"}),
		caseOf("nil pointer to tree", (*tree)(nil)),
		caseOf("trees", []*tree{{Name: "a"}, nil}),
		caseOf("embedded recursion", emNode{emMeta{&emNode{N: 2}}, map[string]emNode{"x": {N: 3, Kids: map[string]emNode{}}}, 1}),
		caseOf("generic recursion", gbox[emNode]{Next: &gbox[emNode]{}, All: []gbox[int]{{V: 1, Next: &gbox[int]{}}}}),
		caseOf("generic recursion nested", gbox[gbox[int]]{V: gbox[int]{V: 1}}),
		caseOf("self pointer", selfPtr(nil)),
		caseOf("self pointer, not nil", selfPtr(new(selfPtr))),
		caseOf("names alike", alikeNames{A: Ábol{Kids: []Ábol{{}}}, G: gtree[int]{Kids: []gtree[int]{{}}}}),
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := tc.schema()
			rs, err := s.Resolve(nil)
			require.NoError(t, err)
			b, err := json.Marshal(tc.value)
			require.NoError(t, err)
			var v any
			require.NoError(t, json.Unmarshal(b, &v))
			assert.NoError(t, rs.Validate(v), "%s under %s", b, jsonOf(t, s))
		})
	}
}

func TestSchemaForObjects(t *testing.T) {
	for _, tc := range []struct {
		name   string
		schema *jsonschema.Schema
		want   string
	}{
		{"shadowed field", openrpc.SchemaFor[shadowed](), `{"type": "object", "additionalProperties": false,
			"properties": {"n": {"type": "integer"}, "x": {"type": "integer"}}, "required": ["n", "x"]}`},
		{"nil embedded pointer", openrpc.SchemaFor[pointerEmbed](), `{"type": "object", "additionalProperties": false,
			"properties": {"n": {"type": "string"}, "x": {"type": "integer"}, "y": {"type": "integer"}}, "required": ["y"]}`},
		{"ambiguous fields", openrpc.SchemaFor[ambiguous](), `{"type": "object", "additionalProperties": false,
			"properties": {"B": {"type": "integer"}}, "required": ["B"]}`},
		{"bytes", openrpc.SchemaFor[[]byte](), `{"type": ["null", "string"], "contentEncoding": "base64"}`},
		{"map keys", openrpc.SchemaFor[map[int]bool](), `{"type": ["null", "object"],
			"propertyNames": {"pattern": "^-?[0-9]+$"}, "additionalProperties": {"type": "boolean"}}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.JSONEq(t, tc.want, jsonOf(t, tc.schema))
		})
	}
}

// TestSchemaForRejectsWhatEncodingRejects checks, for the types that
// contain themselves, that a value encoding/json cannot make of them is
// not valid under their schemas: the references hold.
func TestSchemaForRejectsWhatEncodingRejects(t *testing.T) {
	for _, tc := range []struct {
		name   string
		schema *jsonschema.Schema
		value  string
	}{
		{"tree, a kid without a name", openrpc.SchemaFor[tree](), `{"name": "a", "kids": [{"kids": null}]}`},
		{"tree, deep kid with a stray member", openrpc.SchemaFor[tree](), `{"name": "a", "kids": [{"name": "b", "kids": [{"name": "c", "kids": null, "x": 1}]}]}`},
		{"tree, a forest's tree of the wrong type", openrpc.SchemaFor[tree](), `{"name": "a", "kids": null, "woods": {"trees": {"b": 1}, "parent": null}}`},
		{"forest, a parent's parent missing", openrpc.SchemaFor[forest](), `{"trees": null, "parent": {"trees": null}}`},
		{"pointer to tree, a string", openrpc.SchemaFor[*tree](), `"a"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rs, err := tc.schema.Resolve(nil)
			require.NoError(t, err)
			var v any
			require.NoError(t, json.Unmarshal([]byte(tc.value), &v))
			assert.Error(t, rs.Validate(v), "%s under %s", tc.value, jsonOf(t, tc.schema))
		})
	}
}

// TestSchemaForDefinesOnce checks the shape of a schema of a type that
// contains itself: defined once under $defs and referred to from within;
// the root is its schema too, so that it says its type.
func TestSchemaForDefinesOnce(t *testing.T) {
	type node struct {
		Next *node `json:"next"`
	}
	assert.JSONEq(t, `{"type": "object", "additionalProperties": false, "required": ["next"],
		"properties": {"next": {"anyOf": [{"type": "null"}, {"$ref": "#/$defs/github.com.ndjsonrpc.jsonrpc.openrpc_test.node"}]}},
		"$defs": {"github.com.ndjsonrpc.jsonrpc.openrpc_test.node": {
		"type": "object", "additionalProperties": false, "required": ["next"],
		"properties": {"next": {"anyOf": [{"type": "null"}, {"$ref": "#/$defs/github.com.ndjsonrpc.jsonrpc.openrpc_test.node"}]}}}}}`,
		jsonOf(t, openrpc.SchemaFor[node]()))
	// Behind a pointer, the root refers to it.
	assert.JSONEq(t, `{"anyOf": [{"type": "null"}, {"$ref": "#/$defs/github.com.ndjsonrpc.jsonrpc.openrpc_test.node"}], "$defs": {"github.com.ndjsonrpc.jsonrpc.openrpc_test.node": {
		"type": "object", "additionalProperties": false, "required": ["next"],
		"properties": {"next": {"anyOf": [{"type": "null"}, {"$ref": "#/$defs/github.com.ndjsonrpc.jsonrpc.openrpc_test.node"}]}}}}}`,
		jsonOf(t, openrpc.SchemaFor[*node]()))
	// A type that does not contain itself is written in place, even where
	// it occurs twice.
	assert.JSONEq(t, `{"type": "object", "additionalProperties": false, "required": ["a", "b"],
		"properties": {"a": {"type": "object", "additionalProperties": false, "properties": {"n": {"type": "string"}, "x": {"type": "integer"}}, "required": ["n", "x"]},
		"b": {"type": "object", "additionalProperties": false, "properties": {"n": {"type": "string"}, "x": {"type": "integer"}}, "required": ["n", "x"]}}}`,
		jsonOf(t, openrpc.SchemaFor[struct {
			A inner `json:"a"`
			B inner `json:"b"`
		}]()))
}

// TestSchemaForNamesApart checks that types whose Go names differ only
// in what a definition's name cannot hold are defined apart.
func TestSchemaForNamesApart(t *testing.T) {
	const pkg = "github.com.ndjsonrpc.jsonrpc.openrpc_test."
	assert.ElementsMatch(t, []string{pkg + "-c1-bol", pkg + "-c9-bol", pkg + "gtree-5b-int-5d-", pkg + "gtree_int_"},
		slices.Collect(maps.Keys(openrpc.SchemaFor[alikeNames]().Defs)))
}

func TestSchemaForPanics(t *testing.T) {
	assert.Panics(t, func() { openrpc.SchemaFor[map[[2]int]bool]() })
	// Two types of one name that contain themselves cannot both be
	// defined under it.
	type node struct {
		Kids []node `json:"kids"`
	}
	type outer = node
	{
		type node struct {
			Next  *node `json:"next"`
			Outer outer `json:"outer"`
		}
		assert.Panics(t, func() { openrpc.SchemaFor[node]() })
	}
}

// cycA, cycB and cycC make two cycles that share cycA and cycB: A -> B
// -> A, and A -> C -> B -> A.
type cycA struct {
	B *cycB `json:"b,omitempty"`
	C *cycC `json:"c,omitempty"`
}

type cycB struct {
	A *cycA `json:"a,omitempty"`
}

type cycC struct {
	B *cycB `json:"b,omitempty"`
}

// A type's definition does not depend on where the walk started: cycC,
// reached from cycA through cycA's definition, was written inline there,
// and by $ref when the walk started at cycC. So a Document whose methods
// entered the cycle at two types failed to encode ("two schemas named"),
// and its Middleware panicked.
func TestSchemaCycleFromEitherEnd(t *testing.T) {
	a, c := openrpc.SchemaFor[cycA](), openrpc.SchemaFor[cycC]()
	require.Len(t, a.Defs, 3, "cycA, cycB and cycC each contain themselves")
	for name, def := range a.Defs {
		other, ok := c.Defs[name]
		if !assert.True(t, ok, "%s defined from cycC too", name) {
			continue
		}
		ja, err := json.Marshal(def)
		require.NoError(t, err)
		jc, err := json.Marshal(other)
		require.NoError(t, err)
		assert.JSONEq(t, string(jc), string(ja), name)
	}
	doc := &openrpc.Document{
		Info: openrpc.Info{Title: "t", Version: "1"},
		Methods: []openrpc.Method{
			openrpc.Describe(jsonrpc.NewMethod[cycA, int]("fromA"), openrpc.Method{}),
			openrpc.Describe(jsonrpc.NewMethod[cycC, int]("fromC"), openrpc.Method{}),
		},
	}
	_, err := json.Marshal(doc)
	require.NoError(t, err)
	assert.NotPanics(t, func() { doc.Middleware() })
}
