package bench_test

// Round trips over the network stack, on loopback:
//
//   BenchmarkHTTP/seq/<impl>       one client, one POST at a time, over
//                                  keep-alive connections
//   BenchmarkHTTP/par64/<impl>     64 goroutines calling at once
//   BenchmarkSocket/seq/<impl>     one client on one TCP connection
//   BenchmarkSocket/par64/<impl>   64 goroutines on one TCP connection
//
// The HTTP implementations are the HTTP floor (package httpfloor), ours
// (Server.ServeHTTP and HTTPClient), jrpc2 (jhttp.Bridge and
// jhttp.Channel) and geth (go-ethereum's rpc package). Each serves from an
// httptest.Server (an http.Server on 127.0.0.1:0) and calls through an
// http.Client of its own whose Transport keeps up to 128 idle connections,
// so that the 64 callers reuse theirs; the number of connections the
// server accepted is reported as conns (the same for every
// implementation means keep-alive works alike).
//
// The socket rows are ours over TCP (jsonrpc.Dial to
// Server.ServeListener), ours over two io.Pipes (ours-pipe, as in
// BenchmarkRoundTrip, measured in the same run to give the ratio), ours'
// stream server and client on the two ends of one TCP connection
// (ours-conn, without the listener and Dial), the floor over TCP and over
// io.Pipe (floor-pipe), and the stream peers over a TCP connection (their
// stream server and client on the net.Conn).
//
// The call is subtract, its params decoded into a struct by
// encoding/json everywhere but in the floors, and every answer is checked.
// Figures are per call: ns/call, calls/s, allocs/call and B/call, the
// allocations of client and server together (both run in this process),
// and cpu-ns/call, the CPU time (user and system) of the whole process,
// client, server, kernel and collector, divided by the calls: on a shared
// machine it moves less with the load of other processes than the time.

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"runtime"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/ndjsonrpc/jsonrpc/bench/httpfloor"
	"github.com/ndjsonrpc/jsonrpc/bench/impl/gethimpl"
	"github.com/ndjsonrpc/jsonrpc/bench/impl/jrpc2impl"
)

// netMode is one way of calling: par goroutines at once, each making
// perG calls per iteration.
type netMode struct {
	name      string
	par, perG int
}

var netModes = []netMode{{"seq", 1, 1}, {"par64", 64, callsPerGoroutine}}

// httpImpl is one implementation of the HTTP benchmarks.
type httpImpl struct {
	name string
	// server returns the handler and a function that stops it.
	server func() (http.Handler, func() error, error)
	// client returns a client posting to url through hc.
	client func(ctx context.Context, url string, hc *http.Client) (client, error)
}

// httpOrder is the order of the HTTP implementations in the benchmarks.
var httpOrder = []string{"floor", "ours", "jrpc2", "geth"}

var httpImpls = map[string]httpImpl{}

func registerHTTP(im httpImpl) { httpImpls[im.name] = im }

func init() {
	registerHTTP(httpImpl{
		name: "floor",
		server: func() (http.Handler, func() error, error) {
			return httpfloor.Handler{}, func() error { return nil }, nil
		},
		client: func(_ context.Context, url string, hc *http.Client) (client, error) {
			return httpfloor.NewClient(url, hc), nil
		},
	})
	registerHTTP(httpImpl{
		name: "jrpc2",
		server: func() (http.Handler, func() error, error) {
			br := jrpc2impl.NewBridge()
			return br, func() error {
				// The bridge reports how its server ended: closing it
				// ends it, which is no failure here.
				br.Close()
				return nil
			}, nil
		},
		client: func(_ context.Context, url string, hc *http.Client) (client, error) {
			return jrpc2impl.NewHTTPClient(url, hc), nil
		},
	})
	registerHTTP(httpImpl{
		name: "geth",
		server: func() (http.Handler, func() error, error) {
			s, err := gethimpl.NewServer()
			if err != nil {
				return nil, nil, err
			}
			return s, s.Close, nil
		},
		client: func(ctx context.Context, url string, hc *http.Client) (client, error) {
			return gethimpl.NewHTTPClient(ctx, url, hc)
		},
	})
}

func BenchmarkHTTP(b *testing.B) {
	for _, mode := range netModes {
		for _, name := range httpOrder {
			im, ok := httpImpls[name]
			if !ok {
				continue
			}
			b.Run(mode.name+"/"+name, func(b *testing.B) { benchHTTP(b, im, mode) })
		}
	}
}

func benchHTTP(b *testing.B, im httpImpl, mode netMode) {
	ctx := context.Background()
	h, stop, err := im.server()
	if err != nil {
		b.Fatal(err)
	}
	srv := httptest.NewUnstartedServer(h)
	var conns atomic.Int64
	srv.Config.ConnState = func(_ net.Conn, st http.ConnState) {
		if st == http.StateNew {
			conns.Add(1)
		}
	}
	srv.Start()
	tr := &http.Transport{MaxIdleConns: 128, MaxIdleConnsPerHost: 128, IdleConnTimeout: time.Minute}
	hc := &http.Client{Transport: tr}
	c, err := im.client(ctx, srv.URL, hc)
	if err != nil {
		b.Fatal(err)
	}
	defer func() {
		c.Close()
		tr.CloseIdleConnections()
		srv.Close()
		if err := stop(); err != nil {
			b.Errorf("stopping the server: %v", err)
		}
	}()
	runCalls(b, c, mode)
	b.ReportMetric(float64(conns.Load()), "conns")
}

