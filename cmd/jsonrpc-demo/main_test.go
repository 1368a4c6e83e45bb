package main_test

// These tests treat the demo as a black box: they build the binary once,
// run it as a child process with requests on its standard input, and check
// what comes out of its standard output and its exit status. The output is
// a contract, so the expected lines are written out in full.

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/debug"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/ndjsonrpc/jsonrpc"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// demoPath is the demo binary that TestMain builds.
var demoPath string

// demoEnv is the environment of the demo: a binary built with -race would
// otherwise sleep a second before it exits.
var demoEnv = append(os.Environ(), "GORACE="+strings.TrimSpace(os.Getenv("GORACE")+" atexit_sleep_ms=0"))

// runTimeout bounds one run of the demo, so that a hang fails the test
// instead of stalling it; no test relies on it to pass.
const runTimeout = 60 * time.Second

func TestMain(m *testing.M) { os.Exit(buildAndRun(m)) }

func buildAndRun(m *testing.M) int {
	dir, err := os.MkdirTemp("", "jsonrpc-demo-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "jsonrpc-demo test:", err)
		return 1
	}
	defer os.RemoveAll(dir)
	demoPath = filepath.Join(dir, "demo")
	args := []string{"build", "-o", demoPath}
	if raceEnabled() {
		// A data race in the child then fails the run, with exit status 66.
		args = append(args, "-race")
	}
	cmd := exec.Command("go", append(args, ".")...)
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "jsonrpc-demo test: building the demo:", err)
		return 1
	}
	return m.Run()
}

// raceEnabled reports whether this test binary was built with -race.
func raceEnabled() bool {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return false
	}
	for _, s := range bi.Settings {
		if s.Key == "-race" {
			return s.Value == "true"
		}
	}
	return false
}

// runDemo runs the demo with input on its standard input, checks that it
// exits 0, and returns its output lines.
func runDemo(t *testing.T, input string) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), runTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, demoPath)
	cmd.Env = demoEnv
	cmd.Stdin = strings.NewReader(input)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	require.NoError(t, err, "demo failed; stderr:\n%s", stderr.String())
	require.Equal(t, 0, cmd.ProcessState.ExitCode())
	return outputLines(t, stdout.String())
}

// lockedBuffer is a bytes.Buffer that may be read while a process writes
// to it.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// outputLines splits the demo's output into lines, checking that each one
// is ended by a newline.
func outputLines(t *testing.T, out string) []string {
	t.Helper()
	if out == "" {
		return nil
	}
	require.True(t, strings.HasSuffix(out, "\n"), "output does not end with a newline: %q", out)
	return strings.Split(strings.TrimSuffix(out, "\n"), "\n")
}

// message is any line the demo writes, with the raw JSON of each member.
type message struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Method  *string         `json:"method"`
	Params  json.RawMessage `json:"params"`
	Result  json.RawMessage `json:"result"`
	Error   *struct {
		Code    int             `json:"code"`
		Message string          `json:"message"`
		Data    json.RawMessage `json:"data"`
	} `json:"error"`
}

func decode(t *testing.T, line string) message {
	t.Helper()
	var m message
	require.NoError(t, json.Unmarshal([]byte(line), &m), "line %q", line)
	require.Equal(t, "2.0", m.JSONRPC, "line %q", line)
	return m
}

// responsesByID decodes response lines and indexes them by the JSON text
// of their id; an id answered twice fails the test.
func responsesByID(t *testing.T, lines []string) map[string]string {
	t.Helper()
	byID := make(map[string]string)
	for _, line := range lines {
		m := decode(t, line)
		require.Nil(t, m.Method, "not a response: %q", line)
		require.NotNil(t, m.ID, "response without id: %q", line)
		id := string(m.ID)
		require.NotContains(t, byID, id, "id %s answered twice", id)
		byID[id] = line
	}
	return byID
}

