package jsonrpc_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/ndjsonrpc/jsonrpc"
)

// This file holds the fuzz targets of the HTTP transport: ServeHTTP fed
// arbitrary bodies and Accept headers, and HTTPClient fed arbitrary
// responses, status line and headers included, through a RoundTripper
// that parses them as net/http's Transport does, with no network.

// rawResponse is an http.RoundTripper that answers every request with the
// HTTP response whose bytes it holds.
type rawResponse []byte

func (r rawResponse) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Body != nil {
		_ = req.Body.Close()
	}
	return http.ReadResponse(bufio.NewReader(bytes.NewReader(r)), req)
}

// fuzzClientLimit is the HTTPClient's MaxMessageSize in the fuzz targets.
const fuzzClientLimit = 512

// fuzzClient returns an HTTPClient that gets raw as the response to
// every request, follows no redirect, and adds the params of each
// notification passed to OnNotify to notes.
func fuzzClient(raw []byte, notes *[]json.RawMessage) *jsonrpc.HTTPClient {
	return &jsonrpc.HTTPClient{
		URL: "http://fuzz.invalid/rpc",
		HTTP: &http.Client{
			Transport:     rawResponse(raw),
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
		},
		MaxMessageSize: fuzzClientLimit,
		OnNotify: func(r *jsonrpc.Request) {
			*notes = append(*notes, append(json.RawMessage(nil), r.Params...))
		},
	}
}

// fuzzWithin runs f, which what names, and fails t if it does not return
// within fuzzHang of being given the input raw (an HTTP response, or what
// a peer sends).
func fuzzWithin(t *testing.T, what string, raw []byte, f func()) {
	t.Helper()
	done := make(chan struct{})
	go func() {
		defer close(done)
		f()
	}()
	select {
	case <-done:
	case <-time.After(fuzzHang):
		stacks := make([]byte, 1<<20)
		stacks = stacks[:runtime.Stack(stacks, true)]
		t.Fatalf("%s, given %q, did not return within %v; goroutines:\n%s", what, raw, fuzzHang, stacks)
	}
}

// fuzzCall calls "m" through an HTTPClient that gets raw as its response,
// and returns Call's result, the params of the notifications passed to
// OnNotify, and Call's error.
func fuzzCall(t *testing.T, raw []byte) (result json.RawMessage, notes []json.RawMessage, err error) {
	t.Helper()
	c := fuzzClient(raw, &notes)
	fuzzWithin(t, "Call", raw, func() { err = c.Call(context.Background(), "m", nil, &result) })
	return result, notes, err
}

// fuzzStream ranges over a Stream of "m" through an HTTPClient that gets
// raw as its response, and returns the items it yields.
func fuzzStream(t *testing.T, raw []byte) (items []json.RawMessage) {
	t.Helper()
	var notes []json.RawMessage
	c := fuzzClient(raw, &notes)
	fuzzWithin(t, "Stream", raw, func() {
		for item, err := range c.Stream(context.Background(), "m", nil) {
			if err == nil {
				items = append(items, item)
			}
		}
	})
	return items
}

// fuzzBatch sends a batch of two calls (ids 1 and 2) through an
// HTTPClient that gets raw as its response, and returns their results.
func fuzzBatch(t *testing.T, raw []byte) (results [2]json.RawMessage) {
	t.Helper()
	var notes []json.RawMessage
	c := fuzzClient(raw, &notes)
	fuzzWithin(t, "Batch", raw, func() {
		_ = c.Batch(context.Background(),
			&jsonrpc.BatchCall{Method: "a", Result: &results[0]},
			&jsonrpc.BatchCall{Method: "b", Result: &results[1]})
	})
	return results
}

// compactJSON returns valid JSON compacted, for comparisons.
func compactJSON(t *testing.T, v []byte) string {
	t.Helper()
	var b bytes.Buffer
	if err := json.Compact(&b, v); err != nil {
		t.Fatalf("compacting %q: %v", v, err)
	}
	return b.String()
}

