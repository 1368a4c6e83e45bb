package jsonrpc_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"iter"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/ndjsonrpc/jsonrpc"
)

// This file holds the fuzz targets that drive a whole server, and the
// oracle they share: an independent model, built on encoding/json, of what
// the package documentation says a server answers to each line.

// specSeeds are the requests of the examples of the JSON-RPC 2.0
// specification, each on one line.
var specSeeds = []string{
	`{"jsonrpc": "2.0", "method": "subtract", "params": [42, 23], "id": 1}`,
	`{"jsonrpc": "2.0", "method": "subtract", "params": [23, 42], "id": 2}`,
	`{"jsonrpc": "2.0", "method": "subtract", "params": {"subtrahend": 23, "minuend": 42}, "id": 3}`,
	`{"jsonrpc": "2.0", "method": "subtract", "params": {"minuend": 42, "subtrahend": 23}, "id": 4}`,
	`{"jsonrpc": "2.0", "method": "update", "params": [1,2,3,4,5]}`,
	`{"jsonrpc": "2.0", "method": "foobar"}`,
	`{"jsonrpc": "2.0", "method": "foobar", "id": "1"}`,
	`{"jsonrpc": "2.0", "method": "foobar, "params": "bar", "baz]`,
	`{"jsonrpc": "2.0", "method": 1, "params": "bar"}`,
	`[{"jsonrpc": "2.0", "method": "sum", "params": [1,2,4], "id": "1"},{"jsonrpc": "2.0", "method"]`,
	`[]`,
	`[1]`,
	`[1,2,3]`,
	`[{"jsonrpc": "2.0", "method": "sum", "params": [1,2,4], "id": "1"},{"jsonrpc": "2.0", "method": "notify_hello", "params": [7]},{"jsonrpc": "2.0", "method": "subtract", "params": [42,23], "id": "2"},{"foo": "boo"},{"jsonrpc": "2.0", "method": "foo.get", "params": {"name": "myself"}, "id": "5"},{"jsonrpc": "2.0", "method": "get_data", "id": "9"}]`,
	`[{"jsonrpc": "2.0", "method": "notify_sum", "params": [1,2,4]},{"jsonrpc": "2.0", "method": "notify_hello", "params": [7]}]`,
}

// edgeSeeds are lines at the edges of the wire format.
var edgeSeeds = []string{
	``, ` `, "\r", "\t \r",
	`{"jsonrpc":"2.0","id":null,"method":"echo","params":[1]}`,
	`{"jsonrpc":"2.0","id":1e999,"method":"echo","params":[-0,1e999]}`,
	`{"jsonrpc":"2.0","id":-0,"method":"echo"}`,
	`{"jsonrpc":"2.0","id":"\u00fc\n\"","method":"echo","params":{"a":"<&>"}}`,
	`{"jsonrpc":"2.0","id":{},"method":"echo"}`,
	`{"jsonrpc":"2.0","id":[1],"method":"echo"}`,
	`{"jsonrpc":"2.0","id":true,"method":"echo"}`,
	`{"jsonrpc":"2.0","id":1,"id":2,"method":"echo"}`,
	`{"jsonrpc":"2.0","\u0069d":1,"id":2,"method":"echo"}`,
	`{"jsonrpc":"2.0","id":1,"method":"echo","method":"echo"}`,
	`{"jsonrpc":"2.0","id":1,"method":"echo\u0000"}`,
	`{"jsonrpc":"\u0032.0","id":1,"method":"\u0065cho","params":[]}`,
	`{"jsonrpc":"2.0 ","id":1,"method":"echo"}`,
	`{"jsonrpc":2.0,"id":1,"method":"echo"}`,
	`{"JSONRPC":"2.0","id":1,"method":"echo"}`,
	`{"jsonrpc":"2.0","id":1,"Method":"echo"}`,
	`{"jsonrpc":"2.0","id":1,"method":"echo","params":null}`,
	`{"jsonrpc":"2.0","id":1,"method":"echo","params":"x"}`,
	`{"jsonrpc":"2.0","id":1,"method":null}`,
	`{"jsonrpc":"2.0","id":1}`,
	`{"jsonrpc":"2.0","method":"echo","result":1}`,
	`{"jsonrpc":"2.0","id":1,"result":1}`,
	`{"jsonrpc":"2.0","id":1,"result":1,"error":null}`,
	`{"jsonrpc":"2.0","id":1,"error":{"code":-1,"message":"m"}}`,
	`{"jsonrpc":"2.0","id":1,"error":{"code":1.5,"message":"m"}}`,
	`{"jsonrpc":"2.0","id":1,"error":"no"}`,
	`{"jsonrpc":"2.0","method":"$/cancelRequest","params":{"id":1}}`,
	`{"jsonrpc":"2.0","id":9,"method":"$/cancelRequest","params":{"id":1}}`,
	`[{"jsonrpc":"2.0","method":"$/cancelRequest","params":{"id":1}},{"jsonrpc":"2.0","id":1,"method":"echo"}]`,
	`[{"jsonrpc":"2.0","id":1,"result":1},{"jsonrpc":"2.0","id":2,"method":"echo"}]`,
	`[{"jsonrpc":"2.0","id":1,"result":1}]`,
	`[{"jsonrpc":"2.0","id":1,"method":"echo"},{"jsonrpc":"2.0","id":1,"method":"echo"}]`,
	`[[],{},null,"x",1]`,
	`[[[[[[[[]]]]]]]]`,
	`[[[[[[[[`,
	`{"jsonrpc":"2.0","id":1,"method":"echo"} x`,
	`{"jsonrpc":"2.0","id":1,"method":"echo"}{"jsonrpc":"2.0","id":2,"method":"echo"}`,
	`1 2`, `null`, `"x"`, `0`, `true`,
	"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"echo\",\"params\":[\"\xff\"]}",
	"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"echo\",\"params\":[\"\x00\"]}",
	"\x00",
	"\xef\xbb\xbf{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"echo\"}",
	`{"jsonrpc":"2.0","id":1,"method":"notify","params":{"n":2}}`,
	`{"jsonrpc":"2.0","id":"s","method":"stream","params":{"n":3}}`,
	`{"jsonrpc":"2.0","id":2,"method":"panic"}`,
	`{"jsonrpc":"2.0","method":"panic"}`,
	`{"jsonrpc":"2.0","id":3,"method":"fail"}`,
}

