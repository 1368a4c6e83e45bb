package jsonrpc_test

// This file tests two-way connections: both sides call and serve on one
// connection (Conn, a Server whose handlers call the peer, a Client with a
// Handler), nested calls and their cancellation, the cancel conventions,
// RequestFromContext and Mux.Use, header framing end to end, and the
// lifecycle of a Conn.

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"iter"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ndjsonrpc/jsonrpc"
)

// twGuard bounds every wait in this file, far above what any of them
// costs, so that a deadlock fails the test instead of hanging the run.
// Nothing passes or fails on time.
const twGuard = 10 * time.Second

// twWait waits for done, failing t if it is not closed within twGuard.
func twWait(t *testing.T, done <-chan struct{}, what string) bool {
	t.Helper()
	select {
	case <-done:
		return true
	case <-time.After(twGuard):
		t.Errorf("timed out waiting for %s", what)
		return false
	}
}

// twLines reads r line by line onto the returned channel, which is closed
// at the end of r.
func twLines(r io.Reader) <-chan string {
	lines := make(chan string, 1<<14)
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(r)
		sc.Buffer(nil, 1<<26)
		for sc.Scan() {
			lines <- sc.Text()
		}
	}()
	return lines
}

// assertNoneTw fails t if ch holds a value already.
func assertNoneTw[T any](t *testing.T, ch <-chan T, what string) {
	t.Helper()
	select {
	case v := <-ch:
		t.Errorf("unexpected %s: %v", what, v)
	default:
	}
}

// twMsg is any message as a raw peer sees it.
type twMsg struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Params json.RawMessage `json:"params"`
	Result json.RawMessage `json:"result"`
	Error  *jsonrpc.Error  `json:"error"`
}

func twDecode(t *testing.T, line string) twMsg {
	t.Helper()
	var m twMsg
	require.NoError(t, json.Unmarshal([]byte(line), &m), "line %q", line)
	return m
}

// A twConvention is a cancel convention with the exact line that the
// library writes to cancel the request with a given id under it, and a
// line that a peer may write to the same effect, spelled differently.
type twConvention struct {
	name     string
	cancel   jsonrpc.Cancellation
	line     func(id string) string
	incoming func(id string) string
}

var twConventions = []twConvention{
	{
		name:   "LSP",
		cancel: jsonrpc.Cancellation{},
		line: func(id string) string {
			return `{"jsonrpc":"2.0","method":"$/cancelRequest","params":{"id":` + id + `}}`
		},
		incoming: func(id string) string {
			return `{"params": {"id": ` + id + `}, "method": "$/cancelRequest", "jsonrpc": "2.0"}`
		},
	},
	{
		name:   "MCP",
		cancel: jsonrpc.Cancellation{Method: "notifications/cancelled", IDMember: "requestId", Unanswered: true},
		line: func(id string) string {
			return `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":` + id + `}}`
		},
		incoming: func(id string) string {
			return `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"reason":"user said \"requestId\": 0","requestId": ` + id + `}}`
		},
	},
}

// twConnPair joins two Conns with two io.Pipes. Its cleanup closes a,
// which ends b's input, waits for b to end, and closes b.
func twConnPair(t *testing.T, aOpts, bOpts *jsonrpc.Options) (a, b *jsonrpc.Conn) {
	t.Helper()
	aR, bW := io.Pipe() // b -> a
	bR, aW := io.Pipe() // a -> b
	a = jsonrpc.NewConn(aR, aW, aOpts)
	b = jsonrpc.NewConn(bR, bW, bOpts)
	t.Cleanup(func() {
		assert.NoError(t, a.Close())
		twWait(t, b.Done(), "b to end at the end of its input")
		assert.NoError(t, b.Close())
	})
	return a, b
}

// twServe joins a Client with opts to srv over two io.Pipes. toServer and
// toClient, when not nil, receive a copy of the bytes of each direction
// as they are read. The cleanup ends the server's input, waits for Serve
// (which closes the client's input when it returns), and closes the
// client.
func twServe(t *testing.T, srv *jsonrpc.Server, opts *jsonrpc.Options, toServer, toClient io.Writer) *jsonrpc.Conn {
	t.Helper()
	reqR, reqW := io.Pipe()   // client -> server
	respR, respW := io.Pipe() // server -> client
	var srvIn io.Reader = reqR
	if toServer != nil {
		srvIn = io.TeeReader(reqR, toServer)
	}
	var cliIn io.Reader = respR
	if toClient != nil {
		cliIn = io.TeeReader(respR, toClient)
	}
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() {
		err := srv.Serve(ctx, srvIn, respW)
		_ = respW.Close()
		served <- err
	}()
	c := jsonrpc.NewConn(cliIn, reqW, opts)
	t.Cleanup(func() {
		defer cancel()
		_ = reqW.Close()
		var err error
		select {
		case err = <-served:
		case <-time.After(twGuard):
			t.Error("Serve did not return at the end of its input")
			cancel()
			err = <-served
		}
		assert.NoError(t, err, "Serve")
		assert.NoError(t, c.Close())
		_ = reqR.Close()
		_ = respR.Close()
	})
	return c
}

// twSideMux returns the methods that each side of a Conn pair serves.
// Answers name the side, so a test sees who answered; notifications to
// "note" go to notes.
func twSideMux(side string, notes chan<- string) *jsonrpc.Mux {
	mux := new(jsonrpc.Mux)
	mux.Handle("add", jsonrpc.Func(func(_ context.Context, p [2]int) (int, error) {
		return p[0] + p[1], nil
	}))
	mux.Handle("whoami", jsonrpc.Func(func(context.Context, struct{}) (string, error) {
		return side, nil
	}))
	type note struct {
		Text string `json:"text"`
	}
	mux.Handle("note", jsonrpc.Func(func(_ context.Context, p note) (any, error) {
		notes <- side + " got " + p.Text
		return nil, nil
	}))
	// forever streams until the caller stops it, then says so on notes.
	mux.Handle("forever", jsonrpc.Stream(func(ctx context.Context, _ struct{}) iter.Seq2[int, error] {
		return func(yield func(int, error) bool) {
			defer func() { notes <- side + " stream stopped" }()
			for i := 0; ; i++ {
				if !yield(i, nil) {
					return
				}
			}
		}
	}))
	mux.Handle("count", jsonrpc.Stream(func(_ context.Context, p struct{ N int }) iter.Seq2[string, error] {
		return func(yield func(string, error) bool) {
			for i := range p.N {
				if !yield(side+strconv.Itoa(i), nil) {
					return
				}
			}
		}
	}))
	// ask calls the peer's method p.Method and answers with its answer.
	mux.Handle("ask", jsonrpc.Func(func(ctx context.Context, p struct {
		Method string          `json:"method"`
		Params json.RawMessage `json:"params"`
	}) (json.RawMessage, error) {
		var r json.RawMessage
		err := jsonrpc.Peer(ctx).Call(ctx, p.Method, p.Params, &r)
		return r, err
	}))
	// depth answers its side's name followed by the peer's answer to
	// depth N-1: a chain of nested calls back and forth.
	mux.Handle("depth", jsonrpc.Func(func(ctx context.Context, p struct{ N int }) (string, error) {
		if p.N == 0 {
			return side, nil
		}
		var rest string
		if err := jsonrpc.Peer(ctx).Call(ctx, "depth", struct{ N int }{p.N - 1}, &rest); err != nil {
			return "", err
		}
		return side + rest, nil
	}))
	return mux
}

// twCaller is the calling side the tests share.
type twCaller = jsonrpc.Caller

