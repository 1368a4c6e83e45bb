package jsonrpc_test

// Hostile and broken input, and broken peers, through Serve. Each test
// checks the exact error code of the bad line and that a valid line after
// it is still answered.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"runtime"
	"strings"
	"sync"
	"testing"
	"testing/iotest"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ndjsonrpc/jsonrpc"
)

// afterLine is a valid request sent after a bad line; its answer shows the
// server is still serving.
const (
	afterLine   = `{"jsonrpc":"2.0","id":"after","method":"echo","params":["still here"]}`
	afterAnswer = `{"jsonrpc":"2.0","id":"after","result":["still here"]}`
)

// stopTimeout bounds the wait for Serve to return in tests that stop it;
// it only turns a hang into a failure, and no test relies on it to pass.
const stopTimeout = 10 * time.Second

// hardResponse is one response line, with its members raw.
type hardResponse struct {
	ID     json.RawMessage `json:"id"`
	Result json.RawMessage `json:"result"`
	Error  *jsonrpc.Error  `json:"error"`
}

func decodeHard(t *testing.T, line string) hardResponse {
	t.Helper()
	var r hardResponse
	require.NoError(t, json.Unmarshal([]byte(line), &r), "line %q", clip(line))
	return r
}

// clip shortens s for a failure message; some inputs here are megabytes.
func clip(s string) string {
	if len(s) <= 300 {
		return s
	}
	return fmt.Sprintf("%s…(%d bytes)…%s", s[:200], len(s)-250, s[len(s)-50:])
}

// assertError checks that line is the error code with the id wantID.
func assertError(t *testing.T, line string, code jsonrpc.Code, wantID string) {
	t.Helper()
	r := decodeHard(t, line)
	line = clip(line)
	assert.Equal(t, wantID, string(r.ID), "id of %q", line)
	assert.Nil(t, r.Result, "result in %q", line)
	if assert.NotNil(t, r.Error, "no error in %q", line) {
		assert.Equal(t, code, r.Error.Code, "code in %q", line)
	}
}

// serveBad serves bad, then afterLine, and returns the answer to bad: it
// fails unless there is exactly one, besides the answer to afterLine.
func serveBad(t *testing.T, srv *jsonrpc.Server, bad string) (string, bool) {
	t.Helper()
	got := serveString(t, srv, bad+"\n"+afterLine+"\n")
	var rest []string
	after := 0
	for _, line := range got {
		if strings.Contains(line, `"after"`) {
			assert.JSONEq(t, afterAnswer, line)
			after++
			continue
		}
		rest = append(rest, line)
	}
	if !assert.Equal(t, 1, after, "the line after %q is not answered once", clip(bad)) ||
		!assert.Equal(t, 1, len(rest), "the line %q is not answered once", clip(bad)) {
		for _, line := range got {
			t.Logf("answer: %q", clip(line))
		}
		return "", false
	}
	return rest[0], true
}

// badCase is a line that must be answered with an error.
type badCase struct {
	name string
	line string
	code jsonrpc.Code
	id   string // the id of the answer; "" means null
}

func runBadCases(t *testing.T, tests []badCase) {
	t.Helper()
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			srv := &jsonrpc.Server{Options: jsonrpc.Options{Handler: specMux()}}
			got, ok := serveBad(t, srv, tc.line)
			if !ok {
				return
			}
			id := tc.id
			if id == "" {
				id = "null"
			}
			if strings.HasPrefix(tc.line, "[") && strings.HasPrefix(got, "[") {
				// A batch of one bad request gets a batch of one error.
				var batch []json.RawMessage
				require.NoError(t, json.Unmarshal([]byte(got), &batch), "line %q", got)
				require.Len(t, batch, 1, "line %q", got)
				got = string(batch[0])
			}
			assertError(t, got, tc.code, id)
		})
	}
}

// echoCase is a request to echo whose id and params must come back byte
// for byte.
type echoCase struct {
	name   string
	id     string
	params string
}

func runEchoCases(t *testing.T, tests []echoCase) {
	t.Helper()
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			srv := &jsonrpc.Server{Options: jsonrpc.Options{Handler: specMux()}}
			line := `{"jsonrpc":"2.0","id":` + tc.id + `,"method":"echo","params":` + tc.params + `}`
			got, ok := serveBad(t, srv, line)
			if !ok {
				return
			}
			r := decodeHard(t, got)
			assert.Nil(t, r.Error, "line %q", clip(got))
			assert.Equal(t, tc.id, string(r.ID))
			assert.Equal(t, tc.params, string(r.Result))
		})
	}
}

