package jsonrpc

import (
	"encoding/json"
	"math"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Types for TestFlatEncoder: those a flatPlan writes, and those it must
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
	K   int     `json:"k,unknownoption"`
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
	Y     string `json:"Y"`
	hide  int
	Skip  int `json:"-"`
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

type flatNested struct {
	In flatAll
}

type flatEmbeddedPtr struct {
	*flatInner
	A int
}

type flatSlice struct {
	L []int
}

type flatAny struct {
	V any
}

type flatPtrField struct {
	P *int
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

func TestFlatEncoder(t *testing.T) {
	n := 5
	takes := []any{
		flatAll{},
		flatAll{B: true, I: -1 << 63 >> 1, I8: -128, I16: -32768, I32: math.MinInt32, I64: math.MinInt64,
			U: 1 << 40, U8: 255, U16: 65535, U32: math.MaxUint32, U64: math.MaxUint64, UP: 7,
			F32: 1.1, F64: 1e21, S: "plain"},
		flatAll{F32: 1e-7, F64: -0.0000001, S: "<a href=\"x\">&amp;</a>\\ \b\f\n\r\t\x00\x1f\x7f"},
		flatAll{F32: float32(math.Copysign(0, -1)), F64: math.Copysign(0, -1), S: "é \u2028 \u2029 \xff\xfe 😀 \xed\xa0\x80"},
		flatAll{F32: math.MaxFloat32, F64: math.SmallestNonzeroFloat64},
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
	}
	for _, v := range takes {
		want, err := json.Marshal(v)
		require.NoError(t, err)
		got, ok := encodeFlat(v)
		require.True(t, ok, "%T: no plan", v)
		assert.Equal(t, string(want), string(got), "%T %+v", v, v)
		params, err := encodeParams(v)
		require.NoError(t, err)
		assert.Equal(t, string(want), string(params), "encodeParams(%T)", v)
	}

	var nilPtr *flatAll
	got, ok := encodeFlat(nilPtr)
	assert.True(t, ok)
	assert.Nil(t, got, "a nil pointer encodes as null: no params")

	leaves := []any{
		flatQuoted{N: 1}, flatOmitZero{N: 1}, flatNested{}, flatEmbeddedPtr{A: 1}, flatSlice{L: []int{1}},
		flatAny{V: 1}, flatPtrField{P: &n}, flatWithMarshaler{}, flatWithPtrMarshaler{}, &flatWithPtrMarshaler{},
		flatWithText{}, selfMarshaler{}, &selfMarshaler{}, embedsMarshaler{}, &embedsPtrMarshaler{}, embedsPtrMarshaler{}, flatHTMLName{}, flatUnicodeName{},
		1, "s", []int{1}, map[string]int{"a": 1}, json.RawMessage(`{}`), &n,
	}
	for _, v := range leaves {
		_, ok := encodeFlat(v)
		assert.False(t, ok, "%T: a plan, where encoding/json must write it", v)
	}

	// What the plan cannot write goes to encoding/json, for its error.
	for _, f := range []float64{math.NaN(), math.Inf(1), math.Inf(-1)} {
		_, ok := encodeFlat(flatAll{F64: f})
		assert.False(t, ok, "%v", f)
		_, err := encodeParams(flatAll{F64: f})
		var je *json.UnsupportedValueError
		assert.ErrorAs(t, err, &je, "%v", f)
	}
}

// flatSub is a struct of two ints, as a typical call passes.
type flatSub struct {
	Minuend    int `json:"minuend"`
	Subtrahend int `json:"subtrahend"`
}

// TestFlatEncoderTypesInTurn checks that the plan used last, which is
// tried first, is never used for another type.
func TestFlatEncoderTypesInTurn(t *testing.T) {
	type a struct{ A int }
	type b struct{ A string }
	for i := range 4 {
		got, ok := encodeFlat(a{A: i})
		require.True(t, ok)
		assert.JSONEq(t, `{"A":`+string(rune('0'+i))+`}`, string(got))
		got, ok = encodeFlat(b{A: "x"})
		require.True(t, ok)
		assert.Equal(t, `{"A":"x"}`, string(got))
		got, ok = encodeFlat(&b{A: "y"})
		require.True(t, ok)
		assert.Equal(t, `{"A":"y"}`, string(got))
	}
}

// FuzzFlatEncoder holds the flat encoder to json.Marshal's bytes for every
// kind it writes, with and without omitempty.
func FuzzFlatEncoder(f *testing.F) {
	f.Add(true, int64(-1), uint64(1), 1.5, float32(0.1), "a<b>&c\"\\\b\f\n\r\t\x01\u2028\u2029\xff")
	f.Add(false, int64(math.MinInt64), uint64(math.MaxUint64), 1e21, float32(1e-7), "")
	f.Add(false, int64(0), uint64(0), math.Copysign(0, -1), float32(math.MaxFloat32), "\xed\xa0\x80\xf4\x90\x80\x80😀é")
	f.Add(true, int64(42), uint64(42), math.Inf(1), float32(math.NaN()), strings.Repeat("x", 100))
	f.Fuzz(func(t *testing.T, b bool, i int64, u uint64, f64 float64, f32 float32, s string) {
		for _, v := range []any{
			flatAll{B: b, I: int(i), I8: int8(i), I16: int16(i), I32: int32(i), I64: i,
				U: uint(u), U8: uint8(u), U16: uint16(u), U32: uint32(u), U64: u, UP: uintptr(u),
				F32: f32, F64: f64, S: s},
			&flatOmit{B: b, I: int(i), I8: int8(i), U16: uint16(u), U32: uint32(u), UP: uintptr(u),
				F32: f32, F64: f64, S: s, K: int(i)},
		} {
			want, werr := json.Marshal(v)
			got, ok := encodeFlat(v)
			if !ok {
				if werr == nil {
					t.Fatalf("%+v: the plan gave up on what encoding/json writes as %s", v, want)
				}
				if finite32, finite64 := !math.IsNaN(float64(f32)) && !math.IsInf(float64(f32), 0), !math.IsNaN(f64) && !math.IsInf(f64, 0); finite32 && finite64 {
					t.Fatalf("%+v: the plan gave up on finite floats", v)
				}
				continue
			}
			if werr != nil {
				t.Fatalf("%+v: the plan wrote %s where encoding/json fails: %v", v, got, werr)
			}
			if string(got) != string(want) {
				t.Fatalf("%+v:\n got %s\nwant %s", v, got, want)
			}
		}
	})
}
