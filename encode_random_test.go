//go:build !goexperiment.jsonv2

// The direct encoder is off under GOEXPERIMENT=jsonv2 (jsonv2_off.go).

package jsonrpc

// This file throws random types at the direct encoder: structs built by
// reflect.StructOf with random fields, tags and embedding, pointers,
// slices, arrays and maps of them, and the kinds the encoder leaves to
// encoding/json, each filled with random values that lean on the edges
// (escapes, invalid UTF-8, -0, floats at the switch to exponents, NaN).

import (
	"bytes"
	"encoding/json"
	"math"
	"math/rand/v2"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"unsafe"
)

type (
	randInt   int
	randStr   string
	randF32   float32
	randBytes []byte
	randByte  uint8
)

// randInner is a named struct with a tagged, an unexported and a plain
// field; randHoldsUnexp embeds an unexported struct type.
type randInner struct {
	X int `json:"x,omitempty"`
	y int //lint:ignore U1000 an unexported field, which encoders skip
	Z string
}

type randUnexp struct{ Q, R int }

// randIface is an interface with a method, held as randImplV, as
// *randImplP, or as one of the types after them: of one pointer-shaped
// word (which an interface holds in its data word), of size zero, an
// integer, and a struct whose MarshalJSON has a pointer receiver (which
// encoding/json calls only through a pointer).
type randIface interface{ randMethod() }

type randImplV struct {
	A int
	S string `json:"s,omitempty"`
}

func (randImplV) randMethod() {}

type randImplP struct{ F float64 }

func (*randImplP) randMethod() {}

type randImplMap map[string]int

func (randImplMap) randMethod() {}

type randImplWord struct{ P *int }

func (randImplWord) randMethod() {}

type randImplZero struct{}

func (randImplZero) randMethod() {}

type randImplInt int

func (randImplInt) randMethod() {}

type randImplPtrMarshaler struct{ N int }

func (randImplPtrMarshaler) randMethod() {}

func (*randImplPtrMarshaler) MarshalJSON() ([]byte, error) { return []byte(`"m"`), nil }

// RandAnything is an exported empty interface, which encoding/json
// writes as a field of its own when embedded.
type RandAnything interface{}

type randHoldsUnexp struct {
	randUnexp
	S int
}

// randLeaves are the types the direct encoder writes itself.
var randLeaves = []reflect.Type{
	reflect.TypeFor[bool](), reflect.TypeFor[int](), reflect.TypeFor[int8](), reflect.TypeFor[int16](),
	reflect.TypeFor[int32](), reflect.TypeFor[int64](), reflect.TypeFor[uint](), reflect.TypeFor[uint8](),
	reflect.TypeFor[uint16](), reflect.TypeFor[uint32](), reflect.TypeFor[uint64](), reflect.TypeFor[uintptr](),
	reflect.TypeFor[float32](), reflect.TypeFor[float64](), reflect.TypeFor[string](),
	reflect.TypeFor[randInt](), reflect.TypeFor[randStr](), reflect.TypeFor[randF32](), reflect.TypeFor[randByte](),
	reflect.TypeFor[randInner](), reflect.TypeFor[randHoldsUnexp](),
	reflect.TypeFor[any](), reflect.TypeFor[[]any](), reflect.TypeFor[randIface](),
}

// randKeys are the key types of random maps: of string kind, which the
// direct encoder writes, with or without a MarshalText that encoding/json
// does not call for them, and others, which it leaves to encoding/json.
var randKeys = []reflect.Type{
	reflect.TypeFor[string](), reflect.TypeFor[randStr](), reflect.TypeFor[mapKey](),
	reflect.TypeFor[int](), reflect.TypeFor[textKey](),
}

// randOdd are types it must leave to encoding/json, or that fail there.
var randOdd = []reflect.Type{
	reflect.TypeFor[any](), reflect.TypeFor[map[int]int](), reflect.TypeFor[[]byte](), reflect.TypeFor[randBytes](),
	reflect.TypeFor[[2]byte](), reflect.TypeFor[complex64](), reflect.TypeFor[json.RawMessage](), reflect.TypeFor[json.Number](),
	reflect.TypeFor[valueMarshaler](), reflect.TypeFor[ptrMarshaler](), reflect.TypeFor[textMarshaler](),
	reflect.TypeFor[selfMarshaler](), reflect.TypeFor[ptrSelfMarshaler](), reflect.TypeFor[embedsTwoMarshalers](),
	reflect.TypeFor[func()](), reflect.TypeFor[chan int](),
}