// TestSpecExamples runs every example of section 7 of the JSON-RPC 2.0
// specification. Examples that span several lines there are sent as one
// line here, as the framing requires.
func TestSpecExamples(t *testing.T) {
	tests := []struct {
		name string
		in   []string
		want []string // nil: no output at all
	}{
		{
			name: "positional parameters 1",
			in:   []string{`{"jsonrpc": "2.0", "method": "subtract", "params": [42, 23], "id": 1}`},
			want: []string{`{"jsonrpc": "2.0", "result": 19, "id": 1}`},
		},
		{
			name: "positional parameters 2",
			in:   []string{`{"jsonrpc": "2.0", "method": "subtract", "params": [23, 42], "id": 2}`},
			want: []string{`{"jsonrpc": "2.0", "result": -19, "id": 2}`},
		},
		{
			name: "named parameters 1",
			in:   []string{`{"jsonrpc": "2.0", "method": "subtract", "params": {"subtrahend": 23, "minuend": 42}, "id": 3}`},
			want: []string{`{"jsonrpc": "2.0", "result": 19, "id": 3}`},
		},
		{
			name: "named parameters 2",
			in:   []string{`{"jsonrpc": "2.0", "method": "subtract", "params": {"minuend": 42, "subtrahend": 23}, "id": 4}`},
			want: []string{`{"jsonrpc": "2.0", "result": 19, "id": 4}`},
		},
		{
			name: "notifications",
			in: []string{
				`{"jsonrpc": "2.0", "method": "update", "params": [1,2,3,4,5]}`,
				`{"jsonrpc": "2.0", "method": "foobar"}`,
			},
		},
		{
			name: "non-existent method",
			in:   []string{`{"jsonrpc": "2.0", "method": "foobar", "id": "1"}`},
			want: []string{`{"jsonrpc": "2.0", "error": {"code": -32601, "message": "Method not found"}, "id": "1"}`},
		},
		{
			name: "invalid JSON",
			in:   []string{`{"jsonrpc": "2.0", "method": "foobar, "params": "bar", "baz]`},
			want: []string{`{"jsonrpc": "2.0", "error": {"code": -32700, "message": "Parse error"}, "id": null}`},
		},
		{
			name: "invalid Request object",
			in:   []string{`{"jsonrpc": "2.0", "method": 1, "params": "bar"}`},
			want: []string{`{"jsonrpc": "2.0", "error": {"code": -32600, "message": "Invalid Request"}, "id": null}`},
		},
		{
			name: "batch, invalid JSON",
			in: []string{`[` +
				`{"jsonrpc": "2.0", "method": "sum", "params": [1,2,4], "id": "1"},` +
				`{"jsonrpc": "2.0", "method"` +
				`]`},
			want: []string{`{"jsonrpc": "2.0", "error": {"code": -32700, "message": "Parse error"}, "id": null}`},
		},
		{
			name: "empty array",
			in:   []string{`[]`},
			want: []string{`{"jsonrpc": "2.0", "error": {"code": -32600, "message": "Invalid Request"}, "id": null}`},
		},
		{
			name: "invalid batch, not empty",
			in:   []string{`[1]`},
			want: []string{`[{"jsonrpc": "2.0", "error": {"code": -32600, "message": "Invalid Request"}, "id": null}]`},
		},
		{
			name: "invalid batch",
			in:   []string{`[1,2,3]`},
			want: []string{`[` +
				`{"jsonrpc": "2.0", "error": {"code": -32600, "message": "Invalid Request"}, "id": null},` +
				`{"jsonrpc": "2.0", "error": {"code": -32600, "message": "Invalid Request"}, "id": null},` +
				`{"jsonrpc": "2.0", "error": {"code": -32600, "message": "Invalid Request"}, "id": null}` +
				`]`},
		},
		{
			name: "batch",
			in: []string{`[` +
				`{"jsonrpc": "2.0", "method": "sum", "params": [1,2,4], "id": "1"},` +
				`{"jsonrpc": "2.0", "method": "notify_hello", "params": [7]},` +
				`{"jsonrpc": "2.0", "method": "subtract", "params": [42,23], "id": "2"},` +
				`{"foo": "boo"},` +
				`{"jsonrpc": "2.0", "method": "foo.get", "params": {"name": "myself"}, "id": "5"},` +
				`{"jsonrpc": "2.0", "method": "get_data", "id": "9"}` +
				`]`},
			want: []string{`[` +
				`{"jsonrpc": "2.0", "result": 7, "id": "1"},` +
				`{"jsonrpc": "2.0", "result": 19, "id": "2"},` +
				`{"jsonrpc": "2.0", "error": {"code": -32600, "message": "Invalid Request"}, "id": null},` +
				`{"jsonrpc": "2.0", "error": {"code": -32601, "message": "Method not found"}, "id": "5"},` +
				`{"jsonrpc": "2.0", "result": ["hello", 5], "id": "9"}` +
				`]`},
		},
		{
			name: "batch, all notifications",
			in: []string{`[` +
				`{"jsonrpc": "2.0", "method": "notify_sum", "params": [1,2,4]},` +
				`{"jsonrpc": "2.0", "method": "notify_hello", "params": [7]}` +
				`]`},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got := runDemo(t, strings.Join(tc.in, "\n")+"\n")
			require.Len(t, got, len(tc.want), "output: %q", got)
			for i := range tc.want {
				assert.JSONEq(t, tc.want[i], got[i])
			}
		})
	}
}

