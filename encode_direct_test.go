//go:build !goexperiment.jsonv2

// The direct encoder is off under GOEXPERIMENT=jsonv2 (jsonv2_off.go).

package jsonrpc

import (
	"encoding/json"
	"math"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Types for TestDirectEncoder: those a plan writes, and those it must
// leave to encoding/json.

type flatAll struct {
	B   bool
	I   int
	I8  int8
	I16 int16
	I32 int32
	I64 int64
	U   uint
	U8  uint8
	U16 uint16
	U32 uint32
	U64 uint64
	UP  uintptr
	F32 float32
	F64 float64
	S   string
}

type flatOmit struct {
	B   bool    `json:"b,omitempty"`
	I   int     `json:"i,omitempty"`
	I8  int8    `json:",omitempty"`
	U16 uint16  `json:"u16,omitempty"`
	U32 uint32  `json:"u32,omitempty"`
	UP  uintptr `json:"up,omitempty"`
	F32 float32 `json:"f32,omitempty"`
	F64 float64 `json:"f64,omitempty"`
	S   string  `json:"s,omitempty"`
	//lint:ignore SA5008 an option encoding/json does not know, which it ignores
	K int `json:"k,unknownoption"`
}

type flatInner struct {
	X int    `json:"x"`
	Y string // shadowed by flatOuter.Y
	z int
}

type flatTwin struct {
	Y string // ties with flatInner.Y: neither is written
	W int
}

type flatOuter struct {
	A int `json:"a"`
	flatInner
	Y    string `json:"Y"`
	hide int
	Skip int `json:"-"`
	//lint:ignore SA5008 a field called "-"
	Dash  int `json:"-,"`
	Named int `json:"named-name.$"`
}

type flatTie struct {
	flatInner
	flatTwin
}

type flatNamedKinds struct {
	N myInt
	S myString
	F myFloat
}

type (
	myInt    int
	myString string
	myFloat  float64
)

// Types the plan must not take.

type flatQuoted struct {
	N int `json:"n,string"`
}

type flatOmitZero struct {
	N int `json:"n,omitzero"`
}

type nested struct {
	In     flatAll
	P      *int             `json:"p"`
	PS     *string          `json:"ps,omitempty"`
	PP     **flatSub        `json:"pp"`
	Inner  *flatInner       `json:"inner,omitempty"`
	L      []int            `json:"l"`
	LE     []string         `json:"le,omitempty"`
	LS     []flatSub        `json:"ls"`
	LP     []*flatSub       `json:"lp"`
	LL     [][]float64      `json:"ll"`
	A      [3]int16         `json:"a"`
	A0     [0]int           `json:"a0,omitempty"`
	AS     [2]flatOmit      `json:"as"`
	S      flatSub          `json:"s,omitempty"` // a struct is never empty
	Parent struct{ X bool } `json:"parent"`
}

// node may be nested deeper than a plan writes, or point to itself.
type node struct {
	V    int
	Next *node  `json:",omitempty"`
	Kids []node `json:",omitempty"`
}

type withBytes struct{ B []byte }
type withByteArray struct{ B [4]byte }
type withMap struct{ M map[string]int }
type withNestedMarshaler struct{ L []valueMarshaler }
type onePointer struct{ P *int }

// Types held in an interface's data word: one pointer and zero-size
// fields.
type (
	zeroSizeFirst struct {
		_ struct{}
		P *int
	}
	zeroArrayFirst struct {
		E [0]int
		P *int
	}
)

type withNumber struct{ N json.Number }

type flatEmbeddedPtr struct {
	*flatInner
	A int
}

type flatAny struct {
	V any
}

type flatAnyOmit struct {
	A any `json:"a,omitempty"`
	B any `json:",omitempty"`
}

// shape is an interface with a method, held by withShape.
type shape interface{ area() float64 }

type square struct{ Side float64 }

func (s square) area() float64 { return s.Side * s.Side }

type circle struct{ R float64 }

func (c *circle) area() float64 { return 3 * c.R * c.R }

// shapeMarshaler is a shape that encoding/json writes by its MarshalJSON.
type shapeMarshaler struct{}

func (shapeMarshaler) area() float64 { return 0 }

func (shapeMarshaler) MarshalJSON() ([]byte, error) { return []byte(`"m"`), nil }

type withShape struct {
	S  shape
	O  shape `json:",omitempty"`
	OA any   `json:"oa,omitempty"`
	L  []shape
}

type valueMarshaler int

func (valueMarshaler) MarshalJSON() ([]byte, error) { return []byte(`"v"`), nil }

type ptrMarshaler int

func (*ptrMarshaler) MarshalJSON() ([]byte, error) { return []byte(`"p"`), nil }

type textMarshaler string

func (textMarshaler) MarshalText() ([]byte, error) { return []byte("t"), nil }

type flatWithMarshaler struct{ M valueMarshaler }
type flatWithPtrMarshaler struct{ M ptrMarshaler }
type flatWithText struct{ T textMarshaler }

type selfMarshaler struct{ A int }

func (selfMarshaler) MarshalJSON() ([]byte, error) { return []byte(`{"self":1}`), nil }

type embedsMarshaler struct {
	selfMarshaler
	B int
}

type otherMarshaler struct{ C int }

func (otherMarshaler) MarshalJSON() ([]byte, error) { return []byte(`{"other":1}`), nil }

// embedsTwoMarshalers has two MarshalJSON methods at one depth, so neither
// is promoted: encoding/json writes the fields of both structs.
type embedsTwoMarshalers struct {
	selfMarshaler
	otherMarshaler
	B int
}

type ptrSelfMarshaler struct{ A int }

func (*ptrSelfMarshaler) MarshalJSON() ([]byte, error) { return []byte(`{"ptrself":1}`), nil }

type embedsPtrMarshaler struct {
	ptrSelfMarshaler
	B int
}

type flatHTMLName struct {
	A int `json:"a<b"`
}

type flatUnicodeName struct {
	Ä int
}

func TestDirectEncoder(t *testing.T) {
	n, str := 5, "s<"
	sub := &flatSub{Minuend: 1, Subtrahend: 2}
	deep := &node{V: 0}
	for i, at := 1, deep; i < 60; i++ {
		at.Next = &node{V: i, Kids: []node{{V: -i}}}
		at = at.Next
	}
	takes := []any{
		flatAll{},
		flatAll{B: true, I: math.MinInt >> 1, I8: -128, I16: -32768, I32: math.MinInt32, I64: math.MinInt64,
			U: math.MaxUint >> 3, U8: 255, U16: 65535, U32: math.MaxUint32, U64: math.MaxUint64, UP: 7,
			F32: 1.1, F64: 1e21, S: "plain"},
		flatAll{F32: 1e-7, F64: -0.0000001, S: "<a href=\"x\">&amp;</a>\\ \b\f\n\r\t\x00\x1f\x7f"},
		flatAll{F32: float32(math.Copysign(0, -1)), F64: math.Copysign(0, -1), S: "é \u2028 \u2029 \xff\xfe 😀 \xed\xa0\x80"},
		flatAll{F32: math.MaxFloat32, F64: math.SmallestNonzeroFloat64, S: "<<<<<<<<&&&&&&&&>>>>>>>>plain text of some length"},
		&flatAll{I: 3, S: "pointer"},
		flatOmit{},
		flatOmit{F32: float32(math.Copysign(0, -1)), F64: math.Copysign(0, -1)},
		flatOmit{B: true, I: 1, I8: 1, U16: 1, U32: 1, UP: 1, F32: 0.5, F64: 0.25, S: "s", K: 1},
		flatOmit{I: 1, S: "only these"},
		flatOuter{A: 1, flatInner: flatInner{X: 2, Y: "inner", z: 3}, Y: "outer", hide: 4, Skip: 5, Dash: 6, Named: 7},
		&flatOuter{A: -1},
		flatTie{flatInner{X: 1, Y: "y"}, flatTwin{Y: "twin", W: 3}},
		flatNamedKinds{N: -4, S: "named", F: 2.5},
		struct{}{},
		struct {
			A int `json:"a"`
			b int
		}{A: 1, b: 2},
		flatSub{Minuend: 10, Subtrahend: n},
		embedsTwoMarshalers{selfMarshaler{1}, otherMarshaler{2}, 3},
		nested{},
		nested{P: &n, PS: &str, PP: &sub, Inner: &flatInner{X: 1}, L: []int{}, LE: []string{"<x>"},
			LS: []flatSub{{1, 2}, {3, 4}}, LP: []*flatSub{nil, sub}, LL: [][]float64{nil, {}, {1.5, math.Copysign(0, -1)}},
			A: [3]int16{1, -2, 3}, AS: [2]flatOmit{{I: 1}, {}}, Parent: struct{ X bool }{true}},
		&nested{L: []int{1, 2, 3}},
		[]flatSub{{1, 2}},
		[]int(nil),
		[2]string{"a", "b<"},
		&[]int{7},
		&n,
		node{V: 1, Next: &node{V: 2}, Kids: []node{{V: 3}, {V: 4, Kids: []node{}}}},
		deep,
		// Interfaces: what they hold, by its own plan.
		flatAny{}, flatAny{V: 1}, flatAny{V: "<s>"}, flatAny{V: true}, flatAny{V: -0.0000001},
		flatAny{V: uint8(200)}, flatAny{V: sub}, flatAny{V: *sub}, flatAny{V: (*flatSub)(nil)},
		flatAny{V: &n}, flatAny{V: []int{1}}, flatAny{V: []any{1, "x", nil, false, 2.5, []any{}}},
		flatAny{V: flatAny{V: flatAny{}}}, &flatAny{V: [2]any{nil, &str}}, flatAny{V: deep},
		[]any{42, 23}, []any{}, [1]any{"a<"},
		flatAnyOmit{}, flatAnyOmit{A: 0, B: ""}, flatAnyOmit{A: (*int)(nil)}, &flatAnyOmit{B: []any{}},
		// Maps with keys of string kind: sorted bytewise, keys escaped
		// as strings are.
		map[string]int{"b": 2, "a": 1, "<": 3, "": 0, "é": 4, " ": 5, "ÿ": 6, `"\`: 7, "B": 8},
		map[string]int(nil), map[string]int{}, withMap{}, withMap{M: map[string]int{"x": 1}},
		map[mapKey]any{"k": map[string]any{"n": nil, "l": []any{1.5, "s"}}, "j": &sub},
		map[string]*flatSub{"p": sub, "nil": nil}, map[string][]int{"a": nil, "b": {}, "c": {1}},
		map[string]flatOmit{"z": {}, "y": {I: 1}}, map[string]map[string]bool{"o": {"t": true}, "n": nil},
		&map[string]int{"ptr": 1}, []map[string]string{nil, {"a": "<b>"}},
		withMapOmit{}, withMapOmit{M: map[string]int{}}, withMapOmit{M: map[string]int{"a": 1}},
		flatAny{V: map[string]int{}}, flatAny{V: map[string]any{"a": flatAny{V: 1}}}, []any{map[string]any{}},
		// Types of one pointer-shaped word, which an interface holds in
		// its data word.
		onePointer{P: &n}, onePointer{}, [1]*int{&n}, zeroSizeFirst{P: &n}, zeroArrayFirst{P: &n},
		[1]zeroSizeFirst{{P: &n}}, flatAny{V: onePointer{P: &n}}, []any{[1]*int{}, withMap{M: map[string]int{"a": 1}}},
		// Interfaces with methods: what they hold, by its own plan.
		withShape{}, withShape{S: square{2}, O: &circle{1}, OA: 0, L: []shape{nil, square{1}, &circle{2}, (*circle)(nil)}},
		[]shape{&circle{3}, square{4}, &circle{3}}, map[string]shape{"c": &circle{1}, "n": nil},
		flatAny{V: withShape{S: &circle{5}}},
	}
	for _, v := range takes {
		want, err := json.Marshal(v)
		require.NoError(t, err)
		got, ok := encodeDirect(nil, v, true)
		require.True(t, ok, "%T: no plan", v)
		assert.Equal(t, string(want), string(got), "%T %+v", v, v)

		noHTML, err := encodingJSON(v, false)
		require.NoError(t, err)
		got, ok = encodeDirect(nil, v, false)
		require.True(t, ok, "%T: no plan", v)
		assert.Equal(t, noHTML, string(got), "%T without HTML escapes", v)
		var es encoders
		res, _, err := es.encode(v)
		require.NoError(t, err)
		assert.Equal(t, noHTML, string(res), "%T as a result", v)

		params, err := encodeParams(v)
		switch want[0] {
		case '{', '[':
			require.NoError(t, err)
			assert.Equal(t, string(want), string(params), "encodeParams(%T)", v)
		case 'n':
			require.NoError(t, err)
			assert.Nil(t, params, "encodeParams(%T): null is no params", v)
		default:
			var werr *Error
			require.ErrorAs(t, err, &werr, "encodeParams(%T): not an object or array", v)
			assert.Equal(t, CodeInvalidParams, werr.Code)
		}
	}

	var nilPtr *flatAll
	got, bp, ok := encodeParamsPooled(nilPtr)
	assert.True(t, ok)
	assert.Nil(t, got, "a nil pointer encodes as null: no params")
	assert.Nil(t, bp, "no params, no buffer to give back")

	leaves := []any{
		flatQuoted{N: 1}, flatOmitZero{N: 1}, flatEmbeddedPtr{A: 1},
		// An interface holding what has no plan, or a NaN, found as it
		// is written.
		flatAny{V: map[int]string{1: "a"}}, flatAny{V: []byte("x")}, flatAny{V: valueMarshaler(1)},
		flatAny{V: json.Number("1")}, []any{1, math.NaN()},
		// An interface with methods holding what has no plan.
		withShape{S: shapeMarshaler{}}, []shape{square{1}, shapeMarshaler{}},
		flatWithMarshaler{}, flatWithPtrMarshaler{}, &flatWithPtrMarshaler{},
		flatWithText{}, selfMarshaler{}, &selfMarshaler{}, embedsMarshaler{}, &embedsPtrMarshaler{}, embedsPtrMarshaler{},
		flatHTMLName{}, flatUnicodeName{}, withBytes{}, withByteArray{}, withNestedMarshaler{},
		// Maps of other keys, of what has no plan, or with methods.
		map[int]string{2: "b", 10: "a"}, map[textKey]int{{1}: 1}, map[string][]byte{"b": []byte("x")},
		map[string]valueMarshaler{"m": 1}, selfMarshalingMap{"a": 1}, map[string]any{"f": math.NaN()},
		withNumber{N: "12"}, []json.Number{"1.5"},
		[]byte("x"), json.RawMessage(`{}`),
		1, "s", true, 1.5, nil,
	}
	for _, v := range leaves {
		_, ok := encodeDirect(nil, v, true)
		assert.False(t, ok, "%T: a plan, where encoding/json must write it", v)
		if want, err := json.Marshal(v); err == nil && (want[0] == '{' || want[0] == '[') {
			params, err := encodeParams(v)
			require.NoError(t, err, "%T", v)
			assert.Equal(t, string(want), string(params), "encodeParams(%T)", v)
		}
	}

	// What a plan cannot write goes to encoding/json, for its output or
	// its error.
	for _, f := range []float64{math.NaN(), math.Inf(1), math.Inf(-1)} {
		_, ok := encodeDirect(nil, nested{LL: [][]float64{{1, f}}}, true)
		assert.False(t, ok, "%v", f)
		_, err := encodeParams(flatAll{F64: f})
		var je *json.UnsupportedValueError
		assert.ErrorAs(t, err, &je, "%v", f)
	}
	tooDeep := &node{}
	for at := tooDeep; at.V < 300; at = at.Next {
		at.Next = &node{V: at.V + 1}
	}
	_, ok = encodeDirect(nil, tooDeep, true)
	assert.False(t, ok, "deeper than maxEncDepth")
	want, err := json.Marshal(tooDeep)
	require.NoError(t, err)
	params, err := encodeParams(tooDeep)
	require.NoError(t, err)
	assert.Equal(t, string(want), string(params), "deeper than maxEncDepth: encoding/json's")

	cycle := &node{V: 1}
	cycle.Next = cycle
	_, ok = encodeDirect(nil, cycle, true)
	assert.False(t, ok, "a cycle")
	_, err = encodeParams(cycle)
	var je *json.UnsupportedValueError
	assert.ErrorAs(t, err, &je, "a cycle: encoding/json's error")

	anyCycle := &flatAny{}
	anyCycle.V = anyCycle
	_, ok = encodeDirect(nil, anyCycle, true)
	assert.False(t, ok, "a cycle through an interface")
	_, err = encodeParams(anyCycle)
	assert.ErrorAs(t, err, &je, "a cycle through an interface: encoding/json's error")

	mapCycle := map[string]any{}
	mapCycle["self"] = mapCycle
	_, ok = encodeDirect(nil, mapCycle, true)
	assert.False(t, ok, "a cycle through a map")
	_, err = encodeParams(mapCycle)
	assert.ErrorAs(t, err, &je, "a cycle through a map: encoding/json's error")
}

// mapKey is a key type of string kind: encoding/json writes the string,
// not what MarshalText returns.
type mapKey string

func (mapKey) MarshalText() ([]byte, error) { return []byte("text"), nil }

// textKey is a key type encoding/json writes by MarshalText.
type textKey struct{ N int }

func (k textKey) MarshalText() ([]byte, error) { return []byte("t" + strconv.Itoa(k.N)), nil }

// selfMarshalingMap is a map type with a method encoding/json calls.
type selfMarshalingMap map[string]int

func (selfMarshalingMap) MarshalJSON() ([]byte, error) { return []byte(`"self"`), nil }

type withMapOmit struct {
	M map[string]int `json:"m,omitempty"`
	N int
}

// TestDirectEncoderTypesInTurn checks that the plan used last, which is
// tried first, is never used for another type.
func TestDirectEncoderTypesInTurn(t *testing.T) {
	type a struct{ A int }
	type b struct{ A string }
	for i := range 4 {
		got, ok := encodeDirect(nil, a{A: i}, true)
		require.True(t, ok)
		assert.Equal(t, `{"A":`+strconv.Itoa(i)+`}`, string(got))
		got, ok = encodeDirect(nil, b{A: "x"}, true)
		require.True(t, ok)
		assert.Equal(t, `{"A":"x"}`, string(got))
		got, ok = encodeDirect(nil, &b{A: "y"}, true)
		require.True(t, ok)
		assert.Equal(t, `{"A":"y"}`, string(got))
		got, ok = encodeDirect(nil, []b{{A: "z"}}, true)
		require.True(t, ok)
		assert.Equal(t, `[{"A":"z"}]`, string(got))
	}
}

// FuzzDirectEncoder holds the direct encoder to json.Marshal's bytes, and
// to an Encoder's without HTML escapes, for every kind it writes, with
// and without omitempty, in slices, arrays and behind pointers.
func FuzzDirectEncoder(f *testing.F) {
	f.Add(true, int64(-1), uint64(1), 1.5, float32(0.1), "a<b>&c\"\\\b\f\n\r\t\x01\u2028\u2029\xff", 3)
	f.Add(false, int64(math.MinInt64), uint64(math.MaxUint64), 1e21, float32(1e-7), "", 0)
	f.Add(false, int64(0), uint64(0), math.Copysign(0, -1), float32(math.MaxFloat32), "\xed\xa0\x80\xf4\x90\x80\x80😀é", 1)
	f.Add(true, int64(42), uint64(42), math.Inf(1), float32(math.NaN()), strings.Repeat("x<", 50), 2)
	f.Fuzz(func(t *testing.T, b bool, i int64, u uint64, f64 float64, f32 float32, s string, n int) {
		all := flatAll{B: b, I: int(i), I8: int8(i), I16: int16(i), I32: int32(i), I64: i,
			U: uint(u), U8: uint8(u), U16: uint16(u), U32: uint32(u), U64: u, UP: uintptr(u),
			F32: f32, F64: f64, S: s}
		omit := flatOmit{B: b, I: int(i), I8: int8(i), U16: uint16(u), U32: uint32(u), UP: uintptr(u),
			F32: f32, F64: f64, S: s, K: int(i)}
		n = n & 7
		var ls []flatSub
		for k := range n {
			ls = append(ls, flatSub{int(i) + k, k})
		}
		v := nested{In: all, LS: ls, LL: [][]float64{{f64}, nil}, AS: [2]flatOmit{omit, {}}, LE: strings.Split(s, "e")}
		if b {
			v.PS, v.P = &s, &n
		}
		// A map whose keys are pieces of s: sorted as bytes, escaped.
		m := map[string]any{}
		for k, piece := range strings.SplitAfter(s, "a") {
			m[piece] = []any{k, piece, f64}
		}
		for _, v := range []any{all, &omit, v, []nested{v, {}}, m} {
			for _, html := range []bool{true, false} {
				want, werr := encodingJSON(v, html)
				got, ok := encodeDirect(nil, v, html)
				if !ok {
					if werr == nil && isFinite(f64) && isFinite(float64(f32)) {
						t.Fatalf("%+v: the plan gave up on what encoding/json writes as %s", v, want)
					}
					continue
				}
				if werr != nil {
					t.Fatalf("%+v: the plan wrote %s where encoding/json fails: %v", v, got, werr)
				}
				if string(got) != want {
					t.Fatalf("%+v (html %v):\n got %s\nwant %s", v, html, got, want)
				}
			}
		}
	})
}

func isFinite(f float64) bool { return !math.IsNaN(f) && !math.IsInf(f, 0) }

// TestDirectEncoderMapPoolBudget: what a map plan's pool keeps between
// writes is bounded in bytes, as the package's other pooled buffers are
// (64 KiB), not in entries: 1,000 values of 4 KiB copied out must not
// stay in the pool as 4 MB. (From a review; it failed with a bound of
// 1,024 entries.)
func TestDirectEncoderMapPoolBudget(t *testing.T) {
	type bigValue [512]int64 // 4 KiB
	m := make(map[string]bigValue, 1000)
	for i := range 1000 {
		m[strconv.Itoa(i)] = bigValue{int64(i)}
	}
	p := encPlanFor(reflect.TypeOf(m))
	require.NotNil(t, p)
	// The pool may drop what is put in it (one Put in four under the
	// race detector, or after a move to another P): look a few times.
	for range 20 {
		_, ok := encodeDirect(nil, m, false)
		require.True(t, ok)
		mb, _ := p.mapBufs.Get().(*mapBuf)
		if mb == nil {
			continue
		}
		held := uintptr(mb.vals.Cap())*p.size + uintptr(cap(mb.entries))*unsafe.Sizeof(mapEntry{})
		assert.LessOrEqual(t, held, uintptr(64<<10), "bytes kept in the pool of %v", p.typ)
		return
	}
	t.Log("the pool kept nothing")
}
