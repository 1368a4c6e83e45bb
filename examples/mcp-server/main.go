// Command mcp-server is a Model Context Protocol server built on package
// jsonrpc alone. It speaks over its standard input and output, or, with
// -http, over MCP's Streamable HTTP transport.
//
// It answers initialize, ping, tools/list and tools/call, and offers three
// tools: "echo" returns its text; "count" counts to n, 20 ms a step,
// sending notifications/progress for the caller's _meta.progressToken and
// stopping when the caller cancels; "roots" asks the client for its roots
// (a call from the server to the client on the same connection) and
// returns them, or, if the client has not answered within 10 s, cancels
// its call and fails; it is offered only to a client that declared the
// roots capability, as MCP lets a server use only what was negotiated.
// A call's arguments are checked against its tool's inputSchema (a
// violation is a tool error, isError), and at most 32 tool calls run at
// once, across all clients: the others wait (MCP asks servers to rate
// limit tool invocations). The client's notifications/cancelled stops a call,
// which then gets no response, as MCP requires. Logs go to standard
// error; the server exits 0 when its input ends, once the tools still
// running have had 300 ms to finish and then been cancelled.
//
// It is a module of its own, since its tools' JSON Schemas come from the
// openrpc module. Run it under an MCP client, for example:
//
//	cd examples/mcp-server && go build -o mcp-server .
//	npx @modelcontextprotocol/inspector ./mcp-server
//
// # Streamable HTTP
//
// With -http ADDR it serves the Streamable HTTP transport instead, in its
// stateless form, at the path /mcp of the TCP address ADDR, and prints the
// endpoint's URL on standard output once it listens (ADDR may name port
// 0); it stops on SIGINT or SIGTERM, and exits 0:
//
//	./mcp-server -http 127.0.0.1:8080
//	npx @modelcontextprotocol/inspector  # transport "Streamable HTTP", URL http://127.0.0.1:8080/mcp
//
// Every message from the client is a POST of its own and nothing is kept
// between them: no session id is issued, GET (the standalone event stream)
// and DELETE (the end of a session) get 405 Method Not Allowed. A call is
// answered with application/json, or with text/event-stream when the tool
// sends progress before its result; a notification gets 202 Accepted. A
// request whose Origin header is not a loopback origin gets 403 Forbidden
// (a web page that DNS rebinding points at the port cannot drive the
// server), and one whose MCP-Protocol-Version header names a version the
// server does not speak gets 400 Bad Request. Listen on a loopback address
// unless something in front authenticates the clients.
//
// What statelessness takes away:
//   - The server cannot call the client: no response to a POST can carry
//     a request back. tools/list leaves out "roots" over HTTP, and a call
//     of it anyway is a tool error (isError) that says so.
//   - notifications/cancelled cannot stop a call: it comes in a POST of
//     its own, and without a session nothing tells whose request id it
//     names, so it is accepted and ignored. A call stops when the client
//     drops its HTTP request (closing the transport does): the tool's
//     context is cancelled then.
//   - A client that accepts only application/json gets no progress.
//
// The tools of one POST (all the calls of a batch) must end within 55 s
// of it, or are stopped and answered with a tool error; application/x-ndjson
// in Accept is ignored, since MCP answers only with application/json or
// text/event-stream.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"slices"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/ndjsonrpc/jsonrpc"
	"github.com/ndjsonrpc/jsonrpc/openrpc"
)

// versions are the protocol versions this server speaks, newest first.
var versions = []string{"2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"}

var logger = slog.New(slog.NewTextHandler(os.Stderr, nil))

type tool struct {
	Name        string             `json:"name"`
	Description string             `json:"description"`
	InputSchema *jsonschema.Schema `json:"inputSchema"`
	run         func(ctx context.Context, p callParams) (string, error)
}

// The arguments of the tools. Their JSON Schemas, the tools'
// inputSchema, are generated from these types by the openrpc module, as
// the schemas of an OpenRPC document are.
type (
	echoArgs struct {
		Text string `json:"text" jsonschema:"the text to return"`
	}
	countArgs struct {
		N int `json:"n,omitzero" jsonschema:"how far to count, from 0 to 1000 (default 50)"`
	}
	rootsArgs struct{}
)

// countSchema is countArgs' schema with n's bounds, which the type
// cannot say.
func countSchema() *jsonschema.Schema {
	s := openrpc.SchemaFor[countArgs]()
	s.Properties["n"].Minimum = jsonschema.Ptr(0.0)
	s.Properties["n"].Maximum = jsonschema.Ptr(1000.0)
	return s
}

