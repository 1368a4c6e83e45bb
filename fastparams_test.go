package jsonrpc

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"reflect"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The shapes of the direct decoder's tests: every kind it takes, and some
// it leaves to encoding/json.
type (
	dpScalars struct {
		B        bool    `json:"b"`
		I        int     `json:"i"`
		I8       int8    `json:"i8"`
		I16      int16   `json:"i16"`
		I32      int32   `json:"i32"`
		I64      int64   `json:"i64"`
		U        uint    `json:"u"`
		U8       uint8   `json:"u8"`
		U16      uint16  `json:"u16"`
		U32      uint32  `json:"u32"`
		U64      uint64  `json:"u64"`
		UP       uintptr `json:"up"`
		F32      float32 `json:"f32"`
		F64      float64 `json:"f64"`
		S        string  `json:"s"`
		N        dpLevel `json:"n"`
		Z        dpName  `json:"z"`
		Untagged int
		Skip     int `json:"-"`
		Omit     int `json:",omitempty"`
	}
	dpLevel    int16
	dpName     string
	dpPointers struct {
		I *int            `json:"i"`
		S **string        `json:"s"`
		U *dpScalars      `json:"u"`
		A *[2]int         `json:"a"`
		L *[]string       `json:"l"`
		M *map[string]int `json:"m"`
	}
	dpLists struct {
		Ints   []int      `json:"ints"`
		Nested [][]string `json:"nested"`
		Arr    [3]int     `json:"arr"`
		Users  []fzUser   `json:"users"`
		Pairs  [2]fzUser  `json:"pairs"`
		Zero   [0]int     `json:"zero"`
		Ptrs   []*float64 `json:"ptrs"`
	}
	dpMaps struct {
		ByName map[string]int     `json:"byName"`
		ByInt  map[int]string     `json:"byInt"`
		ByU8   map[uint8]bool     `json:"byU8"`
		ByKey  map[dpName]*fzUser `json:"byKey"`
		Deep   map[string][]int   `json:"deep"`
		ByI8   map[int8]int       `json:"byI8"`
	}
	dpInner struct {
		ID   int    `json:"id"`
		Kind string `json:"kind"`
	}
	dpOther struct {
		Note string `json:"note"`
		More int    `json:"more"`
	}
	dpEmbedded struct {
		dpInner
		dpOther
		Name   string  `json:"name"`
		Tagged dpInner `json:"tagged"`
	}
	dpNode struct {
		Val      int      `json:"val"`
		Next     *dpNode  `json:"next"`
		Children []dpNode `json:"children"`
	}
	dpMany struct { // more fields than are looked through one by one
		A, B, C, D, E, F, G, H, I, J, K, L, M, N, O, P, Q, R, S, T int
	}
	// Not taken by the direct decoder.
	dpQuoted struct {
		N int `json:"n,string"`
	}
	dpEmbeddedPtr struct {
		*dpInner
		Name string `json:"name"`
	}
	dpBytes struct {
		B []byte `json:"b"`
	}
	dpNumber struct {
		N json.Number `json:"n"`
	}
)

// A directShape decodes params into one type: by the path Func takes,
// by the strict check and encoding/json alone (the path before the direct
// decoder), by the direct decoder alone, and by json.Unmarshal.
type directShape struct {
	name   string
	taken  bool
	fresh  func() any
	func_  func(b []byte, valid bool) (any, error)
	before func(b []byte, valid bool) (any, error)
	direct func(b []byte) (v any, ok, unknown bool) // unknown: members that name no field were skipped
	// result decodes b as a call's result read by our scanner, into a
	// zero value or into one set already (prefill); unscanned as one
	// from elsewhere (an in-process handler's); resultBefore as the
	// strict check and encoding/json did before the direct decoder.
	result, unscanned, resultBefore func(b []byte, prefill bool) (any, error)
}

