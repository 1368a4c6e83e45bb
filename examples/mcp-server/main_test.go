package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ndjsonrpc/jsonrpc"
)

// TestRootsClientNeverAnswers: a client that takes roots/list and never
// answers it gets the tools/call back as a tool error once rootsTimeout
// has passed, and roots/list is cancelled with MCP's notification.
func TestRootsClientNeverAnswers(t *testing.T) {
	old := rootsTimeout
	rootsTimeout = 200 * time.Millisecond
	t.Cleanup(func() { rootsTimeout = old })

	a, b := net.Pipe()
	server := jsonrpc.NewConn(a, a, new(options()))
	defer server.Close()

	var asked atomic.Int32
	cancelled := make(chan struct{})
	mux := new(jsonrpc.Mux)
	mux.HandleFunc("roots/list", func(ctx context.Context, req *jsonrpc.Request) (any, error) {
		asked.Add(1)
		<-ctx.Done() // never answers; ends when the server cancels
		var ce *jsonrpc.CancelError
		if errors.As(context.Cause(ctx), &ce) { // the server's cancel, not the end of the connection
			close(cancelled)
		}
		return nil, ctx.Err()
	})
	client := jsonrpc.NewConn(b, b, &jsonrpc.Options{Handler: mux, Cancellation: mcpCancel})
	defer client.Close()

	// Without the timeout the call would wait for ever: bound it well
	// past rootsTimeout.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	// The client declares roots, as MCP requires before the server may
	// ask for them.
	if err := client.Call(ctx, "initialize", map[string]any{"protocolVersion": versions[0],
		"capabilities": map[string]any{"roots": map[string]any{}}, "clientInfo": map[string]any{"name": "test", "version": "1"}}, nil); err != nil {
		t.Fatalf("initialize: %v", err)
	}
	var res callResult
	err := client.Call(ctx, "tools/call", map[string]any{"name": "roots", "arguments": map[string]any{}}, &res)
	if err != nil {
		t.Fatalf("tools/call roots: %v", err)
	}
	if !res.IsError || len(res.Content) != 1 || !strings.Contains(res.Content[0].Text, "did not answer") {
		out, _ := json.Marshal(res)
		t.Fatalf("tools/call roots = %s, want a tool error saying the client did not answer", out)
	}
	if asked.Load() != 1 {
		t.Fatalf("roots/list asked %d times, want 1", asked.Load())
	}
	select {
	case <-cancelled:
	case <-time.After(5 * time.Second):
		t.Fatal("roots/list was not cancelled with notifications/cancelled")
	}
}

// stdioPeer serves options() on one end of a pipe, as the process serves
// its standard input and output, and returns a line-at-a-time client on
// the other end.
func stdioPeer(t *testing.T) (send func(string), recv func() string) {
	a, b := net.Pipe()
	srv := &jsonrpc.Server{Options: options()}
	done := make(chan struct{})
	go func() { _ = srv.Serve(context.Background(), a, a); close(done) }()
	t.Cleanup(func() { b.Close(); <-done })
	br := bufio.NewReader(b)
	send = func(s string) {
		t.Helper()
		_ = b.SetWriteDeadline(time.Now().Add(5 * time.Second))
		if _, err := io.WriteString(b, s+"\n"); err != nil {
			t.Fatalf("write: %v", err)
		}
	}
	recv = func() string {
		t.Helper()
		_ = b.SetReadDeadline(time.Now().Add(5 * time.Second))
		line, err := br.ReadString('\n')
		if err != nil {
			t.Fatalf("read: %v", err)
		}
		return strings.TrimSpace(line)
	}
	return send, recv
}

// httpEndpoint serves options() over Streamable HTTP on a loopback port
// and returns the endpoint's URL.
func httpEndpoint(t *testing.T) string {
	ctx, cancel := context.WithCancel(context.Background())
	pr, pw := io.Pipe()
	done := make(chan error, 1)
	go func() { done <- serveHTTP(ctx, &jsonrpc.Server{Options: options()}, "127.0.0.1:0", pw) }()
	line, err := bufio.NewReader(pr).ReadString('\n')
	if err != nil {
		t.Fatal(err)
	}
	go func() { _, _ = io.Copy(io.Discard, pr) }()
	t.Cleanup(func() { cancel(); <-done })
	return strings.TrimSpace(line)
}

// post POSTs body to url as an MCP client does, with the headers in hdr
// besides, and returns the response's status, headers and body.
func post(t *testing.T, url, body string, hdr map[string]string) (int, http.Header, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header, string(b)
}

