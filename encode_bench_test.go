package jsonrpc

import "testing"

// BenchmarkEncodeResult measures writing a result: a float64 returned by
// a Func (appendScalar, onto the output), the same float and an int boxed
// in an interface as a HandlerFunc returns them (the server's encoders),
// and a struct, which goes to encoding/json.
func BenchmarkEncodeResult(b *testing.B) {
	type point struct {
		X, Y float64
	}
	b.Run("float64", func(b *testing.B) {
		buf := make([]byte, 0, 64)
		b.ReportAllocs()
		for b.Loop() {
			out, ok := appendScalar(buf[:0], 39.5)
			if !ok || string(out) != "39.5" {
				b.Fatalf("%q", out)
			}
		}
	})
	for _, tc := range []struct {
		name string
		v    any
		want string
	}{{"boxed-float64", 39.5, "39.5"}, {"boxed-int", 39, "39"}, {"struct", point{1, 2}, `{"X":1,"Y":2}`}} {
		b.Run(tc.name, func(b *testing.B) {
			var es encoders
			b.ReportAllocs()
			for b.Loop() {
				out, e, err := es.encode(tc.v)
				if err != nil || string(out) != tc.want {
					b.Fatalf("%q, %v", out, err)
				}
				if e != nil {
					es.put(e)
				}
			}
		})
	}
}