// fuzzMux is specMux plus methods that send notifications, stream, fail
// and panic.
func fuzzMux() *jsonrpc.Mux {
	mux := specMux()
	type count struct {
		N int `json:"n"`
	}
	mux.Handle("notify", jsonrpc.Func(func(ctx context.Context, p count) (int, error) {
		for i := range min(p.N, 10) {
			if err := jsonrpc.Peer(ctx).Notify(ctx, "note", []int{i}); err != nil {
				return 0, err
			}
		}
		return p.N, nil
	}))
	mux.Handle("stream", jsonrpc.Stream(func(_ context.Context, p count) iter.Seq2[int, error] {
		return func(yield func(int, error) bool) {
			for i := range min(p.N, 10) {
				if !yield(i, nil) {
					return
				}
			}
		}
	}))
	mux.HandleFunc("fail", func(context.Context, *jsonrpc.Request) (any, error) {
		return nil, errors.New("failed")
	})
	mux.HandleFunc("panic", func(context.Context, *jsonrpc.Request) (any, error) {
		panic("fuzz panic")
	})
	return mux
}

// valueVerdict is what the documentation says a server answers to one value.
type valueVerdict struct {
	answered bool   // it gets exactly one response
	id       string // the JSON text of that response's id
	invalid  bool   // the response is the error -32600
}

// members decodes the object obj (valid JSON) into its members, keeping
// the last value of each name, and counts how often each name appears.
func decodeMembers(obj []byte) (last map[string]json.RawMessage, count map[string]int, err error) {
	dec := json.NewDecoder(bytes.NewReader(obj))
	if _, err := dec.Token(); err != nil {
		return nil, nil, err
	}
	last = make(map[string]json.RawMessage)
	count = make(map[string]int)
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, nil, err
		}
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, nil, err
		}
		name := tok.(string)
		last[name] = v
		count[name]++
	}
	return last, count, nil
}

// isIDValue reports whether raw is a string, a number or null.
func isIDText(raw []byte) bool {
	if len(raw) == 0 {
		return false
	}
	c := raw[0]
	return c == '"' || c == '-' || '0' <= c && c <= '9' || string(raw) == "null"
}

// isString reports whether raw is a JSON string equal to s.
func isJSONString(raw []byte, s string) bool {
	var v string
	return len(raw) > 0 && raw[0] == '"' && json.Unmarshal(raw, &v) == nil && v == s
}

