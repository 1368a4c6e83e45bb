package jsonrpc_test

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/ndjsonrpc/jsonrpc"
)

// An MCP-style server: a tool handler asks the client for its roots with
// its Peer, sends a progress notification for the caller's token, and
// the connection speaks MCP's cancel notification. Here the client is a
// jsonrpc.Conn over pipes; on stdio it would be the MCP client.
func ExamplePeer_call() {
	mcpCancel := jsonrpc.Cancellation{Method: "notifications/cancelled", IDMember: "requestId", Unanswered: true}

	type root struct {
		URI string `json:"uri"`
	}
	type rootsList struct {
		Roots []root `json:"roots"` // results match names exactly too
	}
	type toolCall struct {
		Name string `json:"name"`
		Meta struct {
			ProgressToken any `json:"progressToken"`
		} `json:"_meta"`
	}
	mux := new(jsonrpc.Mux)
	mux.Handle("tools/call", jsonrpc.Func(func(ctx context.Context, p toolCall) (string, error) {
		var roots rootsList
		if err := jsonrpc.Peer(ctx).Call(ctx, "roots/list", nil, &roots); err != nil {
			return "", err // cancelled with this request, or the client failed
		}
		if p.Meta.ProgressToken != nil {
			progress := map[string]any{"progressToken": p.Meta.ProgressToken, "progress": 1, "total": 1}
			if err := jsonrpc.Peer(ctx).Notify(ctx, "notifications/progress", progress); err != nil {
				return "", err
			}
		}
		return fmt.Sprintf("%s saw %d root(s), the first %s", p.Name, len(roots.Roots), roots.Roots[0].URI), nil
	}))
	srv := &jsonrpc.Server{Options: jsonrpc.Options{Handler: mux, Cancellation: mcpCancel}}

	// The client side: it answers roots/list and prints progress.
	serverIn, clientOut := io.Pipe()
	clientIn, serverOut := io.Pipe()
	done := make(chan error, 1)
	go func() { done <- srv.Serve(context.Background(), serverIn, serverOut) }()
	clientMux := new(jsonrpc.Mux)
	clientMux.HandleFunc("roots/list", func(context.Context, *jsonrpc.Request) (any, error) {
		return map[string]any{"roots": []root{{URI: "file:///projects/demo"}}}, nil
	})
	client := jsonrpc.NewConn(clientIn, clientOut, &jsonrpc.Options{
		Handler:      clientMux,
		Cancellation: mcpCancel,
		OnNotify:     func(n *jsonrpc.Request) { fmt.Println(n.Method, string(n.Params)) },
	})

	var text string
	err := client.Call(context.Background(), "tools/call",
		map[string]any{"name": "scan", "_meta": map[string]any{"progressToken": "t1"}}, &text)
	fmt.Println(text, err)

	clientOut.Close() // the end of the server's input
	fmt.Println(<-done)
	client.Close()
	// Output:
	// notifications/progress {"progress":1,"progressToken":"t1","total":1}
	// scan saw 1 root(s), the first file:///projects/demo <nil>
	// <nil>
}

// An LSP-style server: Content-Length framing, and a request whose handler
// asks the editor for its configuration. The editor here is a Conn, the
// endpoint that both calls and serves.
func ExampleHeaderFraming() {
	type hoverParams struct {
		URI string `json:"uri"` // member names match exactly
	}
	type configItem struct {
		Greeting string `json:"greeting"`
	}
	mux := new(jsonrpc.Mux)
	mux.Handle("textDocument/hover", jsonrpc.Func(func(ctx context.Context, p hoverParams) (string, error) {
		var config []configItem
		err := jsonrpc.Peer(ctx).Call(ctx, "workspace/configuration",
			map[string]any{"items": []any{map[string]string{"section": "example"}}}, &config)
		if err != nil {
			return "", err
		}
		return config[0].Greeting + ", " + p.URI, nil
	}))
	srv := &jsonrpc.Server{Options: jsonrpc.Options{Handler: mux, Framing: jsonrpc.HeaderFraming{}}}

	serverIn, editorOut := io.Pipe()
	editorIn, serverOut := io.Pipe()
	done := make(chan error, 1)
	go func() { done <- srv.Serve(context.Background(), serverIn, serverOut) }()

	editorMux := new(jsonrpc.Mux)
	editorMux.HandleFunc("workspace/configuration", func(context.Context, *jsonrpc.Request) (any, error) {
		return []any{map[string]string{"greeting": "Hello"}}, nil
	})
	editor := jsonrpc.NewConn(editorIn, editorOut, &jsonrpc.Options{
		Handler: editorMux,
		Framing: jsonrpc.HeaderFraming{},
	})
	var hover string
	err := editor.Call(context.Background(), "textDocument/hover", map[string]string{"uri": "file:///a.go"}, &hover)
	fmt.Println(hover, err)

	editorOut.Close()
	fmt.Println(<-done)
	editor.Close()
	fmt.Println(strings.HasPrefix(hover, "Hello"))
	// Output:
	// Hello, file:///a.go <nil>
	// <nil>
	// true
}
