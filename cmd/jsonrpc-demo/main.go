// Command jsonrpc-demo is a JSON-RPC 2.0 server on standard input and
// output, built on the public API of package jsonrpc alone. It reads
// newline-delimited requests until the end of its input, writes one
// response per line, and exits 0 once everything is flushed (requests
// still running at the end of the input get a minute to finish, then are
// cancelled). On SIGINT or SIGTERM it stops as it does with flags (below).
//
// Its methods:
//
//	subtract      [minuend, subtrahend] or {"minuend": a, "subtrahend": b}: a - b
//	sum           an array of numbers: their sum
//	get_data      ["hello", 5]
//	update, notify_hello, notify_sum
//	              any params: null
//	echo          the params exactly as sent, or null when there are none
//	progress      {"count": n}: n "progress" notifications, then "done"
//	count         {"n": k}: streams {"index": i} for i = 0..k-1, then k
//	fail          the error -32001 "custom failure" with data {"reason": "demo"}
//	internal      a plain Go error, errors.New("boom")
//	panic         a handler that panics
//	sleep         {"ms": n}: "slept" after n milliseconds; cancellable
//
// Try it:
//
//	echo '{"jsonrpc":"2.0","id":1,"method":"subtract","params":[42,23]}' | go run ./cmd/jsonrpc-demo
//
// With flags it serves a network instead of its standard input and output,
// until SIGINT or SIGTERM, when it stops accepting, lets the requests in
// flight finish (for at most five seconds) and exits 0. Meanwhile it
// answers each request that still arrives with the error -32091 "Not
// run" (data {"reason":"stopping"}; over HTTP, with status 503): it did
// not run, and may be sent elsewhere (see jsonrpc.Server.Shutdown). After
// the five seconds, what still runs is cancelled. With -http, it answers
// 503 for one second more before it closes its listener and its
// kept-alive connections:
//
//	-listen ADDR  newline-delimited JSON-RPC on each connection to ADDR,
//	              a TCP address (host:port) or unix:PATH
//	-http ADDR    JSON-RPC over HTTP POST on the TCP address ADDR, at any
//	              path (see jsonrpc.Server.ServeHTTP)
//	-name NAME    adds the method "backend", which returns NAME: to see
//	              which of several instances answered
//	-count        on exit, writes to standard error how many requests and
//	              notifications each method ran, as one line such as
//	              "jsonrpc-demo: ran backend=2 subtract=17" (methods in
//	              order, those that ran nothing left out; "jsonrpc-demo:
//	              ran nothing" when none ran): a request answered "not
//	              run" or "Method not found" is not counted, one whose
//	              handler began is, even if its answer was lost. It works
//	              without -listen and -http too
//
// For example:
//
//	go run ./cmd/jsonrpc-demo -http 127.0.0.1:8080 &
//	curl -H 'Content-Type: application/json' -d '{"jsonrpc":"2.0","id":1,"method":"sum","params":[1,2]}' 127.0.0.1:8080
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"iter"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/ndjsonrpc/jsonrpc"
)

func main() {
	listen := flag.String("listen", "", "serve newline-delimited JSON-RPC on this TCP `address` (or unix:PATH)")
	httpAddr := flag.String("http", "", "serve JSON-RPC over HTTP POST on this TCP `address`")
	name := flag.String("name", "", "answer the method \"backend\" with this `name`")
	count := flag.Bool("count", false, "on exit, write to standard error how many requests and notifications each method ran")
	flag.Parse()
	if flag.NArg() > 0 {
		fmt.Fprintln(os.Stderr, "jsonrpc-demo: unexpected arguments:", flag.Args())
		os.Exit(2)
	}

	// The signal starts a graceful stop (stopOn); it does not end the
	// serving contexts, whose end stops every connection as Close does.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	mux := newMux()
	if *name != "" {
		backend := *name
		mux.HandleFunc("backend", func(context.Context, *jsonrpc.Request) (any, error) { return backend, nil })
	}
	var runs *runCounter
	if *count {
		runs = countRuns(mux)
	}
	srv := &jsonrpc.Server{
		Options: jsonrpc.Options{
			Handler: mux,
			Logger:  slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelError})),
		},
	}
	if *listen == "" && *httpAddr == "" {
		// The requests still running at the end of the input finish, as
		// their methods say, unless they take over a minute.
		srv.StopGrace = time.Minute
		stopped := stopOn(ctx, srv, nil)
		err := srv.Serve(context.Background(), os.Stdin, os.Stdout)
		if errors.Is(err, jsonrpc.ErrServerClosed) {
			<-stopped
			err = nil
		}
		runs.report()
		if err != nil {
			fmt.Fprintln(os.Stderr, "jsonrpc-demo:", err)
			os.Exit(1)
		}
		return
	}
	err := serveNetwork(ctx, srv, *listen, *httpAddr)
	runs.report()
	if err != nil {
		fmt.Fprintln(os.Stderr, "jsonrpc-demo:", err)
		os.Exit(1)
	}
}