func TestHardeningInvalidUTF8(t *testing.T) {
	checkLeaks(t)
	long := strings.Repeat("abcdefgh", 16) // long enough for the bulk string scan
	runBadCases(t, []badCase{
		{name: "bare byte", line: "\xff", code: jsonrpc.CodeParseError},
		{name: "in a string", line: `{"jsonrpc":"2.0","id":1,"method":"echo","params":["a` + "\xff" + `b"]}`, code: jsonrpc.CodeParseError},
		{name: "in a long string", line: `{"jsonrpc":"2.0","id":1,"method":"echo","params":["` + long + "\xff" + long + `"]}`, code: jsonrpc.CodeParseError},
		{name: "in a key", line: `{"jsonrpc":"2.0","id":1,"method":"echo","params":{"` + "\xfe" + `":1}}`, code: jsonrpc.CodeParseError},
		{name: "in the method", line: `{"jsonrpc":"2.0","id":1,"method":"ech` + "\xc3" + `"}`, code: jsonrpc.CodeParseError},
		{name: "in the id", line: `{"jsonrpc":"2.0","id":"` + "\x80" + `","method":"echo"}`, code: jsonrpc.CodeParseError},
		{name: "overlong encoding", line: `{"jsonrpc":"2.0","id":1,"method":"echo","params":["` + "\xc0\xaf" + `"]}`, code: jsonrpc.CodeParseError},
		{name: "encoded surrogate", line: `{"jsonrpc":"2.0","id":1,"method":"echo","params":["` + "\xed\xa0\x80" + `"]}`, code: jsonrpc.CodeParseError},
		{name: "beyond U+10FFFF", line: `{"jsonrpc":"2.0","id":1,"method":"echo","params":["` + "\xf4\x90\x80\x80" + `"]}`, code: jsonrpc.CodeParseError},
		{name: "truncated sequence", line: `{"jsonrpc":"2.0","id":1,"method":"echo","params":["` + long + "\xe2\x82" + `"]}`, code: jsonrpc.CodeParseError},
		{name: "in a batch", line: `[{"jsonrpc":"2.0","id":1,"method":"echo"},{"jsonrpc":"2.0","id":2,"method":"echo","params":["` + "\xff" + `"]}]`, code: jsonrpc.CodeParseError},
	})
	// Valid UTF-8, and escapes that encoding/json would rewrite, pass
	// through untouched.
	runEchoCases(t, []echoCase{
		{name: "multi-byte", id: `"ü€😀"`, params: `["` + long + `é€😀` + long + `"]`},
		{name: "lone surrogate escape", id: `"\ud800"`, params: `["\udc00\ud800"]`},
		{name: "escaped line separators", id: `1`, params: `["\u2028\u2029"]`},
	})
}

func TestHardeningNULBytes(t *testing.T) {
	checkLeaks(t)
	long := strings.Repeat("abcdefgh", 16)
	runBadCases(t, []badCase{
		{name: "alone", line: "\x00", code: jsonrpc.CodeParseError},
		{name: "in a string", line: `{"jsonrpc":"2.0","id":1,"method":"echo","params":["a` + "\x00" + `b"]}`, code: jsonrpc.CodeParseError},
		{name: "in a long string", line: `{"jsonrpc":"2.0","id":1,"method":"echo","params":["` + long + "\x00" + long + `"]}`, code: jsonrpc.CodeParseError},
		{name: "in the method", line: `{"jsonrpc":"2.0","id":1,"method":"echo` + "\x00" + `"}`, code: jsonrpc.CodeParseError},
		{name: "between tokens", line: `{"jsonrpc":"2.0",` + "\x00" + `"id":1,"method":"echo"}`, code: jsonrpc.CodeParseError},
		{name: "after the value", line: `{"jsonrpc":"2.0","id":1,"method":"echo"}` + "\x00", code: jsonrpc.CodeParseError},
		{name: "before the value", line: "\x00" + `{"jsonrpc":"2.0","id":1,"method":"echo"}`, code: jsonrpc.CodeParseError},
	})
	runEchoCases(t, []echoCase{
		{name: "escaped", id: `"\u0000"`, params: `["\u0000","` + long + `\u0000"]`},
	})
}

// lazyLine is a reader that yields prefix, then n filler bytes made up as
// they are read, then suffix. Every 8 MiB of filler it samples the heap in
// use, and keeps the peak.
type lazyLine struct {
	prefix, suffix []byte
	n              int64
	chunk          []byte
	sinceSample    int64
	peakHeap       uint64
}

func newLazyLine(prefix string, fill byte, n int64, suffix string) *lazyLine {
	return &lazyLine{
		prefix: []byte(prefix),
		suffix: []byte(suffix),
		n:      n,
		chunk:  bytes.Repeat([]byte{fill}, 64<<10),
	}
}

func (l *lazyLine) Read(p []byte) (int, error) {
	switch {
	case len(p) == 0:
		return 0, nil
	case len(l.prefix) > 0:
		n := copy(p, l.prefix)
		l.prefix = l.prefix[n:]
		return n, nil
	case l.n > 0:
		n := copy(p[:min(int64(len(p)), l.n)], l.chunk)
		l.n -= int64(n)
		if l.sinceSample += int64(n); l.sinceSample >= 8<<20 {
			l.sinceSample = 0
			l.peakHeap = max(l.peakHeap, heapInUse())
		}
		return n, nil
	case len(l.suffix) > 0:
		n := copy(p, l.suffix)
		l.suffix = l.suffix[n:]
		return n, nil
	}
	return 0, io.EOF
}

func heapInUse() uint64 {
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapInuse
}

