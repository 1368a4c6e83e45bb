package jsonrpc_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/ndjsonrpc/jsonrpc"
)

// benchMux has the raw echo handlers and the typed subtract handler of the
// performance workloads: "echo" returns its params as any, which boxes
// them, and "echoraw" as a RawHandlerFunc, which does not.
func benchMux() *jsonrpc.Mux {
	mux := new(jsonrpc.Mux)
	mux.HandleFunc("echo", func(_ context.Context, req *jsonrpc.Request) (any, error) {
		return req.Params, nil
	})
	mux.Handle("echoraw", jsonrpc.RawHandlerFunc(func(_ context.Context, req *jsonrpc.Request) (json.RawMessage, error) {
		return req.Params, nil
	}))
	type sub struct {
		Minuend    int `json:"minuend"`
		Subtrahend int `json:"subtrahend"`
	}
	mux.Handle("subtract", jsonrpc.Func(func(_ context.Context, p sub) (int, error) {
		return p.Minuend - p.Subtrahend, nil
	}))
	type location struct {
		URI  string `json:"uri"`
		Line int    `json:"line"`
	}
	mux.Handle("locate", jsonrpc.Func(func(_ context.Context, p sub) (location, error) {
		return location{URI: "file:///src/main.go", Line: p.Minuend - p.Subtrahend}, nil
	}))
	return mux
}

// workload returns n lines made by line(i), and how many of them are
// requests.
func workload(n int, line func(i int) string) []byte {
	var b strings.Builder
	for i := range n {
		b.WriteString(line(i))
		b.WriteByte('\n')
	}
	return []byte(b.String())
}

func echoLine(i int) string {
	return `{"jsonrpc":"2.0","id":` + strconv.Itoa(i) + `,"method":"echo","params":[` + strconv.Itoa(i) + `,"hello"]}`
}

func echoRawLine(i int) string {
	return `{"jsonrpc":"2.0","id":` + strconv.Itoa(i) + `,"method":"echoraw","params":[` + strconv.Itoa(i) + `,"hello"]}`
}

// BenchmarkServe measures the whole input stream from memory through Serve
// into a buffer; ns/op and allocs/op are per request.
func BenchmarkServe(b *testing.B) {
	big := strings.Repeat("x", 256<<10)
	cases := []struct {
		name  string
		n     int // requests per line
		lines int
		line  func(i int) string
		size  bool
	}{
		{"W1echo", 1, 10000, echoLine, false},
		{"W1echoRaw", 1, 10000, echoRawLine, false},
		{"W2typed", 1, 10000, typedLine, false},
		{"W2structResult", 1, 10000, func(i int) string {
			return `{"jsonrpc":"2.0","id":` + strconv.Itoa(i) + `,"method":"locate","params":{"minuend":` + strconv.Itoa(i) + `,"subtrahend":3}}`
		}, false},
		{"W3batch", 10, 1000, func(i int) string {
			parts := make([]string, 10)
			for k := range parts {
				parts[k] = echoLine(i*10 + k)
			}
			return "[" + strings.Join(parts, ",") + "]"
		}, false},
		{"W3batchNotify", 11, 1000, func(i int) string {
			// A batch, then a notification on a line of its own.
			parts := make([]string, 10)
			for k := range parts {
				parts[k] = echoRawLine(i*10 + k)
			}
			return "[" + strings.Join(parts, ",") + "]\n" + `{"jsonrpc":"2.0","method":"echoraw","params":[` + strconv.Itoa(i) + `]}`
		}, false},
		{"W4notify", 1, 10000, func(i int) string {
			return `{"jsonrpc":"2.0","method":"echo","params":[` + strconv.Itoa(i) + `,"hello"]}`
		}, false},
		{"W4notifyRaw", 1, 10000, func(i int) string {
			return `{"jsonrpc":"2.0","method":"echoraw","params":[` + strconv.Itoa(i) + `,"hello"]}`
		}, false},
		{"W5big", 1, 20, func(i int) string {
			return `{"jsonrpc":"2.0","id":` + strconv.Itoa(i) + `,"method":"echo","params":["` + big + `"]}`
		}, true},
	}
	mux := benchMux()
	for _, tc := range cases {
		b.Run(tc.name, func(b *testing.B) {
			input := workload(tc.lines, tc.line)
			srv := &jsonrpc.Server{Options: jsonrpc.Options{Handler: mux}}
			requests := tc.lines * tc.n
			if tc.size {
				b.SetBytes(int64(len(input) / requests))
			}
			serveRounds(b, srv, input, requests)
		})
	}
}

