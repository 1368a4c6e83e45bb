package jsonrpc

import (
	"encoding/json"
	"testing"
)

// BenchmarkEncodeResult measures writing a result: a float64 returned by
// a Func (appendScalar, onto the output), the same float and an int boxed
// in an interface as a HandlerFunc returns them (the server's encoders),
// a struct, which goes to encoding/json, and a string (appendString).
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
	}{
		{"boxed-float64", 39.5, "39.5"}, {"boxed-int", 39, "39"}, {"struct", point{1, 2}, `{"X":1,"Y":2}`},
		{"string", "The quick brown fox jumps over the lazy dog.", `"The quick brown fox jumps over the lazy dog."`},
	} {
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

// BenchmarkEncodeParams measures encoding the params of a call, as Call
// does before it writes the request: flat structs, written by their plan
// (encode_flat.go), a map, which goes to encoding/json and then through
// the scan that checks it is an object, and a json.RawMessage, which is
// scanned once.
func BenchmarkEncodeParams(b *testing.B) {
	type text struct {
		URI     string `json:"uri"`
		Version int    `json:"version"`
		Text    string `json:"text,omitempty"`
	}
	for _, tc := range []struct {
		name string
		v    any
		want string
	}{
		{"struct", flatSub{42, 23}, `{"minuend":42,"subtrahend":23}`},
		{"pointer", &flatSub{42, 23}, `{"minuend":42,"subtrahend":23}`},
		{"strings", text{"file:///a/b.go", 3, "package b\n"}, `{"uri":"file:///a/b.go","version":3,"text":"package b\n"}`},
		{"map", map[string]int{"minuend": 42, "subtrahend": 23}, `{"minuend":42,"subtrahend":23}`},
		{"raw", json.RawMessage(`{"minuend":42,"subtrahend":23}`), `{"minuend":42,"subtrahend":23}`},
	} {
		b.Run(tc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				out, err := encodeParams(tc.v)
				if err != nil || string(out) != tc.want {
					b.Fatalf("%q, %v", out, err)
				}
			}
		})
	}
}