// plainVerdict is what the documentation says Call makes of a response in
// plain JSON: ok with result, or an error; sure is false when the oracle
// makes no claim.
type plainVerdict struct {
	sure, ok bool
	tooLarge bool
	result   []byte
}

// judgePlain says how Call (id 1) reads raw, when raw parses as an HTTP
// response with status 200 and Content-Type application/json: a body that
// is exactly a response to id 1 with a result gives that result, a body
// over the limit gives ErrMessageTooLarge, and a body that is not JSON an
// error.
func judgePlain(raw []byte) plainVerdict {
	resp, err := http.ReadResponse(bufio.NewReader(bytes.NewReader(raw)), nil)
	if err != nil || resp.StatusCode != http.StatusOK {
		return plainVerdict{}
	}
	if mt, _, err := mime.ParseMediaType(resp.Header.Get("Content-Type")); err != nil || mt != "application/json" {
		return plainVerdict{}
	}
	if resp.ContentLength > fuzzClientLimit {
		return plainVerdict{sure: true, tooLarge: true}
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, fuzzClientLimit+1))
	switch {
	case err != nil:
		return plainVerdict{}
	case len(body) > fuzzClientLimit:
		return plainVerdict{sure: true, tooLarge: true}
	case !json.Valid(body) || !utf8.Valid(body):
		return plainVerdict{sure: true}
	}
	v := bytes.TrimSpace(body)
	if v[0] != '{' {
		return plainVerdict{sure: true}
	}
	m, count, err := decodeMembers(v)
	if err != nil || len(count) != 3 || count["jsonrpc"] != 1 || count["id"] != 1 || count["result"] != 1 {
		return plainVerdict{}
	}
	if !isJSONString(m["jsonrpc"], jsonrpc.Version) || string(m["id"]) != "1" {
		return plainVerdict{}
	}
	return plainVerdict{sure: true, ok: true, result: m["result"]}
}