// A client that did not declare the roots capability is neither offered
// the roots tool nor asked roots/list: MCP's lifecycle lets each side use
// only the capabilities negotiated.
func TestRootsNeedsTheCapability(t *testing.T) {
	send, recv := stdioPeer(t)
	send(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"c","version":"1"}}}`)
	if got := recv(); !strings.Contains(got, `"id":1,"result"`) {
		t.Fatalf("initialize: %s", got)
	}
	send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	send(`{"jsonrpc":"2.0","id":2,"method":"tools/list"}`)
	if got := recv(); !strings.Contains(got, `"name":"echo"`) || strings.Contains(got, `"name":"roots"`) {
		t.Errorf("tools/list = %s, want echo and count but not roots", got)
	}
	send(`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"roots","arguments":{}}}`)
	got := recv()
	if strings.Contains(got, `"method":"roots/list"`) {
		t.Fatalf("the server sent %s to a client that did not declare roots", got)
	}
	if !strings.Contains(got, `"id":3`) || !strings.Contains(got, `"isError":true`) || !strings.Contains(got, "roots capability") {
		t.Errorf("tools/call roots = %s, want a tool error naming the roots capability", got)
	}
}

// A tool's arguments are held to its inputSchema: a missing required
// member or one the schema does not allow is a tool error; arguments that
// are not an object are a protocol error (-32602); null is no arguments.
func TestToolArgumentsValidated(t *testing.T) {
	send, recv := stdioPeer(t)
	for i, tc := range []struct{ tool, args, want string }{
		{"echo", `{}`, `"isError":true`},
		{"echo", `{"text":"a","extra":1}`, `"isError":true`},
		{"count", `{"n":3,"extra":1}`, `"isError":true`},
		{"count", `{"n":1001}`, `"isError":true`},
		{"count", `{"n":1.5}`, `"isError":true`},
		{"echo", `"hello"`, `"code":-32602`},
		{"echo", `[1]`, `"code":-32602`},
		{"echo", `{"text":"ok"}`, `"result":{"content":[{"type":"text","text":"ok"}]}`},
		{"count", `null`, `"text":"counted to 50"`},
	} {
		send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":%q,"arguments":%s}}`, i, tc.tool, tc.args))
		if got := recv(); !strings.Contains(got, tc.want) {
			t.Errorf("%s %s = %s, want %s", tc.tool, tc.args, got, tc.want)
		}
	}
}

// Streamable HTTP answers a request with application/json or
// text/event-stream only, even to a client whose Accept also names
// application/x-ndjson, which the library's ServeHTTP could stream.
func TestHTTPAnswersNoNDJSON(t *testing.T) {
	u := httpEndpoint(t)
	code, h, body := post(t, u, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"count","arguments":{"n":2},"_meta":{"progressToken":"t"}}}`,
		map[string]string{"Accept": "application/json;q=0.9, text/event-stream;q=0.9, application/x-ndjson"})
	if ct := h.Get("Content-Type"); code != http.StatusOK || (ct != "application/json" && ct != "text/event-stream") || !strings.Contains(body, "counted to 2") {
		t.Fatalf("POST = %d, Content-Type %q, body %q; want 200, application/json or text/event-stream, and the result", code, ct, body)
	}
}

// The tools of one POST end by its deadline, so that a batch of long
// calls, or a call waiting for a tool slot, does not run on for longer
// than the response can be written: each is answered with a tool error.
func TestHTTPRequestDeadline(t *testing.T) {
	old := requestTimeout
	requestTimeout = 200 * time.Millisecond
	t.Cleanup(func() { requestTimeout = old })
	u := httpEndpoint(t)

	_, _, body := post(t, u, `[{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"count","arguments":{"n":2}}},`+
		`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"count","arguments":{"n":500}}}]`, nil)
	if !strings.Contains(body, "counted to 2") || !strings.Contains(body, `"isError":true`) || !strings.Contains(body, "ran out of time") {
		t.Errorf("a batch whose second call runs 10 s = %s, want the first counted and the second a tool error", body)
	}

	// Every slot taken: a call waits for one, and gives up at the deadline.
	for range cap(toolSlots) {
		toolSlots <- struct{}{}
	}
	defer func() {
		for range cap(toolSlots) {
			<-toolSlots
		}
	}()
	_, _, body = post(t, u, `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"echo","arguments":{"text":"x"}}}`, nil)
	if !strings.Contains(body, `"isError":true`) || !strings.Contains(body, "ran out of time") {
		t.Errorf("a call while every tool slot is taken = %s, want a tool error at the deadline", body)
	}
}

// tools/list answers in one page, so any cursor is not one it gave out:
// MCP asks for Invalid params (-32602) then.
func TestListToolsInvalidCursor(t *testing.T) {
	send, recv := stdioPeer(t)
	send(`{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"cursor":"zzz"}}`)
	if got := recv(); !strings.Contains(got, `"code":-32602`) {
		t.Errorf("tools/list with a cursor never given = %s, want -32602", got)
	}
	send(`{"jsonrpc":"2.0","id":2,"method":"tools/list","params":{"_meta":{}}}`)
	if got := recv(); !strings.Contains(got, `"tools":[`) {
		t.Errorf("tools/list without a cursor = %s, want the tools", got)
	}
}
