// Command openrpc serves the methods of cmd/jsonrpc-demo, and one of its
// own ("depth", whose params are a tree), and answers rpc.discover with
// their OpenRPC document, built by the module
// github.com/ndjsonrpc/jsonrpc/openrpc from the methods' Go types, with a
// summary and an example call for each method (the documented error for
// those that always fail).
//
// The example refuses a "count" or "progress" of more than 1,000 items
// (maxItems) with -32602, and its document says so: the methods of
// cmd/jsonrpc-demo loop as far as they are asked.
//
// It serves its standard input and output until they end:
//
//	echo '{"jsonrpc":"2.0","id":1,"method":"rpc.discover"}' | go run .
//
// With -http ADDR it serves JSON-RPC over HTTP POST at the path / of the
// TCP address ADDR instead, prints its URL on standard output once it
// listens (ADDR may name port 0), lists that URL under "servers" in the
// document, and stops on SIGINT or SIGTERM. Its http.Server has the
// timeouts that SECURITY.md asks of an HTTP endpoint, so a client that
// sends slowly, or does not read its answer, is cut off:
//
//	go run . -http 127.0.0.1:8545
//	npx @open-rpc/test-coverage -s http://127.0.0.1:8545/ ... # or the playground at playground.open-rpc.org
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/ndjsonrpc/jsonrpc"
	"github.com/ndjsonrpc/jsonrpc/internal/demo"
	"github.com/ndjsonrpc/jsonrpc/openrpc"
)

func main() {
	httpAddr := flag.String("http", "", "serve JSON-RPC over HTTP POST at / on this TCP `address` instead of stdio")
	flag.Parse()
	if err := run(*httpAddr); err != nil {
		fmt.Fprintln(os.Stderr, "openrpc:", err)
		os.Exit(1)
	}
}

// maxItems is the most items that "count" streams and the most
// notifications that "progress" sends.
const maxItems = 1000

// newMux returns the demo's methods, with count and progress bounded by
// maxItems, and rpc.discover answered with their document for servers.
func newMux(servers []openrpc.Server) *jsonrpc.Mux {
	mux := demo.NewMux()
	Depth.Register(mux, depth)
	mux.Use(bounded, document(servers).Middleware())
	return mux
}

// A Tree is a named node and its children: a type that contains itself,
// which the document defines once, under its components, and refers to.
type Tree struct {
	Name string `json:"name"`
	Kids []Tree `json:"kids,omitempty"`
}

// Depth is the example's own method, beside the demo's: the depth of a
// tree, given by name as its root's members.
var Depth = jsonrpc.NewMethod[Tree, int]("depth")

func depth(_ context.Context, t Tree) (int, error) { return treeDepth(t), nil }

// treeDepth is the depth of t.
func treeDepth(t Tree) int {
	d := 0
	for _, k := range t.Kids {
		d = max(d, treeDepth(k))
	}
	return d + 1
}

// bounded is middleware that refuses a call of count or progress for more
// than maxItems items, before the demo's handler loops over them. It
// decodes the params as the handler does, with the same adapter.
func bounded(next jsonrpc.Handler) jsonrpc.Handler {
	check := func(method string, n int) error {
		if n > maxItems {
			return jsonrpc.Errorf(jsonrpc.CodeInvalidParams, "Invalid params: %s of %d, over %d", method, n, maxItems)
		}
		return nil
	}
	checks := map[string]jsonrpc.Handler{
		demo.Count.Name(): jsonrpc.Func(func(_ context.Context, p demo.CountParams) (any, error) {
			return nil, check("count", p.N)
		}),
		demo.Progress.Name(): jsonrpc.Func(func(_ context.Context, p demo.ProgressParams) (any, error) {
			return nil, check("progress", p.Count)
		}),
	}
	return jsonrpc.HandlerFunc(func(ctx context.Context, req *jsonrpc.Request) (any, error) {
		if h, ok := checks[req.Method]; ok {
			if _, err := h.ServeJSONRPC(ctx, req); err != nil {
				return nil, err
			}
		}
		return next.ServeJSONRPC(ctx, req)
	})
}