// serveNetwork serves srv on a socket, over HTTP, or both, until ctx ends;
// then it shuts both down, giving the requests in flight five seconds.
func serveNetwork(ctx context.Context, srv *jsonrpc.Server, listen, httpAddr string) error {
	errc := make(chan error, 2)
	var hs *http.Server
	if listen != "" {
		network, address := "tcp", listen
		if path, ok := strings.CutPrefix(listen, "unix:"); ok {
			network, address = "unix", path
		}
		l, err := net.Listen(network, address)
		if err != nil {
			return err
		}
		go func() { errc <- srv.ServeListener(context.Background(), l) }()
	}
	if httpAddr != "" {
		l, err := net.Listen("tcp", httpAddr)
		if err != nil {
			return err
		}
		hs = &http.Server{Handler: srv, ReadHeaderTimeout: 10 * time.Second, IdleTimeout: 2 * time.Minute}
		go func() { errc <- hs.Serve(l) }()
	}
	var err error
	failed := make(chan struct{})
	stopped := stopOn(ctx, srv, failed)
	select {
	case <-stopped:
	case err = <-errc:
		close(failed)
		<-stopped
	}
	if hs != nil {
		// The server answers 503 to what comes now. It goes on so for a
		// second before it closes its listener and its idle connections,
		// so that a client or balancer that keeps connections alive
		// learns of the stop from a 503 rather than from a connection
		// closed as it sends on it.
		if err == nil {
			time.Sleep(httpLinger)
		}
		stop, cancel := context.WithTimeout(context.Background(), time.Second)
		_ = hs.Shutdown(stop)
		cancel()
	}
	if err != nil && !errors.Is(err, http.ErrServerClosed) && !errors.Is(err, jsonrpc.ErrServerClosed) && !errors.Is(err, context.Canceled) {
		return err
	}
	return nil
}

// httpLinger is how long the HTTP server answers 503 after the graceful
// stop, before it closes.
const httpLinger = time.Second

// stopOn stops srv gracefully once ctx ends (a signal) or failed is
// closed: Shutdown gives the requests in flight five seconds, while later
// requests are answered "not run"; then Close cancels what is left. The
// channel it returns is closed when that is done.
func stopOn(ctx context.Context, srv *jsonrpc.Server, failed <-chan struct{}) <-chan struct{} {
	done := make(chan struct{})
	go func() {
		defer close(done)
		select {
		case <-ctx.Done():
		case <-failed:
		}
		stop, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if srv.Shutdown(stop) != nil {
			_ = srv.Close()
		}
	}()
	return done
}

// A runCounter counts, per method, the requests and notifications whose
// handler began, for -count. A nil *runCounter counts nothing.
type runCounter struct {
	mux *jsonrpc.Mux
	n   sync.Map // method name -> *atomic.Int64
}