func directShapeOf[T any](name string) directShape {
	t := reflect.TypeFor[T]()
	rules := rulesFor(t, nil)
	ds, dsBefore := new(paramDecoders), new(paramDecoders)
	before := nameRules{plan: planFor(t)}
	return directShape{
		name:  name,
		taken: rules.direct != nil,
		fresh: func() any { return new(T) },
		func_: func(b []byte, valid bool) (any, error) {
			p := new(T)
			return p, ds.decode(b, p, valid, rules)
		},
		before: func(b []byte, valid bool) (any, error) {
			p := new(T)
			return p, dsBefore.decode(b, p, valid, before)
		},
		direct: func(b []byte) (any, bool, bool) {
			p := new(T)
			if rules.direct == nil || !validParams(b) {
				return p, false, false
			}
			r := directReader{b: b}
			_, ok := r.value(skipWS(b, 0), rules.direct, unsafe.Pointer(p))
			return p, ok, r.unknown
		},
		result: func(b []byte, prefill bool) (any, error) {
			p := resultDest[T](prefill)
			return p, decodeResult(b, p)
		},
		unscanned: func(b []byte, prefill bool) (any, error) {
			p := resultDest[T](prefill)
			return p, decodeUnscannedResult(b, p)
		},
		resultBefore: func(b []byte, prefill bool) (any, error) {
			p := resultDest[T](prefill)
			raw, err := strictResult(b, p, false)
			if err != nil {
				return p, err
			}
			return p, json.Unmarshal(raw, p)
		},
	}
}

// resultDest returns a new T to decode a result into: zero, or with
// prefill set from a JSON object and a JSON array where T takes either,
// as a caller's variable may be when it decodes into it again.
func resultDest[T any](prefill bool) *T {
	p := new(T)
	if prefill {
		_ = json.Unmarshal([]byte(`{"i":7,"s":"old","name":"old","id":9,"ints":[5],"byName":{"old":1},"val":3,"user":{"name":"old"}}`), p)
		_ = json.Unmarshal([]byte(`[9,"old"]`), p)
	}
	return p
}

var directShapes = []directShape{
	directShapeOf[dpScalars]("scalars"), directShapeOf[dpPointers]("pointers"),
	directShapeOf[dpLists]("lists"), directShapeOf[dpMaps]("maps"),
	directShapeOf[dpEmbedded]("embedded"), directShapeOf[dpNode]("recursive"),
	directShapeOf[dpMany]("many"), directShapeOf[fzUser]("user"), directShapeOf[fzNested]("nested"),
	directShapeOf[fzPointer]("fzpointer"), directShapeOf[fzSlice]("fzslice"), directShapeOf[fzMap]("fzmap"),
	directShapeOf[fzEmbedded]("fzembedded"),
	directShapeOf[[]int]("[]int"), directShapeOf[[2]string]("[2]string"), directShapeOf[[]fzUser]("[]user"),
	directShapeOf[map[string]float64]("map"), directShapeOf[*fzUser]("*user"),
	directShapeOf[dpQuoted]("quoted"), directShapeOf[dpEmbeddedPtr]("embedded pointer"),
	directShapeOf[dpBytes]("bytes"), directShapeOf[dpNumber]("number"),
	directShapeOf[fzRaw]("raw"), directShapeOf[fzAny]("any"), directShapeOf[[]any]("[]any"),
}

