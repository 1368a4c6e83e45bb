package bench_test

import (
	"bytes"
	"context"
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
				if err := im.serve(context.Background(), in, nopCloser{io.MultiWriter(&out, counter)}); err != nil {
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