// FuzzHTTPClientResponse answers a call, a Stream and a Batch with
// arbitrary bytes as their HTTP response. Each must return, without
// panicking, within fuzzHang; nothing they return may be over their
// MaxMessageSize, and they may pass on no more notifications or items
// than the response has bytes. A plain JSON answer is decoded as
// an independent reading of it says.
func FuzzHTTPClientResponse(f *testing.F) {
	answer := `{"jsonrpc":"2.0","id":1,"result":{"a":[1,"x"]}}`
	note := `{"jsonrpc":"2.0","method":"log","params":["a"]}`
	head := func(status, ctype string, extra ...string) string {
		h := "HTTP/1.1 " + status + "\r\nContent-Type: " + ctype + "\r\n"
		for _, e := range extra {
			h += e + "\r\n"
		}
		return h + "\r\n"
	}
	chunked := func(body string) string {
		return fmt.Sprintf("%x\r\n%s\r\n0\r\n\r\n", len(body), body)
	}
	for _, s := range []string{
		head("200 OK", "application/json", fmt.Sprintf("Content-Length: %d", len(answer))) + answer,
		head("200 OK", "application/json; charset=utf-8", "Transfer-Encoding: chunked") + chunked(answer),
		head("200 OK", "application/json") + answer,
		head("200 OK", "application/json", "Content-Length: 9223372036854775807") + answer,
		head("200 OK", "application/json", "Content-Length: 4") + answer,
		head("200 OK", "application/json") + `{"jsonrpc":"2.0","id":1,"error":{"code":-32601,"message":"Method not found"}}`,
		head("200 OK", "application/json") + `[` + answer + `]`,
		head("200 OK", "application/json") + `[` + answer + `,{"jsonrpc":"2.0","id":2,"method":"x"},{"jsonrpc":"2.0","id":2,"result":[2]}]`,
		head("200 OK", "application/json") + `{"jsonrpc":"2.0","id":2,"result":1}`,
		head("200 OK", "application/json") + strings.Repeat("[", 5000),
		head("200 OK", "text/event-stream") + ": hi\nevent: message\ndata: " + note + "\n\ndata: " + answer + "\n\n",
		head("200 OK", "text/event-stream") + "data: {\"jsonrpc\":\"2.0\",\r\ndata: \"id\":1,\"result\":2}\r\n\r\n",
		head("200 OK", "text/event-stream", "Transfer-Encoding: chunked") + chunked("data: "+answer+"\n\n"),
		head("200 OK", "text/event-stream") + "data: " + strings.Repeat("x", fuzzClientLimit) + "\n\n",
		head("200 OK", "application/x-ndjson") + note + "\r\n\n" + answer + "\n",
		head("200 OK", "application/x-ndjson") + note + "\n" + note,
		head("200 OK", "application/x-ndjson") + strings.Repeat("y", fuzzClientLimit+10),
		head("200 OK", "application/x-ndjson") + `{"jsonrpc":"2.0","method":5}` + "\n" + `{"jsonrpc":"2.0","method":"$/stream","params":{"id":1,"item":0}}` + "\n" + answer + "\n",
		head("200 OK", "text/event-stream") + `data: {"jsonrpc":"2.0","method":7,"params":{"id":1,"item":0}}` + "\n\n" + "data: " + answer + "\n\n",
		head("202 Accepted", "application/json", "Content-Length: 0"),
		head("204 No Content", "application/json"),
		head("404 Not Found", "text/plain", "Content-Length: 9") + "not found",
		head("307 Temporary Redirect", "text/plain", "Location: /elsewhere", "Content-Length: 0"),
		head("100 Continue", "text/plain") + head("200 OK", "application/json") + answer,
		"HTTP/1.1 200 OK\r\n\r\n" + answer,
		"HTTP/1.0 200 OK\r\nContent-Type: application/json\r\n\r\n" + answer,
		"HTTP/1.1 2000 OK\r\n\r\n",
		"garbage",
		"",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		result, notes, err := fuzzCall(t, raw)
		if len(result) > fuzzClientLimit {
			t.Fatalf("response %q: a result of %d bytes, over the limit", raw, len(result))
		}
		if len(notes) > len(raw) {
			t.Fatalf("response %q: %d notifications", raw, len(notes))
		}
		for _, n := range notes {
			if len(n) > fuzzClientLimit {
				t.Fatalf("response %q: notification params of %d bytes, over the limit", raw, len(n))
			}
		}
		items := fuzzStream(t, raw)
		if len(items) > len(raw) {
			t.Fatalf("response %q: %d items", raw, len(items))
		}
		for _, item := range items {
			if len(item) > fuzzClientLimit {
				t.Fatalf("response %q: an item of %d bytes, over the limit", raw, len(item))
			}
		}
		for _, r := range fuzzBatch(t, raw) {
			if len(r) > fuzzClientLimit {
				t.Fatalf("response %q: a batch result of %d bytes, over the limit", raw, len(r))
			}
		}
		want := judgePlain(raw)
		switch {
		case !want.sure:
		case want.tooLarge:
			if !errors.Is(err, jsonrpc.ErrMessageTooLarge) {
				t.Fatalf("response %q: got %v, want ErrMessageTooLarge", raw, err)
			}
		case !want.ok:
			if err == nil {
				t.Fatalf("response %q: got result %q, want an error", raw, result)
			}
		default:
			if err != nil {
				t.Fatalf("response %q: got %v, want result %s", raw, err, want.result)
			}
			if got, want := compactJSON(t, result), compactJSON(t, want.result); got != want {
				t.Fatalf("response %q: got result %s, want %s", raw, got, want)
			}
		}
	})
}