// directSeeds are inputs for FuzzDirectParams: each shape's members with
// values of every kind, in range and out of it, and the names the strict
// rules refuse or ignore.
var directSeeds = []string{
	`{"b":true,"i":-1,"i8":-128,"i16":32767,"i32":-2147483648,"i64":9223372036854775807,"u":1,"u8":255,"u16":65535,"u32":4294967295,"u64":18446744073709551615,"up":7,"f32":1.5,"f64":-2.5e-3,"s":"x","n":3,"z":"zz","Untagged":4,"Omit":5,"-":6}`,
	"{\"\xff\":1,\"\xfe\":2}", "{\"byName\":{\"\xff\":{},\"\\ufffd\":{}}}", "{\"s\":\"\xff\",\"i\":1}",
	`{"i8":128}`, `{"i8":-129}`, `{"u8":256}`, `{"u":-0}`, `{"i":-0}`, `{"u64":18446744073709551616}`,
	`{"i64":-9223372036854775808}`, `{"i64":9223372036854775808}`, `{"i":1e2}`, `{"i":1.0}`, `{"i":12345678901234567890}`,
	`{"f32":3.5e38}`, `{"f32":1e-50}`, `{"f64":1e400}`, `{"f64":-0}`, `{"f64":123456789012345678901234567890}`,
	`{"s":"a\"b\\c\/d\b\f\n\r\t\u00e9\ud83d\ude00\ud800\udc00x\ud800\u0041\udc00"}`, `{"s":"\ud800"}`, `{"s":"\ud800\ud800"}`,
	`{"s":"é日本"}`, `{"s":1}`, `{"i":"1"}`, `{"b":1}`, `{"b":null,"s":null,"i":null}`, `{"hidden":1}`, `{"Skip":1}`,
	`{"I":1}`, `{"i":1,"i":2}`, `{"\u0069":1}`, `{"untagged":1}`, `{"i":[1]}`, `{"i":{}}`,
	`{"i":5,"s":"a","u":{"i":6},"a":[1,2],"l":["x"],"m":{"k":1}}`, `{"s":"deep"}`, `{"i":null,"u":null}`,
	`{"a":[1,2,3]}`, `{"u":{"i":1,"i":2}}`, `{"m":{"k":1,"k":2}}`,
	`{"ints":[1,2,3],"nested":[["a"],[],["b","c"]],"arr":[1,2,3,4,"x"],"users":[{"name":"a"},{}],"pairs":[{"id":1}],"zero":[1],"ptrs":[1.5,null]}`,
	`{"ints":[]}`, `{"ints":null}`, `{"arr":[1]}`, `{"arr":[1,2,3,[4]]}`, `{"arr":[1,2,3,{"a":1,"a":2}]}`, `{"zero":[{}]}`,
	`{"users":[{"name":"a","name":"b"}]}`, `{"ints":[1,"x"]}`, `{"nested":[[1]]}`,
	`{"byName":{"a":1,"b":2},"byInt":{"1":"a","-2":"b"},"byU8":{"255":true},"byKey":{"k":{"name":"n"},"l":null},"deep":{"x":[1,2]},"byI8":{"127":1}}`,
	`{"byInt":{"1":"a","01":"b"}}`, `{"byInt":{"1":"a","+1":"b"}}`, `{"byInt":{"x":"a"}}`, `{"byU8":{"256":true}}`,
	`{"byU8":{"-1":true}}`, `{"byName":{"a":1,"a":2}}`, `{"byName":{"\u0061":1}}`, `{"byName":{}}`, `{"byName":{"":1}}`,
	`{"byInt":{"":"a"}}`, `{"byI8":{"128":1}}`, `{"byInt":{"1.0":"a"}}`,
	`{"id":1,"kind":"k","note":"x","more":2,"name":"n","tagged":{"id":3}}`, `{"ID":1}`,
	`{"val":1,"next":{"val":2,"next":{"val":3}},"children":[{"val":4,"children":[]}]}`,
	`{"A":1,"B":2,"T":20,"Q":17}`, `{"A":1,"A":2}`, `{"a":1}`,
	`{"raw":{"a":[1,{"b":2}]},"name":"n"}`, `{"raw":  "x" }`, `{"any":[{"a":{}},[],"s",1.5,true,null]}`, `{"any":{"a":1,"b":{"a":1,"a":2}}}`,
	`{"x":[1,{"y":2}],"i":1,"z":"q"}`, `{"x":1,"x":2}`, `{"x":{"y":1,"y":2}}`, `{"a":1,"b":1,"c":1,"d":1,"e":1,"f":1,"g":1,"h":1,"j":1}`,
	`{"arr":[1,2,3,{"a":1}]}`, `{"n":"12"}`, `{"n":12}`, `{"b":"aGk="}`, `{"b":[1,2]}`, `{"n":1.5e3}`,
	`[1,2,3]`, `[]`, `["a","b","c"]`, `["a"]`, `[{"name":"a"},null]`, `{"a":1.5,"b":-1}`, `{"a":1,"a":2}`,
	`{"user":{"name":"a","admin":true},"note":"n"}`, `{"users":[{"id":1}]}`, `{"byName":{"a":{"id":1}}}`,
	` { "name" : "a" , "id" : 1 } `, "{\"name\":\"\xff\"}", `{"name":"a"`, `[1,2`,
	strings.Repeat(`{"next":`, 300) + `{"val":1}` + strings.Repeat(`}`, 300),
	strings.Repeat(`[`, 300) + strings.Repeat(`]`, 300),
	// 10,006 levels in all, 9,986 of them in a member that names no field.
	strings.Repeat(`{"next":`, 20) + `{"x":` + strings.Repeat(`[`, 9985) + strings.Repeat(`]`, 9985) + `}` + strings.Repeat(`}`, 20),
}