// countRuns makes mux count what each of its methods runs, once every
// method is registered.
func countRuns(mux *jsonrpc.Mux) *runCounter {
	rc := &runCounter{mux: mux}
	mux.Use(func(next jsonrpc.Handler) jsonrpc.Handler {
		return jsonrpc.HandlerFunc(func(ctx context.Context, req *jsonrpc.Request) (any, error) {
			// A method with no handler runs nothing: it is answered
			// "Method not found", which passes through middleware too.
			if rc.mux.Handler(req.Method) != nil {
				v, ok := rc.n.Load(req.Method)
				if !ok {
					v, _ = rc.n.LoadOrStore(req.Method, new(atomic.Int64))
				}
				v.(*atomic.Int64).Add(1)
			}
			return next.ServeJSONRPC(ctx, req)
		})
	})
	return rc
}

// report writes the line of -count to standard error, once the server
// has stopped.
func (rc *runCounter) report() {
	if rc == nil {
		return
	}
	var parts []string
	rc.n.Range(func(k, v any) bool {
		if n := v.(*atomic.Int64).Load(); n > 0 {
			parts = append(parts, fmt.Sprintf("%s=%d", k, n))
		}
		return true
	})
	if len(parts) == 0 {
		parts = []string{"nothing"}
	}
	slices.Sort(parts)
	fmt.Fprintln(os.Stderr, "jsonrpc-demo: ran", strings.Join(parts, " "))
}

// subtractParams accepts [minuend, subtrahend] or
// {"minuend": a, "subtrahend": b}, both numbers; member names are matched
// exactly, and anything else is refused.
type subtractParams struct {
	Minuend, Subtrahend float64
	set                 bool
}

func (p *subtractParams) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	if p.simple(b) {
		return nil
	}
	if len(b) > 0 && b[0] == '[' {
		var a []json.RawMessage
		if err := json.Unmarshal(b, &a); err != nil {
			return err
		}
		if len(a) != 2 {
			return fmt.Errorf("want [minuend, subtrahend], got %d values", len(a))
		}
		return p.set2(a[0], a[1])
	}
	var o map[string]json.RawMessage
	if err := json.Unmarshal(b, &o); err != nil {
		return err
	}
	m, okM := o["minuend"]
	s, okS := o["subtrahend"]
	if !okM || !okS {
		return errors.New(`want {"minuend": a, "subtrahend": b}`)
	}
	return p.set2(m, s)
}

// simple decodes the usual form, {"minuend": a, "subtrahend": b} in either
// order with plain numbers, without allocating, and reports whether b had
// that form; anything else is left to the general decoder.
func (p *subtractParams) simple(b []byte) bool {
	var m, s []byte
	rest, ok := cut(b, "{")
	for ok {
		var name, value []byte
		if name, rest, ok = quoted(rest); !ok {
			return false
		}
		if rest, ok = cut(rest, ":"); !ok {
			return false
		}
		if value, rest, ok = numberToken(rest); !ok {
			return false
		}
		switch string(name) {
		case "minuend":
			if m != nil {
				return false
			}
			m = value
		case "subtrahend":
			if s != nil {
				return false
			}
			s = value
		default:
			return false
		}
		if rest, ok = cut(rest, ","); !ok {
			if _, ok = cut(rest, "}"); !ok || m == nil || s == nil {
				return false
			}
			return p.set2(m, s) == nil
		}
	}
	return false
}

// cut skips whitespace and then the token tok.
func cut(b []byte, tok string) ([]byte, bool) {
	b = bytes.TrimLeft(b, " \t\r\n")
	return bytes.CutPrefix(b, []byte(tok))
}