// typedLine is request i of W2: subtract with params by name.
func typedLine(i int) string {
	return `{"jsonrpc":"2.0","id":` + strconv.Itoa(i) + `,"method":"subtract","params":{"minuend":` + strconv.Itoa(i) + `,"subtrahend":3}}`
}

// serveRounds serves input, holding requests requests, with srv for each
// round of b, and reports the time per request.
func serveRounds(b *testing.B, srv *jsonrpc.Server, input []byte, requests int) {
	var out bytes.Buffer
	b.ReportAllocs()
	var rounds int
	for b.Loop() {
		out.Reset()
		if err := srv.Serve(b.Context(), bytes.NewReader(input), &out); err != nil {
			b.Fatal(err)
		}
		rounds++
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(rounds*requests), "ns/req")
}

// BenchmarkServeMiddleware serves W1echo, W1echoRaw and W2typed as
// BenchmarkServe does, through a Mux without middleware and through one
// with a middleware that only passes each request on (the least a
// middleware that does something costs): what wrapping a handler costs
// the server's paths, per request. A RawHandlerFunc and a handler made by
// Func, once wrapped, no longer have theirs, which write the result
// without boxing it in an interface.
func BenchmarkServeMiddleware(b *testing.B) {
	pass := func(h jsonrpc.Handler) jsonrpc.Handler {
		return jsonrpc.HandlerFunc(func(ctx context.Context, req *jsonrpc.Request) (any, error) {
			return h.ServeJSONRPC(ctx, req)
		})
	}
	for _, tc := range []struct {
		name string
		line func(i int) string
	}{{"W1echo", echoLine}, {"W1echoRaw", echoRawLine}, {"W2typed", typedLine}} {
		input := workload(10000, tc.line)
		for _, mw := range []string{"none", "pass"} {
			b.Run(tc.name+"/mw="+mw, func(b *testing.B) {
				mux := benchMux()
				if mw == "pass" {
					mux.Use(pass)
				}
				srv := &jsonrpc.Server{Options: jsonrpc.Options{Handler: mux}}
				serveRounds(b, srv, input, 10000)
			})
		}
	}
}

