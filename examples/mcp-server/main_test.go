package main

import (
	"context"
	"encoding/json"
	"errors"
	"net"
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
