package bench_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"testing"

	"github.com/ndjsonrpc/jsonrpc/bench/suite"
)

// TestServe checks every implementation's output on a small copy of every
// workload, so that a plain go test notices a broken server.
func TestServe(t *testing.T) {
	for _, full := range suite.Workloads {
		w := full.Scaled(50.0 / float64(full.Lines))
		for _, im := range impls() {
			if !im.Supports(w) {
				continue
			}
			t.Run(w.Name+"/"+im.Name, func(t *testing.T) {
				var out bytes.Buffer
				counter := suite.NewCounter(im.Lines, w.Responses())
				in := &holdReader{r: bytes.NewReader(w.Bytes()), hold: counter.Done()}
				if err := im.serveFor(w)(context.Background(), in, nopCloser{io.MultiWriter(&out, counter)}); err != nil {
					t.Fatal(err)
				}
				if n, _ := counter.Count(); n != w.Responses() {
					t.Errorf("counted %d responses, want %d", n, w.Responses())
				}
				if _, err := w.Validate(&out); err != nil {
					t.Error(err)
				}
			})
		}
	}
}

// TestScan checks every implementation's answer to every Scan input, at
// string lengths small enough for a plain go test.
func TestScan(t *testing.T) {
	for _, in := range suite.ScanInputs {
		for _, n := range []int{100, 70 << 10} {
			for _, im := range impls() {
				if !im.SupportsScan(in) {
					continue
				}
				t.Run(fmt.Sprintf("%s/%d/%s", in.Name, n, im.Name), func(t *testing.T) {
					var want []byte
					if !in.Invalid {
						want = in.Params(n)
					}
					var out bytes.Buffer
					counter := suite.NewCounter(im.Lines, 1)
					if err := serveScan(im, in.Line(n), io.MultiWriter(&out, counter), counter); err != nil {
						t.Fatal(err)
					}
					if err := in.ValidateScan(&out, want); err != nil {
						t.Error(err)
					}
				})
			}
		}
	}
}

// TestScanLine checks the Scan lines themselves: the string is as long as
// asked, a valid line is one JSON value whose params are Params, and an
// invalid one holds a raw 0x01 and no closing quote.
func TestScanLine(t *testing.T) {
	for _, in := range suite.ScanInputs {
		for _, n := range []int{64, 1000, 4099} {
			line := in.Line(n)
			head := len(`{"jsonrpc":"2.0","id":1,"method":"echo","params":["`)
			if in.Invalid {
				if got := len(line) - head - 1; got != n {
					t.Errorf("%s %d: string of %d bytes", in.Name, n, got)
				}
				if json.Valid(line) || bytes.IndexByte(line[head:], '"') >= 0 || bytes.IndexByte(line, 0x01) != len(line)-17 {
					t.Errorf("%s %d: not an unterminated string with 0x01 near its end: %q", in.Name, n, line[len(line)-40:])
				}
				continue
			}
			var req struct {
				Params json.RawMessage `json:"params"`
			}
			if err := json.Unmarshal(line, &req); err != nil {
				t.Fatalf("%s %d: %v", in.Name, n, err)
			}
			if !bytes.Equal(req.Params, in.Params(n)) || len(req.Params) != n+4 {
				t.Errorf("%s %d: params of %d bytes, want %d", in.Name, n, len(req.Params), n+4)
			}
			if in.Name == "Escapes" && bytes.Count(req.Params, []byte(`\n`)) < n/20 {
				t.Errorf("%s %d: only %d escapes", in.Name, n, bytes.Count(req.Params, []byte(`\n`)))
			}
		}
	}
}

// TestCounterSplit feeds the counter one byte at a time.
func TestCounterSplit(t *testing.T) {
	stream := `{"a":"}\"{"}[1,{"b":[2]}]` + "\n" + `{"c":"\\"}`
	for _, lines := range []bool{false, true} {
		c := suite.NewCounter(lines, 0)
		for i := range len(stream) {
			c.Write([]byte{stream[i]})
		}
		want := 3
		if lines {
			want = 1
		}
		if n, _ := c.Count(); n != want {
			t.Errorf("lines=%v: counted %d, want %d", lines, n, want)
		}
	}
}