// TestMethods checks the answer of each method of the demo to one request.
func TestMethods(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want string
	}{
		{
			name: "subtract array",
			in:   `{"jsonrpc":"2.0","id":1,"method":"subtract","params":[42,23]}`,
			want: `{"jsonrpc":"2.0","id":1,"result":19}`,
		},
		{
			name: "subtract array of fractions",
			in:   `{"jsonrpc":"2.0","id":1,"method":"subtract","params":[1.5,0.25]}`,
			want: `{"jsonrpc":"2.0","id":1,"result":1.25}`,
		},
		{
			name: "subtract object",
			in:   `{"jsonrpc":"2.0","id":"x","method":"subtract","params":{"minuend":42,"subtrahend":23}}`,
			want: `{"jsonrpc":"2.0","id":"x","result":19}`,
		},
		{
			name: "subtract object with extra members",
			in:   `{"jsonrpc":"2.0","id":2,"method":"subtract","params":{"subtrahend":50,"other":true,"minuend":8}}`,
			want: `{"jsonrpc":"2.0","id":2,"result":-42}`,
		},
		{
			name: "sum",
			in:   `{"jsonrpc":"2.0","id":1,"method":"sum","params":[1,2,4]}`,
			want: `{"jsonrpc":"2.0","id":1,"result":7}`,
		},
		{
			name: "sum of fractions",
			in:   `{"jsonrpc":"2.0","id":1,"method":"sum","params":[0.5,0.25,-2]}`,
			want: `{"jsonrpc":"2.0","id":1,"result":-1.25}`,
		},
		{
			name: "sum of nothing",
			in:   `{"jsonrpc":"2.0","id":1,"method":"sum","params":[]}`,
			want: `{"jsonrpc":"2.0","id":1,"result":0}`,
		},
		{
			name: "get_data",
			in:   `{"jsonrpc":"2.0","id":9,"method":"get_data"}`,
			want: `{"jsonrpc":"2.0","id":9,"result":["hello",5]}`,
		},
		{
			name: "get_data with params",
			in:   `{"jsonrpc":"2.0","id":9,"method":"get_data","params":{"ignored":1}}`,
			want: `{"jsonrpc":"2.0","id":9,"result":["hello",5]}`,
		},
		{
			name: "update",
			in:   `{"jsonrpc":"2.0","id":1,"method":"update","params":[1,2,3,4,5]}`,
			want: `{"jsonrpc":"2.0","id":1,"result":null}`,
		},
		{
			name: "notify_hello",
			in:   `{"jsonrpc":"2.0","id":1,"method":"notify_hello","params":[7]}`,
			want: `{"jsonrpc":"2.0","id":1,"result":null}`,
		},
		{
			name: "notify_sum",
			in:   `{"jsonrpc":"2.0","id":1,"method":"notify_sum","params":[1,2,4]}`,
			want: `{"jsonrpc":"2.0","id":1,"result":null}`,
		},
		{
			name: "echo without params",
			in:   `{"jsonrpc":"2.0","id":1,"method":"echo"}`,
			want: `{"jsonrpc":"2.0","id":1,"result":null}`,
		},
		{
			name: "fail",
			in:   `{"jsonrpc":"2.0","id":1,"method":"fail"}`,
			want: `{"jsonrpc":"2.0","id":1,"error":{"code":-32001,"message":"custom failure","data":{"reason":"demo"}}}`,
		},
		{
			name: "sleep",
			in:   `{"jsonrpc":"2.0","id":1,"method":"sleep","params":{"ms":1}}`,
			want: `{"jsonrpc":"2.0","id":1,"result":"slept"}`,
		},
		{
			name: "unknown method",
			in:   `{"jsonrpc":"2.0","id":1,"method":"nope"}`,
			want: `{"jsonrpc":"2.0","id":1,"error":{"code":-32601,"message":"Method not found"}}`,
		},
		{
			name: "progress of nothing",
			in:   `{"jsonrpc":"2.0","id":1,"method":"progress","params":{"count":0}}`,
			want: `{"jsonrpc":"2.0","id":1,"result":"done"}`,
		},
		{
			name: "count nothing",
			in:   `{"jsonrpc":"2.0","id":1,"method":"count","params":{"n":0}}`,
			want: `{"jsonrpc":"2.0","id":1,"result":0}`,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got := runDemo(t, tc.in+"\n")
			require.Len(t, got, 1, "output: %q", got)
			assert.JSONEq(t, tc.want, got[0])
		})
	}
}

// TestSubtractInvalidParams checks that subtract answers any params other
// than [a, b] and {"minuend": a, "subtrahend": b} with -32602.
func TestSubtractInvalidParams(t *testing.T) {
	tests := []struct {
		name   string
		params string // "" for none
	}{
		{"no params", ""},
		{"empty array", `[]`},
		{"one number", `[1]`},
		{"three numbers", `[1,2,3]`},
		{"strings", `["4","2"]`},
		{"nested arrays", `[[4],[2]]`},
		{"nulls", `[null,null]`},
		{"empty object", `{}`},
		{"minuend only", `{"minuend":4}`},
		{"subtrahend only", `{"subtrahend":2}`},
		{"string minuend", `{"minuend":"4","subtrahend":2}`},
		{"null subtrahend", `{"minuend":4,"subtrahend":null}`},
		{"wrong case", `{"Minuend":4,"Subtrahend":2}`},
		{"other names", `{"a":4,"b":2}`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			in := `{"jsonrpc":"2.0","id":7,"method":"subtract"`
			if tc.params != "" {
				in += `,"params":` + tc.params
			}
			got := runDemo(t, in+"}\n")
			require.Len(t, got, 1, "output: %q", got)
			m := decode(t, got[0])
			assert.Equal(t, "7", string(m.ID))
			assert.Nil(t, m.Result, "line %q", got[0])
			if assert.NotNil(t, m.Error, "line %q", got[0]) {
				assert.Equal(t, -32602, m.Error.Code, "line %q", got[0])
			}
		})
	}
}