// BenchmarkParse measures strict decoding of one request.
func BenchmarkParse(b *testing.B) {
	line := []byte(`{"jsonrpc":"2.0","id":12345,"method":"subtract","params":{"minuend":42,"subtrahend":23}}`)
	b.ReportAllocs()
	for b.Loop() {
		var req jsonrpc.Request
		if err := req.UnmarshalJSON(line); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkDispatch measures a Mux dispatching to the typed adapter.
func BenchmarkDispatch(b *testing.B) {
	mux := benchMux()
	req := &jsonrpc.Request{ID: jsonrpc.Int64ID(1), Method: "subtract", Params: json.RawMessage(`{"minuend":42,"subtrahend":23}`)}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := mux.ServeJSONRPC(b.Context(), req); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkWrite measures LineWriter buffering one message.
func BenchmarkWrite(b *testing.B) {
	w := jsonrpc.NewLineWriter(io.Discard)
	msg := []byte(`{"jsonrpc":"2.0","id":1,"result":[1,"hello"]}`)
	b.ReportAllocs()
	for b.Loop() {
		if err := w.WriteMessage(msg); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkRoundTrip measures calls from a Client to Serve over io.Pipe,
// from one caller and from 64 at once, with a context that cannot end (the
// caller writes its request) and with one that can (a goroutine of the
// client's writes it, so that the caller never waits on a stalled peer).
func BenchmarkRoundTrip(b *testing.B) {
	cancellable, cancel := context.WithCancel(context.Background())
	defer cancel()
	for _, ctx := range []struct {
		name string
		ctx  context.Context
	}{{"background", context.Background()}, {"cancellable", cancellable}} {
		for _, callers := range []int{1, 64} {
			b.Run(fmt.Sprintf("ctx=%s/callers=%d", ctx.name, callers), func(b *testing.B) {
				roundTrips(b, ctx.ctx, callers)
			})
		}
	}
}

// BenchmarkSocketRoundTrip compares, in one run, the round trip over an
// io.Pipe with the same over a loopback TCP connection between Dial and
// ServeListener: what the socket costs.
func BenchmarkSocketRoundTrip(b *testing.B) {
	for _, callers := range []int{1, 64} {
		b.Run(fmt.Sprintf("transport=pipe/callers=%d", callers), func(b *testing.B) {
			roundTrips(b, context.Background(), callers)
		})
		b.Run(fmt.Sprintf("transport=tcp/callers=%d", callers), func(b *testing.B) {
			tcpRoundTrips(b, callers)
		})
	}
}

func tcpRoundTrips(b *testing.B, callers int) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	srv := &jsonrpc.Server{Options: jsonrpc.Options{Handler: benchMux()}}
	served := make(chan error, 1)
	go func() { served <- srv.ServeListener(context.Background(), l) }()
	client, err := jsonrpc.Dial(context.Background(), "tcp", l.Addr().String(), nil)
	if err != nil {
		b.Fatal(err)
	}
	callLoop(b, context.Background(), client, callers)
	client.Close()
	if err := srv.Shutdown(context.Background()); err != nil {
		b.Fatal(err)
	}
	if err := <-served; !errors.Is(err, jsonrpc.ErrServerClosed) {
		b.Fatal(err)
	}
}

// roundTrips runs calls from callers goroutines with ctx until b is done.
func roundTrips(b *testing.B, ctx context.Context, callers int) {
	serverIn, clientOut := io.Pipe()
	clientIn, serverOut := io.Pipe()
	served := make(chan error, 1)
	go func() {
		served <- jsonrpc.Serve(context.Background(), serverIn, serverOut, benchMux())
		serverOut.Close()
	}()
	client := jsonrpc.NewConn(clientIn, clientOut, nil)
	callLoop(b, ctx, client, callers)
	clientOut.Close()
	if err := <-served; err != nil {
		b.Fatal(err)
	}
	client.Close()
}

// caller is what callLoop calls: a Conn or an HTTPClient.
type caller = jsonrpc.Caller

// callLoop calls "echo" on client until b is done, from one goroutine when
// callers is 1 and otherwise from callers goroutines per GOMAXPROCS
// (b.SetParallelism), and checks every answer.
func callLoop(b *testing.B, ctx context.Context, client caller, callers int) {
	params := json.RawMessage(`[1,"hello"]`)
	b.ReportAllocs()
	var mu sync.Mutex
	var failed error
	b.SetParallelism(callers)
	if callers == 1 {
		for b.Loop() {
			var out json.RawMessage
			if err := client.Call(ctx, "echo", params, &out); err != nil {
				b.Fatal(err)
			}
			if string(out) != string(params) {
				b.Fatalf("echo returned %s", out)
			}
		}
	} else {
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				var out json.RawMessage
				err := client.Call(ctx, "echo", params, &out)
				if err == nil && string(out) != string(params) {
					err = fmt.Errorf("echo returned %s", out)
				}
				if err != nil {
					mu.Lock()
					failed = err
					mu.Unlock()
					return
				}
			}
		})
	}
	if failed != nil {
		b.Fatal(failed)
	}
}

// BenchmarkPeerCall measures a call whose handler calls back before it
// answers (MCP's sampling, LSP's workspace/configuration): two Conns over
// io.Pipe, the handler's call giving up its slot and taking it again.
func BenchmarkPeerCall(b *testing.B) {
	ar, bw := io.Pipe()
	br, aw := io.Pipe()
	client := new(jsonrpc.Mux)
	client.HandleFunc("config", func(context.Context, *jsonrpc.Request) (any, error) { return 7, nil })
	server := new(jsonrpc.Mux)
	server.HandleFunc("ask", func(ctx context.Context, _ *jsonrpc.Request) (any, error) {
		var n int
		err := jsonrpc.Peer(ctx).Call(ctx, "config", nil, &n)
		return n + 1, err
	})
	a := jsonrpc.NewConn(ar, aw, &jsonrpc.Options{Handler: client})
	s := jsonrpc.NewConn(br, bw, &jsonrpc.Options{Handler: server})
	defer func() { _ = a.Close(); _ = s.Close() }()
	b.ReportAllocs()
	for b.Loop() {
		var n int
		if err := a.Call(context.Background(), "ask", nil, &n); err != nil || n != 8 {
			b.Fatalf("ask = %d, %v", n, err)
		}
	}
}

// BenchmarkHandlerNotify serves 10,000 requests whose handler sends the
// caller four notifications (progress, say) through Peer before it
// answers, from memory into a buffer: the path of a handler's Notify,
// with a context that can end (the handler's own).
func BenchmarkHandlerNotify(b *testing.B) {
	mux := new(jsonrpc.Mux)
	mux.HandleFunc("work", func(ctx context.Context, _ *jsonrpc.Request) (any, error) {
		for i := range 4 {
			if err := jsonrpc.Peer(ctx).Notify(ctx, "progress", []int{i}); err != nil {
				return nil, err
			}
		}
		return "done", nil
	})
	input := workload(10000, func(i int) string {
		return `{"jsonrpc":"2.0","id":` + strconv.Itoa(i+1) + `,"method":"work"}`
	})
	srv := &jsonrpc.Server{Options: jsonrpc.Options{Handler: mux}}
	serveRounds(b, srv, input, 10000)
}