// newHTTPServer returns the HTTP server of -http, serving h at /, with
// the bounds SECURITY.md asks of an HTTP endpoint.
func newHTTPServer(h http.Handler) *http.Server {
	hm := http.NewServeMux()
	hm.Handle("/{$}", h) // POST only: the Server answers other methods 405
	return &http.Server{
		Handler:           hm,
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       30 * time.Second,
		WriteTimeout:      30 * time.Second,
		IdleTimeout:       time.Minute,
		MaxHeaderBytes:    64 << 10,
	}
}

func run(httpAddr string) error {
	if httpAddr == "" {
		srv := &jsonrpc.Server{Options: jsonrpc.Options{Handler: newMux(nil)}}
		return srv.Serve(context.Background(), os.Stdin, os.Stdout)
	}
	l, err := net.Listen("tcp", httpAddr)
	if err != nil {
		return err
	}
	url := "http://" + l.Addr().String() + "/"
	srv := &jsonrpc.Server{Options: jsonrpc.Options{Handler: newMux([]openrpc.Server{{Name: "demo", URL: url}})}}
	hs := newHTTPServer(srv)
	if _, err := fmt.Println(url); err != nil {
		l.Close()
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	errc := make(chan error, 1)
	go func() { errc <- hs.Serve(l) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	shutdown, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := hs.Shutdown(shutdown); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// document describes the demo's methods, served at servers.
func document(servers []openrpc.Server) *openrpc.Document {
	number := openrpc.SchemaFor[float64]()
	anyValue := openrpc.SchemaFor[json.RawMessage]()
	internal := []openrpc.Error{{Code: jsonrpc.CodeInternalError, Message: "Internal error"}}
	invalid := []openrpc.Error{{Code: jsonrpc.CodeInvalidParams, Message: "Invalid params"}}
	items := openrpc.SchemaFor[int]() // a count of items, up to maxItems
	items.Maximum = new(float64(maxItems))
	return &openrpc.Document{
		Info: openrpc.Info{
			Title:       "jsonrpc-demo",
			Version:     "1.0.0",
			Description: "The methods of cmd/jsonrpc-demo, which the JSON-RPC 2.0 specification's examples call.",
		},
		Servers: servers,
		Methods: []openrpc.Method{
			openrpc.Describe(demo.Subtract, openrpc.Method{
				Summary:     "Subtracts the subtrahend from the minuend.",
				Description: "Params by position, [minuend, subtrahend], or by name, {\"minuend\": a, \"subtrahend\": b}.",
				// SubtractParams decodes itself: its fields are not its names.
				ParamStructure: openrpc.Either,
				Params: []openrpc.ContentDescriptor{
					{Name: "minuend", Required: true, Schema: number},
					{Name: "subtrahend", Required: true, Schema: number},
				},
				Result: &openrpc.ContentDescriptor{Name: "difference"},
				Errors: []openrpc.Error{{Code: jsonrpc.CodeInvalidParams, Message: "Invalid params"}},
				Examples: []openrpc.Example{
					{Name: "42 - 23", Params: openrpc.Values(42, 23), Result: openrpc.Value(19)},
					{Name: "23 - 42", Params: openrpc.Values(23, 42), Result: openrpc.Value(-19)},
				},
			}),
			openrpc.Describe(demo.Sum, openrpc.Method{
				Summary:  "Adds numbers, as many as given.",
				Params:   []openrpc.ContentDescriptor{{Name: "numbers"}},
				Result:   &openrpc.ContentDescriptor{Name: "sum"},
				Examples: []openrpc.Example{{Name: "1 + 2 + 4", Params: openrpc.Values(1, 2, 4), Result: openrpc.Value(7)}},
			}),
			openrpc.Describe(jsonrpc.NewMethod[*struct{}, [2]any]("get_data"), openrpc.Method{
				Summary:  "Returns [\"hello\", 5].",
				Examples: []openrpc.Example{{Name: "data", Result: openrpc.Value([]any{"hello", 5})}},
			}),
			openrpc.Describe(jsonrpc.NewMethod[json.RawMessage, json.RawMessage]("echo"), openrpc.Method{
				Summary:     "Returns its params exactly as sent, or null when there are none.",
				Description: "Any params: an array, or an object, comes back byte for byte.",
				Params:      []openrpc.ContentDescriptor{{Name: "values", Schema: anyValue, Variadic: true}},
				Examples:    []openrpc.Example{{Name: "an array", Params: openrpc.Values("hello", 5, []any{true, nil}), Result: openrpc.Value([]any{"hello", 5, []any{true, nil}})}},
			}),
			openrpc.Describe(demo.Progress, openrpc.Method{
				Summary:     "Sends count \"progress\" notifications, then answers \"done\".",
				Description: "Each notification has params {\"done\": i, \"total\": count}; over HTTP they come only when the request accepts text/event-stream. A count over 1000 is refused.",
				Params:      []openrpc.ContentDescriptor{{Name: "count", Required: true, Schema: items}},
				Errors:      invalid,
				Examples:    []openrpc.Example{{Name: "two steps", Params: openrpc.Values(2), Result: openrpc.Value("done")}},
			}),
			openrpc.DescribeStream(demo.Count, openrpc.Method{
				Summary:     "Streams {\"index\": i} for i from 0 to n-1, then answers n.",
				Description: "Over HTTP the items come only when the request accepts text/event-stream. An n over 1000 is refused.",
				Params:      []openrpc.ContentDescriptor{{Name: "n", Required: true, Schema: items}},
				Errors:      invalid,
				Examples:    []openrpc.Example{{Name: "three items", Params: openrpc.Values(3), Result: openrpc.Value(3)}},
			}),
			openrpc.Describe(Depth, openrpc.Method{
				Summary:  "Answers the depth of a tree: 1 for a leaf.",
				Examples: []openrpc.Example{{Name: "two levels", Params: openrpc.Values("root", []Tree{{Name: "leaf"}}), Result: openrpc.Value(2)}},
			}),
			openrpc.Describe(demo.Sleep, openrpc.Method{
				Summary:  "Answers \"slept\" after ms milliseconds; cancellable.",
				Examples: []openrpc.Example{{Name: "a millisecond", Params: openrpc.Values(1), Result: openrpc.Value("slept")}},
			}),
			openrpc.Describe(jsonrpc.NewMethod[json.RawMessage, any]("fail"), openrpc.Method{
				Summary: "Always fails with the error -32001 \"custom failure\".",
				Errors:  []openrpc.Error{{Code: -32001, Message: "custom failure", Data: map[string]string{"reason": "demo"}}},
			}),
			openrpc.Describe(jsonrpc.NewMethod[json.RawMessage, any]("internal"), openrpc.Method{
				Summary: "Always fails with a plain Go error, answered as an internal error.",
				Errors:  internal,
			}),
			openrpc.Describe(jsonrpc.NewMethod[json.RawMessage, any]("panic"), openrpc.Method{
				Summary: "Panics; the server answers an internal error and goes on.",
				Errors:  internal,
			}),
			openrpc.DescribeNotification[[]any]("update", openrpc.Method{
				Summary:  "Does nothing; the specification's examples send it as a notification.",
				Params:   []openrpc.ContentDescriptor{{Name: "values"}},
				Examples: []openrpc.Example{{Name: "spec", Params: openrpc.Values(1, 2, 3, 4, 5)}},
			}),
			openrpc.DescribeNotification[[]any]("notify_hello", openrpc.Method{
				Summary:  "Does nothing; the specification's examples send it as a notification.",
				Params:   []openrpc.ContentDescriptor{{Name: "values"}},
				Examples: []openrpc.Example{{Name: "spec", Params: openrpc.Values(7)}},
			}),
			openrpc.DescribeNotification[[]any]("notify_sum", openrpc.Method{
				Summary:  "Does nothing; the specification's examples send it as a notification.",
				Params:   []openrpc.ContentDescriptor{{Name: "values"}},
				Examples: []openrpc.Example{{Name: "spec", Params: openrpc.Values(1, 2, 4)}},
			}),
		},
	}
}