// TestEcho checks that echo sends the params back byte for byte, without
// re-encoding them.
func TestEcho(t *testing.T) {
	tests := []struct {
		name   string
		params string
	}{
		{"html characters", `["<&>","</script>"]`},
		{"unicode", `{"ü":"ü€😀","escaped":"\u00fc\u20ac\ud83d\ude00","sep":" "}`},
		{"escapes", `["\"\\\/\b\f\n\r\t","\u0000\u001f"]`},
		{"whitespace kept", `{ "a" : [ 1 ,	2 ] , "b" : { } }`},
		{"numbers kept", `[1.50,-0,0e0,1E+2,12345678901234567890,1e999]`},
		{"duplicate keys kept", `{"a":1,"a":2}`},
		{"empty array", `[]`},
		{"empty object", `{}`},
		{"deep", strings.Repeat(`[`, 100) + strings.Repeat(`]`, 100)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			in := `{"jsonrpc":"2.0","id":1,"method":"echo","params":` + tc.params + "}\n"
			got := runDemo(t, in)
			require.Len(t, got, 1, "output: %q", got)
			m := decode(t, got[0])
			assert.Equal(t, "1", string(m.ID))
			assert.Nil(t, m.Error)
			assert.Equal(t, tc.params, string(m.Result))
		})
	}
}

// TestInternal checks that a plain Go error becomes -32603 with the error
// in the data.
func TestInternal(t *testing.T) {
	got := runDemo(t, `{"jsonrpc":"2.0","id":1,"method":"internal"}`+"\n")
	require.Len(t, got, 1, "output: %q", got)
	m := decode(t, got[0])
	assert.Equal(t, "1", string(m.ID))
	require.NotNil(t, m.Error, "line %q", got[0])
	assert.Equal(t, -32603, m.Error.Code)
	assert.Equal(t, "Internal error", m.Error.Message)
	var data struct {
		Exception *string `json:"exception"`
		Detail    *string `json:"detail"`
	}
	require.NoError(t, json.Unmarshal(m.Error.Data, &data), "data %s", m.Error.Data)
	if assert.NotNil(t, data.Exception, "data %s", m.Error.Data) {
		assert.NotEmpty(t, *data.Exception)
	}
	if assert.NotNil(t, data.Detail, "data %s", m.Error.Data) {
		assert.Equal(t, "boom", *data.Detail)
	}
}

// TestPanic checks that a panic is answered with -32603 and that the demo
// goes on serving the lines after it.
func TestPanic(t *testing.T) {
	in := `{"jsonrpc":"2.0","id":1,"method":"panic"}` + "\n" +
		`{"jsonrpc":"2.0","method":"panic"}` + "\n" +
		`{"jsonrpc":"2.0","id":2,"method":"subtract","params":[5,3]}` + "\n" +
		`[{"jsonrpc":"2.0","id":3,"method":"panic"},{"jsonrpc":"2.0","id":4,"method":"get_data"}]` + "\n" +
		`{"jsonrpc":"2.0","id":5,"method":"sum","params":[1,1]}` + "\n"
	got := runDemo(t, in)
	require.Len(t, got, 4, "output: %q", got)
	var single []string
	for _, line := range got {
		if strings.HasPrefix(line, "[") {
			var batch []json.RawMessage
			require.NoError(t, json.Unmarshal([]byte(line), &batch))
			require.Len(t, batch, 2, "batch %q", line)
			m := decode(t, string(batch[0]))
			assert.Equal(t, "3", string(m.ID))
			if assert.NotNil(t, m.Error, "batch %q", line) {
				assert.Equal(t, -32603, m.Error.Code)
			}
			assert.JSONEq(t, `{"jsonrpc":"2.0","id":4,"result":["hello",5]}`, string(batch[1]))
			continue
		}
		single = append(single, line)
	}
	byID := responsesByID(t, single)
	require.Len(t, byID, 3, "output: %q", got)
	m := decode(t, byID["1"])
	if assert.NotNil(t, m.Error, "line %q", byID["1"]) {
		assert.Equal(t, -32603, m.Error.Code)
		assert.Equal(t, "Internal error", m.Error.Message)
	}
	assert.JSONEq(t, `{"jsonrpc":"2.0","id":2,"result":2}`, byID["2"])
	assert.JSONEq(t, `{"jsonrpc":"2.0","id":5,"result":2}`, byID["5"])
}