// judge says how a server answers the value v, which is valid JSON and one
// request object or one element of a batch.
func judgeValue(v []byte) valueVerdict {
	invalid := valueVerdict{answered: true, id: "null", invalid: true}
	if v[0] != '{' {
		return invalid
	}
	m, count, err := decodeMembers(v)
	if err != nil {
		panic("judge: " + err.Error())
	}
	// A member that appears twice, known or not, makes it invalid.
	dup := false
	for _, n := range count {
		dup = dup || n > 1
	}
	version, hasVersion := m["jsonrpc"]
	method, hasMethod := m["method"]
	params, hasParams := m["params"]
	id, hasID := m["id"]
	result, hasResult := m["result"]
	_, hasError := m["error"]
	goodVersion := hasVersion && isJSONString(version, jsonrpc.Version)
	goodID := hasID && isIDText(id)

	// A valid response sent to a server is dropped. The error object is
	// read by the envelope's rules: exact names, none twice, an integer
	// code and a string message.
	if !hasMethod && (hasResult || hasError) && !dup && goodVersion && goodID && hasResult != hasError {
		if result != nil {
			return valueVerdict{}
		}
		if raw := m["error"]; raw[0] == '{' {
			em, ecount, err := decodeMembers(raw)
			edup := false
			for _, n := range ecount {
				edup = edup || n > 1
			}
			code, message := em["code"], em["message"]
			if _, perr := strconv.ParseInt(string(code), 10, 64); err == nil && !edup && perr == nil && len(message) > 0 && message[0] == '"' {
				return valueVerdict{}
			}
		}
	}

	if dup || !goodVersion || !hasMethod || method[0] != '"' ||
		hasParams && params[0] != '{' && params[0] != '[' ||
		hasID && !goodID || hasResult || hasError {
		// The id is echoed when it is valid and there is only one.
		if count["id"] == 1 && goodID {
			invalid.id = string(id)
		}
		return invalid
	}
	if !hasID {
		return valueVerdict{} // a notification
	}
	return valueVerdict{answered: true, id: string(id)}
}

// lineVerdict is what the documentation says a server writes for one line.
type lineVerdict struct {
	none    bool           // nothing at all
	code    int            // a single error with a null id, when not zero
	batch   []valueVerdict // the answered elements of a batch, in order
	isBatch bool
	single  valueVerdict
}

// judgeLine says how a server answers one line, without its "\n".
func judgeLine(line []byte) lineVerdict {
	line = bytes.TrimSuffix(line, []byte("\r"))
	if len(bytes.TrimLeft(line, " \t\r\n")) == 0 {
		return lineVerdict{none: true}
	}
	if !json.Valid(line) || !utf8.Valid(line) {
		return lineVerdict{code: int(jsonrpc.CodeParseError)}
	}
	v := bytes.TrimLeft(line, " \t\r\n")
	switch v[0] {
	case '[':
		var elems []json.RawMessage
		if err := json.Unmarshal(v, &elems); err != nil {
			panic("judgeLine: " + err.Error())
		}
		if len(elems) == 0 || len(elems) > jsonrpc.DefaultMaxBatch {
			return lineVerdict{code: int(jsonrpc.CodeInvalidRequest)}
		}
		lv := lineVerdict{isBatch: true}
		for _, el := range elems {
			if vd := judgeValue(el); vd.answered {
				lv.batch = append(lv.batch, vd)
			}
		}
		lv.none = len(lv.batch) == 0
		return lv
	case '{':
		vd := judgeValue(bytes.TrimRight(v, " \t\r\n"))
		return lineVerdict{none: !vd.answered, single: vd}
	}
	return lineVerdict{code: int(jsonrpc.CodeInvalidRequest)}
}

// checkedResponse is a response as written, checked by checkResponse.
type checkedResponse struct {
	id   string
	code int // 0 for a result
}