// TestHardeningOverLongLine sends a 100 MiB line to a server whose limit is
// 1 MiB. The line is made up as it is read, so only the server could hold
// it; the heap must stay far below its size, and the next line must be
// answered.
func TestHardeningOverLongLine(t *testing.T) {
	checkLeaks(t)
	const limit = 1 << 20
	const size = 100 << 20
	prefix := `{"jsonrpc":"2.0","id":1,"method":"echo","params":["`

	tests := []struct {
		name   string
		suffix string
	}{
		{"then a line", `"]}` + "\n" + afterLine + "\n"},
		{"then a line without newline", `"]}` + "\n" + afterLine},
		{"then CRLF and a line", `"]}` + "\r\n" + afterLine + "\r\n"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			runtime.GC()
			base := heapInUse()
			in := newLazyLine(prefix, 'a', size, tc.suffix)
			srv := &jsonrpc.Server{Options: jsonrpc.Options{Handler: specMux(), MaxMessageSize: limit}}
			var out bytes.Buffer
			require.NoError(t, srv.Serve(t.Context(), in, &out))
			got := splitLines(out.String())

			require.Len(t, got, 2, "output: %q", got)
			assertError(t, got[0], jsonrpc.CodeInvalidRequest, "null")
			assert.JSONEq(t, afterAnswer, got[1])
			require.NotZero(t, in.peakHeap, "the reader never sampled the heap")
			t.Logf("heap in use: %d MiB before, %d MiB at peak", base>>20, in.peakHeap>>20)
			assert.Less(t, in.peakHeap, base+32<<20,
				"heap in use peaked at %d MiB (%d MiB before) reading a %d MiB line with a %d MiB limit",
				in.peakHeap>>20, base>>20, size>>20, limit>>20)
		})
	}
}

// TestHardeningLineLimitBoundary checks that a line of exactly
// MaxMessageSize bytes is served and one byte more is not.
func TestHardeningLineLimitBoundary(t *testing.T) {
	checkLeaks(t)
	const limit = 4096
	prefix := `{"jsonrpc":"2.0","id":1,"method":"echo","params":["`
	suffix := `"]}`
	fill := limit - len(prefix) - len(suffix)

	atLimit := prefix + strings.Repeat("x", fill) + suffix
	require.Len(t, atLimit, limit)
	srv := &jsonrpc.Server{Options: jsonrpc.Options{Handler: specMux(), MaxMessageSize: limit}}
	got, ok := serveBad(t, srv, atLimit)
	if ok {
		r := decodeHard(t, got)
		assert.Nil(t, r.Error, "line %q", got)
		assert.Equal(t, `["`+strings.Repeat("x", fill)+`"]`, string(r.Result))
	}

	overLimit := prefix + strings.Repeat("x", fill+1) + suffix
	srv = &jsonrpc.Server{Options: jsonrpc.Options{Handler: specMux(), MaxMessageSize: limit}}
	got, ok = serveBad(t, srv, overLimit)
	if ok {
		assertError(t, got, jsonrpc.CodeInvalidRequest, "null")
	}
}

// TestHardeningDeepNesting sends 1 MiB of brackets: the scanner must not
// recurse, whether the nesting is closed or not.
func TestHardeningDeepNesting(t *testing.T) {
	checkLeaks(t)
	const depth = 1 << 20
	runBadCases(t, []badCase{
		{name: "open arrays", line: strings.Repeat("[", depth), code: jsonrpc.CodeParseError},
		{name: "open objects", line: strings.Repeat(`{"a":`, depth/5), code: jsonrpc.CodeParseError},
		{name: "open mixed", line: strings.Repeat(`[{"a":`, depth/6), code: jsonrpc.CodeParseError},
		{name: "open params", line: `{"jsonrpc":"2.0","id":1,"method":"echo","params":` + strings.Repeat("[", depth) + `}`, code: jsonrpc.CodeParseError},
		{name: "one bracket short", line: strings.Repeat("[", depth/2) + strings.Repeat("]", depth/2-1), code: jsonrpc.CodeParseError},
		{name: "one bracket over", line: strings.Repeat("[", depth/2) + strings.Repeat("]", depth/2+1), code: jsonrpc.CodeParseError},
		{name: "mismatched", line: strings.Repeat("[", depth/2) + "}" + strings.Repeat("]", depth/2-1), code: jsonrpc.CodeParseError},
	})

	t.Run("closed arrays are a batch of one invalid request", func(t *testing.T) {
		srv := &jsonrpc.Server{Options: jsonrpc.Options{Handler: specMux()}}
		got, ok := serveBad(t, srv, strings.Repeat("[", depth/2)+strings.Repeat("]", depth/2))
		if ok {
			assert.JSONEq(t, `[{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Invalid Request"}}]`, got)
		}
	})
	// encoding/json cannot decode these answers (it stops at depth 10000),
	// so they are compared as text.
	for _, tc := range []struct{ name, params string }{
		{"closed params", strings.Repeat("[", depth/2) + strings.Repeat("]", depth/2)},
		{"closed object params", strings.Repeat(`{"a":`, depth/10) + "null" + strings.Repeat("}", depth/10)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := &jsonrpc.Server{Options: jsonrpc.Options{Handler: specMux()}}
			got, ok := serveBad(t, srv, `{"jsonrpc":"2.0","id":1,"method":"echo","params":`+tc.params+`}`)
			if ok {
				want := `{"jsonrpc":"2.0","id":1,"result":` + tc.params + `}`
				assert.True(t, got == want, "the answer %q is not the params echoed (%d bytes)", clip(got), len(want))
			}
		})
	}
}