// sameError reports whether two errors of params decoding answer the peer
// alike: the same code, message and data.
func sameError(a, b error) bool {
	if (a == nil) != (b == nil) {
		return false
	}
	if a == nil {
		return true
	}
	var ea, eb *Error
	if !errors.As(a, &ea) || !errors.As(b, &eb) {
		return a.Error() == b.Error()
	}
	return ea.Code == eb.Code && ea.Message == eb.Message && bytes.Equal(ea.Data, eb.Data)
}

// FuzzDirectParams holds the direct decoder to the path it shortens: for
// each shape, params decode as Func decodes them to the same value and
// the same error as by the strict check and encoding/json alone, in
// process and as a server; and whatever the direct decoder takes, it
// decodes to the value that path gives, and, if it skipped no member
// that names no field, to the value json.Unmarshal gives.
func FuzzDirectParams(f *testing.F) {
	for _, s := range append(directSeeds, strictSeeds...) {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if len(b) == 0 {
			return // absent params
		}
		for _, s := range directShapes {
			for _, valid := range []bool{false, true} {
				if valid && !validParams(b) {
					continue
				}
				got, err := s.func_(b, valid)
				want, wantErr := s.before(b, valid)
				if !sameError(err, wantErr) {
					t.Fatalf("%s (valid %v): %q gives error %v; before, %v", s.name, valid, b, err, wantErr)
				}
				if err == nil && !reflect.DeepEqual(got, want) {
					t.Fatalf("%s (valid %v): %q decodes to %#v; before, to %#v", s.name, valid, b, got, want)
				}
			}
			for _, prefill := range []bool{false, true} {
				// A result from elsewhere may be anything: what neither
				// our scanner nor encoding/json takes for JSON gets
				// encoding/json's syntax error.
				var want any
				var wantErr error
				if validJSON(b) || json.Valid(b) {
					want, wantErr = s.resultBefore(b, prefill)
				} else {
					// The strict check reads only JSON (given anything
					// else, it may panic, as before InProcess checked).
					want, wantErr = resultDest[struct{}](false), json.Unmarshal(b, new(any))
				}
				got, err := s.unscanned(b, prefill)
				if !validJSON(b) && json.Valid(b) {
					// JSON but for its UTF-8: names that decode alike,
					// each invalid byte as U+FFFD, are a duplicate, found
					// before the value is decoded, which the check before
					// missed (it compared their bytes).
					if dup, derr := hasDuplicate(b); derr == nil && dup {
						if !errors.Is(err, ErrDuplicateMember) {
							t.Fatalf("%s unscanned (prefilled %v): result %q gives %v, not a duplicate member", s.name, prefill, b, err)
						}
						continue
					}
				}
				checkResult(t, s.name+" unscanned", prefill, b, got, err, want, wantErr)
				if validJSON(b) {
					// What our scanner takes, as decodeResult gets it.
					got, err = s.result(b, prefill)
					checkResult(t, s.name, prefill, b, got, err, want, wantErr)
				}
			}
			direct, ok, unknown := s.direct(b)
			if !ok {
				continue
			}
			if !s.taken {
				t.Fatalf("%s: the direct decoder has no decoder for it but took %q", s.name, b)
			}
			want, wantErr := s.before(b, true)
			if wantErr != nil || !reflect.DeepEqual(direct, want) {
				t.Fatalf("%s: the direct decoder takes %q as %#v; the strict check and encoding/json give %#v, %v", s.name, b, direct, want, wantErr)
			}
			if unknown {
				continue // encoding/json would match some of them whatever their case
			}
			ref := s.fresh()
			if err := json.Unmarshal(b, ref); err != nil || !reflect.DeepEqual(direct, ref) {
				t.Fatalf("%s: the direct decoder takes %q as %#v; json.Unmarshal gives %#v, %v", s.name, b, direct, ref, err)
			}
		}
	})
}

// checkResult fails t unless a result b decoded to got, err as the path
// before the direct decoder did to want, wantErr: the same error text, or
// the same value.
func checkResult(t *testing.T, name string, prefill bool, b []byte, got any, err error, want any, wantErr error) {
	t.Helper()
	if (err == nil) != (wantErr == nil) || err != nil && err.Error() != wantErr.Error() {
		t.Fatalf("%s (prefilled %v): result %q gives error %v; before, %v", name, prefill, b, err, wantErr)
	}
	if err == nil && !reflect.DeepEqual(got, want) {
		t.Fatalf("%s (prefilled %v): result %q decodes to %#v; before, to %#v", name, prefill, b, got, want)
	}
}

