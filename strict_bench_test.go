package jsonrpc

import (
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