func TestHardeningDuplicateKeys(t *testing.T) {
	checkLeaks(t)
	runBadCases(t, []badCase{
		{name: "id", line: `{"jsonrpc":"2.0","id":1,"method":"echo","id":2}`, code: jsonrpc.CodeInvalidRequest},
		{name: "same id twice", line: `{"jsonrpc":"2.0","id":1,"method":"echo","id":1}`, code: jsonrpc.CodeInvalidRequest},
		{name: "id escaped", line: `{"jsonrpc":"2.0","\u0069d":1,"method":"echo","id":2}`, code: jsonrpc.CodeInvalidRequest},
		{name: "id in a notification", line: `{"jsonrpc":"2.0","method":"echo","id":null,"id":null}`, code: jsonrpc.CodeInvalidRequest},
		{name: "method", line: `{"jsonrpc":"2.0","id":1,"method":"echo","method":"echo"}`, code: jsonrpc.CodeInvalidRequest, id: "1"},
		{name: "method escaped", line: `{"jsonrpc":"2.0","id":1,"method":"echo","m\u0065thod":"sum"}`, code: jsonrpc.CodeInvalidRequest, id: "1"},
		{name: "jsonrpc", line: `{"jsonrpc":"2.0","jsonrpc":"2.0","id":1,"method":"echo"}`, code: jsonrpc.CodeInvalidRequest, id: "1"},
		{name: "params", line: `{"jsonrpc":"2.0","id":1,"method":"echo","params":[1],"params":[2]}`, code: jsonrpc.CodeInvalidRequest, id: "1"},
		{name: "in a batch", line: `[{"jsonrpc":"2.0","id":1,"id":2,"method":"echo"}]`, code: jsonrpc.CodeInvalidRequest},
		// The package documentation says "a member that appears twice makes
		// the request invalid", unknown members included.
		{name: "unknown member", line: `{"jsonrpc":"2.0","id":1,"method":"echo","x":1,"x":2}`, code: jsonrpc.CodeInvalidRequest, id: "1"},
	})
	// Duplicates inside params are the handler's business.
	runEchoCases(t, []echoCase{
		{name: "inside params", id: "1", params: `{"a":1,"a":2,"id":3,"id":4}`},
	})
}

// TestHardeningNumbers checks that numbers encoding/json would reject or
// rewrite come back byte for byte, as ids and as params.
func TestHardeningNumbers(t *testing.T) {
	checkLeaks(t)
	var tests []echoCase
	for _, n := range []string{
		`1e999`, `-1e999`, `1e-999`, `-0`, `-0.0`, `0.0`, `-0.0e-0`, `1E+2`, `1e2`,
		`12345678901234567890123`, `-9223372036854775809`, `1.50`, `-1.5e-10`, `0.1000000000000000055511151231257827`,
	} {
		tests = append(tests, echoCase{name: n, id: n, params: `[` + n + `,{"n":` + n + `}]`})
	}
	runEchoCases(t, tests)

	t.Run("1e999 as an int param", func(t *testing.T) {
		srv := &jsonrpc.Server{Options: jsonrpc.Options{Handler: specMux()}}
		got, ok := serveBad(t, srv, `{"jsonrpc":"2.0","id":1e999,"method":"sum","params":[1e999]}`)
		if ok {
			assertError(t, got, jsonrpc.CodeInvalidParams, "1e999")
		}
	})
}

func TestHardeningNULInMethodName(t *testing.T) {
	checkLeaks(t)
	runBadCases(t, []badCase{
		{name: "only", line: `{"jsonrpc":"2.0","id":1,"method":"\u0000"}`, code: jsonrpc.CodeMethodNotFound, id: "1"},
		{name: "after", line: `{"jsonrpc":"2.0","id":1,"method":"echo\u0000"}`, code: jsonrpc.CodeMethodNotFound, id: "1"},
		{name: "before", line: `{"jsonrpc":"2.0","id":1,"method":"\u0000echo"}`, code: jsonrpc.CodeMethodNotFound, id: "1"},
		{name: "inside", line: `{"jsonrpc":"2.0","id":1,"method":"ec\u0000ho"}`, code: jsonrpc.CodeMethodNotFound, id: "1"},
		{name: "in a batch", line: `[{"jsonrpc":"2.0","id":1,"method":"echo\u0000"}]`, code: jsonrpc.CodeMethodNotFound, id: "1"},
	})
	t.Run("notification", func(t *testing.T) {
		srv := &jsonrpc.Server{Options: jsonrpc.Options{Handler: specMux()}}
		got := serveString(t, srv, `{"jsonrpc":"2.0","method":"echo\u0000"}`+"\n"+afterLine+"\n")
		require.Len(t, got, 1, "output: %q", got)
		assert.JSONEq(t, afterAnswer, got[0])
	})
}

func TestHardeningInvalidIDTypes(t *testing.T) {
	checkLeaks(t)
	var tests []badCase
	for _, id := range []string{`{}`, `{"a":1}`, `[]`, `[1]`, `true`, `false`} {
		tests = append(tests,
			badCase{name: id, line: `{"jsonrpc":"2.0","id":` + id + `,"method":"echo"}`, code: jsonrpc.CodeInvalidRequest},
			badCase{name: id + " in a batch", line: `[{"jsonrpc":"2.0","id":` + id + `,"method":"echo"}]`, code: jsonrpc.CodeInvalidRequest},
		)
	}
	runBadCases(t, tests)
}