// TestTwoWayConnToConn runs two Conns against each other: each calls the
// other with Call, Notify, Batch and Stream; a handler calls back into the
// side that called it; nested chains go back and forth. (It can hang by
// chance, more often under -race, on the bug in TestTwoWayCrossCalls.)
func TestTwoWayConnToConn(t *testing.T) {
	checkLeaks(t)
	notes := make(chan string, 16)
	a, b := twConnPair(t,
		&jsonrpc.Options{Handler: twSideMux("A", notes)},
		&jsonrpc.Options{Handler: twSideMux("B", notes)})
	ctx := t.Context()

	for _, dir := range []struct {
		name       string
		from       twCaller
		self, peer string
	}{
		{"A calls B", a, "A", "B"},
		{"B calls A", b, "B", "A"},
	} {
		t.Run(dir.name, func(t *testing.T) {
			var sum int
			require.NoError(t, dir.from.Call(ctx, "add", [2]int{2, 3}, &sum))
			assert.Equal(t, 5, sum)

			var who string
			require.NoError(t, dir.from.Call(ctx, "whoami", nil, &who))
			assert.Equal(t, dir.peer, who)

			// The peer's handler calls back into this side.
			require.NoError(t, dir.from.Call(ctx, "ask", map[string]any{"method": "whoami"}, &who))
			assert.Equal(t, dir.self, who, "the peer's handler asked this side")
			require.NoError(t, dir.from.Call(ctx, "ask", map[string]any{"method": "add", "params": []int{40, 2}}, &sum))
			assert.Equal(t, 42, sum)

			// A chain of nested calls: peer, self, peer, self, peer.
			var chain string
			require.NoError(t, dir.from.Call(ctx, "depth", map[string]int{"N": 4}, &chain))
			assert.Equal(t, strings.Repeat(dir.peer+dir.self, 2)+dir.peer, chain)

			err := dir.from.Call(ctx, "missing", nil, nil)
			assert.ErrorIs(t, err, jsonrpc.ErrMethodNotFound)

			require.NoError(t, dir.from.Notify(ctx, "note", map[string]string{"text": "hello from " + dir.self}))
			assert.Equal(t, dir.peer+" got hello from "+dir.self, recv(t, notes, "the notification"))

			var bSum int
			var bWho, bAsk string
			calls := []*jsonrpc.BatchCall{
				{Method: "add", Params: [2]int{1, 2}, Result: &bSum},
				{Method: "whoami", Result: &bWho},
				{Method: "note", Params: map[string]string{"text": "batched"}, Notify: true},
				{Method: "missing"},
				{Method: "ask", Params: map[string]any{"method": "whoami"}, Result: &bAsk},
			}
			require.NoError(t, dir.from.Batch(ctx, calls...))
			assert.NoError(t, calls[0].Err)
			assert.Equal(t, 3, bSum)
			assert.NoError(t, calls[1].Err)
			assert.Equal(t, dir.peer, bWho)
			assert.NoError(t, calls[2].Err)
			assert.ErrorIs(t, calls[3].Err, jsonrpc.ErrMethodNotFound)
			assert.NoError(t, calls[4].Err)
			assert.Equal(t, dir.self, bAsk)
			assert.Equal(t, dir.peer+" got batched", recv(t, notes, "the batched notification"))

			var items []string
			for item, err := range dir.from.Stream(ctx, "count", map[string]int{"N": 5}) {
				if !assert.NoError(t, err) {
					break
				}
				var s string
				require.NoError(t, json.Unmarshal(item, &s))
				items = append(items, s)
			}
			p := dir.peer
			assert.Equal(t, []string{p + "0", p + "1", p + "2", p + "3", p + "4"}, items)

			// Stopping the range cancels the call: the peer's producer
			// stops.
			n := 0
			for item, err := range dir.from.Stream(ctx, "forever", nil) {
				require.NoError(t, err)
				assert.JSONEq(t, strconv.Itoa(n), string(item))
				if n++; n == 3 {
					break
				}
			}
			assert.Equal(t, dir.peer+" stream stopped", recv(t, notes, "the peer's producer to stop"))
		})
	}

	// Both directions at once, with nested calls in flight on both sides.
	// Each level of a chain holds a slot on its side until the chain
	// returns: n chains each way, up to 5 levels, hold at most 5n slots
	// on a side, below the 64 of DefaultMaxInFlight. (More would deadlock
	// by design: handlers waiting on the peer, whose requests back wait
	// for a slot.)
	t.Run("concurrent", func(t *testing.T) {
		const n = 10
		errs := make(chan error, 2*n)
		var wg sync.WaitGroup
		for i := range n {
			for _, side := range []struct {
				from       twCaller
				self, peer string
			}{{a, "A", "B"}, {b, "B", "A"}} {
				wg.Go(func() {
					depth := i % 5
					var chain string
					if err := side.from.Call(ctx, "depth", map[string]int{"N": depth}, &chain); err != nil {
						errs <- err
						return
					}
					want := side.peer
					for k := 1; k <= depth; k++ {
						if k%2 == 1 {
							want += side.self
						} else {
							want += side.peer
						}
					}
					if chain != want {
						errs <- fmt.Errorf("depth %d from %s = %q; want %q", depth, side.self, chain, want)
					}
				})
			}
		}
		done := make(chan struct{})
		go func() { wg.Wait(); close(done) }()
		twWait(t, done, "the concurrent calls")
		close(errs)
		for err := range errs {
			t.Error(err)
		}
	})
}

// TestTwoWayNoDeadlock fills every handler slot with handlers that wait
// for the peer's answer, and sends MaxInFlight + 1,000 such requests at
// once: responses never wait for a slot, so all complete. The peer holds
// back its first MaxInFlight answers until that many are waiting, so that
// at that moment every slot is taken by a handler waiting on the peer.
//
// Slots are not the trouble; writes are: this test deadlocks now and then,
// and reliably under -race, when both reading goroutines block in Write at
// once (see the bug in TestTwoWayCrossCalls).
func TestTwoWayNoDeadlock(t *testing.T) {
	const maxInFlight = 4
	const n = maxInFlight + 1000

	type setup struct {
		name  string
		start func(t *testing.T, ask, answer jsonrpc.Handler) twCaller
	}
	for _, s := range []setup{
		{"Server and Client", func(t *testing.T, ask, answer jsonrpc.Handler) twCaller {
			return twServe(t, &jsonrpc.Server{Options: jsonrpc.Options{Handler: ask, MaxInFlight: maxInFlight}},
				&jsonrpc.Options{Handler: answer}, nil, nil)
		}},
		{"Conn and Conn", func(t *testing.T, ask, answer jsonrpc.Handler) twCaller {
			_, b := twConnPair(t,
				&jsonrpc.Options{Handler: ask, MaxInFlight: maxInFlight},
				&jsonrpc.Options{Handler: answer})
			return b
		}},
	} {
		t.Run(s.name, func(t *testing.T) {
			checkLeaks(t)
			// A handler waiting on the peer holds no slot: MaxInFlight
			// bounds the handlers that run, and more may wait.
			var running, peak, waiting, peakWaiting atomic.Int32
			raise := func(peak *atomic.Int32, cur int32) {
				for {
					old := peak.Load()
					if cur <= old || peak.CompareAndSwap(old, cur) {
						return
					}
				}
			}
			ask := jsonrpc.Func(func(ctx context.Context, p [1]int) (int, error) {
				raise(&peak, running.Add(1))
				running.Add(-1)
				raise(&peakWaiting, waiting.Add(1))
				var r int
				err := jsonrpc.Peer(ctx).Call(ctx, "answer", p, &r)
				waiting.Add(-1)
				raise(&peak, running.Add(1))
				running.Add(-1)
				return r, err
			})
			var arrived atomic.Int32
			full := make(chan struct{})
			answer := jsonrpc.Func(func(ctx context.Context, p [1]int) (int, error) {
				if k := arrived.Add(1); k <= maxInFlight {
					if k == maxInFlight {
						close(full)
					}
					select {
					case <-full:
					case <-ctx.Done():
						return 0, ctx.Err()
					}
				}
				return 2 * p[0], nil
			})
			caller := s.start(t, ask, answer)

			ctx, cancel := context.WithTimeout(t.Context(), twGuard)
			defer cancel()
			errs := make(chan error, n)
			var wg sync.WaitGroup
			for i := range n {
				wg.Go(func() {
					var r int
					if err := caller.Call(ctx, "ask", [1]int{i}, &r); err != nil {
						errs <- fmt.Errorf("call %d: %w", i, err)
					} else if r != 2*i {
						errs <- fmt.Errorf("call %d = %d; want %d", i, r, 2*i)
					}
				})
			}
			wg.Wait()
			close(errs)
			failed := 0
			for err := range errs {
				if failed++; failed <= 5 {
					t.Error(err)
				}
			}
			assert.Zero(t, failed, "calls that failed (a deadlock ends them at the deadline)")
			assert.LessOrEqual(t, peak.Load(), int32(maxInFlight), "most handlers running at once")
			assert.Greater(t, peakWaiting.Load(), int32(maxInFlight), "most handlers waiting on the peer at once")
			assert.Equal(t, int32(n), arrived.Load(), "calls to the peer")
		})
	}
}

