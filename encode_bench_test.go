package jsonrpc

import (
	"encoding/json"
	"testing"
)

// BenchmarkEncodeResult measures writing a result: a float64 returned by
// a Func (appendScalar, onto the output), the same float and an int boxed
// in an interface as a HandlerFunc returns them (the server's encoders),
// a struct and a slice of nested structs (as an LSP server returns), which
// their plans write (encode_direct.go), and a string (appendString).
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
		{"locations", benchLocations, benchLocationsJSON},
		{"interface", struct {
			ID   string `json:"id"`
			Data any    `json:"data"`
		}{"a1", point{1, 2}}, `{"id":"a1","data":{"X":1,"Y":2}}`},
		// An MCP tool's result, as the SDKs type it: content behind an
		// interface with methods.
		{"content", benchToolResult{Content: []benchContent{&benchText{Type: "text", Text: "It is 21°C in Paris."}}},
			`{"content":[{"type":"text","text":"It is 21°C in Paris."}],"isError":false}`},
		// An MCP tool's result, as a map.
		{"map", map[string]any{"content": []any{map[string]any{"type": "text", "text": "It is 21°C in Paris."}}, "isError": false},
			`{"content":[{"text":"It is 21°C in Paris.","type":"text"}],"isError":false}`},
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
// (encode_direct.go), flat and nested, a map, which goes to encoding/json and then through
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
		{"nested", benchDidChange, benchDidChangeJSON},
		{"map", map[string]int{"minuend": 42, "subtrahend": 23}, `{"minuend":42,"subtrahend":23}`},
		{"positional", []any{42, 23}, `[42,23]`},
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

// Values of the shapes LSP sends and returns, for the benchmarks above.
type (
	benchPosition struct {
		Line      int `json:"line"`
		Character int `json:"character"`
	}
	benchRange struct {
		Start benchPosition `json:"start"`
		End   benchPosition `json:"end"`
	}
	benchLocation struct {
		URI   string     `json:"uri"`
		Range benchRange `json:"range"`
	}
	benchChange struct {
		Range *benchRange `json:"range,omitempty"`
		Text  string      `json:"text"`
	}
	benchDocument struct {
		URI     string `json:"uri"`
		Version int    `json:"version"`
	}
	benchDidChangeParams struct {
		TextDocument   benchDocument `json:"textDocument"`
		ContentChanges []benchChange `json:"contentChanges"`
	}
)

var (
	benchLocations = []benchLocation{
		{"file:///src/a.go", benchRange{benchPosition{10, 4}, benchPosition{10, 12}}},
		{"file:///src/b.go", benchRange{benchPosition{200, 0}, benchPosition{201, 1}}},
	}
	benchLocationsJSON = `[{"uri":"file:///src/a.go","range":{"start":{"line":10,"character":4},"end":{"line":10,"character":12}}},` +
		`{"uri":"file:///src/b.go","range":{"start":{"line":200,"character":0},"end":{"line":201,"character":1}}}]`
	benchDidChange = &benchDidChangeParams{
		TextDocument:   benchDocument{"file:///src/a.go", 7},
		ContentChanges: []benchChange{{Range: &benchRange{benchPosition{3, 1}, benchPosition{3, 1}}, Text: "x := 1\n"}},
	}
	benchDidChangeJSON = `{"textDocument":{"uri":"file:///src/a.go","version":7},` +
		`"contentChanges":[{"range":{"start":{"line":3,"character":1},"end":{"line":3,"character":1}},"text":"x := 1\n"}]}`
)

// benchContent is an MCP content block as the SDKs type it: an interface
// with methods, held by pointers to its kinds.
type benchContent interface{ contentType() string }

type benchText struct {
	Type string `json:"type"`
	Text string `json:"text"`
}

func (t *benchText) contentType() string { return t.Type }

type benchToolResult struct {
	Content []benchContent `json:"content"`
	IsError bool           `json:"isError"`
}