// quoted takes a string without escapes.
func quoted(b []byte) (s, rest []byte, ok bool) {
	b, ok = cut(b, `"`)
	if !ok {
		return nil, nil, false
	}
	i := bytes.IndexAny(b, `"\`)
	if i < 0 || b[i] != '"' {
		return nil, nil, false
	}
	return b[:i], b[i+1:], true
}

// numberToken takes the bytes of a number, which set2 then checks.
func numberToken(b []byte) (tok, rest []byte, ok bool) {
	b = bytes.TrimLeft(b, " \t\r\n")
	i := 0
	for i < len(b) && bytes.IndexByte([]byte("+-.0123456789eE"), b[i]) >= 0 {
		i++
	}
	return b[:i], b[i:], i > 0
}

// set2 sets both operands, which must be JSON numbers.
func (p *subtractParams) set2(m, s json.RawMessage) error {
	var err error
	if p.Minuend, err = number(m); err != nil {
		return err
	}
	if p.Subtrahend, err = number(s); err != nil {
		return err
	}
	p.set = true
	return nil
}

// number parses raw, which must be a JSON number.
func number(raw json.RawMessage) (float64, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || (raw[0] != '-' && (raw[0] < '0' || raw[0] > '9')) {
		return 0, fmt.Errorf("want a number, not %s", raw)
	}
	return strconv.ParseFloat(string(raw), 64)
}

func null(context.Context, *jsonrpc.Request) (any, error) { return nil, nil }

type (
	progressParams struct {
		Count int `json:"count"`
	}
	countParams struct {
		N int `json:"n"`
	}
	sleepParams struct {
		MS int `json:"ms"`
	}
)

// The demo's typed methods: each names a method with its params and
// result, for the handler registered here and for any Go caller.
var (
	subtractMethod = jsonrpc.NewMethod[subtractParams, float64]("subtract")
	sumMethod      = jsonrpc.NewMethod[[]float64, float64]("sum")
	progressMethod = jsonrpc.NewMethod[progressParams, string]("progress")
	countMethod    = jsonrpc.NewStreamMethod[countParams, map[string]int]("count")
	sleepMethod    = jsonrpc.NewMethod[sleepParams, string]("sleep")
)

func newMux() *jsonrpc.Mux {
	mux := new(jsonrpc.Mux)
	subtractMethod.Register(mux, func(_ context.Context, p subtractParams) (float64, error) {
		if !p.set {
			return 0, jsonrpc.Errorf(jsonrpc.CodeInvalidParams, "Invalid params: want [minuend, subtrahend] or {\"minuend\": a, \"subtrahend\": b}")
		}
		return p.Minuend - p.Subtrahend, nil
	})
	sumMethod.Register(mux, func(_ context.Context, nums []float64) (float64, error) {
		var s float64
		for _, n := range nums {
			s += n
		}
		return s, nil
	})
	mux.HandleFunc("get_data", func(context.Context, *jsonrpc.Request) (any, error) {
		return []any{"hello", 5}, nil
	})
	mux.HandleFunc("update", null)
	mux.HandleFunc("notify_hello", null)
	mux.HandleFunc("notify_sum", null)
	mux.Handle("echo", jsonrpc.RawHandlerFunc(func(_ context.Context, req *jsonrpc.Request) (json.RawMessage, error) {
		return req.Params, nil // as a RawHandlerFunc, not boxed in an interface
	}))
	progressMethod.Register(mux, func(ctx context.Context, p progressParams) (string, error) {
		for i := 1; i <= p.Count; i++ {
			err := jsonrpc.Peer(ctx).Notify(ctx, "progress", map[string]int{"done": i, "total": p.Count})
			if err != nil {
				return "", err
			}
		}
		return "done", nil
	})
	countMethod.Register(mux, func(ctx context.Context, p countParams) iter.Seq2[map[string]int, error] {
		return func(yield func(map[string]int, error) bool) {
			for i := range p.N {
				if !yield(map[string]int{"index": i}, nil) {
					return
				}
			}
		}
	})
	mux.HandleFunc("fail", func(context.Context, *jsonrpc.Request) (any, error) {
		return nil, jsonrpc.NewError(-32001, "custom failure").WithData(map[string]string{"reason": "demo"})
	})
	mux.HandleFunc("internal", func(context.Context, *jsonrpc.Request) (any, error) {
		return nil, errors.New("boom")
	})
	mux.HandleFunc("panic", func(context.Context, *jsonrpc.Request) (any, error) {
		panic("demo panic")
	})
	sleepMethod.Register(mux, func(ctx context.Context, p sleepParams) (string, error) {
		t := time.NewTimer(time.Duration(p.MS) * time.Millisecond)
		defer t.Stop()
		select {
		case <-t.C:
			return "slept", nil
		case <-ctx.Done():
			return "", ctx.Err()
		}
	})
	return mux
}