// TestTwoWayNestedCancel cancels a request whose handler waits on a call
// to the peer: the nested jsonrpc.Call returns the context's error, and
// the peer receives the connection's cancel notification for the nested
// call's id, which cancels the peer's handler, under either convention.
func TestTwoWayNestedCancel(t *testing.T) {
	for _, conv := range twConventions {
		t.Run(conv.name, func(t *testing.T) {
			checkLeaks(t)
			var toServer, toClient lockedBuffer
			// The late answer to the cancelled call, if any, reaches
			// OnUnknownResponse. Under MCP's convention there must be none:
			// that is checked after twServe's cleanup (registered later,
			// so run earlier), once every byte has been written and read.
			late := make(chan *jsonrpc.Response, 4)
			outerID := make(chan string, 1)
			t.Cleanup(func() {
				if !conv.cancel.Unanswered {
					return
				}
				var id string
				select {
				case id = <-outerID:
				default:
					return // the test failed before it learnt the id
				}
				for _, l := range splitLines(toClient.String()) {
					if m := twDecode(t, l); m.Method == "" && string(m.ID) == id {
						t.Errorf("the cancelled request was answered: %s", l)
					}
				}
				assertNoneTw(t, late, "a late answer")
			})

			nestedErr := make(chan error, 1)
			srvMux := new(jsonrpc.Mux)
			srvMux.HandleFunc("outer", func(ctx context.Context, _ *jsonrpc.Request) (any, error) {
				err := jsonrpc.Peer(ctx).Call(ctx, "slow", nil, nil)
				nestedErr <- err
				return nil, err
			})
			started := make(chan string, 1)
			cancelled := make(chan error, 1)
			cliMux := new(jsonrpc.Mux)
			cliMux.HandleFunc("slow", func(ctx context.Context, req *jsonrpc.Request) (any, error) {
				started <- req.ID.String()
				<-ctx.Done()
				cancelled <- ctx.Err()
				return nil, ctx.Err()
			})
			c := twServe(t,
				&jsonrpc.Server{Options: jsonrpc.Options{Handler: srvMux, Cancellation: conv.cancel}},
				&jsonrpc.Options{Handler: cliMux, Cancellation: conv.cancel, OnUnknownResponse: func(r *jsonrpc.Response) {
					select {
					case late <- r:
					default: // never block the reader
					}
				}},
				&toServer, &toClient)

			ctx, cancel := context.WithCancel(t.Context())
			defer cancel()
			res := make(chan error, 1)
			go func() { res <- c.Call(ctx, "outer", nil, nil) }()
			nestedID := recv(t, started, "the nested call to reach the client")
			cancel()
			assert.ErrorIs(t, recv(t, res, "Client.Call to return"), context.Canceled)
			err := recv(t, nestedErr, "the nested call to return")
			assert.ErrorIs(t, err, context.Canceled, "the nested call's error")
			assert.ErrorIs(t, recv(t, cancelled, "the client's handler to be cancelled"), context.Canceled)

			// The client has read the cancel for the nested call by now.
			assert.Contains(t, splitLines(toClient.String()), conv.line(nestedID))
			first := twDecode(t, splitLines(toServer.String())[0])
			require.Equal(t, "outer", first.Method)
			outerID <- string(first.ID)
			assert.Contains(t, splitLines(toServer.String()), conv.line(string(first.ID)))
			if !conv.cancel.Unanswered {
				r := recv(t, late, "the answer to the cancelled request")
				assert.Equal(t, string(first.ID), r.ID.String())
				if assert.NotNil(t, r.Error) {
					assert.Equal(t, jsonrpc.CodeRequestCancelled, r.Error.Code)
				}
			}
		})
	}
}

// A twKind is a kind of endpoint that serves a peer's requests.
type twKind struct {
	name  string
	quiet bool // drops malformed lines rather than answer them
	start func(t *testing.T, cfg twConfig, r io.ReadCloser, w io.WriteCloser) twEndpoint
}

type twConfig struct {
	handler     jsonrpc.Handler
	cancel      jsonrpc.Cancellation
	maxInFlight int
	onUnknown   func(*jsonrpc.Response)
}

type twEndpoint struct {
	caller twCaller     // nil for a Server
	stop   func() error // called once the input has ended
}

var twKinds = []twKind{
	{name: "Server", start: func(t *testing.T, cfg twConfig, r io.ReadCloser, w io.WriteCloser) twEndpoint {
		srv := &jsonrpc.Server{Options: jsonrpc.Options{Handler: cfg.handler, Cancellation: cfg.cancel, MaxInFlight: cfg.maxInFlight}}
		ctx, cancel := context.WithCancel(context.Background())
		errc := make(chan error, 1)
		go func() {
			err := srv.Serve(ctx, r, w)
			_ = w.Close()
			errc <- err
		}()
		return twEndpoint{stop: func() error {
			defer cancel()
			select {
			case err := <-errc:
				return err
			case <-time.After(twGuard):
				cancel()
				<-errc
				return errors.New("Serve did not return at the end of its input")
			}
		}}
	}},
	{name: "Client", quiet: true, start: func(t *testing.T, cfg twConfig, r io.ReadCloser, w io.WriteCloser) twEndpoint {
		c := jsonrpc.NewConn(r, w, &jsonrpc.Options{
			Handler: cfg.handler, Cancellation: cfg.cancel, MaxInFlight: cfg.maxInFlight,
			OnUnknownResponse: cfg.onUnknown,
		})
		return twEndpoint{caller: c, stop: func() error {
			twWait(t, c.Done(), "the client's reading to end")
			return c.Close()
		}}
	}},
	{name: "Conn", start: func(t *testing.T, cfg twConfig, r io.ReadCloser, w io.WriteCloser) twEndpoint {
		c := jsonrpc.NewConn(r, w, &jsonrpc.Options{
			Handler: cfg.handler, Cancellation: cfg.cancel, MaxInFlight: cfg.maxInFlight,
			OnUnknownResponse: cfg.onUnknown,
		})
		return twEndpoint{caller: c, stop: func() error {
			if !twWait(t, c.Done(), "the Conn to end at the end of its input") {
				_ = c.Close()
			}
			return c.Wait()
		}}
	}},
}

// twPeer is a raw peer of an endpoint: the test writes lines to the
// endpoint and reads the lines it writes.
type twPeer struct {
	t       *testing.T
	kind    twKind
	in      *io.PipeWriter
	lines   <-chan string
	ep      twEndpoint
	unknown chan struct{}
	stopped bool
}

// twStartPeer starts an endpoint of kind with cfg. Its cleanup ends the
// endpoint's input and waits for it, unless the test did with finish.
func twStartPeer(t *testing.T, kind twKind, cfg twConfig) *twPeer {
	t.Helper()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	p := &twPeer{t: t, kind: kind, in: inW, lines: twLines(outR), unknown: make(chan struct{}, 16)}
	if cfg.onUnknown == nil {
		cfg.onUnknown = func(*jsonrpc.Response) { p.unknown <- struct{}{} }
	}
	p.ep = kind.start(t, cfg, inR, outW)
	t.Cleanup(func() {
		if !p.stopped {
			_ = inW.Close()
			_ = p.ep.stop()
		}
		_ = outR.Close()
		for range p.lines {
		}
	})
	return p
}

