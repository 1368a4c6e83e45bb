package floor

import (
	"bytes"
	"io"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/ndjsonrpc/jsonrpc/bench/suite"
)

// chunked reads at most n bytes at a time.
type chunked struct {
	r io.Reader
	n int
}

func (c chunked) Read(p []byte) (int, error) { return c.r.Read(p[:min(len(p), c.n)]) }

// TestServeSplit serves inputs cut into reads of every size from one byte
// up, so that lines, strings and batches straddle reads everywhere.
func TestServeSplit(t *testing.T) {
	big := strings.Repeat("x", bigValue+10)
	cases := []struct{ name, in, want string }{
		{"echo", `{"jsonrpc":"2.0","id":1,"method":"echo","params":[1,"a\"b\\"]}` + "\n",
			`{"jsonrpc":"2.0","id":1,"result":[1,"a\"b\\"]}` + "\n"},
		{"spaces and order", ` { "params" : {"x": "}"} , "method" : "echo", "id" : "a" } ` + "\r\n",
			`{"jsonrpc":"2.0","id":"a","result":{"x": "}"}}` + "\n"},
		{"subtract", `{"jsonrpc":"2.0","id":7,"method":"subtract","params":{"subtrahend":3,"minuend":-10}}` + "\n",
			`{"jsonrpc":"2.0","id":7,"result":-13}` + "\n"},
		{"no params", `{"jsonrpc":"2.0","id":null,"method":"echo"}` + "\n",
			`{"jsonrpc":"2.0","id":null,"result":null}` + "\n"},
		{"unknown", `{"jsonrpc":"2.0","id":2,"method":"nope"}` + "\n",
			`{"jsonrpc":"2.0","id":2,"error":{"code":-32601,"message":"method not found"}}` + "\n"},
		{"notification", `{"jsonrpc":"2.0","method":"echo","params":[1]}` + "\n", ""},
		{"batch", `[{"jsonrpc":"2.0","method":"echo","params":[0]}, {"jsonrpc":"2.0","id":1,"method":"echo","params":[1]},{"jsonrpc":"2.0","id":2,"method":"echo","params":[2]}]` + "\n",
			`[{"jsonrpc":"2.0","id":1,"result":[1]},{"jsonrpc":"2.0","id":2,"result":[2]}]` + "\n"},
		{"batch of notifications", `[{"method":"echo"},{"method":"echo"}]` + "\n", ""},
		{"blank and junk lines", "\n  \nnot json\n" + `{"id":3,"method":"echo","params":3}` + "\n",
			`{"jsonrpc":"2.0","id":3,"result":3}` + "\n"},
		{"no final newline", `{"id":4,"method":"echo","params":[4]}`,
			`{"jsonrpc":"2.0","id":4,"result":[4]}` + "\n"},
		{"big", `{"id":5,"method":"echo","params":["` + big + `"]}` + "\n" + `{"id":6,"method":"echo","params":6}` + "\n",
			`{"jsonrpc":"2.0","id":5,"result":["` + big + `"]}` + "\n" + `{"jsonrpc":"2.0","id":6,"result":6}` + "\n"},
	}
	for _, tc := range cases {
		sizes := []int{1, 2, 3, 5, 8, 13, 64, 1 << 20}
		if len(tc.in) > 1000 {
			sizes = []int{1000, 4099, 1 << 20}
		}
		for _, n := range sizes {
			var out bytes.Buffer
			if err := Serve(chunked{strings.NewReader(tc.in), n}, &out); err != nil {
				t.Fatalf("%s, reads of %d: %v", tc.name, n, err)
			}
			if out.String() != tc.want {
				t.Errorf("%s, reads of %d:\n got %.200q\nwant %.200q", tc.name, n, out.String(), tc.want)
			}
		}
	}
}

// TestServeWorkloads checks the answers to every workload, read whole and
// one odd-sized piece at a time, and to a line longer than the initial
// read buffer.
func TestServeWorkloads(t *testing.T) {
	for _, full := range suite.Workloads {
		w := full.Scaled(300.0 / float64(full.Lines))
		if w.Big > 0 {
			w = full.Scaled(12.0 / float64(full.Lines))
		}
		in := w.Bytes()
		for _, r := range []io.Reader{bytes.NewReader(in), chunked{bytes.NewReader(in), 4093}, iotest.HalfReader(bytes.NewReader(in))} {
			var out bytes.Buffer
			if err := Serve(r, &out); err != nil {
				t.Fatal(err)
			}
			if _, err := w.Validate(&out); err != nil {
				t.Errorf("%s: %v", w.Name, err)
			}
		}
	}
	for _, in := range suite.ScanInputs[:2] {
		n := 3 * readBufSize
		var out bytes.Buffer
		if err := Serve(chunked{bytes.NewReader(in.Line(n)), 60000}, &out); err != nil {
			t.Fatal(err)
		}
		if err := in.ValidateScan(&out, in.Params(n)); err != nil {
			t.Errorf("%s: %v", in.Name, err)
		}
	}
}

// BenchmarkLine measures the scan and answer of the lines of each
// workload already in memory, without reads or writes.
func BenchmarkLine(b *testing.B) {
	for _, full := range suite.Workloads[:4] {
		w := full.InProcess()
		in := w.Bytes()
		b.Run(w.Name, func(b *testing.B) {
			s := &server{w: io.Discard, out: make([]byte, 0, 2*len(in))}
			for b.Loop() {
				s.out = s.out[:0]
				for i := 0; i < len(in); {
					n := s.line(in[i:], false)
					if n == 0 {
						b.Fatal("incomplete line")
					}
					i += n
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(w.Requests()), "ns/req")
		})
	}
}