func TestHardeningGarbageAfterValue(t *testing.T) {
	checkLeaks(t)
	req := `{"jsonrpc":"2.0","id":1,"method":"echo"}`
	var tests []badCase
	for _, tail := range []string{`x`, ` x`, `}`, `]`, `,`, `:`, `//`, `/* */`, `null`, "\x1b", "\v", "\f", "\u00a0"} {
		tests = append(tests,
			badCase{name: fmt.Sprintf("object then %q", tail), line: req + tail, code: jsonrpc.CodeParseError},
			badCase{name: fmt.Sprintf("batch then %q", tail), line: "[" + req + "]" + tail, code: jsonrpc.CodeParseError},
		)
	}
	runBadCases(t, tests)

	// JSON whitespace after the value is fine.
	for _, tail := range []string{" ", "\t", "\r", " \t\r ", "\r\r"} {
		t.Run(fmt.Sprintf("whitespace %q", tail), func(t *testing.T) {
			srv := &jsonrpc.Server{Options: jsonrpc.Options{Handler: specMux()}}
			got, ok := serveBad(t, srv, req+tail)
			if ok {
				assert.JSONEq(t, `{"jsonrpc":"2.0","id":1,"result":null}`, got)
			}
		})
	}
}

func TestHardeningTwoValuesOnOneLine(t *testing.T) {
	checkLeaks(t)
	one := `{"jsonrpc":"2.0","id":1,"method":"echo"}`
	two := `{"jsonrpc":"2.0","id":2,"method":"echo"}`
	runBadCases(t, []badCase{
		{name: "objects", line: one + two, code: jsonrpc.CodeParseError},
		{name: "objects with space", line: one + " " + two, code: jsonrpc.CodeParseError},
		{name: "objects with comma", line: one + "," + two, code: jsonrpc.CodeParseError},
		{name: "object and batch", line: one + "[" + two + "]", code: jsonrpc.CodeParseError},
		{name: "batches", line: "[" + one + "][" + two + "]", code: jsonrpc.CodeParseError},
		{name: "numbers", line: `1 2`, code: jsonrpc.CodeParseError},
		{name: "strings", line: `"a""b"`, code: jsonrpc.CodeParseError},
		{name: "nulls", line: `null null`, code: jsonrpc.CodeParseError},
		{name: "empty arrays", line: `[] []`, code: jsonrpc.CodeParseError},
	})
}

func TestHardeningEOFMidLine(t *testing.T) {
	checkLeaks(t)
	tests := []struct {
		name  string
		input string
		want  []string
	}{
		{
			name:  "complete request without newline",
			input: `{"jsonrpc":"2.0","id":1,"method":"echo","params":[1]}`,
			want:  []string{`{"jsonrpc":"2.0","id":1,"result":[1]}`},
		},
		{
			name:  "truncated request",
			input: afterLine + "\n" + `{"jsonrpc":"2.0","id":2,"meth`,
			want:  []string{afterAnswer, `{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Parse error"}}`},
		},
		{
			name:  "truncated in a multi-byte character",
			input: afterLine + "\n" + `{"jsonrpc":"2.0","id":2,"method":"echo","params":["` + "\xc3",
			want:  []string{afterAnswer, `{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Parse error"}}`},
		},
		{
			name:  "truncated batch",
			input: afterLine + "\n" + `[{"jsonrpc":"2.0","id":2,"method":"echo"},`,
			want:  []string{afterAnswer, `{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Parse error"}}`},
		},
		{
			name:  "lone CR",
			input: afterLine + "\n\r",
			want:  []string{afterAnswer},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			srv := &jsonrpc.Server{Options: jsonrpc.Options{Handler: specMux()}}
			got := serveString(t, srv, tc.input)
			require.Len(t, got, len(tc.want), "output: %q", got)
			for i := range tc.want {
				assert.JSONEq(t, tc.want[i], got[i])
			}
		})
	}

	t.Run("pipe closed mid-line", func(t *testing.T) {
		srv := &jsonrpc.Server{Options: jsonrpc.Options{Handler: specMux()}}
		pr, pw := io.Pipe()
		var out bytes.Buffer
		errc := make(chan error, 1)
		go func() { errc <- srv.Serve(t.Context(), pr, &out) }()
		_, err := io.WriteString(pw, afterLine+"\n")
		require.NoError(t, err)
		_, err = io.WriteString(pw, `{"jsonrpc":"2.0","id":2,`)
		require.NoError(t, err)
		_, err = io.WriteString(pw, `"method":"ec`)
		require.NoError(t, err)
		require.NoError(t, pw.Close())
		require.NoError(t, <-errc)
		got := splitLines(out.String())
		require.Len(t, got, 2, "output: %q", got)
		assert.JSONEq(t, afterAnswer, got[0])
		assertError(t, got[1], jsonrpc.CodeParseError, "null")
	})
}