// send writes lines to the endpoint.
func (p *twPeer) send(lines ...string) {
	p.t.Helper()
	data := strings.Join(lines, "\n") + "\n"
	done := make(chan error, 1)
	go func() {
		_, err := io.WriteString(p.in, data)
		done <- err
	}()
	require.NoError(p.t, recv(p.t, done, "the endpoint to read its input"))
}

// recv returns the next line the endpoint wrote.
func (p *twPeer) recv() string {
	p.t.Helper()
	var l string
	var ok bool
	select {
	case l, ok = <-p.lines:
	case <-time.After(twGuard):
		require.FailNow(p.t, "no output from the endpoint")
	}
	require.True(p.t, ok, "the endpoint's output ended")
	return l
}

// barrier returns once the endpoint has read everything sent before it.
func (p *twPeer) barrier() {
	p.t.Helper()
	if p.kind.quiet {
		// A response to no call of the endpoint's reaches
		// OnUnknownResponse on its reading goroutine.
		p.send(`{"jsonrpc":"2.0","id":"barrier","result":null}`)
		recv(p.t, p.unknown, "the barrier")
		return
	}
	p.send("not json")
	assert.JSONEq(p.t, `{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Parse error"}}`, p.recv())
}

// finish ends the endpoint's input, waits for the endpoint, and returns
// the lines it wrote that were not received yet and what it returned.
func (p *twPeer) finish() ([]string, error) {
	p.t.Helper()
	require.NoError(p.t, p.in.Close())
	p.stopped = true
	err := p.ep.stop()
	var rest []string
	for {
		select {
		case l, ok := <-p.lines:
			if !ok {
				return rest, err
			}
			rest = append(rest, l)
		case <-time.After(twGuard):
			require.FailNow(p.t, "the endpoint's output did not end")
		}
	}
}

// TestTwoWayCancelConventions checks both cancel conventions in both
// directions, on every kind of endpoint: with LSP's, a cancelled request
// is answered -32800; with MCP's, it gets no response at all; and each
// sends its own notification when a call's context ends.
func TestTwoWayCancelConventions(t *testing.T) {
	// A cancelled running request: answered -32800, or not at all. The
	// other convention's notification cancels nothing.
	t.Run("running", func(t *testing.T) {
		for _, kind := range twKinds {
			for i, conv := range twConventions {
				other := twConventions[1-i]
				t.Run(kind.name+"/"+conv.name, func(t *testing.T) {
					checkLeaks(t)
					started := make(chan context.Context, 1)
					saw := make(chan error, 1)
					mux := new(jsonrpc.Mux)
					mux.HandleFunc("wait", func(ctx context.Context, _ *jsonrpc.Request) (any, error) {
						started <- ctx
						<-ctx.Done()
						saw <- ctx.Err()
						return nil, ctx.Err()
					})
					mux.HandleFunc("echo", func(_ context.Context, req *jsonrpc.Request) (any, error) {
						return req.Params, nil
					})
					p := twStartPeer(t, kind, twConfig{handler: mux, cancel: conv.cancel})

					p.send(req("7", "wait", ""))
					ctx := recv(t, started, "the handler to start")
					p.send(other.incoming("7"), req("8", "echo", "[8]"))
					assert.JSONEq(t, `{"jsonrpc":"2.0","id":8,"result":[8]}`, p.recv())
					assert.NoError(t, ctx.Err(), "the other convention's notification cancelled the request")

					p.send(conv.incoming("7"))
					assert.ErrorIs(t, recv(t, saw, "the handler's context to end"), context.Canceled)
					if !conv.cancel.Unanswered {
						assert.JSONEq(t, `{"jsonrpc":"2.0","id":7,"error":{"code":-32800,"message":"Request cancelled"}}`, p.recv())
					}
					p.send(req("9", "echo", "[9]"))
					assert.JSONEq(t, `{"jsonrpc":"2.0","id":9,"result":[9]}`, p.recv())
					rest, err := p.finish()
					assert.NoError(t, err)
					assert.Empty(t, rest, "lines after the last answer")
				})
			}
		}
	})

	// A cancel that comes while its request waits for a slot: the request
	// never runs; it is answered at once with LSP's convention, never with
	// MCP's.
	t.Run("queued", func(t *testing.T) {
		for _, kind := range twKinds {
			for _, conv := range twConventions {
				t.Run(kind.name+"/"+conv.name, func(t *testing.T) {
					checkLeaks(t)
					started := make(chan struct{})
					release := make(chan struct{})
					var ranQueued atomic.Bool
					mux := new(jsonrpc.Mux)
					mux.HandleFunc("block", func(context.Context, *jsonrpc.Request) (any, error) {
						close(started)
						<-release
						return "done", nil
					})
					mux.HandleFunc("queued", func(context.Context, *jsonrpc.Request) (any, error) {
						ranQueued.Store(true)
						return "ran", nil
					})
					p := twStartPeer(t, kind, twConfig{handler: mux, cancel: conv.cancel, maxInFlight: 1})
					defer func() {
						select {
						case <-release:
						default:
							close(release)
						}
					}()

					p.send(req("1", "block", ""))
					recv(t, started, "the first handler to start")
					p.send(req("2", "queued", ""), conv.incoming("2"))
					if conv.cancel.Unanswered {
						p.barrier()
					} else {
						// Answered while request 1 still holds the slot.
						assert.JSONEq(t, `{"jsonrpc":"2.0","id":2,"error":{"code":-32800,"message":"Request cancelled"}}`, p.recv())
					}
					close(release)
					assert.JSONEq(t, `{"jsonrpc":"2.0","id":1,"result":"done"}`, p.recv())
					rest, err := p.finish()
					assert.NoError(t, err)
					assert.Empty(t, rest, "request 2 is answered at most once")
					assert.False(t, ranQueued.Load(), "a request cancelled in the queue ran")
				})
			}
		}
	})

	// The notification that Client and Conn send when the context of one
	// of their calls ends, exactly as written.
	t.Run("sent", func(t *testing.T) {
		for _, kind := range twKinds {
			if kind.name == "Server" {
				continue // its handlers' calls: see TestTwoWayNestedCancel
			}
			for _, conv := range twConventions {
				t.Run(kind.name+"/"+conv.name, func(t *testing.T) {
					checkLeaks(t)
					p := twStartPeer(t, kind, twConfig{cancel: conv.cancel})
					ctx, cancel := context.WithCancel(t.Context())
					defer cancel()
					res := make(chan error, 1)
					go func() { res <- p.ep.caller.Call(ctx, "slow", map[string]int{"n": 1}, nil) }()
					m := twDecode(t, p.recv())
					require.Equal(t, "slow", m.Method)
					_, err := strconv.ParseInt(string(m.ID), 10, 64)
					require.NoError(t, err, "the id %s is a number", m.ID)
					cancel()
					assert.ErrorIs(t, recv(t, res, "Call to return"), context.Canceled)
					assert.Equal(t, conv.line(string(m.ID)), p.recv())
				})
			}
		}
	})

	// 1,000 (request, cancel) pairs written in one go: every request is
	// cancelled, whether it ran or not; with LSP's convention each is
	// answered -32800 exactly once, with MCP's none is answered.
	t.Run("flood", func(t *testing.T) {
		const n = 1000
		for _, conv := range twConventions {
			t.Run(conv.name, func(t *testing.T) {
				checkLeaks(t)
				var in strings.Builder
				for i := 1; i <= n; i++ {
					id := strconv.Itoa(i)
					in.WriteString(req(id, "wait", "") + "\n" + conv.incoming(id) + "\n")
				}
				var ran, saw atomic.Int64
				h := jsonrpc.HandlerFunc(func(ctx context.Context, _ *jsonrpc.Request) (any, error) {
					ran.Add(1)
					<-ctx.Done()
					saw.Add(1)
					return nil, ctx.Err()
				})
				srv := &jsonrpc.Server{Options: jsonrpc.Options{Handler: h, Cancellation: conv.cancel}}
				ctx, cancel := context.WithCancel(context.Background())
				defer cancel()
				var out bytes.Buffer
				errc := make(chan error, 1)
				go func() { errc <- srv.Serve(ctx, strings.NewReader(in.String()), &out) }()
				select {
				case err := <-errc:
					require.NoError(t, err)
				case <-time.After(twGuard):
					cancel()
					<-errc
					require.FailNowf(t, "Serve did not return", "a request was never cancelled: %d ran, %d saw a cancel", ran.Load(), saw.Load())
				}
				t.Logf("%d ran and saw their cancel, %d never ran", ran.Load(), n-ran.Load())
				assert.Equal(t, ran.Load(), saw.Load(), "handlers that ran and saw their context cancelled")

				lines := splitLines(out.String())
				if conv.cancel.Unanswered {
					assert.Empty(t, lines, "answers to cancelled requests")
					return
				}
				assert.Len(t, lines, n)
				answered := make(map[string]int)
				for _, l := range lines {
					m := twDecode(t, l)
					answered[string(m.ID)]++
					if assert.NotNil(t, m.Error, "line %q", l) {
						assert.Equal(t, jsonrpc.CodeRequestCancelled, m.Error.Code, "line %q", l)
					}
				}
				for i := 1; i <= n; i++ {
					if k := answered[strconv.Itoa(i)]; k != 1 {
						t.Errorf("request %d answered %d times; want once", i, k)
					}
				}
			})
		}
	})
}