// socketImpl is one implementation of the socket benchmarks: dial returns
// a client of a server it started, and a function that stops both.
type socketImpl struct {
	name string
	dial func(b *testing.B) (client, func())
}

// socketImpls lists the socket implementations in benchmark order; ours
// (from a file of its own, left out by -tags noours) adds itself at the
// front.
var socketImpls []socketImpl

func init() {
	// The floor over io.Pipe too: its ratio TCP/io.Pipe is what the
	// network itself costs a call.
	socketImpls = append(socketImpls, socketImpl{name: "floor-pipe", dial: func(b *testing.B) (client, func()) {
		return dialPipe(b, registered["floor"])
	}})
	for _, name := range []string{"floor", "jrpc2", "sourcegraph", "xexp"} {
		socketImpls = append(socketImpls, socketImpl{name: name, dial: func(b *testing.B) (client, func()) {
			im := registered[name]
			if im == nil || im.newClient == nil {
				b.Skipf("%s is not registered", name)
			}
			return dialStream(b, im)
		}})
	}
}

func BenchmarkSocket(b *testing.B) {
	for _, mode := range netModes {
		for _, im := range socketImpls {
			b.Run(mode.name+"/"+im.name, func(b *testing.B) {
				c, stop := im.dial(b)
				defer stop()
				runCalls(b, c, mode)
			})
		}
	}
}

// dialStream serves im's stream server on one TCP connection accepted on
// loopback, and returns im's stream client on the other end.
func dialStream(b *testing.B, im *impl) (client, func()) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	served := make(chan error, 1)
	go func() {
		conn, err := l.Accept()
		if err != nil {
			served <- err
			return
		}
		err = im.serve(context.Background(), conn, conn)
		conn.Close()
		served <- err
	}()
	conn, err := net.Dial("tcp", l.Addr().String())
	if err != nil {
		l.Close()
		b.Fatal(err)
	}
	c := im.newClient(conn, conn)
	return c, func() {
		c.Close()
		conn.Close()
		select {
		case err := <-served:
			if err != nil && !errors.Is(err, io.EOF) && !errors.Is(err, net.ErrClosed) {
				b.Logf("%s server: %v", im.Name, err)
			}
		case <-time.After(30 * time.Second):
			b.Errorf("%s server did not stop", im.Name)
		}
		l.Close()
	}
}

// dialPipe joins im's stream client and server with two io.Pipes, as
// BenchmarkRoundTrip does.
func dialPipe(b *testing.B, im *impl) (client, func()) {
	return pipePair(b, im.Name, im.serve, im.newClient)
}

// runCalls checks one call, then measures c making mode's calls, and
// reports the figures per call.
func runCalls(b *testing.B, c client, mode netMode) {
	ctx := context.Background()
	if v, err := c.Subtract(ctx, 10, 3); err != nil || v != 7 {
		b.Fatalf("subtract(10, 3) = %d, %v", v, err)
	}
	perIter := mode.par * mode.perG
	b.ReportAllocs()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	cpuBefore := processCPU()
	if mode.par == 1 {
		i := 0
		for b.Loop() {
			i++
			if v, err := c.Subtract(ctx, i, 3); err != nil || v != i-3 {
				b.Fatalf("subtract(%d, 3) = %d, %v", i, v, err)
			}
		}
	} else {
		var failed atomic.Bool
		for b.Loop() {
			var wg sync.WaitGroup
			for g := range mode.par {
				wg.Go(func() {
					for k := range mode.perG {
						a := g*1000 + k
						if v, err := c.Subtract(ctx, a, 3); err != nil || v != a-3 {
							if !failed.Swap(true) {
								b.Errorf("subtract(%d, 3) = %d, %v", a, v, err)
							}
							return
						}
					}
				})
			}
			wg.Wait()
			if failed.Load() {
				b.FailNow()
			}
		}
	}
	cpu := processCPU() - cpuBefore
	runtime.ReadMemStats(&after)
	calls := float64(b.N) * float64(perIter)
	if calls == 0 {
		return
	}
	elapsed := b.Elapsed()
	b.ReportMetric(float64(elapsed.Nanoseconds())/calls, "ns/call")
	b.ReportMetric(calls/elapsed.Seconds(), "calls/s")
	b.ReportMetric(float64(after.Mallocs-before.Mallocs)/calls, "allocs/call")
	b.ReportMetric(float64(after.TotalAlloc-before.TotalAlloc)/calls, "B/call")
	if cpu > 0 {
		b.ReportMetric(float64(cpu.Nanoseconds())/calls, "cpu-ns/call")
	}
}

// processCPU returns the CPU time, user and system, this process has used
// so far, or 0 if it cannot be read.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