// TestNotificationsGetNoAnswer sends every method as a notification.
func TestNotificationsGetNoAnswer(t *testing.T) {
	methods := []string{
		`"subtract","params":[1,2]`, `"subtract","params":["bad"]`, `"sum","params":[1]`,
		`"get_data"`, `"update"`, `"notify_hello","params":[7]`, `"notify_sum","params":[1,2,4]`,
		`"echo","params":[1]`, `"count","params":{"n":3}`, `"fail"`, `"internal"`, `"panic"`,
		`"sleep","params":{"ms":1}`, `"nope"`,
	}
	var in strings.Builder
	for _, m := range methods {
		in.WriteString(`{"jsonrpc":"2.0","method":` + m + "}\n")
	}
	// A last request shows the demo read all the others.
	in.WriteString(`{"jsonrpc":"2.0","id":"last","method":"get_data"}` + "\n")
	got := runDemo(t, in.String())
	require.Len(t, got, 1, "output: %q", got)
	assert.JSONEq(t, `{"jsonrpc":"2.0","id":"last","result":["hello",5]}`, got[0])
}

// TestProgress checks that progress sends its notifications, in order,
// before its response.
func TestProgress(t *testing.T) {
	got := runDemo(t, `{"jsonrpc":"2.0","id":"p","method":"progress","params":{"count":3}}`+"\n")
	want := []string{
		`{"jsonrpc":"2.0","method":"progress","params":{"done":1,"total":3}}`,
		`{"jsonrpc":"2.0","method":"progress","params":{"done":2,"total":3}}`,
		`{"jsonrpc":"2.0","method":"progress","params":{"done":3,"total":3}}`,
		`{"jsonrpc":"2.0","id":"p","result":"done"}`,
	}
	require.Len(t, got, len(want), "output: %q", got)
	for i := range want {
		assert.JSONEq(t, want[i], got[i])
	}
}

// TestCount checks that count streams its items, in order, before its
// response, each item carrying the id of the request.
func TestCount(t *testing.T) {
	tests := []struct {
		name string
		id   string
	}{
		{"number id", `42`},
		{"string id", `"c-1"`},
		{"null id", `null`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got := runDemo(t, `{"jsonrpc":"2.0","id":`+tc.id+`,"method":"count","params":{"n":3}}`+"\n")
			want := []string{
				`{"jsonrpc":"2.0","method":"$/stream","params":{"id":` + tc.id + `,"item":{"index":0}}}`,
				`{"jsonrpc":"2.0","method":"$/stream","params":{"id":` + tc.id + `,"item":{"index":1}}}`,
				`{"jsonrpc":"2.0","method":"$/stream","params":{"id":` + tc.id + `,"item":{"index":2}}}`,
				`{"jsonrpc":"2.0","id":` + tc.id + `,"result":3}`,
			}
			require.Len(t, got, len(want), "output: %q", got)
			for i := range want {
				assert.JSONEq(t, want[i], got[i])
			}
		})
	}
}

// TestManyLines sends many requests at once. Their answers may come in any
// order, so they are matched by id; the items of each stream must still
// come in order and before the response they belong to.
func TestManyLines(t *testing.T) {
	var in strings.Builder
	want := make(map[string]string)
	streams := make(map[string]int) // id -> number of items
	for i := range 20 {
		id := fmt.Sprintf(`"s%d"`, i)
		fmt.Fprintf(&in, `{"jsonrpc":"2.0","id":%s,"method":"subtract","params":[%d,1]}`+"\n", id, i)
		want[id] = fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"result":%d}`, id, i-1)

		id = fmt.Sprintf(`%d`, 1000+i)
		fmt.Fprintf(&in, `{"jsonrpc":"2.0","id":%s,"method":"count","params":{"n":%d}}`+"\n", id, i%5)
		want[id] = fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"result":%d}`, id, i%5)
		streams[id] = i % 5

		fmt.Fprintf(&in, `{"jsonrpc":"2.0","method":"update","params":[%d]}`+"\n", i)

		id = fmt.Sprintf(`"e%d"`, i)
		fmt.Fprintf(&in, `{"jsonrpc":"2.0","id":%s,"method":"sleep","params":{"ms":%d}}`+"\n", id, i%3)
		want[id] = fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"result":"slept"}`, id)
	}
	got := runDemo(t, in.String())

	var responses []string
	seen := make(map[string]int) // id -> items seen so far
	for _, line := range got {
		m := decode(t, line)
		if m.Method == nil {
			responses = append(responses, line)
			id := string(m.ID)
			if n, ok := streams[id]; ok {
				assert.Equal(t, n, seen[id], "id %s answered after %d of its %d items", id, seen[id], n)
			}
			seen[id] = -1 // answered: no item may follow
			continue
		}
		require.Equal(t, "$/stream", *m.Method, "line %q", line)
		var p struct {
			ID   json.RawMessage `json:"id"`
			Item struct {
				Index int `json:"index"`
			} `json:"item"`
		}
		require.NoError(t, json.Unmarshal(m.Params, &p), "line %q", line)
		id := string(p.ID)
		require.Contains(t, streams, id, "item for an id that is no stream: %q", line)
		require.GreaterOrEqual(t, seen[id], 0, "item after the response: %q", line)
		assert.Equal(t, seen[id], p.Item.Index, "items out of order: %q", line)
		seen[id]++
	}
	byID := responsesByID(t, responses)
	require.Len(t, byID, len(want), "output: %q", got)
	for id, w := range want {
		if assert.Contains(t, byID, id) {
			assert.JSONEq(t, w, byID[id])
		}
	}
}

// TestEOF checks that the demo exits 0 at the end of its input, having
// answered a last line that lacks its newline.
func TestEOF(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want []string
	}{
		{name: "empty input"},
		{name: "blank lines", in: "\n\r\n  \n"},
		{
			name: "last line without newline",
			in:   `{"jsonrpc":"2.0","id":1,"method":"sum","params":[2,3]}`,
			want: []string{`{"jsonrpc":"2.0","id":1,"result":5}`},
		},
		{
			name: "CRLF",
			in:   `{"jsonrpc":"2.0","id":1,"method":"sum","params":[2,3]}` + "\r\n",
			want: []string{`{"jsonrpc":"2.0","id":1,"result":5}`},
		},
		{
			name: "truncated last line",
			in:   `{"jsonrpc":"2.0","id":1,"method":"su`,
			want: []string{`{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Parse error"}}`},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got := runDemo(t, tc.in)
			require.Len(t, got, len(tc.want), "output: %q", got)
			for i := range tc.want {
				assert.JSONEq(t, tc.want[i], got[i])
			}
		})
	}
}