// TestDirectParamsTaken checks which types the direct decoder takes, that
// it decodes the usual params of each itself rather than leaving them to
// encoding/json, and that it gives up on what only that path may answer.
func TestDirectParamsTaken(t *testing.T) {
	cases := map[string]struct {
		taken []string // decoded directly
		left  []string // left to the strict check and encoding/json
	}{
		"scalars": {
			[]string{directSeeds[0], `{"i":-0}`, `{"f64":-0}`, `{"s":"\ud800"}`, `{"b":null,"s":null,"i":null}`, `{}`, ` { "i" : 1 } `,
				`{"I":1}`, `{"hidden":1}`, `{"x":{"a":[{"b":1,"c":2}]},"y":[1,"2"],"z":null,"i":1}`},
			[]string{`{"i8":128}`, `{"u":-0}`, `{"i":1.0}`, `{"i":"1"}`, `{"i":1,"i":2}`, `{"\u0069":1}`, `{"f32":3.5e38}`, `[1]`,
				`{"x":1,"x":2}`, `{"x":{"a":[{"b":1,"b":2}]}}`, `{"a":1,"b":1,"c":1,"d":1,"e":1,"f":1,"g":1,"h":1,"j":1}`},
		},
		"pointers": {
			[]string{`{"i":5,"s":"a","u":{"i":6},"a":[1,2],"l":["x"],"m":{"k":1}}`, `{"i":null,"u":null}`},
			[]string{`{"u":{"i":1,"i":2}}`, `{"m":{"k":1,"k":2}}`},
		},
		"lists": {
			[]string{`{"ints":[1,2,3],"arr":[1,2,3,4,"x"],"users":[{"name":"a"},{}],"pairs":[{"id":1}],"zero":[1],"ptrs":[1.5,null]}`, `{"ints":[]}`, `{"arr":[1,2,3,[4]]}`},
			[]string{`{"arr":[1,2,3,{"a":1,"a":2}]}`, `{"users":[{"name":"a","name":"b"}]}`, `{"ints":[1,"x"]}`},
		},
		"maps": {
			[]string{`{"byName":{"a":1,"b":2},"byInt":{"1":"a","-2":"b"},"byU8":{"255":true},"byKey":{"k":{"name":"n"},"l":null},"deep":{"x":[1,2]},"byI8":{"127":1}}`},
			[]string{`{"byInt":{"1":"a","01":"b"}}`, `{"byName":{"a":1,"a":2}}`, `{"byU8":{"256":true}}`, `{"byInt":{"x":"a"}}`},
		},
		"embedded": {
			[]string{`{"id":1,"kind":"k","note":"x","more":2,"name":"n","tagged":{"id":3}}`, `{"Kind":"k"}`},
			[]string{`{"tagged":{"id":3},"id":1,"id":2}`, `{"tagged":{"id":3,"id":4}}`},
		},
		"recursive": {
			[]string{`{"val":1,"next":{"val":2,"next":{"val":3}},"children":[{"val":4,"children":[]}]}`},
			[]string{strings.Repeat(`{"next":`, 300) + `{"val":1}` + strings.Repeat(`}`, 300)},
		},
		"many":      {[]string{`{"A":1,"T":20,"Q":17}`, `{"a":1}`}, []string{`{"A":1,"A":2}`, `{"a":1,"a":2}`}},
		"[]int":     {[]string{`[1,2,3]`, `[]`}, []string{`{}`}},
		"[2]string": {[]string{`["a","b","c"]`}, nil},
		"*user":     {[]string{`{"name":"a","id":1}`}, nil},
		"raw": {
			[]string{`{"raw":{"a":1,"A":2},"name":"n"}`, `{"raw":null}`, `{"raw":[1, {"x":2}] }`},
			[]string{`{"raw":{"a":1,"a":2}}`, `{"raw":[{"x":{"y":1,"y":2}}]}`},
		},
		"any": {
			[]string{`{"any":{"k":[1,{"k":2}],"s":"\n","t":true,"f":false,"n":null}}`, `{"any":1e2}`},
			[]string{`{"any":{"k":[1,{"k":2,"k":3}]}}`, `{"any":1e400}`, `{"any":{"\u006b":1}}`},
		},
	}
	for _, s := range directShapes {
		c, listed := cases[s.name]
		want := listed || strings.HasPrefix(s.name, "fz") || s.name == "user" || s.name == "nested" || s.name == "[]user" || s.name == "map"
		want = want || s.name == "raw" || s.name == "any" || s.name == "[]any"
		if s.taken != want {
			t.Errorf("%s: taken by the direct decoder: %v, want %v", s.name, s.taken, want)
		}
		for _, b := range c.taken {
			if _, ok, _ := s.direct([]byte(b)); !ok {
				t.Errorf("%s: the direct decoder leaves %s to encoding/json", s.name, b)
			}
		}
		for _, b := range c.left {
			if _, ok, _ := s.direct([]byte(b)); ok {
				t.Errorf("%s: the direct decoder takes %s", s.name, b)
			}
		}
	}
}