// checkResponse checks that raw is a well-formed JSON-RPC 2.0 response
// and returns its id and error code.
func checkResponse(t *testing.T, raw []byte) checkedResponse {
	t.Helper()
	if len(raw) == 0 || raw[0] != '{' {
		t.Fatalf("response is not an object: %q", raw)
	}
	m, count, err := decodeMembers(raw)
	if err != nil {
		t.Fatalf("response %q: %v", raw, err)
	}
	for name, n := range count {
		switch {
		case n > 1:
			t.Fatalf("response %q: member %q appears %d times", raw, name, n)
		case name != "jsonrpc" && name != "id" && name != "result" && name != "error":
			t.Fatalf("response %q: unexpected member %q", raw, name)
		}
	}
	if !isJSONString(m["jsonrpc"], jsonrpc.Version) {
		t.Fatalf("response %q: jsonrpc is not \"2.0\"", raw)
	}
	id, ok := m["id"]
	if !ok || !isIDText(id) {
		t.Fatalf("response %q: no valid id", raw)
	}
	_, hasResult := m["result"]
	e, hasError := m["error"]
	if hasResult == hasError {
		t.Fatalf("response %q: not exactly one of result and error", raw)
	}
	if hasResult {
		return checkedResponse{id: string(id)}
	}
	em, ecount, err := decodeMembers(e)
	if e[0] != '{' || err != nil {
		t.Fatalf("response %q: error is not an object", raw)
	}
	for name, n := range ecount {
		if n > 1 || name != "code" && name != "message" && name != "data" {
			t.Fatalf("response %q: error member %q", raw, name)
		}
	}
	var code int
	if err := json.Unmarshal(em["code"], &code); err != nil || code == 0 {
		t.Fatalf("response %q: error code is not a non-zero integer", raw)
	}
	if msg := em["message"]; len(msg) == 0 || msg[0] != '"' {
		t.Fatalf("response %q: error message is not a string", raw)
	}
	return checkedResponse{id: string(id), code: code}
}

// checkNotification checks that raw is a well-formed notification and
// returns its method and params.
func checkNotification(t *testing.T, raw []byte) (method string, params json.RawMessage) {
	t.Helper()
	m, count, err := decodeMembers(raw)
	if err != nil {
		t.Fatalf("notification %q: %v", raw, err)
	}
	for name, n := range count {
		if n > 1 || name != "jsonrpc" && name != "method" && name != "params" {
			t.Fatalf("notification %q: member %q", raw, name)
		}
	}
	if !isJSONString(m["jsonrpc"], jsonrpc.Version) {
		t.Fatalf("notification %q: jsonrpc is not \"2.0\"", raw)
	}
	if err := json.Unmarshal(m["method"], &method); err != nil {
		t.Fatalf("notification %q: method is not a string", raw)
	}
	if p, ok := m["params"]; ok && p[0] != '{' && p[0] != '[' {
		t.Fatalf("notification %q: params are neither object nor array", raw)
	}
	return method, m["params"]
}

// fuzzHang is how long one input may take before the fuzz target reports
// a hang; the fuzzing engine has no timeout of its own.
const fuzzHang = 10 * time.Second

// serveFuzz runs a server with mux over input until EOF.
func serveFuzz(t *testing.T, mux *jsonrpc.Mux, input []byte) []string {
	t.Helper()
	var out bytes.Buffer
	srv := &jsonrpc.Server{Options: jsonrpc.Options{Handler: mux}}
	done := make(chan error, 1)
	go func() { done <- srv.Serve(t.Context(), bytes.NewReader(input), &out) }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Serve(%q) = %v", input, err)
		}
	case <-time.After(fuzzHang):
		stacks := make([]byte, 1<<20)
		stacks = stacks[:runtime.Stack(stacks, true)]
		t.Fatalf("Serve(%q) did not return within %v; goroutines:\n%s", input, fuzzHang, stacks)
	}
	if out.Len() > 0 && !bytes.HasSuffix(out.Bytes(), []byte("\n")) {
		t.Fatalf("Serve(%q): output does not end with a newline: %q", input, out.Bytes())
	}
	return splitLines(out.String())
}