// TestSleepCancelled sends a long sleep and then its cancel on a pipe it
// keeps open, reads the -32800 answer while the input is still open (so it
// is the cancel, not the end of input, that ends the sleep), and then
// closes the input and checks that the demo exits 0.
func TestSleepCancelled(t *testing.T) {
	tests := []struct {
		name string
		id   string
	}{
		{"number id", `17`},
		{"string id", `"zz"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ctx, cancel := context.WithTimeout(t.Context(), runTimeout)
			defer cancel()
			cmd := exec.CommandContext(ctx, demoPath)
			cmd.Env = demoEnv
			stdin, err := cmd.StdinPipe()
			require.NoError(t, err)
			stdout, err := cmd.StdoutPipe()
			require.NoError(t, err)
			var stderr lockedBuffer
			cmd.Stderr = &stderr
			require.NoError(t, cmd.Start())
			defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }() // only if the test fails early

			lines := []string{
				`{"jsonrpc":"2.0","id":` + tc.id + `,"method":"sleep","params":{"ms":3600000}}`,
				`{"jsonrpc":"2.0","id":"short","method":"sleep","params":{"ms":1}}`,
				`{"jsonrpc":"2.0","method":"$/cancelRequest","params":{"id":` + tc.id + `}}`,
			}
			_, err = io.WriteString(stdin, strings.Join(lines, "\n")+"\n")
			require.NoError(t, err)

			out := bufio.NewReader(stdout)
			var got []string
			for range 2 {
				line, err := out.ReadString('\n')
				require.NoError(t, err, "stderr:\n%s", stderr.String())
				got = append(got, strings.TrimSuffix(line, "\n"))
			}
			require.NoError(t, stdin.Close())
			rest, err := io.ReadAll(out)
			require.NoError(t, err)
			assert.Empty(t, string(rest))
			require.NoError(t, cmd.Wait(), "stderr:\n%s", stderr.String())
			assert.Equal(t, 0, cmd.ProcessState.ExitCode())

			byID := responsesByID(t, got)
			assert.JSONEq(t, `{"jsonrpc":"2.0","id":`+tc.id+`,"error":{"code":-32800,"message":"Request cancelled"}}`, byID[tc.id])
			assert.JSONEq(t, `{"jsonrpc":"2.0","id":"short","result":"slept"}`, byID[`"short"`])
		})
	}
}

// freePort returns a loopback address that was free a moment ago.
func freePort(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := l.Addr().String()
	require.NoError(t, l.Close())
	return addr
}

// TestNetwork runs the demo with -listen, -http and -name, calls it over a
// socket and over HTTP, and stops it with SIGTERM, which must end it with
// status 0.
func TestNetwork(t *testing.T) {
	sockAddr, httpAddr := freePort(t), freePort(t)
	ctx, cancel := context.WithTimeout(t.Context(), runTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, demoPath, "-listen", sockAddr, "-http", httpAddr, "-name", "b7")
	cmd.Env = demoEnv
	var stderr lockedBuffer
	cmd.Stderr = &stderr
	require.NoError(t, cmd.Start())
	defer func() { _ = cmd.Process.Kill() }()

	// The socket: newline-delimited, several requests on one connection.
	var nc net.Conn
	require.Eventually(t, func() bool {
		var err error
		nc, err = net.Dial("tcp", sockAddr)
		return err == nil
	}, 10*time.Second, 10*time.Millisecond, "the demo listens on %s", sockAddr)
	defer nc.Close()
	_, err := io.WriteString(nc, `{"jsonrpc":"2.0","id":1,"method":"subtract","params":[42,23]}`+"\n"+
		`{"jsonrpc":"2.0","id":2,"method":"backend"}`+"\n")
	require.NoError(t, err)
	r := bufio.NewReader(nc)
	got := map[string]bool{}
	for range 2 {
		line, err := r.ReadString('\n')
		require.NoError(t, err)
		got[strings.TrimSpace(line)] = true
	}
	assert.Equal(t, map[string]bool{
		`{"jsonrpc":"2.0","id":1,"result":19}`:   true,
		`{"jsonrpc":"2.0","id":2,"result":"b7"}`: true,
	}, got)

	// HTTP.
	var resp *http.Response
	require.Eventually(t, func() bool {
		var err error
		resp, err = http.Post("http://"+httpAddr+"/", "application/json",
			strings.NewReader(`{"jsonrpc": "2.0", "method": "sum", "params": [1, 2, 4], "id": "1"}`))
		return err == nil
	}, 10*time.Second, 10*time.Millisecond)
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	require.NoError(t, err)
	assert.Equal(t, http.StatusOK, resp.StatusCode)
	assert.Equal(t, `{"jsonrpc":"2.0","id":"1","result":7}`+"\n", string(body))

	require.NoError(t, cmd.Process.Signal(syscall.SIGTERM))
	require.NoError(t, cmd.Wait(), "stderr: %s", stderr.String())
}

// TestSIGTERMDrops nothing: 16 TCP connections pipeline sleep calls of
// up to 400 ms, four at a time each, and the demo gets SIGTERM in the
// middle. Every call must get its result, or the "not run" error that
// says it may be sent elsewhere; none may fail without a word. (Before,
// the demo passed its signal context to ServeListener, whose end stopped
// every connection as Close does: the calls running got no answer, and
// the calls sent but not read neither.)
func TestSIGTERMDropsNothing(t *testing.T) {
	addr := freePort(t)
	ctx, cancel := context.WithTimeout(t.Context(), runTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, demoPath, "-listen", addr)
	cmd.Env = demoEnv
	var stderr lockedBuffer
	cmd.Stderr = &stderr
	require.NoError(t, cmd.Start())
	defer func() { _ = cmd.Process.Kill() }()

	const conns, depth = 16, 4
	cs := dialDemo(t, ctx, addr, conns)

	var (
		mu       sync.Mutex
		answered int
		notRun   int
		other    []error
		wg       sync.WaitGroup
	)
	progress := make(chan struct{}, conns*depth)
	for i, c := range cs {
		for j := range depth {
			wg.Go(func() {
				for k := 0; ; k++ {
					ms := (i*depth + j + k*7) % 400
					var got string
					err := c.Call(ctx, "sleep", map[string]int{"ms": ms}, &got)
					mu.Lock()
					switch {
					case err == nil && got == "slept":
						answered++
					case errors.Is(err, jsonrpc.ErrNotRun):
						notRun++
					case errors.Is(err, jsonrpc.ErrClosed) && !jsonrpc.MayHaveRun(err):
						// The connection had ended before the call:
						// nothing was sent.
					default:
						other = append(other, err)
					}
					mu.Unlock()
					select {
					case progress <- struct{}{}:
					default:
					}
					if err != nil {
						return
					}
				}
			})
		}
	}
	for range 2 * conns * depth {
		<-progress // calls are answered: the demo is busy
	}
	require.NoError(t, cmd.Process.Signal(syscall.SIGTERM))
	wg.Wait()
	require.NoError(t, cmd.Wait(), "stderr: %s", stderr.String())
	assert.Empty(t, other, "calls that failed without an answer or a not-run error")
	assert.Positive(t, answered)
	assert.Positive(t, notRun, "calls sent after SIGTERM are answered not run")
	t.Logf("%d answered, %d not run", answered, notRun)
}

// ranLine returns the line that -count writes on exit, from the demo's
// standard error.
func ranLine(t *testing.T, stderr string) string {
	t.Helper()
	var found []string
	for line := range strings.Lines(stderr) {
		if strings.HasPrefix(line, "jsonrpc-demo: ran ") {
			found = append(found, strings.TrimSuffix(line, "\n"))
		}
	}
	require.Len(t, found, 1, "stderr: %s", stderr)
	return found[0]
}

// TestRunCountStdio: with -count the demo says on exit how many requests
// and notifications each method ran; a method with no handler ran
// nothing. Without -count it writes nothing to its standard error.
func TestRunCountStdio(t *testing.T) {
	input := `{"jsonrpc":"2.0","id":1,"method":"subtract","params":[42,23]}` + "\n" +
		`{"jsonrpc":"2.0","method":"notify_hello","params":[7]}` + "\n" +
		`{"jsonrpc":"2.0","id":2,"method":"no such method"}` + "\n" +
		`{"jsonrpc":"2.0","id":3,"method":"subtract","params":[1,1]}` + "\n" +
		`{"jsonrpc":"2.0","id":4,"method":"fail"}` + "\n"
	for _, tc := range []struct {
		args []string
		want string
	}{
		{nil, ""},
		{[]string{"-count"}, "jsonrpc-demo: ran fail=1 notify_hello=1 subtract=2\n"},
	} {
		ctx, cancel := context.WithTimeout(t.Context(), runTimeout)
		cmd := exec.CommandContext(ctx, demoPath, tc.args...)
		cmd.Env = demoEnv
		cmd.Stdin = strings.NewReader(input)
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		err := cmd.Run()
		cancel()
		require.NoError(t, err, "stderr: %s", stderr.String())
		assert.Len(t, outputLines(t, stdout.String()), 4, "args %v", tc.args)
		assert.Equal(t, tc.want, stderr.String(), "args %v", tc.args)
	}

	ctx, cancel := context.WithTimeout(t.Context(), runTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, demoPath, "-count")
	cmd.Env = demoEnv
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	require.NoError(t, cmd.Run())
	assert.Equal(t, "jsonrpc-demo: ran nothing\n", stderr.String())
}

// TestRunCountSIGTERM: the count that -count reports after a graceful
// stop is that of the calls answered, over a socket and over HTTP: the
// calls answered "not run" are not in it. 8 TCP connections pipeline
// sleep calls, 4 at a time each, and 4 HTTP callers make sum calls, until
// SIGTERM; every call is answered, answered "not run", or surely not sent
// (MayHaveRun false), so the count must be exact.
func TestRunCountSIGTERM(t *testing.T) {
	addr, httpAddr := freePort(t), freePort(t)
	ctx, cancel := context.WithTimeout(t.Context(), runTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, demoPath, "-listen", addr, "-http", httpAddr, "-count", "-name", "b1")
	cmd.Env = demoEnv
	var stderr lockedBuffer
	cmd.Stderr = &stderr
	require.NoError(t, cmd.Start())
	defer func() { _ = cmd.Process.Kill() }()

	const conns, depth, httpCallers = 8, 4, 4
	cs := dialDemo(t, ctx, addr, conns)
	var name string
	require.NoError(t, cs[0].Call(ctx, "backend", nil, &name))
	hc := &jsonrpc.HTTPClient{URL: "http://" + httpAddr + "/"}
	require.Eventually(t, func() bool {
		var got float64
		return hc.Call(ctx, "sum", []int{1}, &got) == nil
	}, 10*time.Second, 10*time.Millisecond, "the demo serves HTTP on %s", httpAddr)

	var (
		mu         sync.Mutex
		slept, sum int // answered calls
		notRun     int
		other      []error
		wg         sync.WaitGroup
	)
	sum++ // the call above
	record := func(err error, answered *int) {
		mu.Lock()
		defer mu.Unlock()
		switch {
		case err == nil:
			*answered++
		case errors.Is(err, jsonrpc.ErrNotRun):
			notRun++
		case !jsonrpc.MayHaveRun(err):
			// Never sent: the connection had ended before the call.
		default:
			other = append(other, err)
		}
	}
	progress := make(chan struct{}, conns*depth+httpCallers)
	tick := func() {
		select {
		case progress <- struct{}{}:
		default:
		}
	}
	for i, c := range cs {
		for j := range depth {
			wg.Go(func() {
				for k := 0; ; k++ {
					var got string
					err := c.Call(ctx, "sleep", map[string]int{"ms": (i*depth + j + k*7) % 50}, &got)
					record(err, &slept)
					tick()
					if err != nil {
						return
					}
				}
			})
		}
	}
	for range httpCallers {
		wg.Go(func() {
			for {
				var got float64
				err := hc.Call(ctx, "sum", []int{1, 2}, &got)
				record(err, &sum)
				tick()
				if err != nil {
					return
				}
			}
		})
	}
	for range 4 * (conns*depth + httpCallers) {
		<-progress // calls are answered: the demo is busy
	}
	require.NoError(t, cmd.Process.Signal(syscall.SIGTERM))
	wg.Wait()
	require.NoError(t, cmd.Wait(), "stderr: %s", stderr.String())
	require.Empty(t, other, "calls that failed without an answer or a not-run error")
	assert.Positive(t, notRun)
	assert.Equal(t, fmt.Sprintf("jsonrpc-demo: ran backend=1 sleep=%d sum=%d", slept, sum), ranLine(t, stderr.String()))
	t.Logf("%d sleep and %d sum calls answered, %d not run", slept, sum, notRun)
}

// dialDemo dials n connections to the demo at addr once it listens; they
// are closed when the test ends.
func dialDemo(t *testing.T, ctx context.Context, addr string, n int) []*jsonrpc.Conn {
	t.Helper()
	var cs []*jsonrpc.Conn
	t.Cleanup(func() {
		for _, c := range cs {
			_ = c.Close()
		}
	})
	require.Eventually(t, func() bool {
		c, err := jsonrpc.Dial(ctx, "tcp", addr, nil)
		if err != nil {
			return false
		}
		cs = append(cs, c)
		return true
	}, 10*time.Second, 10*time.Millisecond, "the demo listens on %s", addr)
	for len(cs) < n {
		c, err := jsonrpc.Dial(ctx, "tcp", addr, nil)
		require.NoError(t, err)
		cs = append(cs, c)
	}
	return cs
}