// TestDirectParamsAllocs checks that W2's params, a struct of two
// integers, are decoded without allocating.
func TestDirectParamsAllocs(t *testing.T) {
	type sub struct {
		Minuend    int `json:"minuend"`
		Subtrahend int `json:"subtrahend"`
	}
	rules := rulesFor(reflect.TypeFor[sub](), nil)
	params := []byte(`{"minuend":42,"subtrahend":3}`)
	var ds paramDecoders
	var p sub
	allocs := testing.AllocsPerRun(100, func() {
		p = sub{}
		if err := ds.decode(params, &p, true, rules); err != nil {
			t.Fatal(err)
		}
	})
	if allocs != 0 || p != (sub{42, 3}) {
		t.Errorf("decoded %+v with %v allocations; want {42 3} with none", p, allocs)
	}
}

// TestFuncParamsOnStack checks that a Func whose params the direct
// decoder takes is called without an allocation: its params are decoded
// into a variable on its stack, and an integer result is appended where
// it is not boxed. (Passed to the general decoder as an interface, the
// variable escaped, one allocation a call.)
func TestFuncParamsOnStack(t *testing.T) {
	type sub struct {
		Minuend    int `json:"minuend"`
		Subtrahend int `json:"subtrahend"`
	}
	h := Func(func(_ context.Context, p sub) (int, error) { return p.Minuend - p.Subtrahend, nil }).(typedHandler)
	req := &Request{Params: json.RawMessage(`{"minuend":42,"subtrahend":3}`)}
	buf := make([]byte, 0, 64)
	var out []byte
	es := new(encoders)
	allocs := testing.AllocsPerRun(100, func() {
		var v any
		var err error
		out, _, v, err = h.serveTo(context.Background(), req, buf[:0], es)
		if err != nil || v != nil {
			t.Fatalf("serveTo: %v, %v", v, err)
		}
	})
	if allocs != 0 || string(out) != "39" {
		t.Errorf("answered %s with %v allocations; want 39 with none", out, allocs)
	}
}

// TestFuncResultUnboxed checks that a Func's result of a type the direct
// encoder has a plan for is written by it from the handler's stack, into
// a pooled encoder's buffer, without an allocation (boxed in an interface
// for the encoders, a struct cost one a call), as encoding/json writes
// it; and that a result the plan gives up on still reaches encoding/json.
func TestFuncResultUnboxed(t *testing.T) {
	if jsonV2 {
		t.Skip("the direct encoder is off under GOEXPERIMENT=jsonv2 (jsonv2_off.go)")
	}
	type location struct {
		URI   string `json:"uri"`
		Line  int    `json:"line"`
		Score float64
	}
	es := new(encoders)
	check := func(h typedHandler, want any, allocFree bool) {
		t.Helper()
		req := &Request{Params: json.RawMessage(`[1]`)}
		var out []byte
		var enc *encoder
		var v any
		var err error
		allocs := testing.AllocsPerRun(100, func() {
			if enc != nil {
				es.put(enc)
			}
			out, enc, v, err = h.serveTo(context.Background(), req, nil, es)
		})
		require.NoError(t, err)
		if v != nil {
			out, _, err = es.encode(v) // as the server would
			require.NoError(t, err)
		}
		wantJSON, err := encodingJSON(want, false)
		require.NoError(t, err)
		assert.Equal(t, wantJSON, string(out))
		if allocFree && !raceOn {
			assert.Zero(t, allocs, "allocations per call")
			assert.NotNil(t, enc, "the encoder that holds the result, to give back")
		}
	}
	loc := location{URI: "file:///a<b>.go", Line: 7, Score: 0.5}
	check(Func(func(context.Context, [1]int) (location, error) { return loc, nil }).(typedHandler), loc, true)
	locs := [2]location{loc, {URI: "x"}}
	check(Func(func(context.Context, [1]int) ([2]location, error) { return locs, nil }).(typedHandler), locs, true)
	// A NaN the plan gives up on: encoding/json's error, as before.
	nan := location{Score: math.NaN()}
	_, _, v, err := Func(func(context.Context, [1]int) (location, error) { return nan, nil }).(typedHandler).serveTo(context.Background(), &Request{Params: json.RawMessage(`[1]`)}, nil, es)
	require.NoError(t, err)
	_, _, err = es.encode(v)
	assert.Error(t, err, "a NaN result")
}