// FuzzBatch sends one arbitrary line. The answer is nothing or one line of
// valid JSON, and for a batch, an array with one response per element that
// is not a notification, in order, with the right ids.
func FuzzBatch(f *testing.F) {
	for _, s := range append(specSeeds, edgeSeeds...) {
		f.Add([]byte(s))
	}
	// specMux has no method that sends notifications.
	mux := specMux()
	f.Fuzz(func(t *testing.T, line []byte) {
		line = bytes.ReplaceAll(line, []byte("\n"), []byte(" "))
		got := serveFuzz(t, mux, append(line, '\n'))
		want := judgeLine(line)
		if want.none {
			if len(got) != 0 {
				t.Fatalf("line %q: got %q, want no output", line, got)
			}
			return
		}
		if len(got) != 1 {
			t.Fatalf("line %q: got %d lines %q, want 1", line, len(got), got)
		}
		out := []byte(got[0])
		if !json.Valid(out) || !utf8.Valid(out) {
			t.Fatalf("line %q: output is not valid JSON: %q", line, out)
		}
		switch {
		case want.code != 0:
			r := checkResponse(t, out)
			if r.id != "null" || r.code != want.code {
				t.Fatalf("line %q: got %q, want error %d with a null id", line, out, want.code)
			}
		case want.isBatch:
			var elems []json.RawMessage
			if out[0] != '[' || json.Unmarshal(out, &elems) != nil {
				t.Fatalf("line %q: got %q, want an array", line, out)
			}
			if len(elems) != len(want.batch) {
				t.Fatalf("line %q: got %d responses %q, want %d", line, len(elems), out, len(want.batch))
			}
			for i, el := range elems {
				r := checkResponse(t, el)
				if r.id != want.batch[i].id {
					t.Fatalf("line %q: response %d has id %s, want %s", line, i, r.id, want.batch[i].id)
				}
				if want.batch[i].invalid && r.code != int(jsonrpc.CodeInvalidRequest) {
					t.Fatalf("line %q: response %d is %q, want Invalid Request", line, i, el)
				}
			}
		default:
			r := checkResponse(t, out)
			if r.id != want.single.id {
				t.Fatalf("line %q: response has id %s, want %s", line, r.id, want.single.id)
			}
			if want.single.invalid && r.code != int(jsonrpc.CodeInvalidRequest) {
				t.Fatalf("line %q: got %q, want Invalid Request", line, out)
			}
		}
	})
}

// FuzzServe sends arbitrary input, many lines, through the whole server.
// Every output line is a well-formed response, batch of responses or
// notification; every id of a request is answered exactly once, however
// the answers are ordered; nothing else is answered.
func FuzzServe(f *testing.F) {
	f.Add([]byte(strings.Join(specSeeds, "\n") + "\n"))
	f.Add([]byte(strings.Join(edgeSeeds, "\n")))
	f.Add([]byte(strings.Join(edgeSeeds, "\r\n") + "\r\n"))
	for _, s := range append(specSeeds, edgeSeeds...) {
		f.Add([]byte(s + "\n" + s + "\n"))
	}
	f.Add([]byte("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"stream\",\"params\":{\"n\":5}}\n" +
		"{\"jsonrpc\":\"2.0\",\"method\":\"$/cancelRequest\",\"params\":{\"id\":1}}\n" +
		"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"notify\",\"params\":{\"n\":3}}\n" +
		"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"get_data\""))
	mux := fuzzMux()
	f.Fuzz(func(t *testing.T, input []byte) {
		got := serveFuzz(t, mux, input)

		want := make(map[string]int) // id -> responses expected
		wantBatches := 0
		for line := range bytes.SplitSeq(input, []byte("\n")) {
			lv := judgeLine(line)
			switch {
			case lv.none:
			case lv.code != 0:
				want["null"]++
			case lv.isBatch:
				wantBatches++
				for _, vd := range lv.batch {
					want[vd.id]++
				}
			default:
				want[lv.single.id]++
			}
		}

		answered := make(map[string]int)
		batches := 0
		for _, line := range got {
			out := []byte(line)
			if !json.Valid(out) || !utf8.Valid(out) {
				t.Fatalf("input %q: output line is not valid JSON: %q", input, out)
			}
			if out[0] == '[' {
				batches++
				var elems []json.RawMessage
				if err := json.Unmarshal(out, &elems); err != nil || len(elems) == 0 {
					t.Fatalf("input %q: bad batch response %q", input, out)
				}
				for _, el := range elems {
					answered[checkResponse(t, el).id]++
				}
				continue
			}
			m, _, err := decodeMembers(out)
			if err != nil {
				t.Fatalf("input %q: output line %q: %v", input, out, err)
			}
			if _, ok := m["method"]; !ok {
				answered[checkResponse(t, out).id]++
				continue
			}
			method, params := checkNotification(t, out)
			if method == jsonrpc.StreamItemMethod {
				pm, _, err := decodeMembers(params)
				if err != nil || want[string(pm["id"])] == 0 {
					t.Fatalf("input %q: stream item %q for no request", input, out)
				}
			}
		}
		if batches != wantBatches {
			t.Fatalf("input %q: got %d batch responses, want %d; output %q", input, batches, wantBatches, got)
		}
		for id, n := range want {
			if answered[id] != n {
				t.Fatalf("input %q: id %s answered %d times, want %d; output %q", input, id, answered[id], n, got)
			}
		}
		for id, n := range answered {
			if want[id] == 0 {
				t.Fatalf("input %q: id %s answered %d times, want never; output %q", input, id, n, got)
			}
		}
	})
}