// TestTwoWayRequestFromContext checks that RequestFromContext returns the
// request being served, inside a Func handler, in middleware, and from a
// context derived from the handler's, and nil elsewhere.
func TestTwoWayRequestFromContext(t *testing.T) {
	checkLeaks(t)
	assert.Nil(t, jsonrpc.RequestFromContext(context.Background()))
	assert.Nil(t, jsonrpc.RequestFromContext(t.Context()))

	type seen struct{ where, id, method string }
	var mu sync.Mutex
	var log []seen
	record := func(where string, r *jsonrpc.Request) {
		mu.Lock()
		defer mu.Unlock()
		if r == nil {
			log = append(log, seen{where, "<nil>", "<nil>"})
			return
		}
		log = append(log, seen{where, r.ID.String(), r.Method})
	}
	type key struct{}
	mux := new(jsonrpc.Mux)
	mux.Use(func(next jsonrpc.Handler) jsonrpc.Handler {
		return jsonrpc.HandlerFunc(func(ctx context.Context, req *jsonrpc.Request) (any, error) {
			record("middleware", jsonrpc.RequestFromContext(ctx))
			return next.ServeJSONRPC(context.WithValue(ctx, key{}, "derived"), req)
		})
	})
	mux.Handle("who", jsonrpc.Func(func(ctx context.Context, p struct{ X int }) (string, error) {
		if ctx.Value(key{}) != "derived" {
			return "", errors.New("the middleware's context did not reach the handler")
		}
		r := jsonrpc.RequestFromContext(ctx)
		record("handler", r)
		if r == nil {
			return "", errors.New("no request in the context")
		}
		return r.Method + " " + r.ID.String() + " " + string(r.Params), nil
	}))

	lines := serveString(t, &jsonrpc.Server{Options: jsonrpc.Options{Handler: mux, MaxInFlight: 1}},
		req("1", "who", `{"x":1}`)+"\n"+
			req(`"s"`, "who", `{"x":2}`)+"\n"+
			req("", "who", `{"x":3}`)+"\n"+
			"["+req("4", "who", `{"x":4}`)+","+req("5", "who", `{"x":5}`)+"]\n")
	require.Len(t, lines, 3)
	assert.JSONEq(t, `{"jsonrpc":"2.0","id":1,"result":"who 1 {\"x\":1}"}`, lines[0])
	assert.JSONEq(t, `{"jsonrpc":"2.0","id":"s","result":"who \"s\" {\"x\":2}"}`, lines[1])
	assert.JSONEq(t, `[{"jsonrpc":"2.0","id":4,"result":"who 4 {\"x\":4}"},`+
		`{"jsonrpc":"2.0","id":5,"result":"who 5 {\"x\":5}"}]`, lines[2])
	assert.Equal(t, []seen{
		{"middleware", "1", "who"}, {"handler", "1", "who"},
		{"middleware", `"s"`, "who"}, {"handler", `"s"`, "who"},
		{"middleware", "", "who"}, {"handler", "", "who"}, // a notification has no id
		{"middleware", "4", "who"}, {"handler", "4", "who"}, // a batch, in order
		{"middleware", "5", "who"}, {"handler", "5", "who"},
	}, log)
	// Inside a handler of a Conn too.
	var got []string
	connMux := new(jsonrpc.Mux)
	connMux.Handle("who", jsonrpc.Func(func(ctx context.Context, _ struct{}) (string, error) {
		r := jsonrpc.RequestFromContext(ctx)
		if r == nil {
			return "", errors.New("no request in the context")
		}
		return r.Method + " " + r.ID.String(), nil
	}))
	_, b := twConnPair(t, &jsonrpc.Options{Handler: connMux}, nil)
	for range 2 {
		var s string
		require.NoError(t, b.Call(t.Context(), "who", nil, &s))
		got = append(got, s)
	}
	assert.Equal(t, []string{"who 1", "who 2"}, got)
}

// TestTwoWayMuxUse checks the middleware of a Mux: the first added is the
// outermost, it wraps the handlers registered before Use and after it, and
// a method with no handler is answered -32601 without passing through it.
func TestTwoWayMuxUse(t *testing.T) {
	checkLeaks(t)
	var mu sync.Mutex
	var log []string
	record := func(s string) {
		mu.Lock()
		log = append(log, s)
		mu.Unlock()
	}
	mw := func(name string) func(jsonrpc.Handler) jsonrpc.Handler {
		return func(next jsonrpc.Handler) jsonrpc.Handler {
			return jsonrpc.HandlerFunc(func(ctx context.Context, req *jsonrpc.Request) (any, error) {
				r := jsonrpc.RequestFromContext(ctx)
				if r == nil {
					record(name + " in: no request")
				} else {
					record(name + " in " + r.Method + " " + r.ID.String())
				}
				v, err := next.ServeJSONRPC(ctx, req)
				record(name + " out")
				return v, err
			})
		}
	}
	handler := func(name string) jsonrpc.Handler {
		return jsonrpc.HandlerFunc(func(context.Context, *jsonrpc.Request) (any, error) {
			record(name)
			return name, nil
		})
	}
	mux := new(jsonrpc.Mux)
	mux.Handle("before", handler("before"))
	mux.Use(mw("first"), mw("second"))
	mux.Use(mw("third"))
	mux.Handle("after", handler("after"))
	assert.Panics(t, func() { mux.Use(nil) }, "Use(nil)")

	lines := serveString(t, &jsonrpc.Server{Options: jsonrpc.Options{Handler: mux, MaxInFlight: 1}},
		req("1", "before", "")+"\n"+req("2", "missing", "")+"\n"+req("3", "after", "")+"\n")
	require.Len(t, lines, 3)
	assert.JSONEq(t, `{"jsonrpc":"2.0","id":1,"result":"before"}`, lines[0])
	assert.JSONEq(t, `{"jsonrpc":"2.0","id":2,"error":{"code":-32601,"message":"Method not found"}}`, lines[1])
	assert.JSONEq(t, `{"jsonrpc":"2.0","id":3,"result":"after"}`, lines[2])
	assert.Equal(t, []string{
		"first in before 1", "second in before 1", "third in before 1",
		"before",
		"third out", "second out", "first out",
		"first in missing 2", "second in missing 2", "third in missing 2",
		"third out", "second out", "first out",
		"first in after 3", "second in after 3", "third in after 3",
		"after",
		"third out", "second out", "first out",
	}, log)
}