var tools = []tool{{
	Name: "echo", Description: "Returns its text.", run: echo,
	InputSchema: openrpc.SchemaFor[echoArgs](),
}, {
	Name: "count", Description: "Counts to n (default 50), 20 ms a step, reporting progress.", run: count,
	InputSchema: countSchema(),
}, {
	Name: "roots", Description: "Lists the client's roots.", run: roots,
	InputSchema: openrpc.SchemaFor[rootsArgs](),
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

// listParams are the params of tools/list: a cursor of pagination.
type listParams struct {
	Cursor *string `json:"cursor"`
}

type initializeParams struct {
	ProtocolVersion string `json:"protocolVersion"`
	Capabilities    struct {
		Roots *struct{} `json:"roots"` // present: the client answers roots/list
	} `json:"capabilities"`
}

// session is what the client negotiated in initialize. options makes
// one, which the connections of a Server built on them share: right over
// stdio, where the process serves one connection, and harmless over HTTP,
// where the server never calls the client.
type session struct {
	roots atomic.Bool // the client declared the roots capability
}

// errNoRootsCapability is the roots tool's error for a client that did
// not declare the roots capability: MCP lets a server use only the
// capabilities negotiated.
var errNoRootsCapability = errors.New("the client did not declare the roots capability")

// errLate is the tool error of a call stopped, or never started, by the
// deadline of its HTTP request.
var errLate = errors.New("the HTTP request ran out of time")

// toolSlots bounds the tool calls running at once, across all clients
// and transports (MCP: servers must rate limit tool invocations); a call
// beyond it waits for a slot within its context, over HTTP within its
// request's deadline.
var toolSlots = make(chan struct{}, 32)

type rootsList struct {
	Roots []struct {
		URI  string `json:"uri"`
		Name string `json:"name"`
	} `json:"roots"`
}

type progressParams struct {
	ProgressToken json.RawMessage `json:"progressToken"`
	Progress      int             `json:"progress"`
	Total         int             `json:"total"`
}

// The methods of MCP that this server serves, and those it sends to the
// client, each with its types: a Go client would share these values.
var (
	initializeMethod = jsonrpc.NewMethod[initializeParams, any]("initialize")
	pingMethod       = jsonrpc.NewMethod[struct{}, struct{}]("ping")
	listToolsMethod  = jsonrpc.NewMethod[listParams, any]("tools/list")
	callToolMethod   = jsonrpc.NewMethod[callParams, *callResult]("tools/call")

	rootsListMethod = jsonrpc.NewMethod[*struct{}, rootsList]("roots/list") // no params
	progressMethod  = jsonrpc.NewMethod[progressParams, struct{}]("notifications/progress")
)

func (s *session) initialize(ctx context.Context, p initializeParams) (any, error) {
	s.roots.Store(p.Capabilities.Roots != nil)
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

// listTools lists the tools, but for roots over HTTP, where it cannot
// work, and for a client that did not declare the roots capability.
func (s *session) listTools(ctx context.Context, p listParams) (any, error) {
	if p.Cursor != nil {
		// The list is one page, so no cursor was ever handed out: MCP
		// asks for Invalid params on a cursor that is not valid.
		return nil, jsonrpc.Errorf(jsonrpc.CodeInvalidParams, "invalid cursor %q", *p.Cursor)
	}
	list := tools
	if jsonrpc.HTTPRequestFromContext(ctx) != nil || !s.roots.Load() {
		list = slices.DeleteFunc(slices.Clone(tools), func(t tool) bool { return t.Name == "roots" })
	}
	return map[string]any{"tools": list}, nil
}

// inputSchemas are the tools' input schemas, resolved for validation.
var inputSchemas = func() []*jsonschema.Resolved {
	rs := make([]*jsonschema.Resolved, len(tools))
	for i, t := range tools {
		r, err := t.InputSchema.Resolve(nil)
		if err != nil {
			panic(err)
		}
		rs[i] = r
	}
	return rs
}()

// callTool runs a tool. A failing tool is a result with isError set, as
// MCP asks, so that the model sees what went wrong (arguments that break
// the tool's inputSchema too); an unknown tool, or arguments that are not
// an object, are a protocol error.
func (s *session) callTool(ctx context.Context, p callParams) (*callResult, error) {
	i := slices.IndexFunc(tools, func(t tool) bool { return t.Name == p.Name })
	if i < 0 {
		return nil, jsonrpc.Errorf(jsonrpc.CodeInvalidParams, "unknown tool %q", p.Name)
	}
	if p.Arguments == nil || string(p.Arguments) == "null" {
		p.Arguments = json.RawMessage("{}")
	}
	var args any
	if err := json.Unmarshal(p.Arguments, &args); err != nil {
		return nil, jsonrpc.Errorf(jsonrpc.CodeInvalidParams, "arguments: %v", err)
	}
	if _, ok := args.(map[string]any); !ok {
		return nil, jsonrpc.Errorf(jsonrpc.CodeInvalidParams, "arguments must be an object")
	}
	if err := inputSchemas[i].Validate(args); err != nil {
		return &callResult{Content: []content{{"text", "invalid arguments: " + err.Error()}}, IsError: true}, nil
	}
	if tools[i].Name == "roots" && jsonrpc.HTTPRequestFromContext(ctx) == nil && !s.roots.Load() {
		return &callResult{Content: []content{{"text", errNoRootsCapability.Error()}}, IsError: true}, nil
	}
	runCtx := ctx
	if d, ok := ctx.Value(deadlineKey{}).(time.Time); ok { // over HTTP
		var cancel context.CancelFunc
		runCtx, cancel = context.WithDeadline(ctx, d)
		defer cancel()
	}
	text, err := "", errLate // unless it gets a slot in time
	select {
	case toolSlots <- struct{}{}:
		text, err = tools[i].run(runCtx, p)
		<-toolSlots
	case <-runCtx.Done():
	}
	if ctx.Err() != nil {
		return nil, ctx.Err() // cancelled: the client expects no answer
	}
	if err != nil && runCtx.Err() != nil {
		err = errLate // stopped by the deadline (a result in time is kept)
	}
	if err != nil {
		return &callResult{Content: []content{{"text", err.Error()}}, IsError: true}, nil
	}
	return &callResult{Content: []content{{"text", text}}}, nil
}

func echo(ctx context.Context, p callParams) (string, error) {
	var args echoArgs
	err := json.Unmarshal(p.Arguments, &args)
	return args.Text, err
}

func count(ctx context.Context, p callParams) (string, error) {
	args := countArgs{N: 50}
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
			// The cause says who cancelled: the client, with its reason,
			// or the end of the connection.
			why := context.Cause(ctx).Error()
			var ce *jsonrpc.CancelError
			if errors.As(context.Cause(ctx), &ce) {
				why = "client: " + ce.Reason()
			}
			logger.Info("count cancelled", "step", i, "of", args.N, "why", why)
			return "", ctx.Err()
		case <-tick.C:
		}
		if p.Meta.ProgressToken != nil {
			progress := progressParams{ProgressToken: p.Meta.ProgressToken, Progress: i, Total: args.N}
			if err := progressMethod.Notify(ctx, jsonrpc.Peer(ctx), progress); err != nil {
				return "", err
			}
		}
	}
	return fmt.Sprintf("counted to %d", args.N), nil
}

// errNoCallback is the roots tool's error over HTTP.
var errNoCallback = errors.New("this server cannot ask the client for its roots over stateless HTTP: use stdio")

// rootsTimeout bounds the wait for the client's answer to roots/list: a
// client that never answers gets the tool call back as a tool error (and
// a notifications/cancelled for its roots/list) rather than holding it,
// and its goroutine, for ever.
var rootsTimeout = 10 * time.Second

func roots(ctx context.Context, p callParams) (string, error) {
	if jsonrpc.HTTPRequestFromContext(ctx) != nil {
		return "", errNoCallback // a call to the client would fail at once
	}
	callCtx, cancel := context.WithTimeout(ctx, rootsTimeout)
	defer cancel()
	list, err := rootsListMethod.Call(callCtx, jsonrpc.Peer(ctx), nil)
	switch {
	case err != nil && ctx.Err() == nil && callCtx.Err() != nil:
		return "", fmt.Errorf("roots/list: the client did not answer within %v", rootsTimeout)
	case err != nil:
		return "", fmt.Errorf("roots/list: %w", err)
	}
	var b strings.Builder
	for _, r := range list.Roots {
		fmt.Fprintf(&b, "%s %s\n", r.URI, r.Name)
	}
	return b.String(), nil
}

// options are the server's: its methods and MCP's cancel convention.
func options() jsonrpc.Options {
	mux := new(jsonrpc.Mux)
	s := new(session)
	initializeMethod.Register(mux, s.initialize)
	mux.HandleFunc("notifications/initialized", func(context.Context, *jsonrpc.Request) (any, error) { return nil, nil })
	pingMethod.Register(mux, func(context.Context, struct{}) (struct{}, error) { return struct{}{}, nil })
	listToolsMethod.Register(mux, s.listTools)
	callToolMethod.Register(mux, s.callTool)
	return jsonrpc.Options{
		Handler:      mux,
		Logger:       logger,
		Cancellation: mcpCancel,
		OnCancel: func(ce *jsonrpc.CancelError, running, queued int) {
			if running == 0 {
				logger.Info("cancel", "id", ce.ID.String(), "reason", ce.Reason(), "queued", queued)
			}
		},
		StopGrace: 300 * time.Millisecond,
	}
}

// mcpCancel is MCP's cancel notification, which gets no response.
var mcpCancel = jsonrpc.Cancellation{Method: "notifications/cancelled", IDMember: "requestId", Unanswered: true}

func main() {
	httpAddr := flag.String("http", "", "serve MCP's stateless Streamable HTTP transport at /mcp on this TCP `address` instead of stdio")
	flag.Parse()

	srv := &jsonrpc.Server{Options: options()}
	var err error
	if *httpAddr != "" {
		ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
		err = serveHTTP(ctx, srv, *httpAddr, os.Stdout)
		stop()
	} else {
		err = srv.Serve(context.Background(), os.Stdin, os.Stdout)
	}
	if err != nil {
		logger.Error("serve", "err", err)
		os.Exit(1)
	}
}