// TestFuncStackParamsNested calls Funcs whose params hold slices, maps,
// pointers and nesting, decoded on the handler's stack as in
// TestFuncParamsOnStack, with the collector run between calls and inside
// each handler, and checks each value against json.Unmarshal's: what the
// decoder built apart (maps, slices in its headers) must be whole and
// reachable once stored in the stack variable.
func TestFuncStackParamsNested(t *testing.T) {
	checkStackParams(t, `{"ints":[1,2,3,4,5,6,7,8,9],"nested":[["a"],[],["b","c"]],"arr":[1,2,3],"users":[{"name":"a"},{}],"ptrs":[1.5,null]}`,
		func(p dpLists) int { return len(p.Ints) })
	checkStackParams(t, `{"byName":{"a":1,"b":2},"byInt":{"1":"a","-2":"b"},"byKey":{"k":{"name":"n"},"l":null},"deep":{"x":[1,2]}}`,
		func(p dpMaps) int { return len(p.ByName) + len(p.Deep["x"]) })
	checkStackParams(t, strings.Repeat(`[`, 40)+`[1,2],[3]`+strings.Repeat(`]`, 40),
		func(p []any) int { return len(p) })
}

// checkStackParams serves params three times through a Func whose
// handler compares what it was given with json.Unmarshal's value of
// params, after a collection, and answers n of it.
func checkStackParams[P any](t *testing.T, params string, n func(P) int) {
	t.Helper()
	var want P
	require.NoError(t, json.Unmarshal([]byte(params), &want))
	h := Func(func(_ context.Context, p P) (int, error) {
		runtime.GC()
		if !reflect.DeepEqual(p, want) {
			return 0, fmt.Errorf("decoded %+v; json.Unmarshal, %+v", p, want)
		}
		return n(p), nil
	}).(typedHandler)
	req := &Request{Params: json.RawMessage(params)}
	for range 3 {
		runtime.GC()
		out, _, v, err := h.serveTo(context.Background(), req, nil, new(encoders))
		if err != nil || v != nil || string(out) != strconv.Itoa(n(want)) {
			t.Fatalf("%.60s: answered %s, %v, %v; want %d", params, out, v, err, n(want))
		}
	}
}

// Func decodes into fields whose tags the default encoding/json and
// json/v2 read otherwise (names with symbols, v2's inline and unknown
// options, quoted names) as the encoding/json it is built with does, and
// a name that differs from such a field's only by case matches nothing.
func TestFuncTagsAsEncodingJSON(t *testing.T) {
	checkStackParams(t, `{"a€":1,"b☺":"2","X":3}`, func(p FieldsSymbol) int { return p.X*10 + p.Y })
	checkStackParams(t, `{"X":1,"a€":3}`, func(p FieldsSymbol) int { return p.X })
	checkStackParams(t, `{"Name":"n","In":{"A":1},"A":2,"b":3}`, func(p FieldsInline) int { return p.In.A*10 + p.In.B })
	checkStackParams(t, `{"Name":"n","foo":1,"Extra":{"bar":2}}`, func(p FieldsUnknown) int { return len(p.Extra) })
	checkStackParams(t, `{"x,y":1,"X":2}`, func(p FieldsQuotedName) int { return p.X })

	type symbolSlow struct {
		FieldsSymbol
		B []byte // not for the direct decoder
	}
	for params, v2 := range map[string]int{`{"A€":1}`: 0, `{"x":1}`: 0, `{"a€":1,"A€":2}`: 1} {
		var got symbolSlow
		h := Func(func(_ context.Context, p symbolSlow) (int, error) { got = p; return 0, nil })
		_, err := h.ServeJSONRPC(context.Background(), &Request{Method: "m", Params: json.RawMessage(params)})
		require.NoError(t, err, params)
		want := 0 // the default encoding/json names the field X
		if jsonV2 {
			want = v2
		}
		assert.Equal(t, want, got.X, params)
	}
}