// TestTwoWayHeaderFraming runs a Server and a Client over LSP's
// Content-Length framing: calls both ways, a notification, a stream and a
// 200 KiB result and params round-trip, and every byte on the wire, in
// both directions, is a header-framed message.
func TestTwoWayHeaderFraming(t *testing.T) {
	checkLeaks(t)
	big := strings.Repeat("0123456789abcdef", 200<<10/16)
	notes := make(chan string, 4)
	srvMux := twSideMux("S", notes)
	srvMux.Handle("big", jsonrpc.Func(func(context.Context, struct{}) (string, error) { return big, nil }))
	srvMux.HandleFunc("echo", func(_ context.Context, req *jsonrpc.Request) (any, error) { return req.Params, nil })
	var toServer, toClient lockedBuffer
	c := twServe(t,
		&jsonrpc.Server{Options: jsonrpc.Options{Handler: srvMux, Framing: jsonrpc.HeaderFraming{}}},
		&jsonrpc.Options{Handler: twSideMux("C", notes), Framing: jsonrpc.HeaderFraming{}},
		&toServer, &toClient)
	ctx := t.Context()

	var sum int
	require.NoError(t, c.Call(ctx, "add", [2]int{20, 22}, &sum))
	assert.Equal(t, 42, sum)
	var got string
	require.NoError(t, c.Call(ctx, "big", nil, &got))
	assert.Len(t, got, len(big))
	assert.True(t, got == big, "the 200 KiB result came back changed")
	var echoed []string
	require.NoError(t, c.Call(ctx, "echo", []string{big, "tail"}, &echoed))
	assert.Equal(t, []string{big, "tail"}, echoed)
	var who string
	require.NoError(t, c.Call(ctx, "ask", map[string]any{"method": "whoami"}, &who))
	assert.Equal(t, "C", who, "the server's handler called the client")
	require.NoError(t, c.Notify(ctx, "note", map[string]string{"text": "framed"}))
	assert.Equal(t, "S got framed", recv(t, notes, "the notification"))
	n := 0
	for item, err := range c.Stream(ctx, "count", map[string]int{"N": 3}) {
		require.NoError(t, err)
		assert.JSONEq(t, strconv.Quote("S"+strconv.Itoa(n)), string(item))
		n++
	}
	assert.Equal(t, 3, n, "stream items")
	assert.ErrorIs(t, c.Call(ctx, "missing", nil, nil), jsonrpc.ErrMethodNotFound)

	for _, dir := range []struct {
		name string
		buf  *lockedBuffer
	}{{"client to server", &toServer}, {"server to client", &toClient}} {
		wire := dir.buf.String()
		assert.True(t, strings.HasPrefix(wire, "Content-Length: "), "%s: the wire starts with %.40q", dir.name, wire)
		mr := jsonrpc.HeaderFraming{}.NewReader(strings.NewReader(wire), 1<<20)
		msgs := 0
		for {
			msg, err := mr.ReadMessage()
			if errors.Is(err, io.EOF) {
				break
			}
			if !assert.NoError(t, err, "%s: message %d", dir.name, msgs) {
				break
			}
			assert.True(t, json.Valid(msg), "%s: message %d is not JSON: %.80q", dir.name, msgs, msg)
			msgs++
		}
		assert.GreaterOrEqual(t, msgs, 8, "%s: messages", dir.name)
	}
}

// TestTwoWayConnLifecycle checks how a Conn ends: at the end of its input,
// after Close, and after Shutdown. It runs in synctest bubbles, so the
// clock is exact and blocked goroutines are seen as such.
func TestTwoWayConnLifecycle(t *testing.T) {
	const grace = time.Second

	// conn starts a Conn with h over pipes; in writes its input, and
	// lines are the lines it writes.
	type rig struct {
		c     *jsonrpc.Conn
		in    *io.PipeWriter
		lines <-chan string
	}
	start := func(t *testing.T, h jsonrpc.Handler) *rig {
		inR, inW := io.Pipe()
		outR, outW := io.Pipe()
		c := jsonrpc.NewConn(inR, outW, &jsonrpc.Options{Handler: h, StopGrace: grace})
		t.Cleanup(func() {
			_ = c.Close()
			_ = inW.Close()
			_ = outR.Close()
		})
		return &rig{c: c, in: inW, lines: twLines(outR)}
	}
	write := func(t *testing.T, w io.Writer, line string) {
		_, err := io.WriteString(w, line+"\n")
		require.NoError(t, err)
	}
	ended := func(c *jsonrpc.Conn) bool {
		select {
		case <-c.Done():
			return true
		default:
			return false
		}
	}

	t.Run("EOF, handler finishes within StopGrace", func(t *testing.T) {
		checkLeaks(t)
		synctest.Test(t, func(t *testing.T) {
			started := make(chan struct{})
			release := make(chan struct{})
			errAtReturn := make(chan error, 1)
			r := start(t, jsonrpc.HandlerFunc(func(ctx context.Context, _ *jsonrpc.Request) (any, error) {
				close(started)
				<-release
				errAtReturn <- ctx.Err()
				return "finished", nil
			}))
			write(t, r.in, req("1", "work", ""))
			<-started
			require.NoError(t, r.in.Close())
			synctest.Wait()
			assert.False(t, ended(r.c), "the Conn ended while a handler was in flight")
			time.Sleep(grace / 2) // the bubble's clock
			close(release)
			assert.NoError(t, <-errAtReturn, "the handler's context ended within StopGrace")
			assert.JSONEq(t, `{"jsonrpc":"2.0","id":1,"result":"finished"}`, <-r.lines)
			assert.NoError(t, r.c.Wait())
			_, more := <-r.lines
			assert.False(t, more, "the output is closed")
		})
	})

	t.Run("EOF, handler ignores its context", func(t *testing.T) {
		checkLeaks(t)
		synctest.Test(t, func(t *testing.T) {
			started := make(chan struct{})
			release := make(chan struct{})
			cancelledAfter := make(chan time.Duration, 1)
			var eof time.Time
			r := start(t, jsonrpc.HandlerFunc(func(ctx context.Context, _ *jsonrpc.Request) (any, error) {
				close(started)
				<-ctx.Done()
				cancelledAfter <- time.Since(eof)
				<-release // and ignores it
				return "too late", nil
			}))
			write(t, r.in, req("1", "stuck", ""))
			<-started
			eof = time.Now()
			require.NoError(t, r.in.Close())
			err := r.c.Wait()
			waited := time.Since(eof)
			t.Logf("Wait returned %v after %v; the handler's context ended after %v", err, waited, <-cancelledAfter)
			assert.GreaterOrEqual(t, waited, 2*grace, "Wait returned before twice StopGrace")
			assert.Less(t, waited, 3*grace, "Wait returned after more than twice StopGrace")
			if err != nil {
				assert.ErrorIs(t, err, io.EOF, "Wait after the end of the input")
			}
			close(release)
			for l := range r.lines {
				t.Errorf("the abandoned handler's answer was written: %s", l)
			}
		})
	})

	t.Run("Close fails pending calls", func(t *testing.T) {
		checkLeaks(t)
		synctest.Test(t, func(t *testing.T) {
			r := start(t, nil)
			ctx := t.Context()
			res := make(chan error, 3)
			go func() { res <- r.c.Call(ctx, "never", nil, nil) }()
			go func() { res <- r.c.Batch(ctx, &jsonrpc.BatchCall{Method: "never"}) }()
			go func() {
				for _, err := range r.c.Stream(ctx, "never", nil) {
					if err != nil {
						res <- err
						return
					}
				}
				res <- errors.New("the stream ended without an error")
			}()
			for range 3 {
				<-r.lines // the three requests are out
			}
			synctest.Wait()
			assert.NoError(t, r.c.Close())
			for range 3 {
				assert.ErrorIs(t, <-res, jsonrpc.ErrClosed)
			}
			assert.ErrorIs(t, r.c.Call(ctx, "later", nil, nil), jsonrpc.ErrClosed, "Call after Close")
			assert.ErrorIs(t, r.c.Notify(ctx, "later", nil), jsonrpc.ErrClosed, "Notify after Close")
			assert.ErrorIs(t, r.c.Wait(), jsonrpc.ErrClosed)
			assert.NoError(t, r.c.Close(), "a second Close")
		})
	})

	t.Run("Shutdown waits for a running handler", func(t *testing.T) {
		checkLeaks(t)
		synctest.Test(t, func(t *testing.T) {
			started := make(chan struct{})
			release := make(chan struct{})
			r := start(t, jsonrpc.HandlerFunc(func(context.Context, *jsonrpc.Request) (any, error) {
				close(started)
				<-release
				return "answered", nil
			}))
			write(t, r.in, req("1", "work", ""))
			<-started
			pending := make(chan error, 1)
			go func() { pending <- r.c.Call(t.Context(), "late", nil, nil) }()
			call := twDecode(t, <-r.lines)
			assert.Equal(t, "late", call.Method)
			shut := make(chan error, 1)
			go func() { shut <- r.c.Shutdown(t.Context()) }()
			synctest.Wait()
			select {
			case err := <-shut:
				t.Fatalf("Shutdown returned %v while a handler was running", err)
			default:
			}
			close(release)
			assert.JSONEq(t, `{"jsonrpc":"2.0","id":1,"result":"answered"}`, <-r.lines)
			synctest.Wait()
			select {
			case err := <-shut:
				t.Fatalf("Shutdown returned %v while a call awaited its answer", err)
			default:
			}
			// The answer to this side's call still comes through.
			write(t, r.in, `{"jsonrpc":"2.0","id":`+string(call.ID)+`,"result":null}`)
			assert.NoError(t, <-pending, "a call in flight at Shutdown gets its answer")
			assert.NoError(t, <-shut)
			assert.ErrorIs(t, r.c.Wait(), jsonrpc.ErrClosed)
		})
	})

	t.Run("Shutdown lets a handler's call to the peer get its answer", func(t *testing.T) {
		checkLeaks(t)
		synctest.Test(t, func(t *testing.T) {
			nested := make(chan error, 1)
			r := start(t, jsonrpc.HandlerFunc(func(ctx context.Context, _ *jsonrpc.Request) (any, error) {
				err := jsonrpc.Peer(ctx).Call(ctx, "inner", nil, nil)
				nested <- err
				return "outer done", err
			}))
			write(t, r.in, req(`"outer"`, "work", ""))
			call := twDecode(t, <-r.lines)
			assert.Equal(t, "inner", call.Method)
			shut := make(chan error, 1)
			go func() { shut <- r.c.Shutdown(t.Context()) }()
			synctest.Wait()
			select {
			case err := <-shut:
				t.Fatalf("Shutdown returned %v while a handler awaited the peer", err)
			default:
			}
			// Reading goes on: the answer reaches the handler's call.
			write(t, r.in, `{"jsonrpc":"2.0","id":`+string(call.ID)+`,"result":null}`)
			assert.NoError(t, <-nested)
			assert.JSONEq(t, `{"jsonrpc":"2.0","id":"outer","result":"outer done"}`, <-r.lines)
			assert.NoError(t, <-shut)
		})
	})

	t.Run("Wait is nil at a clean EOF", func(t *testing.T) {
		checkLeaks(t)
		synctest.Test(t, func(t *testing.T) {
			r := start(t, specMux())
			write(t, r.in, req("1", "sum", "[1,2,3]"))
			assert.JSONEq(t, `{"jsonrpc":"2.0","id":1,"result":6}`, <-r.lines)
			require.NoError(t, r.in.Close())
			assert.NoError(t, r.c.Wait())
			assert.True(t, ended(r.c))
			assert.ErrorIs(t, r.c.Call(t.Context(), "after", nil, nil), jsonrpc.ErrClosed, "Call after the end")
		})
	})
}

