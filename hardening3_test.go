package jsonrpc_test

// Regression tests for the defects of "Hardening III" in the engine: many
// requests sharing one id, cancels of such an id, two ends that both only
// send notifications, handlers that call each other across a connection,
// and the end of the input. Each bounds a cost or a wait far above its
// normal size: a deadline here fails only on a wedge or a quadratic cost.

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"iter"
	"net"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ndjsonrpc/jsonrpc"
)

// h3Guard bounds each wait of these tests: far above what the work costs
// under the race detector on a loaded machine, far below what a wedge or a
// quadratic cost takes.
const h3Guard = 10 * time.Second

// h3Server serves srv over two io.Pipes and returns the writer of its
// input and a reader of its output lines. The cleanup ends the input and
// waits for Serve.
func h3Server(t *testing.T, srv *jsonrpc.Server) (in *io.PipeWriter, lines <-chan string) {
	t.Helper()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	served := make(chan error, 1)
	go func() {
		err := srv.Serve(context.Background(), inR, outW)
		_ = outW.Close()
		served <- err
	}()
	ch := make(chan string, 1024)
	go func() {
		defer close(ch)
		sc := bufio.NewScanner(outR)
		sc.Buffer(nil, 64<<20)
		for sc.Scan() {
			ch <- sc.Text()
		}
		_, _ = io.Copy(io.Discard, outR)
	}()
	t.Cleanup(func() {
		_ = inW.Close()
		select {
		case err := <-served:
			assert.NoError(t, err, "Serve")
		case <-time.After(h3Guard):
			t.Error("Serve did not return at the end of its input")
		}
		for range ch {
		}
	})
	return inW, ch
}

// h3Recv returns the next output line, or fails the test after h3Guard.
func h3Recv(t *testing.T, lines <-chan string, what string) string {
	t.Helper()
	select {
	case line, ok := <-lines:
		require.True(t, ok, "output ended while waiting for %s", what)
		return line
	case <-time.After(h3Guard):
		require.FailNow(t, "no answer in time", "waiting for %s", what)
		return ""
	}
}

// sharedIDBatch is a batch of n requests all with id 1, the first for
// method first and the others for "x".
func sharedIDBatch(first string, n int) string {
	var b strings.Builder
	b.WriteString(`[{"jsonrpc":"2.0","id":1,"method":"` + first + `"}`)
	for range n - 1 {
		b.WriteString(`,{"jsonrpc":"2.0","id":1,"method":"x"}`)
	}
	b.WriteString("]\n")
	return b.String()
}

// TestSharedIDLinear serves batches of 200,000 requests that all have the
// same id, queued whole: each request is registered for cancels and taken
// out again, which must cost the same however many share its id (it was
// quadratic: a slice per id, scanned and spliced).
func TestSharedIDLinear(t *testing.T) {
	checkLeaks(t)
	n := 200_000
	if raceEnabled {
		n = 100_000
	}
	var calls atomic.Int32
	mux := new(jsonrpc.Mux)
	mux.HandleFunc("slow", func(context.Context, *jsonrpc.Request) (any, error) {
		// Long enough for reading to be handed on: the method is slow from
		// then on, and a batch holding it is queued whole.
		time.Sleep(3 * time.Millisecond)
		return nil, nil
	})
	mux.HandleFunc("x", func(context.Context, *jsonrpc.Request) (any, error) {
		calls.Add(1)
		return nil, nil
	})
	in, lines := h3Server(t, &jsonrpc.Server{Options: jsonrpc.Options{Handler: mux, MaxBatch: n, MaxPendingBytes: 256 << 20}})
	batch := sharedIDBatch("slow", n)
	for round := range 3 {
		_, err := io.WriteString(in, batch)
		require.NoError(t, err)
		got := h3Recv(t, lines, fmt.Sprintf("the answer to batch %d", round))
		require.Equal(t, n, strings.Count(got, `"id":1,`), "answers in batch %d", round)
	}
	assert.Equal(t, int32(3*(n-1)), calls.Load())
}

