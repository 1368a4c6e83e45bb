// Package suite describes the benchmark workloads and the implementations
// under test, generates the workload input, and checks and counts the
// responses an implementation writes back.
//
// Nothing here depends on any JSON-RPC library, so the harness programs can
// use it without linking the implementations they measure.
package suite

import (
	"bufio"
	"bytes"
	"io"
	"strconv"
	"sync"
)

// Workload is one benchmark input: Lines lines of newline-delimited JSON.
type Workload struct {
	Name   string // short name used in benchmark names, e.g. "W1echo"
	Title  string // human readable description
	Method string // "echo" or "subtract"
	Lines  int    // number of input lines
	Batch  int    // requests per line when the line is a batch array; 0 for single requests
	Notify bool   // requests are notifications (no id, no response)
	Big    int    // size in bytes of the string carried in each request's params (0: none)

	// HandJSON marks the row of our library's hand-tuned params decoding:
	// the input of W2typed, but subtract's params are decoded by a
	// hand-written, allocation-free UnmarshalJSON (the one of
	// cmd/jsonrpc-demo in the whole-process runs) instead of by
	// encoding/json. Only the implementations with Impl.HandJSON run it.
	HandJSON bool

	// InProc is the number of lines per iteration of the in-process
	// throughput benchmarks (a slice of the same workload).
	InProc int
}

// BigSize is the size of the string in each W5 request.
const BigSize = 256 << 10

// Workloads lists the full-size workloads, in table order.
var Workloads = []Workload{
	{Name: "W1echo", Title: "echo, 200,000 requests", Method: "echo", Lines: 200000, InProc: 10000},
	{Name: "W2typed", Title: "subtract into a struct that encoding/json decodes, 200,000 requests", Method: "subtract", Lines: 200000, InProc: 10000},
	{Name: "W2handUnmarshalJSON", Title: "W2typed with a hand-written UnmarshalJSON for the params (ours and the floor only)", Method: "subtract", Lines: 200000, InProc: 10000, HandJSON: true},
	{Name: "W3batch", Title: "20,000 batches of 10 echo requests", Method: "echo", Lines: 20000, Batch: 10, InProc: 1000},
	{Name: "W4notify", Title: "200,000 echo notifications", Method: "echo", Lines: 200000, Notify: true, InProc: 10000},
	{Name: "W5big", Title: "2,000 echo requests of 256 KiB each", Method: "echo", Lines: 2000, Big: BigSize, InProc: 32},
}

// Lookup returns the workload named name.
func Lookup(name string) (Workload, bool) {
	for _, w := range Workloads {
		if w.Name == name {
			return w, true
		}
	}
	return Workload{}, false
}

// Scaled returns w with its line count multiplied by f (at least 1 line).
func (w Workload) Scaled(f float64) Workload {
	n := int(float64(w.Lines) * f)
	if n < 1 {
		n = 1
	}
	w.Lines = n
	return w
}

// InProcess returns the slice of w used per in-process benchmark iteration.
func (w Workload) InProcess() Workload {
	w.Lines = w.InProc
	return w
}

// PerLine is the number of requests on each input line.
func (w Workload) PerLine() int {
	if w.Batch > 0 {
		return w.Batch
	}
	return 1
}

// Requests is the total number of requests (calls and notifications).
func (w Workload) Requests() int { return w.Lines * w.PerLine() }

// Responses is the number of top-level JSON values (lines, for
// newline-delimited output) a correct server writes back: one per line, or
// none for notifications.
func (w Workload) Responses() int {
	if w.Notify {
		return 0
	}
	return w.Lines
}

// bigString is the string of the big workload, made on first use: the
// server binaries link this package, and must not pay at start (in time
// and in peak RSS) for a fixture that only the generator and the clients
// use, which the floor's binary, linking nothing of it, never pays.
var bigString = sync.OnceValue(func() []byte {
	const pattern = "abcdefghijklmnopqrstuvwxyz0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ"
	b := make([]byte, BigSize)
	for i := range b {
		b[i] = pattern[i%len(pattern)]
	}
	return b
})

// AppendParams appends the params value of request id.
func (w Workload) AppendParams(dst []byte, id int64) []byte {
	switch w.Method {
	case "subtract":
		dst = append(dst, `{"minuend":`...)
		dst = strconv.AppendInt(dst, id, 10)
		return append(dst, `,"subtrahend":3}`...)
	default:
		dst = append(dst, '[')
		dst = strconv.AppendInt(dst, id, 10)
		dst = append(dst, ',', '"')
		if w.Big > 0 {
			dst = append(dst, bigString()[:w.Big]...)
		} else {
			dst = append(dst, "hello"...)
		}
		return append(dst, '"', ']')
	}
}