// TestHardeningReadError checks that Serve returns the error of its reader,
// having answered the lines read before it.
func TestHardeningReadError(t *testing.T) {
	checkLeaks(t)
	errRead := errors.New("read failed")
	lines := afterLine + "\n" + `{"jsonrpc":"2.0","id":2,"method":"sum","params":[1,2]}` + "\n"
	tests := []struct {
		name    string
		r       io.Reader
		want    []string
		wantErr error // errRead when nil
	}{
		{
			name: "at once",
			r:    iotest.ErrReader(errRead),
		},
		{
			name: "after whole lines",
			r:    io.MultiReader(strings.NewReader(lines), iotest.ErrReader(errRead)),
			want: []string{afterAnswer, `{"jsonrpc":"2.0","id":2,"result":3}`},
		},
		{
			name: "with the last data",
			r:    iotest.DataErrReader(io.MultiReader(strings.NewReader(lines), iotest.ErrReader(errRead))),
			want: []string{afterAnswer, `{"jsonrpc":"2.0","id":2,"result":3}`},
		},
		{
			name: "one byte at a time",
			r:    iotest.OneByteReader(io.MultiReader(strings.NewReader(lines), iotest.ErrReader(errRead))),
			want: []string{afterAnswer, `{"jsonrpc":"2.0","id":2,"result":3}`},
		},
		{
			name:    "with unexpected EOF",
			r:       io.MultiReader(strings.NewReader(lines), iotest.ErrReader(io.ErrUnexpectedEOF)),
			want:    []string{afterAnswer, `{"jsonrpc":"2.0","id":2,"result":3}`},
			wantErr: io.ErrUnexpectedEOF,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			srv := &jsonrpc.Server{Options: jsonrpc.Options{Handler: specMux()}}
			var out bytes.Buffer
			err := srv.Serve(t.Context(), tc.r, &out)
			wantErr := tc.wantErr
			if wantErr == nil {
				wantErr = errRead
			}
			assert.ErrorIs(t, err, wantErr)
			got := splitLines(out.String())
			require.Len(t, got, len(tc.want), "output: %q", got)
			for i := range tc.want {
				assert.JSONEq(t, tc.want[i], got[i])
			}
		})
	}

	t.Run("mid-line", func(t *testing.T) {
		srv := &jsonrpc.Server{Options: jsonrpc.Options{Handler: specMux()}}
		var out bytes.Buffer
		r := io.MultiReader(strings.NewReader(lines+`{"jsonrpc":"2.0","id":3,"me`), iotest.ErrReader(errRead))
		err := srv.Serve(t.Context(), r, &out)
		assert.ErrorIs(t, err, errRead)
		got := splitLines(out.String())
		require.GreaterOrEqual(t, len(got), 2, "output: %q", got)
		assert.JSONEq(t, afterAnswer, got[0])
		assert.JSONEq(t, `{"jsonrpc":"2.0","id":2,"result":3}`, got[1])
		for _, line := range got[2:] { // the cut line, if answered at all
			assertError(t, line, jsonrpc.CodeParseError, "null")
		}
	})
}

// hardWriter fails every write after the first ok ones.
type hardWriter struct {
	mu  sync.Mutex
	ok  int // writes that succeed
	err error
	buf bytes.Buffer
}

func (w *hardWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.ok == 0 {
		return 0, w.err
	}
	w.ok--
	return w.buf.Write(p)
}

// TestHardeningWriteError checks that Serve returns the error of its
// writer, whenever the write happens.
func TestHardeningWriteError(t *testing.T) {
	checkLeaks(t)
	errWrite := errors.New("write failed")
	one := `{"jsonrpc":"2.0","id":1,"method":"echo"}`
	tests := []struct {
		name  string
		input func() io.Reader
		ok    int
	}{
		{"line with newline", func() io.Reader { return strings.NewReader(one + "\n") }, 0},
		{"line without newline", func() io.Reader { return strings.NewReader(one) }, 0},
		{"data with EOF", func() io.Reader { return iotest.DataErrReader(strings.NewReader(one + "\n")) }, 0},
		{"parse error", func() io.Reader { return strings.NewReader("{\n") }, 0},
		{"many lines", func() io.Reader { return strings.NewReader(strings.Repeat(one+"\n", 1000)) }, 0},
		{"many lines, one byte at a time", func() io.Reader {
			return iotest.OneByteReader(strings.NewReader(strings.Repeat(one+"\n", 20)))
		}, 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			srv := &jsonrpc.Server{Options: jsonrpc.Options{Handler: specMux()}}
			w := &hardWriter{ok: tc.ok, err: errWrite}
			err := srv.Serve(t.Context(), tc.input(), w)
			assert.ErrorIs(t, err, errWrite)
		})
	}

	t.Run("second write", func(t *testing.T) {
		// The first answer is written; the second write fails.
		srv := &jsonrpc.Server{Options: jsonrpc.Options{Handler: specMux()}}
		pr, pw := io.Pipe()
		t.Cleanup(func() { pw.Close() })
		w := &hardWriter{ok: 1, err: errWrite}
		errc := make(chan error, 1)
		go func() { errc <- srv.Serve(t.Context(), pr, w) }()
		_, err := io.WriteString(pw, one+"\n")
		require.NoError(t, err)
		require.Eventually(t, func() bool {
			w.mu.Lock()
			defer w.mu.Unlock()
			return w.ok == 0
		}, stopTimeout, time.Millisecond, "the first answer to be written")
		_, err = io.WriteString(pw, one+"\n")
		require.NoError(t, err)
		select {
		case err := <-errc:
			assert.ErrorIs(t, err, errWrite)
		case <-time.After(stopTimeout):
			pw.Close()
			t.Errorf("Serve did not return after a write error; it returned %v once its input closed", <-errc)
		}
	})

	t.Run("input still open", func(t *testing.T) {
		// The write fails while the peer keeps its end open: Serve must
		// stop by itself, closing the reader.
		srv := &jsonrpc.Server{Options: jsonrpc.Options{Handler: specMux()}}
		pr, pw := io.Pipe()
		t.Cleanup(func() { pw.Close() })
		errc := make(chan error, 1)
		go func() { errc <- srv.Serve(t.Context(), pr, &hardWriter{err: errWrite}) }()
		_, err := io.WriteString(pw, one+"\n")
		require.NoError(t, err)
		select {
		case err := <-errc:
			assert.ErrorIs(t, err, errWrite)
		case <-time.After(stopTimeout):
			pw.Close()
			t.Errorf("Serve did not return after a write error; it returned %v once its input closed", <-errc)
		}
	})
}