var (
	randFieldNames = []string{"A", "B", "C", "X", "Y", "Ab", "a", "b", "_", "Q", "R", "Z", "Ä", "x"}
	randTagNames   = []string{"A", "B", "x", "y", "Q", "-", "a b", "a<b", "é", "a\"b", "a,b", "Z", "S", "q&r"}
	randStrings    = []string{"", "a", "<script>&</script>", "\u2028\u2029", "\x00\x01\x1f\x7f", "\b\f\n\r\t",
		"\"\\/", "\xff", "\xe2\x80", "é日本\U0001F600", "abcdefgh<ijklmnop", "abcdefghijklmnopqrstuvwxyz0123456789",
		"12345678\xc0\xaf", "\xed\xa0\x80", "1234567\u2028", "xxxxxxx&", "\ufffd", "\xf4\x90\x80\x80"}
	randFloats = []float64{1e21, 1e20, 999999999999999999999.0, 1e-6, 1e-7, 9.99999e-7, 5e-324, math.MaxFloat64,
		math.SmallestNonzeroFloat32, math.MaxFloat32, 1e-100, 1.0000001e21, 123456789.125}
)

// randGen makes random types and values from one source.
type randGen struct {
	r    *rand.Rand
	name int
}

func (g *randGen) typ(depth int) reflect.Type {
	k := g.r.IntN(100)
	if depth <= 0 {
		k = g.r.IntN(40)
	}
	switch {
	case k < 36:
		return randLeaves[g.r.IntN(len(randLeaves))]
	case k < 40:
		return randOdd[g.r.IntN(len(randOdd))]
	case k < 52:
		return reflect.PointerTo(g.typ(depth - 1))
	case k < 64:
		return reflect.SliceOf(g.typ(depth - 1))
	case k < 72:
		return reflect.ArrayOf(g.r.IntN(4), g.typ(depth-1))
	case k < 82:
		return reflect.MapOf(randKeys[g.r.IntN(len(randKeys))], g.typ(depth-1))
	default:
		return g.structType(depth - 1)
	}
}

func (g *randGen) tag() reflect.StructTag {
	name := func() string { return randTagNames[g.r.IntN(len(randTagNames))] }
	switch g.r.IntN(12) {
	case 5:
		return reflect.StructTag(`json:"` + name() + `"`)
	case 6:
		return reflect.StructTag(`json:"` + name() + `,omitempty"`)
	case 7:
		return `json:",omitempty"`
	case 8:
		return `json:"-"`
	case 9:
		return `json:"-,"`
	case 10:
		return reflect.StructTag(`json:",` + []string{"string", "omitzero", "omitempty,string", "bogus"}[g.r.IntN(4)] + `"`)
	case 11:
		return `json:"x,omitempty" xml:"y"`
	}
	return ""
}

// structType returns a random struct type; reflect.StructOf refuses some
// field sets (an embedded pointer to an unexported type, ...), which are
// drawn again.
func (g *randGen) structType(depth int) reflect.Type {
	for {
		if t, ok := g.tryStruct(depth); ok {
			return t
		}
	}
}

func (g *randGen) tryStruct(depth int) (t reflect.Type, ok bool) {
	defer func() {
		if recover() != nil {
			ok = false
		}
	}()
	var fields []reflect.StructField
	used := map[string]bool{}
	for range g.r.IntN(6) {
		var f reflect.StructField
		if g.r.IntN(5) == 0 {
			var et reflect.Type
			switch g.r.IntN(5) {
			case 0:
				et = reflect.TypeFor[randInner]()
			case 1:
				et = reflect.TypeFor[randHoldsUnexp]()
			case 2:
				et = reflect.TypeFor[RandAnything]() // a field of its own
			default:
				et = g.structType(depth - 1)
			}
			if et.Kind() != reflect.Interface && g.r.IntN(4) == 0 {
				et = reflect.PointerTo(et)
			}
			g.name++
			f = reflect.StructField{Name: "E" + strconv.Itoa(g.name%5), Type: et, Anonymous: true}
			if et.Name() != "" {
				f.Name = et.Name()
			} else if et.Kind() == reflect.Pointer && et.Elem().Name() != "" {
				f.Name = et.Elem().Name()
			}
		} else {
			name := randFieldNames[g.r.IntN(len(randFieldNames))]
			f = reflect.StructField{Name: name, Type: g.typ(depth)}
			if name[0] >= 'a' && name[0] <= 'z' || name == "_" {
				f.PkgPath = "github.com/ndjsonrpc/jsonrpc"
			}
		}
		f.Tag = g.tag()
		if used[f.Name] && f.Name != "_" {
			continue
		}
		used[f.Name] = true
		fields = append(fields, f)
	}
	return reflect.StructOf(fields), true
}