// AppendResult appends the expected result of request id, compactly encoded.
func (w Workload) AppendResult(dst []byte, id int64) []byte {
	if w.Method == "subtract" {
		return strconv.AppendInt(dst, id-3, 10)
	}
	return w.AppendParams(dst, id)
}

func (w Workload) appendRequest(dst []byte, id int64) []byte {
	dst = append(dst, `{"jsonrpc":"2.0",`...)
	if !w.Notify {
		dst = append(dst, `"id":`...)
		dst = strconv.AppendInt(dst, id, 10)
		dst = append(dst, ',')
	}
	dst = append(dst, `"method":"`...)
	dst = append(dst, w.Method...)
	dst = append(dst, `","params":`...)
	dst = w.AppendParams(dst, id)
	return append(dst, '}')
}

// Write writes the whole workload to out. Request ids run from 1 to
// Requests().
func (w Workload) Write(out io.Writer) error {
	bw := bufio.NewWriterSize(out, 1<<20)
	var line []byte
	id := int64(1)
	for range w.Lines {
		line = line[:0]
		if w.Batch > 0 {
			line = append(line, '[')
			for k := range w.Batch {
				if k > 0 {
					line = append(line, ',')
				}
				line = w.appendRequest(line, id)
				id++
			}
			line = append(line, ']')
		} else {
			line = w.appendRequest(line, id)
			id++
		}
		line = append(line, '\n')
		if _, err := bw.Write(line); err != nil {
			return err
		}
	}
	return bw.Flush()
}

// Bytes returns the whole workload input.
func (w Workload) Bytes() []byte {
	var buf bytes.Buffer
	if err := w.Write(&buf); err != nil {
		panic(err) // writing to a bytes.Buffer does not fail
	}
	return buf.Bytes()
}

// Impl describes an implementation under test.
type Impl struct {
	Name  string
	Title string
	Peer  bool // one of the peer libraries (not ours, not the floor)
	Batch bool // answers batch requests
	Lines bool // writes newline-delimited output (else back-to-back JSON values)

	// ParseError: answers a line that is not JSON with a Parse error and
	// goes on reading. sourcegraph/jsonrpc2 and x/exp/jsonrpc2 end the
	// connection instead, and the floor does not validate its input.
	ParseError bool

	// HandJSON: runs the HandJSON workload (see Workload.HandJSON), with
	// the server binary HandBinary if it is not empty. The floor runs it
	// with its usual code, which parses everything by hand anyway.
	HandJSON   bool
	HandBinary string
}

// Impls lists every implementation, in table order.
var Impls = []Impl{
	{Name: "floor", Title: "hand-written loop, no library", Batch: true, Lines: true, HandJSON: true},
	{Name: "ours", Title: "github.com/ndjsonrpc/jsonrpc", Batch: true, Lines: true, ParseError: true, HandJSON: true, HandBinary: "jsonrpc-demo"},
	{Name: "jrpc2", Title: "github.com/creachadair/jrpc2 (channel.Line)", Peer: true, Batch: true, Lines: true, ParseError: true},
	{Name: "sourcegraph", Title: "github.com/sourcegraph/jsonrpc2 (NewPlainObjectStream)", Peer: true, Lines: true},
	{Name: "xexp", Title: "golang.org/x/exp/jsonrpc2 (RawFramer)", Peer: true},
}

// LookupImpl returns the implementation named name.
func LookupImpl(name string) (Impl, bool) {
	for _, im := range Impls {
		if im.Name == name {
			return im, true
		}
	}
	return Impl{}, false
}

// Supports reports whether im can run workload w.
func (im Impl) Supports(w Workload) bool {
	return (w.Batch == 0 || im.Batch) && (!w.HandJSON || im.HandJSON)
}

// Unsupported says why im does not run w ("" if it does).
func (im Impl) Unsupported(w Workload) string {
	switch {
	case w.Batch > 0 && !im.Batch:
		return "no batch support"
	case w.HandJSON && !im.HandJSON:
		return "no hand-tuned params decoding"
	}
	return ""
}

// Binary is the name of im's whole-process server binary for w: im's own
// name, or HandBinary for the HandJSON workload.
func (im Impl) Binary(w Workload) string {
	if w.HandJSON && im.HandBinary != "" {
		return im.HandBinary
	}
	return im.Name
}

// SupportsScan reports whether im can run the Scan input in.
func (im Impl) SupportsScan(in ScanInput) bool { return !in.Invalid || im.ParseError }

// SubParams are the params of the subtract method.
type SubParams struct {
	Minuend    int `json:"minuend"`
	Subtrahend int `json:"subtrahend"`
}
