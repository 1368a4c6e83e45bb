package jsonrpc

import (
	"encoding/json"
	"reflect"
	"testing"
)

// BenchmarkDecodeParams measures decoding W2's params into a struct as a
// server does: by the strict rules, as Func does (through the direct
// decoder, fastparams.go); by the strict check and encoding/json, the path
// the direct decoder leaves what it does not take to (strict-json); and
// by the lax rules, with encoding/json alone.
func BenchmarkDecodeParams(b *testing.B) {
	type sub struct {
		Minuend    int `json:"minuend"`
		Subtrahend int `json:"subtrahend"`
	}
	params := []byte(`{"minuend":42,"subtrahend":3}`)
	for _, name := range []string{"strict", "strict-json", "lax"} {
		rules := rulesFor(reflect.TypeFor[sub](), nil)
		switch name {
		case "strict-json":
			rules.direct = nil
		case "lax":
			rules = rulesFor(reflect.TypeFor[sub](), []ParamsOption{LaxParams})
		}
		b.Run(name, func(b *testing.B) {
			var ds paramDecoders
			b.ReportAllocs()
			for b.Loop() {
				var p sub
				if err := ds.decode(params, &p, true, rules); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkDecodeResult measures decoding a call's result into a struct
// as Conn.Call does: into a zero value, through the direct decoder
// (direct); and by the strict check and encoding/json, the path it takes
// for a value already set and for what the direct decoder does not take
// (strict-json).
func BenchmarkDecodeResult(b *testing.B) {
	type user struct {
		ID    int      `json:"id"`
		Name  string   `json:"name"`
		Admin bool     `json:"admin"`
		Tags  []string `json:"tags"`
	}
	result := []byte(`{"id":7,"name":"ada","admin":true,"tags":["a","b"]}`)
	for _, name := range []string{"direct", "strict-json"} {
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				var u user
				var err error
				if name == "direct" {
					err = decodeResult(result, &u)
				} else {
					var raw []byte
					if raw, err = strictResult(result, &u, false); err == nil {
						err = json.Unmarshal(raw, &u)
					}
				}
				if err != nil || u.ID != 7 || len(u.Tags) != 2 {
					b.Fatalf("decoded %+v, %v", u, err)
				}
			}
		})
	}
}

// BenchmarkStrictNoPlan measures the strict check of W2's params for
// types that have no plan, where only duplicate names are refused: a type
// that decodes itself, such as the demo's subtract params, and a map of
// any. The small flat object goes through distinctFlat; the nested one
// (each member an object) through the checker.
func BenchmarkStrictNoPlan(b *testing.B) {
	inputs := map[string][]byte{
		"flat":   []byte(`{"minuend":42,"subtrahend":3}`),
		"nested": []byte(`{"minuend":{"v":42},"subtrahend":{"v":3}}`),
	}
	for _, name := range []string{"flat", "nested"} {
		b.Run(name, func(b *testing.B) {
			in := inputs[name]
			var c checker
			b.ReportAllocs()
			for b.Loop() {
				out, err := strictInput(in, nil, true, &c)
				if err != nil || len(out) != len(in) {
					b.Fatalf("strictInput: %q, %v", out, err)
				}
			}
		})
	}
}

// BenchmarkDecodeResultString measures the short way of decodeResult for
// a string result, the commonest of plain results.
func BenchmarkDecodeResultString(b *testing.B) {
	result := []byte(`"the quick brown fox"`)
	b.ReportAllocs()
	for b.Loop() {
		var s string
		if err := decodeResult(result, &s); err != nil || len(s) != 19 {
			b.Fatalf("decoded %q, %v", s, err)
		}
	}
}