// TestSharedIDCancelsLinear sends 2,000 cancels of an id that 200,000
// queued requests share: the first cancels them all, and the others must
// cost nothing for them (each walked them all again), so a request sent
// after the cancels is answered at once.
func TestSharedIDCancelsLinear(t *testing.T) {
	checkLeaks(t)
	const n = 200_000
	gate, holding, warm := make(chan struct{}), make(chan struct{}), make(chan struct{})
	var first atomic.Bool
	mux := new(jsonrpc.Mux)
	mux.HandleFunc("hold", func(context.Context, *jsonrpc.Request) (any, error) {
		if first.CompareAndSwap(false, true) {
			// Held until reading has been handed on, which marks the
			// method slow: a batch holding it is then queued whole, its
			// requests all in reach of cancels.
			<-warm
			return "warm", nil
		}
		close(holding)
		<-gate // ignores its context, so that the rest of the batch waits
		return nil, nil
	})
	mux.HandleFunc("x", func(context.Context, *jsonrpc.Request) (any, error) { return "x", nil })
	in, lines := h3Server(t, &jsonrpc.Server{Options: jsonrpc.Options{Handler: mux, MaxBatch: n, MaxInFlight: 4, MaxPendingBytes: 256 << 20}})
	released := false
	defer func() {
		if !released {
			close(gate)
		}
	}()

	_, err := io.WriteString(in, `{"jsonrpc":"2.0","id":"warm","method":"hold"}`+"\n"+`{"jsonrpc":"2.0","id":"read","method":"x"}`+"\n")
	require.NoError(t, err)
	require.JSONEq(t, `{"jsonrpc":"2.0","id":"read","result":"x"}`, h3Recv(t, lines, "an answer read past the warm-up"))
	close(warm)
	require.JSONEq(t, `{"jsonrpc":"2.0","id":"warm","result":"warm"}`, h3Recv(t, lines, "the warm-up"))

	_, err = io.WriteString(in, sharedIDBatch("hold", n))
	require.NoError(t, err)
	select {
	case <-holding:
	case <-time.After(6 * h3Guard):
		// Reading and building 200,000 requests takes several seconds
		// under the race detector alone: more on a loaded machine.
		t.Fatal("the batch did not start")
	}
	cancels := strings.Repeat(`{"jsonrpc":"2.0","method":"$/cancelRequest","params":{"id":1}}`+"\n", 2000)
	_, err = io.WriteString(in, cancels+`{"jsonrpc":"2.0","id":"probe","method":"x"}`+"\n")
	require.NoError(t, err)
	require.JSONEq(t, `{"jsonrpc":"2.0","id":"probe","result":"x"}`, h3Recv(t, lines, "the probe after the cancels"))

	close(gate)
	released = true
	got := h3Recv(t, lines, "the batch's answer")
	assert.Equal(t, n-1, strings.Count(got, `"code":-32800`), "cancelled entries")
	assert.Equal(t, 1, strings.Count(got, `"result":null`), "the entry that ran")
}

