package jsonrpc

import (
	"reflect"
	"testing"
)

// BenchmarkDecodeParams measures decoding W2's params into a struct as a
// server does, by the strict rules and by the lax ones: the difference is
// the cost of the strict check.
func BenchmarkDecodeParams(b *testing.B) {
	type sub struct {
		Minuend    int `json:"minuend"`
		Subtrahend int `json:"subtrahend"`
	}
	params := []byte(`{"minuend":42,"subtrahend":3}`)
	for _, lax := range []bool{false, true} {
		name := "strict"
		opts := []ParamsOption(nil)
		if lax {
			name, opts = "lax", []ParamsOption{LaxParams}
		}
		b.Run(name, func(b *testing.B) {
			var ds paramDecoders
			rules := rulesFor(reflect.TypeFor[sub](), opts)
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