// FuzzHTTPClientAnswer builds a well-formed answer around an arbitrary
// JSON result, in each framing (plain JSON, server-sent events with the
// value's lines as data lines, NDJSON), sent with a Content-Length or in
// chunks of any size, after a notification for the streams: Call must
// decode exactly the result, and pass the notification on.
func FuzzHTTPClientAnswer(f *testing.F) {
	for _, s := range []string{
		`1`, `"x"`, `null`, `true`, `-0.5e10`, `[]`, `{}`,
		"{\n  \"a\": [\n    1,\n    \"two\\nlines\"\n  ]\n}",
		`"\u2028\"\\"`, `[[[[[[[[[[]]]]]]]]]]`, `{"a":1,"a":2}`, `"é"`,
	} {
		for framing := range 3 {
			f.Add([]byte(s), uint8(framing), uint16(0))
			f.Add([]byte(s), uint8(framing), uint16(7))
		}
	}
	f.Fuzz(func(t *testing.T, result []byte, framing uint8, chunk uint16) {
		if !json.Valid(result) || !utf8.Valid(result) || len(result) > fuzzClientLimit-100 {
			t.Skip()
		}
		answer := `{"jsonrpc":"2.0","id":1,"result":` + string(result) + "}"
		note := `{"jsonrpc":"2.0","method":"log","params":["a"]}`
		var ctype, body string
		switch framing % 3 {
		case 0:
			ctype, body = "application/json", answer
		case 1:
			ctype = "text/event-stream"
			body = "data: " + note + "\n\n"
			// An event's lines end at CRLF, LF or a lone CR: each
			// of them in the answer (whitespace, in valid JSON)
			// starts a data line of its own.
			lines := strings.ReplaceAll(strings.ReplaceAll(answer, "\r\n", "\n"), "\r", "\n")
			for line := range strings.SplitSeq(lines, "\n") {
				body += "data: " + line + "\r\n"
			}
			body += "\r\n"
		case 2:
			ctype, body = "application/x-ndjson", note+"\n\n"+compactJSON(t, []byte(answer))+"\n"
		}
		raw := "HTTP/1.1 200 OK\r\nContent-Type: " + ctype + "\r\n"
		if chunk == 0 {
			raw += fmt.Sprintf("Content-Length: %d\r\n\r\n%s", len(body), body)
		} else {
			raw += "Transfer-Encoding: chunked\r\n\r\n"
			for rest := body; rest != ""; {
				n := min(int(chunk), len(rest))
				raw += fmt.Sprintf("%x\r\n%s\r\n", n, rest[:n])
				rest = rest[n:]
			}
			raw += "0\r\n\r\n"
		}
		got, notes, err := fuzzCall(t, []byte(raw))
		if err != nil {
			t.Fatalf("response %q: %v", raw, err)
		}
		if g, w := compactJSON(t, got), compactJSON(t, result); g != w {
			t.Fatalf("response %q: got result %s, want %s", raw, g, w)
		}
		if framing%3 != 0 && (len(notes) != 1 || string(notes[0]) != `["a"]`) {
			t.Fatalf("response %q: got notifications %q, want one, [\"a\"]", raw, notes)
		}
	})
}

// httpAccepts are Accept headers that select each framing of ServeHTTP.
var httpAccepts = []string{
	"", "application/json", "text/event-stream", "application/x-ndjson",
	"application/json, text/event-stream", "text/event-stream;q=0.5, application/json", "*/*",
}

// serveHTTPMessages splits a response of ServeHTTP into its messages, by
// its Content-Type.
func serveHTTPMessages(t *testing.T, rec *httptest.ResponseRecorder) [][]byte {
	t.Helper()
	body := rec.Body.Bytes()
	var msgs [][]byte
	switch ct := rec.Header().Get("Content-Type"); ct {
	case "application/json", "application/x-ndjson":
		if !bytes.HasSuffix(body, []byte("\n")) {
			t.Fatalf("%s response %q does not end with a newline", ct, body)
		}
		for line := range bytes.SplitSeq(body[:len(body)-1], []byte("\n")) {
			msgs = append(msgs, line)
		}
		if ct == "application/json" && len(msgs) != 1 {
			t.Fatalf("plain JSON response of %d messages: %q", len(msgs), body)
		}
	case "text/event-stream":
		for len(body) > 0 {
			event, rest, ok := bytes.Cut(body, []byte("\n\n"))
			data, found := bytes.CutPrefix(event, []byte("event: message\ndata: "))
			if !ok || !found || bytes.IndexByte(data, '\n') >= 0 {
				t.Fatalf("malformed event stream %q", rec.Body.Bytes())
			}
			msgs = append(msgs, data)
			body = rest
		}
	default:
		t.Fatalf("response with Content-Type %q", ct)
	}
	for _, m := range msgs {
		if !json.Valid(m) || !utf8.Valid(m) {
			t.Fatalf("message %q of response %q is not valid JSON", m, rec.Body.Bytes())
		}
	}
	return msgs
}