// TestNotificationsBothWays has two ends that have not called each other
// both send notifications as fast as they can, over net.Pipe (which holds
// nothing: a write waits for the peer's read): neither may wedge the other
// (both readers used to wait in a write that the other never read).
func TestNotificationsBothWays(t *testing.T) {
	const n = 16_000
	pad := strings.Repeat("n", 1000)
	t.Run("Conn and Conn", func(t *testing.T) {
		checkLeaks(t)
		var gotA, gotB atomic.Int32
		allA, allB := make(chan struct{}), make(chan struct{})
		counter := func(got *atomic.Int32, all chan struct{}) *jsonrpc.Options {
			mux := new(jsonrpc.Mux)
			mux.HandleFunc("note", func(context.Context, *jsonrpc.Request) (any, error) {
				if got.Add(1) == n {
					close(all)
				}
				return nil, nil
			})
			mux.Handle("add", jsonrpc.Func(func(_ context.Context, p [2]int) (int, error) { return p[0] + p[1], nil }))
			return &jsonrpc.Options{Handler: mux, StopGrace: 200 * time.Millisecond}
		}
		pa, pb := net.Pipe()
		a := jsonrpc.NewConn(pa, pa, counter(&gotA, allA))
		b := jsonrpc.NewConn(pb, pb, counter(&gotB, allB))
		t.Cleanup(func() {
			assert.NoError(t, a.Close())
			assert.NoError(t, b.Close())
		})
		ctx, cancel := context.WithTimeout(t.Context(), h3Guard)
		defer cancel()
		var wg sync.WaitGroup
		for _, c := range []*jsonrpc.Conn{a, b} {
			wg.Go(func() {
				for i := range n {
					if err := c.Notify(ctx, "note", []any{i, pad}); err != nil {
						t.Errorf("notification %d: %v", i, err)
						return
					}
				}
			})
		}
		for _, w := range []struct {
			all  chan struct{}
			got  *atomic.Int32
			name string
		}{{allA, &gotA, "a"}, {allB, &gotB, "b"}} {
			select {
			case <-w.all:
			case <-ctx.Done():
				t.Errorf("%s handled %d of %d notifications", w.name, w.got.Load(), n)
			}
		}
		wg.Wait()
		if t.Failed() {
			return
		}
		var sum int
		require.NoError(t, a.Call(ctx, "add", [2]int{2, 3}, &sum))
		assert.Equal(t, 5, sum)
	})
	t.Run("Server and Client with echoes", func(t *testing.T) {
		checkLeaks(t)
		mux := new(jsonrpc.Mux)
		mux.HandleFunc("ping", func(ctx context.Context, req *jsonrpc.Request) (any, error) {
			return nil, jsonrpc.Peer(ctx).Notify(ctx, "pong", req.Params)
		})
		var pongs atomic.Int32
		all := make(chan struct{})
		ps, pc := net.Pipe()
		srv := &jsonrpc.Server{Options: jsonrpc.Options{Handler: mux, StopGrace: 200 * time.Millisecond}}
		served := make(chan error, 1)
		go func() { served <- srv.Serve(context.Background(), ps, ps) }()
		client := jsonrpc.NewConn(pc, pc, &jsonrpc.Options{OnNotify: func(req *jsonrpc.Request) {
			if req.Method == "pong" && pongs.Add(1) == n {
				close(all)
			}
		}})
		ctx, cancel := context.WithTimeout(t.Context(), h3Guard)
		defer cancel()
		sent := make(chan struct{})
		go func() {
			defer close(sent)
			for i := range n {
				if err := client.Notify(ctx, "ping", []any{i, pad}); err != nil {
					t.Errorf("ping %d: %v", i, err)
					return
				}
			}
		}()
		select {
		case <-all:
		case <-ctx.Done():
			t.Errorf("%d of %d echoes arrived", pongs.Load(), n)
		}
		<-sent
		assert.NoError(t, client.Close())
		_ = srv.Close()
		<-served
	})
}

// TestNestedCallsAtMaxInFlight chains calls across a connection: the
// caller calls hop(d-1) on the peer, whose handler calls hop(d-2) back,
// and so on, from many callers at once. A handler waiting on the peer
// must not hold a slot that the requests it waits for need, at any depth
// and any MaxInFlight.
func TestNestedCallsAtMaxInFlight(t *testing.T) {
	hop := jsonrpc.Func(func(ctx context.Context, p [1]int) (int, error) {
		if p[0] == 0 {
			return 0, nil
		}
		var r int
		if err := jsonrpc.Peer(ctx).Call(ctx, "hop", [1]int{p[0] - 1}, &r); err != nil {
			return 0, err
		}
		return r + 1, nil
	})
	mux := new(jsonrpc.Mux)
	mux.Handle("hop", hop)
	for _, depth := range []int{3, 5} {
		for _, limit := range []int{1, 4, 64} {
			t.Run(fmt.Sprintf("depth %d, MaxInFlight %d", depth, limit), func(t *testing.T) {
				checkLeaks(t)
				a, _ := twConnPair(t,
					&jsonrpc.Options{Handler: mux, MaxInFlight: limit},
					&jsonrpc.Options{Handler: mux, MaxInFlight: limit})
				callers := 2*limit + 4
				ctx, cancel := context.WithTimeout(t.Context(), h3Guard)
				defer cancel()
				var wg sync.WaitGroup
				var failed atomic.Int32
				for i := range callers {
					wg.Go(func() {
						var r int
						err := a.Call(ctx, "hop", [1]int{depth - 1}, &r)
						if err == nil && r != depth-1 {
							err = fmt.Errorf("got %d; want %d", r, depth-1)
						}
						if err != nil && failed.Add(1) <= 3 {
							t.Errorf("caller %d: %v", i, err)
						}
					})
				}
				wg.Wait()
				assert.Zero(t, failed.Load(), "callers not answered (of %d)", callers)
			})
		}
	}
}