// signalWriter is an io.Pipe writer that reports when a Write begins.
type signalWriter struct {
	*io.PipeWriter
	once    sync.Once
	writing chan struct{}
}

func (w *signalWriter) Write(p []byte) (int, error) {
	w.once.Do(func() { close(w.writing) })
	return w.PipeWriter.Write(p)
}

// stopHow is a way of telling a server to stop, and the error Serve then
// returns.
type stopHow struct {
	name string
	stop func(srv *jsonrpc.Server, cancel context.CancelFunc)
	want error
}

var stopHows = []stopHow{
	{"Close", func(srv *jsonrpc.Server, _ context.CancelFunc) { srv.Close() }, jsonrpc.ErrServerClosed},
	{"context", func(_ *jsonrpc.Server, cancel context.CancelFunc) { cancel() }, context.Canceled},
}

// TestHardeningBlockedWriter serves a peer that never reads: the server
// blocks in Write, and Close or the context must still end Serve, within
// StopGrace. It runs in a synctest bubble, so the clock is exact.
func TestHardeningBlockedWriter(t *testing.T) {
	checkLeaks(t)
	const grace = 50 * time.Millisecond
	for _, how := range stopHows {
		t.Run(how.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				srv := &jsonrpc.Server{Options: jsonrpc.Options{Handler: specMux(), StopGrace: grace}}
				inR, inW := io.Pipe()
				outR, outW := io.Pipe() // outR is never read
				defer inW.Close()
				defer outR.Close()
				w := &signalWriter{PipeWriter: outW, writing: make(chan struct{})}

				ctx, cancel := context.WithCancel(t.Context())
				defer cancel()
				errc := make(chan error, 1)
				go func() { errc <- srv.Serve(ctx, inR, w) }()
				_, err := io.WriteString(inW, afterLine+"\n")
				require.NoError(t, err)
				select {
				case <-w.writing:
				case <-time.After(stopTimeout):
					t.Fatal("the server never wrote its answer")
				}

				start := time.Now()
				how.stop(srv, cancel)
				select {
				case err := <-errc:
					assert.ErrorIs(t, err, how.want)
					assert.LessOrEqual(t, time.Since(start), grace, "Serve returned after StopGrace")
				case <-time.After(stopTimeout):
					outR.Close() // let it go, so that the test ends
					t.Errorf("Serve did not return within %v of %s while blocked in Write (StopGrace %v); "+
						"it returned %v once the writer closed", stopTimeout, how.name, grace, <-errc)
				}
			})
		})
	}
}