func (g *randGen) str() string {
	if g.r.IntN(3) == 0 {
		return randStrings[g.r.IntN(len(randStrings))]
	}
	var sb strings.Builder
	for range g.r.IntN(24) {
		switch g.r.IntN(6) {
		case 0:
			sb.WriteByte(byte(g.r.IntN(256)))
		case 1:
			sb.WriteByte(byte(g.r.IntN(0x20)))
		case 2:
			sb.WriteByte("<>&\"\\\x7f"[g.r.IntN(6)])
		case 3:
			sb.WriteRune([]rune{'\u2028', '\u2029', 'é', '\U0001F600', '\ufffd', 0x80}[g.r.IntN(6)])
		default:
			sb.WriteByte(byte('a' + g.r.IntN(26)))
		}
	}
	return sb.String()
}

func (g *randGen) float(bits int) float64 {
	switch g.r.IntN(16) {
	case 0:
		return 0
	case 1:
		return math.Copysign(0, -1)
	case 2:
		if g.r.IntN(4) == 0 {
			return math.NaN()
		}
		return 1.5
	case 3:
		if g.r.IntN(4) == 0 {
			return math.Inf(1 - 2*g.r.IntN(2))
		}
		return -2
	case 4:
		return randFloats[g.r.IntN(len(randFloats))]
	case 5, 6:
		for {
			var f float64
			if bits == 32 {
				f = float64(math.Float32frombits(g.r.Uint32()))
			} else {
				f = math.Float64frombits(g.r.Uint64())
			}
			if isFinite(f) {
				return f
			}
		}
	}
	return (g.r.Float64() - 0.5) * math.Pow(10, float64(g.r.IntN(60)-30))
}