// TestTwoWayClientHandlerCallsBack has a Client's Handler call back into
// the server while the server's handler that called it waits for its
// answer: outer (server) -> middle (client) -> inner (server). (It can
// hang by chance, more often under -race, on the bug in
// TestTwoWayCrossCalls.)
func TestTwoWayClientHandlerCallsBack(t *testing.T) {
	checkLeaks(t)
	srvMux := new(jsonrpc.Mux)
	srvMux.Handle("outer", jsonrpc.Func(func(ctx context.Context, p [1]int) (string, error) {
		var s string
		err := jsonrpc.Peer(ctx).Call(ctx, "middle", p, &s)
		return "outer(" + s + ")", err
	}))
	srvMux.Handle("inner", jsonrpc.Func(func(_ context.Context, p [1]int) (string, error) {
		return "inner" + strconv.Itoa(p[0]), nil
	}))
	cliMux := new(jsonrpc.Mux)
	cliMux.Handle("middle", jsonrpc.Func(func(ctx context.Context, p [1]int) (string, error) {
		var s string
		err := jsonrpc.Peer(ctx).Call(ctx, "inner", p, &s)
		return "middle(" + s + ")", err
	}))
	// The client's one slot is held by a handler waiting on the server
	// each time; the server needs one slot more than the outer calls in
	// flight, which the default MaxInFlight leaves.
	c := twServe(t, &jsonrpc.Server{Options: jsonrpc.Options{Handler: srvMux}},
		&jsonrpc.Options{Handler: cliMux, MaxInFlight: 1}, nil, nil)

	var s string
	require.NoError(t, c.Call(t.Context(), "outer", [1]int{0}, &s))
	assert.Equal(t, "outer(middle(inner0))", s)

	const n = jsonrpc.DefaultMaxInFlight / 2
	ctx, cancel := context.WithTimeout(t.Context(), twGuard)
	defer cancel()
	errs := make(chan error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			var s string
			if err := c.Call(ctx, "outer", [1]int{i}, &s); err != nil {
				errs <- fmt.Errorf("call %d: %w", i, err)
			} else if want := "outer(middle(inner" + strconv.Itoa(i) + "))"; s != want {
				errs <- fmt.Errorf("call %d = %q; want %q", i, s, want)
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

// twBufPipe is an in-memory pipe whose writes never block: what is
// written waits, without limit, until it is read. Closing either end ends
// it: reads return what is left, then io.EOF; writes fail.
type twBufPipe struct {
	mu     sync.Mutex
	cond   sync.Cond
	buf    bytes.Buffer
	closed bool
}

func newTwBufPipe() *twBufPipe {
	p := new(twBufPipe)
	p.cond.L = &p.mu
	return p
}

func (p *twBufPipe) Read(b []byte) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for p.buf.Len() == 0 && !p.closed {
		p.cond.Wait()
	}
	if p.buf.Len() == 0 {
		return 0, io.EOF
	}
	return p.buf.Read(b)
}

func (p *twBufPipe) Write(b []byte) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return 0, io.ErrClosedPipe
	}
	p.buf.Write(b)
	p.cond.Broadcast()
	return len(b), nil
}

func (p *twBufPipe) Close() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.closed = true
	p.cond.Broadcast()
	return nil
}