// TestEndOfInputRule ends the input of a Server, a Conn and a Client while
// a handler runs: it gets StopGrace to finish, then its context is
// cancelled with a cause that wraps ErrPeerClosed and io.EOF, and the end
// is normal (nil) once it has returned; one that ignores its context is
// abandoned after twice StopGrace and the end says so.
func TestEndOfInputRule(t *testing.T) {
	const grace = 200 * time.Millisecond
	// run starts an endpoint of the given kind over r and w, whose handler
	// for "work" is h, and returns a function that waits for its end.
	type endpoint func(t *testing.T, h jsonrpc.Handler, r io.Reader, w io.Writer) (wait func() error)
	kinds := map[string]endpoint{
		"Server": func(t *testing.T, h jsonrpc.Handler, r io.Reader, w io.Writer) func() error {
			done := make(chan error, 1)
			srv := &jsonrpc.Server{Options: jsonrpc.Options{Handler: h, StopGrace: grace}}
			go func() { done <- srv.Serve(context.Background(), r, w) }()
			return func() error { return <-done }
		},
		"Conn": func(t *testing.T, h jsonrpc.Handler, r io.Reader, w io.Writer) func() error {
			c := jsonrpc.NewConn(r, w, &jsonrpc.Options{Handler: h, StopGrace: grace})
			return c.Wait
		},
		"Client": func(t *testing.T, h jsonrpc.Handler, r io.Reader, w io.Writer) func() error {
			// A Client has no Wait: Close, once the handler has had its
			// cancel, ends it.
			c := jsonrpc.NewConn(r, w, &jsonrpc.Options{Handler: h, StopGrace: grace})
			return c.Close
		},
	}
	for name, start := range kinds {
		t.Run(name+", a handler that heeds its context", func(t *testing.T) {
			checkLeaks(t)
			started := make(chan struct{})
			causes := make(chan error, 1)
			h := jsonrpc.HandlerFunc(func(ctx context.Context, _ *jsonrpc.Request) (any, error) {
				close(started)
				<-ctx.Done()
				causes <- context.Cause(ctx)
				return nil, ctx.Err()
			})
			inR, inW := io.Pipe()
			var out lockedBuffer
			wait := start(t, h, inR, &out)
			_, err := io.WriteString(inW, `{"jsonrpc":"2.0","id":1,"method":"work"}`+"\n")
			require.NoError(t, err)
			<-started
			begin := time.Now()
			require.NoError(t, inW.Close())
			var cause error
			select {
			case cause = <-causes:
			case <-time.After(h3Guard):
				t.Fatal("the end of the input never cancelled the handler")
			}
			assert.GreaterOrEqual(t, time.Since(begin), grace, "the handler's grace before its cancel")
			assert.ErrorIs(t, cause, jsonrpc.ErrPeerClosed)
			assert.ErrorIs(t, cause, io.EOF)
			ended := make(chan error, 1)
			go func() { ended <- wait() }()
			select {
			case err := <-ended:
				assert.NoError(t, err, "a normal end")
			case <-time.After(h3Guard):
				t.Fatal("the end of the input did not end the endpoint")
			}
			if name != "Client" {
				assert.Contains(t, out.String(), `"id":1,"error"`, "the cancelled request is answered")
			}
		})
		t.Run(name+", a handler that ignores its context", func(t *testing.T) {
			if name == "Client" {
				t.Skip("a Client's end is its Close, which abandons handlers at once")
			}
			checkLeaks(t)
			started := make(chan struct{})
			release := make(chan struct{})
			returned := make(chan struct{})
			h := jsonrpc.HandlerFunc(func(ctx context.Context, _ *jsonrpc.Request) (any, error) {
				defer close(returned)
				close(started)
				<-release
				return nil, nil
			})
			defer func() { close(release); <-returned }()
			inR, inW := io.Pipe()
			wait := start(t, h, inR, io.Discard)
			_, err := io.WriteString(inW, `{"jsonrpc":"2.0","id":1,"method":"work"}`+"\n")
			require.NoError(t, err)
			<-started
			require.NoError(t, inW.Close())
			ended := make(chan error, 1)
			go func() { ended <- wait() }()
			select {
			case err := <-ended:
				assert.ErrorIs(t, err, jsonrpc.ErrClosed, "a handler was abandoned")
				assert.ErrorIs(t, err, jsonrpc.ErrPeerClosed)
			case <-time.After(h3Guard):
				t.Fatal("the end of the input waited for a handler without limit")
			}
		})
	}
}