// fill sets v, and what it points to, to random values.
func (g *randGen) fill(v reflect.Value, depth int) {
	if !v.CanSet() {
		v = reflect.NewAt(v.Type(), unsafe.Pointer(v.UnsafeAddr())).Elem()
	}
	switch v.Kind() {
	case reflect.Bool:
		v.SetBool(g.r.IntN(2) == 0)
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		bits := v.Type().Bits()
		switch g.r.IntN(5) {
		case 0:
			v.SetInt(0)
		case 1:
			v.SetInt(-1 << (bits - 1))
		case 2:
			v.SetInt(1<<(bits-1) - 1)
		default:
			v.SetInt(int64(g.r.Uint64()) >> (64 - bits))
		}
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		bits := v.Type().Bits()
		switch g.r.IntN(4) {
		case 0:
			v.SetUint(0)
		case 1:
			v.SetUint(math.MaxUint64 >> (64 - bits))
		default:
			v.SetUint(g.r.Uint64() >> (64 - bits))
		}
	case reflect.Float32:
		v.SetFloat(g.float(32))
	case reflect.Float64:
		v.SetFloat(g.float(64))
	case reflect.String:
		v.SetString(g.str())
	case reflect.Pointer:
		if depth > 6 || g.r.IntN(3) == 0 {
			return
		}
		p := reflect.New(v.Type().Elem())
		g.fill(p.Elem(), depth+1)
		v.Set(p)
	case reflect.Slice:
		switch x := g.r.IntN(5); {
		case x == 0 || depth > 6:
		case x == 1:
			v.Set(reflect.MakeSlice(v.Type(), 0, g.r.IntN(2)))
		default:
			n := 1 + g.r.IntN(3)
			s := reflect.MakeSlice(v.Type(), n, n)
			for i := range n {
				g.fill(s.Index(i), depth+1)
			}
			v.Set(s)
		}
	case reflect.Array:
		for i := range v.Len() {
			g.fill(v.Index(i), depth+1)
		}
	case reflect.Struct:
		for i := range v.NumField() {
			if g.r.IntN(4) != 0 {
				g.fill(v.Field(i), depth+1)
			}
		}
	case reflect.Map:
		if g.r.IntN(3) == 0 || depth > 6 {
			return // nil
		}
		m := reflect.MakeMap(v.Type())
		for range g.r.IntN(4) {
			k := reflect.New(v.Type().Key()).Elem()
			switch k.Kind() {
			case reflect.String:
				k.SetString(g.str())
			case reflect.Int:
				k.SetInt(int64(g.r.IntN(21) - 10))
			default: // textKey
				k.Field(0).SetInt(int64(g.r.IntN(5)))
			}
			e := reflect.New(v.Type().Elem()).Elem()
			g.fill(e, depth+1)
			m.SetMapIndex(k, e)
		}
		v.Set(m)
	case reflect.Interface:
		if g.r.IntN(4) == 0 || depth > 6 {
			return // nil
		}
		if v.NumMethod() > 0 {
			switch g.r.IntN(10) {
			case 0, 1:
				v.Set(reflect.ValueOf(randImplV{A: g.r.IntN(100), S: g.str()}))
			case 2, 3:
				v.Set(reflect.ValueOf(&randImplP{F: g.float(64)}))
			case 4:
				v.Set(reflect.ValueOf((*randImplP)(nil)))
			case 5:
				m := randImplMap{g.str(): g.r.IntN(9)}
				if g.r.IntN(3) == 0 {
					m = nil
				}
				v.Set(reflect.ValueOf(m))
			case 6:
				w := randImplWord{}
				if g.r.IntN(2) == 0 {
					n := g.r.IntN(9)
					w.P = &n
				}
				v.Set(reflect.ValueOf(w))
			case 7:
				v.Set(reflect.ValueOf(randImplZero{}))
			case 8:
				v.Set(reflect.ValueOf(randImplInt(g.r.IntN(100))))
			default:
				x := randImplPtrMarshaler{N: g.r.IntN(9)}
				if g.r.IntN(2) == 0 {
					v.Set(reflect.ValueOf(x))
				} else {
					v.Set(reflect.ValueOf(&x))
				}
			}
			return
		}
		// Any value of any type, made here.
		x := reflect.New(g.typ(2)).Elem()
		g.fill(x, depth+1)
		v.Set(x)
	}
}

// inWord restates the rule storedInWord follows, from the language's
// side: an interface holds a value in its data word when the value is
// one word, all of it a pointer.
func inWord(t reflect.Type) bool {
	if t.Size() != unsafe.Sizeof(uintptr(0)) {
		return false
	}
	switch t.Kind() {
	case reflect.Pointer, reflect.Map, reflect.Chan, reflect.Func, reflect.UnsafePointer:
		return true
	case reflect.Array:
		return t.Len() == 1 && inWord(t.Elem())
	case reflect.Struct:
		for i := range t.NumField() {
			if f := t.Field(i); f.Type.Size() != 0 {
				return inWord(f.Type)
			}
		}
	}
	return false
}

// checkWrittenAsEncodingJSON holds each way v is written to
// encoding/json's bytes: the direct encoder with and without HTML escapes
// (where it takes v), a handler's result through the server's encoders,
// and a call's params through encodeParams.
func checkWrittenAsEncodingJSON(t *testing.T, v any, es *encoders) {
	t.Helper()
	for _, html := range []bool{true, false} {
		want, err := encodingJSON(v, html)
		got, ok := encodeDirect(nil, v, html)
		if ok && (err != nil || string(got) != want) {
			t.Fatalf("%v (HTML escapes %v): %#v\ndirect:        %q\nencoding/json: %q, %v", reflect.TypeOf(v), html, v, got, want, err)
		}
	}
	if raw, ok := v.(json.RawMessage); ok {
		checkRawPassesThrough(t, raw, es)
		return
	}
	want, werr := encodingJSON(v, false)
	got, e, err := es.encode(v)
	if (err != nil) != (werr != nil) || err == nil && string(got) != want {
		t.Fatalf("%v as a result: %#v\ngot  %q, %v\nwant %q, %v", reflect.TypeOf(v), v, got, err, want, werr)
	}
	if e != nil {
		es.put(e)
	}
	params, err := encodeParams(v)
	raw, merr := json.Marshal(v)
	wantParams, wantErr := []byte(nil), merr != nil
	if !wantErr {
		switch raw[0] {
		case 'n':
		case '{', '[':
			wantParams = raw
		default:
			wantErr = true // params must be an object or an array
		}
	}
	if (err != nil) != wantErr || !bytes.Equal(params, wantParams) || (params == nil) != (wantParams == nil) {
		t.Fatalf("%v as params: %#v\ngot  %q, %v\nwant %q, %v", reflect.TypeOf(v), v, params, err, wantParams, merr)
	}
}

