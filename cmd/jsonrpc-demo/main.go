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
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/ndjsonrpc/jsonrpc"
	"github.com/ndjsonrpc/jsonrpc/internal/demo"
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
	mux := demo.NewMux()
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
