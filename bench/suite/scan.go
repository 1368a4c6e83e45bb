package suite

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
)

// ScanInput is one input of the Scan benchmarks: a single request line
// that carries one long string, served on its own, to measure how a
// server's reading and scanning scale with the length of one string.
type ScanInput struct {
	Name  string // short name used in benchmark names, e.g. "Plain"
	Title string // human readable description

	// Invalid marks a line that is not JSON: the string has a raw 0x01
	// byte near its end and no closing quote, and the answer is a Parse
	// error (-32700) with a null id. Otherwise the line is an echo call
	// whose params are ["<string>"], answered with those params.
	Invalid bool

	// pattern is repeated to fill the string; plain letters complete it
	// to the exact length asked for.
	pattern string
}

// ScanInputs lists the Scan inputs, in table order.
var ScanInputs = []ScanInput{
	{Name: "Plain", Title: "echo of one string of plain ASCII text", pattern: "the quick brown fox jumps over the lazy dog 0123456789 "},
	{Name: "Escapes", Title: `echo of one string of "line of text\n" lines, each \n written as the two-byte escape, and no \"`, pattern: `line of text\n`},
	{Name: "InvalidTail", Title: "one string of plain text with a raw 0x01 byte 16 bytes from its end and no closing quote: a Parse error", Invalid: true, pattern: "the quick brown fox jumps over the lazy dog 0123456789 "},
}

// ScanSize is one string length of the Scan benchmarks.
type ScanSize struct {
	Name string // "1M" or "16M"
	N    int    // length in bytes of the string as written in the JSON text
}

// ScanSizes lists the string lengths of the Scan benchmarks. The target is
// that the larger one is served at no less than half the bytes per second
// of the smaller one.
var ScanSizes = []ScanSize{{"1M", 1 << 20}, {"16M", 16 << 20}}

// BenchName is the name of the Scan workload of in at size, as it appears
// in benchmark names: "Scan" + input + size, e.g. "ScanPlain1M".
func (in ScanInput) BenchName(size ScanSize) string { return "Scan" + in.Name + size.Name }

// scanHead is the start of every Scan line, up to the string's contents.
const scanHead = `{"jsonrpc":"2.0","id":1,"method":"echo","params":["`

// appendString appends the contents of the string, exactly n bytes of JSON
// text: the pattern repeated (whole, so that no escape is cut in two), then
// plain letters up to n.
func (in ScanInput) appendString(dst []byte, n int) []byte {
	start := len(dst)
	for len(dst)-start+len(in.pattern) <= n {
		dst = append(dst, in.pattern...)
	}
	for len(dst)-start < n {
		dst = append(dst, 'a'+byte((len(dst)-start)%26))
	}
	if in.Invalid && n > 16 {
		dst[len(dst)-16] = 0x01
	}
	return dst
}

// Line returns the request line of in with a string of n bytes, its
// newline included.
func (in ScanInput) Line(n int) []byte {
	line := make([]byte, 0, len(scanHead)+n+4)
	line = append(line, scanHead...)
	line = in.appendString(line, n)
	if !in.Invalid {
		line = append(line, `"]}`...)
	}
	return append(line, '\n')
}

// Params returns the params of the valid line of in with a string of n
// bytes, which its echo answer must carry back as its result.
func (in ScanInput) Params(n int) []byte {
	p := append([]byte(nil), '[', '"')
	p = in.appendString(p, n)
	return append(p, '"', ']')
}

// errorObject is the error member of a response, as far as the checks go.
type errorObject struct {
	Code *int `json:"code"`
}

// ValidateScan reads the responses from r (one line, or one JSON value)
// and checks that there is exactly one: for a valid input, the answer to
// id 1 whose result is want (the params as sent: byte for byte, or at
// least the same JSON value); for an invalid one, a Parse error (-32700)
// with a null id.
func (in ScanInput) ValidateScan(r io.Reader, want []byte) error {
	dec := json.NewDecoder(r)
	var rs []response
	for {
		var res response
		err := dec.Decode(&res)
		if err == io.EOF {
			break
		}
		if err != nil {
			return fmt.Errorf("response %d: %v", len(rs)+1, err)
		}
		rs = append(rs, res)
	}
	if len(rs) != 1 {
		return fmt.Errorf("%d responses, want 1", len(rs))
	}
	res := rs[0]
	if res.JSONRPC != "2.0" {
		return fmt.Errorf("jsonrpc %q", res.JSONRPC)
	}
	if in.Invalid {
		if string(res.ID) != "null" {
			return fmt.Errorf("id %.100s, want null", res.ID)
		}
		var e errorObject
		if res.Error == nil || json.Unmarshal(res.Error, &e) != nil || e.Code == nil || *e.Code != -32700 {
			return fmt.Errorf("error %.200s, want code -32700 (result %.100s)", res.Error, res.Result)
		}
		return nil
	}
	if string(res.ID) != "1" {
		return fmt.Errorf("id %.100s, want 1", res.ID)
	}
	if res.Error != nil {
		return fmt.Errorf("error %.200s", res.Error)
	}
	if !bytes.Equal(res.Result, want) && !sameJSON(res.Result, want) {
		return fmt.Errorf("result of %d bytes (%.60s…), want %d bytes (%.60s…)", len(res.Result), res.Result, len(want), want)
	}
	return nil
}

// Scaled returns size with its length multiplied by f (at least 64
// bytes), for quick runs; the name is kept.
func (size ScanSize) Scaled(f float64) ScanSize {
	size.N = max(64, int(float64(size.N)*f))
	return size
}