// TestIdleConnectionLetsGo checks what an idle connection keeps once it
// has served large requests: neither the large read buffer (the reader's
// scratch space used to keep slices of it) nor the copies of the lines of
// queued requests (kept by the block of contexts they came from).
func TestIdleConnectionLetsGo(t *testing.T) {
	const bound = 4 << 20
	t.Run("a large line read inline", func(t *testing.T) {
		checkLeaks(t)
		mux := new(jsonrpc.Mux)
		// Quick, so that it runs inline and reading is not handed on.
		mux.Handle("size", jsonrpc.RawHandlerFunc(func(_ context.Context, req *jsonrpc.Request) (json.RawMessage, error) {
			return json.RawMessage(strconv.Itoa(len(req.Params))), nil
		}))
		in, lines := h3Server(t, &jsonrpc.Server{Options: jsonrpc.Options{Handler: mux}})
		before := liveHeapBytes(t)
		big := `{"jsonrpc":"2.0","id":1,"method":"size","params":["` + strings.Repeat("b", 16<<20) + `"]}` + "\n"
		_, err := io.WriteString(in, big)
		require.NoError(t, err)
		big = ""
		require.JSONEq(t, `{"jsonrpc":"2.0","id":1,"result":16777220}`, h3Recv(t, lines, "the answer"))
		time.Sleep(10 * time.Millisecond) // the reader waits for more
		after := liveHeapBytes(t)
		assert.Less(t, int64(after)-int64(before), int64(bound), "live heap growth of an idle connection, in bytes")
	})
	t.Run("large lines queued", func(t *testing.T) {
		checkLeaks(t)
		mux := new(jsonrpc.Mux)
		mux.Handle("slow", jsonrpc.Func(func(ctx context.Context, p [1]string) (int, error) {
			holdReader(t, ctx) // queued from the second call on
			return len(p[0]), nil
		}))
		in, lines := h3Server(t, &jsonrpc.Server{Options: jsonrpc.Options{Handler: mux}})
		before := liveHeapBytes(t)
		pad := strings.Repeat("q", 512<<10)
		for i := range 60 {
			_, err := fmt.Fprintf(in, `{"jsonrpc":"2.0","id":%d,"method":"slow","params":["%s"]}`+"\n", i, pad)
			require.NoError(t, err)
			require.JSONEq(t, fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"result":%d}`, i, len(pad)), h3Recv(t, lines, "an answer"))
		}
		pad = ""
		time.Sleep(10 * time.Millisecond)
		after := liveHeapBytes(t)
		assert.Less(t, int64(after)-int64(before), int64(bound), "live heap growth of an idle connection, in bytes")
	})
}

// Once Shutdown has begun, a line that holds no request (not JSON, an
// empty batch, a scalar, a batch too long) is answered as before it, not
// with the answers of the last batch read, whose envelopes point into a
// reused buffer (that made invalid JSON).
func TestShutdownAnswersBadLinesAfterABatch(t *testing.T) {
	checkLeaks(t)
	release, started := make(chan struct{}), make(chan struct{})
	mux := new(jsonrpc.Mux)
	mux.HandleFunc("ok", func(context.Context, *jsonrpc.Request) (any, error) { return "ok", nil })
	mux.HandleFunc("block", func(context.Context, *jsonrpc.Request) (any, error) {
		close(started)
		<-release
		return "done", nil
	})
	srv := &jsonrpc.Server{Options: jsonrpc.Options{Handler: mux, MaxBatch: 3}}
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	served := make(chan error, 1)
	go func() { served <- srv.Serve(context.Background(), inR, outW); _ = outW.Close() }()
	lines := make(chan string, 16)
	go func() {
		defer close(lines)
		out := bufio.NewReader(outR)
		for {
			l, err := out.ReadString('\n')
			if err != nil {
				return
			}
			lines <- strings.TrimSuffix(l, "\n")
		}
	}()
	next := func() string {
		t.Helper()
		return recv(t, lines, "an answer")
	}
	send := func(line string) {
		_, err := io.WriteString(inW, line+"\n")
		require.NoError(t, err)
	}

	send(`{"jsonrpc":"2.0","id":"slow","method":"block"}`)
	recv(t, started, "the blocking handler to start")
	shut := make(chan error, 1)
	go func() { shut <- srv.Shutdown(context.Background()) }()
	// Shutdown has begun once a request is answered Not run.
	for i := 0; ; i++ {
		send(`{"jsonrpc":"2.0","id":"probe","method":"ok"}`)
		if got := next(); strings.Contains(got, `"code":-32091`) {
			break
		}
		require.Less(t, i, 1000, "Shutdown never began")
	}

	send(`[{"jsonrpc":"2.0","id":"A","method":"ok"},{"jsonrpc":"2.0","id":"B","method":"ok"}]`)
	got := next()
	assert.True(t, json.Valid([]byte(got)), "%s", got)
	assert.Contains(t, got, `"id":"A"`)
	parseError := `{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Parse error"}}`
	invalid := `{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Invalid Request"}}`
	for _, c := range []struct{ in, want string }{
		{`{bad`, parseError},
		{strings.Repeat(`"`, 30), parseError},
		{`[]`, invalid},
		{`42`, invalid},
		{`[1,2,3,4]`, `{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Invalid Request","data":{"limit":3,"reason":"batch too long"}}}`},
	} {
		send(c.in)
		assert.Equal(t, c.want, next(), "answer to %s", c.in)
	}
	close(release)
	require.NoError(t, inW.Close())
	for range lines {
	}
	require.NoError(t, recv(t, shut, "Shutdown"))
	<-served
}

// heapAfterGC returns the bytes of live heap objects once the collector
// has run twice.
func heapAfterGC() int64 {
	var m runtime.MemStats
	runtime.GC()
	runtime.GC()
	runtime.ReadMemStats(&m)
	return int64(m.HeapAlloc)
}

// A peer that sends requests for many long, unknown methods does not make
// the connection keep their names: what it remembers of methods is
// bounded (256 KiB), not 1,024 names of up to MaxMessageSize each.
func TestMethodNamesHeldAreBounded(t *testing.T) {
	checkLeaks(t)
	srv := &jsonrpc.Server{Options: jsonrpc.Options{Handler: new(jsonrpc.Mux)}}
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	served := make(chan error, 1)
	go func() { served <- srv.Serve(context.Background(), inR, outW); _ = outW.Close() }()
	out := bufio.NewReader(outR)
	before := heapAfterGC()
	pad := strings.Repeat("m", 64<<10)
	for i := range 400 { // 25 MiB of names
		_, err := fmt.Fprintf(inW, `{"jsonrpc":"2.0","id":%d,"method":"%s%d"}`+"\n", i, pad, i)
		require.NoError(t, err)
		l, err := out.ReadString('\n')
		require.NoError(t, err)
		require.Contains(t, l, `"code":-32601`)
	}
	held := heapAfterGC() - before
	assert.Less(t, held, int64(8<<20), "bytes held after 400 unknown methods of 64 KiB")
	require.NoError(t, inW.Close())
	_, _ = io.Copy(io.Discard, out)
	require.NoError(t, recv(t, served, "Serve"))
}

// An idle connection keeps no copy of the names of a line's unknown
// members: one line of thousands of them leaves no more behind than a
// plain line of the same size does.
func TestIdleAfterManyMembers(t *testing.T) {
	checkLeaks(t)
	var b strings.Builder
	b.WriteString(`{"jsonrpc":"2.0","method":"ok","id":1`)
	for i := 0; b.Len() < 60<<10; i++ {
		fmt.Fprintf(&b, `,"%x":0`, i)
	}
	b.WriteString("}\n")
	many := b.String()
	plain := `{"jsonrpc":"2.0","method":"ok","id":1,"params":["` + strings.Repeat("x", len(many)-60) + `"]}` + "\n"
	mux := new(jsonrpc.Mux)
	mux.HandleFunc("ok", func(context.Context, *jsonrpc.Request) (any, error) { return "ok", nil })
	// idle returns what each of 50 connections holds once it has
	// answered line and waits for the next.
	idle := func(line string) int64 {
		const conns = 50
		before := heapAfterGC()
		var ins []*io.PipeWriter
		var served []chan error
		for range conns {
			srv := &jsonrpc.Server{Options: jsonrpc.Options{Handler: mux}}
			inR, inW := io.Pipe()
			outR, outW := io.Pipe()
			done := make(chan error, 1)
			go func() { done <- srv.Serve(context.Background(), inR, outW); _ = outW.Close() }()
			out := bufio.NewReader(outR)
			_, err := io.WriteString(inW, line)
			require.NoError(t, err)
			answer, err := out.ReadString('\n')
			require.NoError(t, err)
			require.Contains(t, answer, `"result":"ok"`)
			go func() { _, _ = io.Copy(io.Discard, out) }()
			ins, served = append(ins, inW), append(served, done)
		}
		per := (heapAfterGC() - before) / conns
		for i := range ins {
			require.NoError(t, ins[i].Close())
			require.NoError(t, recv(t, served[i], "Serve"))
		}
		return per
	}
	p, m := idle(plain), idle(many)
	assert.Less(t, m, p+64<<10, "bytes an idle connection holds after a %d-byte line of many members, against %d after a plain one", len(many), p)
}

// badUTF8 is a value whose MarshalJSON returns a string holding a byte
// that is not UTF-8, which encoding/json does not check.
type badUTF8 struct{}

func (badUTF8) MarshalJSON() ([]byte, error) { return []byte("{\"k\":\"a\xffb\"}"), nil }

// A result or stream item that encodes as invalid UTF-8 is an error the
// caller gets at once, not a line that is not JSON, which a peer drops
// and whose call then waits for ever: in a batch, the other calls still
// get their answers.
func TestResultInvalidUTF8(t *testing.T) {
	mux := new(jsonrpc.Mux)
	mux.HandleFunc("bad", func(context.Context, *jsonrpc.Request) (any, error) { return badUTF8{}, nil })
	mux.HandleFunc("ok", func(context.Context, *jsonrpc.Request) (any, error) { return 1, nil })
	jsonrpc.NewStreamMethod[[]int, badUTF8]("items").Register(mux, func(context.Context, []int) iter.Seq2[badUTF8, error] {
		return func(yield func(badUTF8, error) bool) { yield(badUTF8{}, nil) }
	})
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	for name, c := range map[string]jsonrpc.Caller{"over a connection": newPair(t, mux), "in process": &jsonrpc.InProcess{Handler: mux}} {
		var res json.RawMessage
		err := c.Call(ctx, "bad", nil, &res)
		var e *jsonrpc.Error
		require.ErrorAs(t, err, &e, name)
		assert.Equal(t, jsonrpc.CodeInternalError, e.Code, name)

		var good int
		calls := []*jsonrpc.BatchCall{{Method: "ok", Result: &good}, {Method: "bad", Result: &res}}
		require.NoError(t, c.Batch(ctx, calls...), name)
		assert.NoError(t, calls[0].Err, name)
		assert.Equal(t, 1, good, name)
		assert.ErrorAs(t, calls[1].Err, &e, name)

		n := 0
		var last error
		for _, err := range jsonrpc.NewStreamMethod[[]int, json.RawMessage]("items").Call(ctx, c, []int{}) {
			n++
			last = err
		}
		assert.Equal(t, 1, n, "%s: the stream ends with an error", name)
		assert.Error(t, last, name)
		assert.NotErrorIs(t, last, context.DeadlineExceeded, name)
	}
}

// In process, a result and a stream's item are written as over a
// connection: without escaping "<", ">" and "&", also when encoding/json
// writes them (a []byte member leaves no plan).
func TestResultBytesInProcessAsOverConnection(t *testing.T) {
	type page struct {
		HTML string `json:"html"`
		Raw  []byte `json:"raw"`
	}
	want := page{HTML: "<a href=\"x\">&</a>", Raw: []byte("x")}
	mux := new(jsonrpc.Mux)
	mux.HandleFunc("page", func(context.Context, *jsonrpc.Request) (any, error) { return want, nil })
	jsonrpc.NewStreamMethod[[]int, page]("pages").Register(mux, func(context.Context, []int) iter.Seq2[page, error] {
		return func(yield func(page, error) bool) { yield(want, nil) }
	})
	got := map[string][]string{}
	for name, c := range map[string]jsonrpc.Caller{"over a connection": newPair(t, mux), "in process": &jsonrpc.InProcess{Handler: mux}} {
		var res json.RawMessage
		require.NoError(t, c.Call(t.Context(), "page", nil, &res), name)
		got[name] = append(got[name], string(res))
		for item, err := range jsonrpc.NewStreamMethod[[]int, json.RawMessage]("pages").Call(t.Context(), c, []int{}) {
			require.NoError(t, err, name)
			got[name] = append(got[name], string(item))
		}
	}
	assert.Equal(t, got["over a connection"], got["in process"])
	assert.Equal(t, []string{`{"html":"<a href=\"x\">&</a>","raw":"eA=="}`, `{"html":"<a href=\"x\">&</a>","raw":"eA=="}`}, got["in process"])
}