// TestTwoWayNoDeadlockOverBudget is TestTwoWayNoDeadlock with more
// requests queued for a slot than MaxPendingBytes holds. Its transport
// never blocks a write, so that only the budget is at stake (compare
// TestTwoWayCrossCalls). Once the bytes held pass the budget while the
// handlers wait in jsonrpc.Call for the peer, the reader cannot wait for
// room (the answers lie behind it), so it refuses the requests over the
// budget with CodeOverloaded and reads on: every call ends, answered or
// refused, none waits for its deadline, and with the default budget none
// is refused.
//
// It runs in a synctest bubble: a deadlock would end the calls at their
// deadline on the bubble's clock, at once.
func TestTwoWayNoDeadlockOverBudget(t *testing.T) {
	const maxInFlight = 4
	const n = maxInFlight + 1000
	for _, budget := range []struct {
		name  string
		bytes int
	}{{"default", 0}, {"256 KiB", 256 << 10}} { // 256 KiB: room for about 350 queued
		for _, s := range []struct {
			name  string
			start func(t *testing.T, ask, answer jsonrpc.Handler) twCaller
		}{
			{"Conn and Conn", func(t *testing.T, ask, answer jsonrpc.Handler) twCaller {
				ab, ba := newTwBufPipe(), newTwBufPipe()
				a := jsonrpc.NewConn(ba, ab, &jsonrpc.Options{Handler: ask, MaxInFlight: maxInFlight, MaxPendingBytes: budget.bytes})
				b := jsonrpc.NewConn(ab, ba, &jsonrpc.Options{Handler: answer})
				t.Cleanup(func() {
					assert.NoError(t, a.Close())
					assert.NoError(t, b.Close())
				})
				return b
			}},
			{"Server and Client", func(t *testing.T, ask, answer jsonrpc.Handler) twCaller {
				cs, sc := newTwBufPipe(), newTwBufPipe()
				srv := &jsonrpc.Server{Options: jsonrpc.Options{Handler: ask, MaxInFlight: maxInFlight, MaxPendingBytes: budget.bytes}}
				errc := make(chan error, 1)
				go func() { errc <- srv.Serve(context.Background(), cs, sc) }() // t.Context ends before the cleanup
				c := jsonrpc.NewConn(sc, cs, &jsonrpc.Options{Handler: answer})
				t.Cleanup(func() {
					assert.NoError(t, srv.Close())
					assert.ErrorIs(t, <-errc, jsonrpc.ErrServerClosed)
					assert.NoError(t, c.Close())
				})
				return c
			}},
		} {
			t.Run(budget.name+"/"+s.name, func(t *testing.T) {
				checkLeaks(t)
				synctest.Test(t, func(t *testing.T) {
					ask := jsonrpc.Func(func(ctx context.Context, p [1]int) (int, error) {
						var r int
						err := jsonrpc.Peer(ctx).Call(ctx, "answer", p, &r)
						return r, err
					})
					answer := jsonrpc.Func(func(_ context.Context, p [1]int) (int, error) { return 2 * p[0], nil })
					caller := s.start(t, ask, answer)
					ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
					defer cancel()
					var failed, refused atomic.Int32
					var first atomic.Value
					var wg sync.WaitGroup
					for i := range n {
						wg.Go(func() {
							var r int
							err := caller.Call(ctx, "ask", [1]int{i}, &r)
							switch {
							case errors.Is(err, jsonrpc.ErrOverloaded):
								refused.Add(1)
							case err != nil:
								failed.Add(1)
								first.CompareAndSwap(nil, err)
							case r != 2*i:
								failed.Add(1)
								first.CompareAndSwap(nil, fmt.Errorf("call %d: got %d", i, r))
							}
						})
					}
					wg.Wait()
					t.Logf("%d of %d calls refused as overloaded", refused.Load(), n)
					assert.Zero(t, failed.Load(), "calls that did not complete (first error: %v)", first.Load())
					if budget.bytes == 0 {
						assert.Zero(t, refused.Load(), "calls refused with the default budget")
					} else {
						assert.Less(t, refused.Load(), int32(n), "every call refused")
					}
				})
			})
		}
	}
}

// TestTwoWayEscapedMethodNames sends the cancel and stream notifications
// with their method names spelled with the escape "\/" for "/", as PHP's
// json_encode writes them by default: the same JSON strings.
//
// Both must be recognised: the connection compares method names as
// decoded, as dispatch does.
func TestTwoWayEscapedMethodNames(t *testing.T) {
	escape := func(line string) string { return strings.ReplaceAll(line, "/", `\/`) }
	t.Run("cancel", func(t *testing.T) {
		for _, kind := range twKinds {
			for _, conv := range twConventions {
				t.Run(kind.name+"/"+conv.name, func(t *testing.T) {
					checkLeaks(t)
					started := make(chan context.Context, 1)
					release := make(chan struct{})
					mux := new(jsonrpc.Mux)
					mux.HandleFunc("wait", func(ctx context.Context, _ *jsonrpc.Request) (any, error) {
						started <- ctx
						select {
						case <-ctx.Done():
							return nil, ctx.Err()
						case <-release:
							return "not cancelled", nil
						}
					})
					mux.HandleFunc("echo", func(_ context.Context, req *jsonrpc.Request) (any, error) {
						return req.Params, nil
					})
					p := twStartPeer(t, kind, twConfig{handler: mux, cancel: conv.cancel})
					p.send(req("7", "wait", ""))
					ctx := recv(t, started, "the handler to start")
					cancelLine := escape(conv.line("7"))
					// The reader handles the cancel before it reads the
					// echo, and cancels the context as it handles it.
					p.send(cancelLine, req("8", "echo", "[8]"))
					// The answer to 8 comes, after or before the one to
					// the cancelled 7 (written by another goroutine).
					line := p.recv()
					if strings.Contains(line, `"id":7`) {
						assert.JSONEq(t, `{"jsonrpc":"2.0","id":7,"error":{"code":-32800,"message":"Request cancelled"}}`, line)
						line = p.recv()
					}
					assert.JSONEq(t, `{"jsonrpc":"2.0","id":8,"result":[8]}`, line)
					assert.Error(t, ctx.Err(), "%s did not cancel request 7", cancelLine)
					close(release)
					rest, err := p.finish()
					assert.NoError(t, err)
					t.Logf("answered after the echo: %q", rest)
				})
			}
		}
	})
	t.Run("stream", func(t *testing.T) {
		for _, kind := range twKinds {
			if kind.name == "Server" {
				continue
			}
			t.Run(kind.name, func(t *testing.T) {
				checkLeaks(t)
				p := twStartPeer(t, kind, twConfig{})
				items := make(chan []string, 1)
				go func() {
					var got []string
					for item, err := range p.ep.caller.Stream(t.Context(), "items", nil) {
						if err != nil {
							got = append(got, "error: "+err.Error())
							break
						}
						got = append(got, string(item))
					}
					items <- got
				}()
				id := string(twDecode(t, p.recv()).ID)
				p.send(escape(`{"jsonrpc":"2.0","method":"$/stream","params":{"id":`+id+`,"item":5}}`),
					`{"jsonrpc":"2.0","id":`+id+`,"result":1}`)
				assert.Equal(t, []string{"5"}, recv(t, items, "the stream to end"), "the items of the stream")
			})
		}
	})
}

// TestTwoWayCrossCalls has two Conns call each other at the same moment,
// with handlers that answer at once.
//
// Each handler runs inline on its connection's reading goroutine and
// buffers its answer. The reader must not write it with a blocking Write
// before it reads again: over a transport with no buffer (io.Pipe,
// net.Pipe; an OS pipe or socket once its buffer is full) each reader's
// Write would wait for the other reader, and neither would read again. So
// the answer is written on another goroutine, and both calls complete.
//
// It runs in a synctest bubble, which makes the timing exact: both
// handlers are inline when the gate opens, and the calls end at their
// deadline on the bubble's clock, at once.
func TestTwoWayCrossCalls(t *testing.T) {
	checkLeaks(t)
	synctest.Test(t, func(t *testing.T) {
		gate := make(chan struct{})
		h := jsonrpc.HandlerFunc(func(context.Context, *jsonrpc.Request) (any, error) {
			<-gate
			return "ok", nil
		})
		a, b := twConnPair(t, &jsonrpc.Options{Handler: h}, &jsonrpc.Options{Handler: h})
		ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
		defer cancel()
		errs := make(chan error, 2)
		go func() { errs <- a.Call(ctx, "x", nil, nil) }()
		go func() { errs <- b.Call(ctx, "x", nil, nil) }()
		synctest.Wait() // each side's handler runs on its reader
		close(gate)
		assert.NoError(t, <-errs, "one call")
		assert.NoError(t, <-errs, "the other call")
	})
}