// TestHardeningHandlerPanics checks that a panic is answered with -32603,
// wherever the handler runs, and that serving goes on.
func TestHardeningHandlerPanics(t *testing.T) {
	checkLeaks(t)
	type myPanic struct{ N int }
	panics := map[string]func(){
		"string": func() { panic("boom") },
		"error":  func() { panic(errors.New("boom")) },
		"nil":    func() { panic(nil) },
		"struct": func() { panic(myPanic{N: 1}) },
		"runtime error": func() {
			var m map[string]int
			//lint:ignore SA5000 the panic is what this case is for
			m["x"] = 1
		},
		"index": func() { var s []int; _ = s[len(s)] },
	}
	newMux := func() *jsonrpc.Mux {
		mux := specMux()
		mux.HandleFunc("panic", func(_ context.Context, req *jsonrpc.Request) (any, error) {
			var kind []string
			_ = json.Unmarshal(req.Params, &kind)
			panics[kind[0]]()
			return "unreachable", nil
		})
		return mux
	}
	for kind := range panics {
		t.Run(kind, func(t *testing.T) {
			srv := &jsonrpc.Server{Options: jsonrpc.Options{Handler: newMux()}}
			got, ok := serveBad(t, srv, `{"jsonrpc":"2.0","id":1,"method":"panic","params":["`+kind+`"]}`)
			if !ok {
				return
			}
			assertError(t, got, jsonrpc.CodeInternalError, "1")
			r := decodeHard(t, got)
			if assert.NotNil(t, r.Error) {
				assert.Equal(t, "Internal error", r.Error.Message)
				var data struct {
					Exception string `json:"exception"`
				}
				assert.NoError(t, json.Unmarshal(r.Error.Data, &data), "data %s", r.Error.Data)
				assert.NotEmpty(t, data.Exception, "data %s", r.Error.Data)
			}
		})
	}

	t.Run("notification", func(t *testing.T) {
		srv := &jsonrpc.Server{Options: jsonrpc.Options{Handler: newMux()}}
		got := serveString(t, srv, `{"jsonrpc":"2.0","method":"panic","params":["string"]}`+"\n"+afterLine+"\n")
		require.Len(t, got, 1, "output: %q", got)
		assert.JSONEq(t, afterAnswer, got[0])
	})

	t.Run("in a batch", func(t *testing.T) {
		srv := &jsonrpc.Server{Options: jsonrpc.Options{Handler: newMux()}}
		got, ok := serveBad(t, srv, `[{"jsonrpc":"2.0","id":1,"method":"sum","params":[1,2]},`+
			`{"jsonrpc":"2.0","id":2,"method":"panic","params":["error"]},`+
			`{"jsonrpc":"2.0","method":"panic","params":["nil"]},`+
			`{"jsonrpc":"2.0","id":3,"method":"sum","params":[3,4]}]`)
		if !ok {
			return
		}
		var batch []string
		var raw []json.RawMessage
		require.NoError(t, json.Unmarshal([]byte(got), &raw))
		for _, r := range raw {
			batch = append(batch, string(r))
		}
		require.Len(t, batch, 3, "batch %q", got)
		assert.JSONEq(t, `{"jsonrpc":"2.0","id":1,"result":3}`, batch[0])
		assertError(t, batch[1], jsonrpc.CodeInternalError, "2")
		assert.JSONEq(t, `{"jsonrpc":"2.0","id":3,"result":7}`, batch[2])
	})

	t.Run("after reading moved on", func(t *testing.T) {
		// The panicking handler holds the reading goroutine until the
		// next line has been read and run, which only happens once reading
		// has moved to another goroutine.
		mux := newMux()
		next := make(chan struct{})
		mux.HandleFunc("wait-then-panic", func(context.Context, *jsonrpc.Request) (any, error) {
			<-next
			panic("late boom")
		})
		mux.HandleFunc("release", func(context.Context, *jsonrpc.Request) (any, error) {
			close(next)
			return "released", nil
		})
		srv := &jsonrpc.Server{Options: jsonrpc.Options{Handler: mux}}
		got := serveString(t, srv, `{"jsonrpc":"2.0","id":1,"method":"wait-then-panic"}`+"\n"+
			`{"jsonrpc":"2.0","id":2,"method":"release"}`+"\n"+afterLine+"\n")
		require.Len(t, got, 3, "output: %q", got)
		byID := make(map[string]string)
		for _, line := range got {
			byID[string(decodeHard(t, line).ID)] = line
		}
		assertError(t, byID["1"], jsonrpc.CodeInternalError, "1")
		assert.JSONEq(t, `{"jsonrpc":"2.0","id":2,"result":"released"}`, byID["2"])
		assert.JSONEq(t, afterAnswer, byID[`"after"`])
	})
}

// TestHardeningHandlerNeverReturns serves a handler that ignores its
// context: Close and the cancellation of Serve's context must end Serve
// within StopGrace, abandoning the handler. It runs in a synctest bubble,
// so the clock is exact and a hang shows at once.
func TestHardeningHandlerNeverReturns(t *testing.T) {
	checkLeaks(t)
	const grace = 50 * time.Millisecond
	for _, how := range stopHows {
		t.Run(how.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				started := make(chan struct{})
				release := make(chan struct{})
				var releaseOnce sync.Once
				// Released at the end, so that no goroutine outlives the test.
				defer releaseOnce.Do(func() { close(release) })
				mux := specMux()
				mux.HandleFunc("stuck", func(context.Context, *jsonrpc.Request) (any, error) {
					close(started)
					<-release
					return "released", nil
				})
				srv := &jsonrpc.Server{Options: jsonrpc.Options{Handler: mux, StopGrace: grace}}
				inR, inW := io.Pipe()
				defer inW.Close()
				var out lockedBuffer
				ctx, cancel := context.WithCancel(t.Context())
				defer cancel()
				errc := make(chan error, 1)
				go func() { errc <- srv.Serve(ctx, inR, &out) }()

				_, err := io.WriteString(inW, `{"jsonrpc":"2.0","id":1,"method":"stuck"}`+"\n")
				require.NoError(t, err)
				select {
				case <-started:
				case <-time.After(stopTimeout):
					t.Fatal("the handler never started")
				}

				start := time.Now()
				how.stop(srv, cancel)
				select {
				case err := <-errc:
					assert.ErrorIs(t, err, how.want)
					assert.LessOrEqual(t, time.Since(start), grace, "Serve returned after StopGrace")
				case <-time.After(stopTimeout):
					releaseOnce.Do(func() { close(release) }) // let it go, so that the test ends
					t.Errorf("Serve did not return within %v of %s (StopGrace %v) while a handler ignored its context; "+
						"it returned %v once the handler returned", stopTimeout, how.name, grace, <-errc)
				}
				// The abandoned handler's answer is never written.
				releaseOnce.Do(func() { close(release) })
				synctest.Wait()
				assert.NotContains(t, out.String(), "released")
			})
		})
	}
}