// checkRawPassesThrough checks that raw, a json.RawMessage given as a
// result or as params, is written as it is once checked, where
// encoding/json would compact it: only a newline in it is taken out (for
// the framing), as encodeValue says. Params must be null, an object or an
// array.
func checkRawPassesThrough(t *testing.T, raw json.RawMessage, es *encoders) {
	t.Helper()
	valid := raw == nil || json.Valid(raw)
	got, e, err := es.encode(raw)
	want := string(raw)
	if raw == nil {
		want = "null"
	} else if bytes.IndexByte(raw, '\n') >= 0 {
		var b bytes.Buffer
		_ = json.Compact(&b, raw)
		want = b.String()
	}
	if (err == nil) != valid || err == nil && string(got) != want {
		t.Fatalf("json.RawMessage %q as a result: got %q, %v; want %q", raw, got, err, want)
	}
	if e != nil {
		es.put(e)
	}
	params, err := encodeParams(raw)
	trimmed := bytes.TrimLeft(raw, " \t\r\n")
	var wantParams []byte
	wantErr := !valid
	switch {
	case !valid, len(trimmed) == 0 || trimmed[0] == 'n':
	case trimmed[0] == '{' || trimmed[0] == '[':
		wantParams = []byte(want)
	default:
		wantErr = true // params must be an object or an array
	}
	if (err != nil) != wantErr || !bytes.Equal(params, wantParams) {
		t.Fatalf("json.RawMessage %q as params: got %q, %v; want %q", raw, params, err, wantParams)
	}
}

// FuzzDirectEncoderTypes builds a random type from its first seed and
// random values of it from its second, and checks that each is written
// as encoding/json writes it, by value and through a pointer, and that
// storedInWord follows the language's rule for the type.
func FuzzDirectEncoderTypes(f *testing.F) {
	for seed := range uint64(64) {
		f.Add(seed, seed*7919)
	}
	f.Fuzz(checkRandomType)
}

// TestDirectEncoderRandomTypes runs FuzzDirectEncoderTypes' check on more
// types than its seeds, in every test run. Not many more: the plans and
// reflect's types stay cached for good (3,000 types hold about 18 MiB,
// which the tests that measure the live heap would count).
func TestDirectEncoderRandomTypes(t *testing.T) {
	n := uint64(600)
	if testing.Short() {
		n = 200
	}
	for seed := range n {
		checkRandomType(t, 1000+seed, seed)
		if t.Failed() {
			t.Fatalf("type seed %d, value seed %d", 1000+seed, seed)
		}
	}
}

func checkRandomType(t *testing.T, typeSeed, valueSeed uint64) {
	g := &randGen{r: rand.New(rand.NewPCG(typeSeed, 1))}
	typ := g.typ(4)
	if g.r.IntN(2) == 0 {
		typ = g.structType(4)
	}
	if storedInWord(typ) != inWord(typ) {
		t.Fatalf("%v: storedInWord says %v", typ, storedInWord(typ))
	}
	g.r = rand.New(rand.NewPCG(valueSeed, 2))
	var es encoders
	for range 4 {
		p := reflect.New(typ)
		g.fill(p.Elem(), 0)
		checkWrittenAsEncodingJSON(t, p.Elem().Interface(), &es)
		checkWrittenAsEncodingJSON(t, p.Interface(), &es)
	}
}