// FuzzServeHTTP posts an arbitrary body with an Accept header to
// ServeHTTP. The status is 202 with no body exactly when the body gets no
// answer; otherwise it is 200, the response is well framed for its
// Content-Type, every message before the last is a notification, and the
// last is the answer that Serve would give the body as one line (an empty
// body is a Parse error).
func FuzzServeHTTP(f *testing.F) {
	for i, s := range append(append([]string{""}, specSeeds...), edgeSeeds...) {
		f.Add([]byte(s), uint8(i))
	}
	f.Add([]byte("{\"jsonrpc\":\"2.0\",\n\"id\":1,\r\n\"method\":\"notify\",\"params\":{\"n\":3}}"), uint8(2))
	f.Add([]byte(`[{"jsonrpc":"2.0","id":1,"method":"stream","params":{"n":3}},{"jsonrpc":"2.0","method":"notify"}]`), uint8(3))
	srv := &jsonrpc.Server{Options: jsonrpc.Options{Handler: fuzzMux()}}
	f.Fuzz(func(t *testing.T, body []byte, accept uint8) {
		req := httptest.NewRequest(http.MethodPost, "/", bytes.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		if a := httpAccepts[int(accept)%len(httpAccepts)]; a != "" {
			req.Header.Set("Accept", a)
		}
		rec := httptest.NewRecorder()
		done := make(chan struct{})
		go func() {
			defer close(done)
			srv.ServeHTTP(rec, req)
		}()
		select {
		case <-done:
		case <-time.After(fuzzHang):
			t.Fatalf("ServeHTTP(%q) did not return within %v", body, fuzzHang)
		}

		want := judgeLine(body)
		if len(bytes.Trim(body, " \t\r\n")) == 0 {
			want = lineVerdict{code: int(jsonrpc.CodeParseError)}
		}
		if want.none {
			if rec.Code != http.StatusAccepted || rec.Body.Len() != 0 {
				t.Fatalf("body %q: got %d %q, want 202 and no body", body, rec.Code, rec.Body.Bytes())
			}
			return
		}
		if rec.Code != http.StatusOK {
			t.Fatalf("body %q: got status %d, want 200", body, rec.Code)
		}
		msgs := serveHTTPMessages(t, rec)
		for _, m := range msgs[:len(msgs)-1] {
			checkNotification(t, m)
		}
		out := msgs[len(msgs)-1]
		switch {
		case want.code != 0:
			r := checkResponse(t, out)
			if r.id != "null" || r.code != want.code {
				t.Fatalf("body %q: got %q, want error %d with a null id", body, out, want.code)
			}
		case want.isBatch:
			var elems []json.RawMessage
			if out[0] != '[' || json.Unmarshal(out, &elems) != nil || len(elems) != len(want.batch) {
				t.Fatalf("body %q: got %q, want an array of %d responses", body, out, len(want.batch))
			}
			for i, el := range elems {
				if r := checkResponse(t, el); r.id != want.batch[i].id {
					t.Fatalf("body %q: response %d has id %s, want %s", body, i, r.id, want.batch[i].id)
				}
			}
		default:
			if r := checkResponse(t, out); r.id != want.single.id {
				t.Fatalf("body %q: response has id %s, want %s", body, r.id, want.single.id)
			}
		}
	})
}
