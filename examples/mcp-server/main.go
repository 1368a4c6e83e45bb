// Command mcp-server is a Model Context Protocol server that speaks over its
// standard input and output, built on package jsonrpc alone.
//
// It answers initialize, ping, tools/list and tools/call, and offers three
// tools: "echo" returns its text; "count" counts to n, 20 ms a step,
// sending notifications/progress for the caller's _meta.progressToken and
// stopping when the caller cancels; "roots" asks the client for its roots
// (a call from the server to the client on the same connection) and
// returns them. The client's notifications/cancelled stops a call, which
// then gets no response, as MCP requires. Logs go to standard error; the
// server exits 0 when its input ends.
//
// Run it under an MCP client, for example:
//
//	go build -o mcp-server ./examples/mcp-server
//	npx @modelcontextprotocol/inspector ./mcp-server
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/ndjsonrpc/jsonrpc"
)

// versions are the protocol versions this server speaks, newest first.
var versions = []string{"2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"}

var logger = slog.New(slog.NewTextHandler(os.Stderr, nil))

type tool struct {
	Name        string          `json:"name"`
	Description string          `json:"description"`
	InputSchema json.RawMessage `json:"inputSchema"`
	run         func(ctx context.Context, p callParams) (string, error)
}

var tools = []tool{{
	Name: "echo", Description: "Returns its text.", run: echo,
	InputSchema: json.RawMessage(`{"type":"object","properties":{"text":{"type":"string"}},"required":["text"]}`),
}, {
	Name: "count", Description: "Counts to n (default 50), 20 ms a step, reporting progress.", run: count,
	InputSchema: json.RawMessage(`{"type":"object","properties":{"n":{"type":"integer","minimum":0,"maximum":1000}}}`),
}, {
	Name: "roots", Description: "Lists the client's roots.", run: roots,
	InputSchema: json.RawMessage(`{"type":"object"}`),
}}

type callParams struct {
	Name      string          `json:"name"`
	Arguments json.RawMessage `json:"arguments"`
	Meta      struct {
		ProgressToken json.RawMessage `json:"progressToken"` // a string or a number
	} `json:"_meta"`
}

type content struct {
	Type string `json:"type"`
	Text string `json:"text"`
}

type callResult struct {
	Content []content `json:"content"`
	IsError bool      `json:"isError,omitempty"`
}

func initialize(ctx context.Context, p struct {
	ProtocolVersion string `json:"protocolVersion"`
}) (any, error) {
	version := versions[0]
	if slices.Contains(versions, p.ProtocolVersion) {
		version = p.ProtocolVersion
	}
	return map[string]any{
		"protocolVersion": version,
		"capabilities":    map[string]any{"tools": map[string]any{}},
		"serverInfo":      map[string]string{"name": "jsonrpc-example", "version": "1.0.0"},
	}, nil
}

// callTool runs a tool. A failing tool is a result with isError set, as
// MCP asks, so that the model sees what went wrong; an unknown tool is a
// protocol error.
func callTool(ctx context.Context, p callParams) (*callResult, error) {
	i := slices.IndexFunc(tools, func(t tool) bool { return t.Name == p.Name })
	if i < 0 {
		return nil, jsonrpc.Errorf(jsonrpc.CodeInvalidParams, "unknown tool %q", p.Name)
	}
	if p.Arguments == nil {
		p.Arguments = json.RawMessage("{}")
	}
	text, err := tools[i].run(ctx, p)
	if ctx.Err() != nil {
		return nil, ctx.Err() // cancelled: the client expects no answer
	}
	if err != nil {
		return &callResult{Content: []content{{"text", err.Error()}}, IsError: true}, nil
	}
	return &callResult{Content: []content{{"text", text}}}, nil
}

func echo(ctx context.Context, p callParams) (string, error) {
	var args struct {
		Text string `json:"text"`
	}
	err := json.Unmarshal(p.Arguments, &args)
	return args.Text, err
}

func count(ctx context.Context, p callParams) (string, error) {
	args := struct {
		N int `json:"n"`
	}{N: 50}
	if err := json.Unmarshal(p.Arguments, &args); err != nil {
		return "", err
	}
	if args.N < 0 || args.N > 1000 {
		return "", fmt.Errorf("n is %d, not between 0 and 1000", args.N)
	}
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for i := 1; i <= args.N; i++ {
		select {
		case <-ctx.Done():
			logger.Info("count cancelled", "step", i, "of", args.N)
			return "", ctx.Err()
		case <-tick.C:
		}
		if p.Meta.ProgressToken != nil {
			progress := map[string]any{"progressToken": p.Meta.ProgressToken, "progress": i, "total": args.N}
			if err := jsonrpc.Notify(ctx, "notifications/progress", progress); err != nil {
				return "", err
			}
		}
	}
	return fmt.Sprintf("counted to %d", args.N), nil
}

func roots(ctx context.Context, p callParams) (string, error) {
	var list struct {
		Roots []struct {
			URI  string `json:"uri"`
			Name string `json:"name"`
		} `json:"roots"`
	}
	if err := jsonrpc.Call(ctx, "roots/list", nil, &list); err != nil {
		return "", fmt.Errorf("roots/list: %w", err)
	}
	var b strings.Builder
	for _, r := range list.Roots {
		fmt.Fprintf(&b, "%s %s\n", r.URI, r.Name)
	}
	return b.String(), nil
}

func main() {
	mux := new(jsonrpc.Mux)
	mux.Handle("initialize", jsonrpc.Func(initialize))
	mux.HandleFunc("notifications/initialized", func(context.Context, *jsonrpc.Request) (any, error) { return nil, nil })
	mux.Handle("ping", jsonrpc.Func(func(context.Context, struct{}) (struct{}, error) { return struct{}{}, nil }))
	mux.Handle("tools/list", jsonrpc.Func(func(context.Context, struct{}) (any, error) {
		return map[string]any{"tools": tools}, nil
	}))
	mux.Handle("tools/call", jsonrpc.Func(callTool))

	srv := &jsonrpc.Server{
		Handler: mux,
		Logger:  logger,
		Cancel:  jsonrpc.Cancellation{Method: "notifications/cancelled", IDMember: "requestId", Unanswered: true},
	}
	if err := srv.Serve(context.Background(), os.Stdin, os.Stdout); err != nil {
		logger.Error("serve", "err", err)
		os.Exit(1)
	}
}
