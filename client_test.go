package jsonrpc_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"iter"
	"maps"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ndjsonrpc/jsonrpc"
)

// waitTimeout bounds every wait of a test, so that a bug shows up as a
// failure instead of a hung test run. Nothing passes or fails on time.
const waitTimeout = 10 * time.Second

// recv receives from ch on the test goroutine, failing t if nothing comes
// within waitTimeout.
func recv[T any](t *testing.T, ch <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(waitTimeout):
		require.FailNowf(t, "timed out", "waiting for %s", what)
		panic("unreachable")
	}
}

// assertNone fails t if ch holds a value already.
func assertNone[T any](t *testing.T, ch <-chan T, what string) {
	t.Helper()
	select {
	case v := <-ch:
		assert.Failf(t, "unexpected value", "%s: %v", what, v)
	default:
	}
}

// newPair joins a Client to a Server serving h, with two io.Pipe pairs. A
// cleanup closes the client's end of the requests pipe, waits for Serve to
// return at the end of its input (it closes the responses pipe as a real
// peer would when it exits), and closes the client.
func newPair(t *testing.T, h jsonrpc.Handler) *jsonrpc.Conn {
	t.Helper()
	return newPairOpts(t, h, nil)
}

// newPairOpts is newPair with client options.
func newPairOpts(t *testing.T, h jsonrpc.Handler, opts *jsonrpc.Options) *jsonrpc.Conn {
	t.Helper()
	reqR, reqW := io.Pipe()   // client -> server
	respR, respW := io.Pipe() // server -> client
	ctx, cancel := context.WithCancel(context.Background())
	srv := &jsonrpc.Server{Options: jsonrpc.Options{Handler: h}}
	served := make(chan error, 1)
	go func() {
		err := srv.Serve(ctx, reqR, respW)
		_ = respW.Close()
		served <- err
	}()
	c := jsonrpc.NewConn(respR, reqW, opts)
	t.Cleanup(func() {
		defer cancel()
		_ = reqW.Close() // the end of the server's input
		var err error
		select {
		case err = <-served:
		case <-time.After(waitTimeout):
			t.Error("Serve did not return at the end of its input: a handler still runs")
			cancel()
			err = <-served
		}
		// A test that closed the client first leaves the server nowhere to
		// write its last responses.
		if err != nil && !errors.Is(err, io.ErrClosedPipe) {
			t.Errorf("Serve() = %v; want nil", err)
		}
		assert.NoError(t, c.Close())
		_ = reqR.Close()
		_ = respR.Close()
	})
	return c
}

// rawPeer is a fake server made of an io.Pipe pair and a bufio.Reader: the
// test reads the client's lines and writes whatever it likes back.
type rawPeer struct {
	lines <-chan string
	w     *io.PipeWriter // what the client reads, unless it reads elsewhere
}

// newRawPeer returns a client talking to a raw peer. A cleanup closes the
// client and the pipes and waits for the peer's reading goroutine.
func newRawPeer(t *testing.T, opts *jsonrpc.Options) (*jsonrpc.Conn, *rawPeer) {
	t.Helper()
	return newRawPeerReader(t, nil, opts)
}

// newRawPeerReader is newRawPeer with the client reading from r instead of
// from the peer, when r is not nil.
func newRawPeerReader(t *testing.T, r io.Reader, opts *jsonrpc.Options) (*jsonrpc.Conn, *rawPeer) {
	t.Helper()
	reqR, reqW := io.Pipe()
	respR, respW := io.Pipe()
	if r == nil {
		r = respR
	}
	lines := make(chan string, 4096)
	quit := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		br := bufio.NewReader(reqR)
		for {
			line, err := br.ReadString('\n')
			if line != "" {
				select {
				case lines <- strings.TrimSuffix(line, "\n"):
				case <-quit:
					return
				}
			}
			if err != nil {
				return
			}
		}
	}()
	c := jsonrpc.NewConn(r, reqW, opts)
	t.Cleanup(func() {
		assert.NoError(t, c.Close())
		close(quit)
		_ = reqR.Close()
		_ = respW.Close()
		_ = respR.Close()
		<-done
	})
	return c, &rawPeer{lines: lines, w: respW}
}

// next returns the next line the client wrote.
func (p *rawPeer) next(t *testing.T) string {
	t.Helper()
	return recv(t, p.lines, "a line from the client")
}

// wireMsg is a message as the raw peer sees it.
type wireMsg struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Method  string          `json:"method"`
	Params  json.RawMessage `json:"params"`
}

// nextMsg returns the next line the client wrote, decoded.
func (p *rawPeer) nextMsg(t *testing.T) wireMsg {
	t.Helper()
	line := p.next(t)
	var m wireMsg
	require.NoError(t, json.Unmarshal([]byte(line), &m), "line %q", line)
	assert.Equal(t, "2.0", m.JSONRPC, "line %q", line)
	return m
}

// send writes line to the client.
func (p *rawPeer) send(t *testing.T, line string) {
	t.Helper()
	_, err := io.WriteString(p.w, line+"\n")
	require.NoError(t, err)
}

// sendf writes a formatted line to the client.
func (p *rawPeer) sendf(t *testing.T, format string, args ...any) {
	t.Helper()
	p.send(t, fmt.Sprintf(format, args...))
}

// callResult is what a Call made on another goroutine returned.
type callResult struct {
	result json.RawMessage
	err    error
}

// goCall runs c.Call on a new goroutine and returns where its outcome
// will be.
func goCall(ctx context.Context, c *jsonrpc.Conn, method string, params any) <-chan callResult {
	ch := make(chan callResult, 1)
	go func() {
		var r json.RawMessage
		err := c.Call(ctx, method, params, &r)
		ch <- callResult{r, err}
	}()
	return ch
}

func TestClientCall(t *testing.T) {
	checkLeaks(t)
	c := newPair(t, specMux())
	tests := []struct {
		name   string
		method string
		params any
		want   string
	}{
		{"subtract array", "subtract", []int{42, 23}, `19`},
		{"subtract array reversed", "subtract", []int{23, 42}, `-19`},
		{"subtract object", "subtract", map[string]int{"minuend": 42, "subtrahend": 23}, `19`},
		{"sum", "sum", []int{1, 2, 4}, `7`},
		{"get_data", "get_data", nil, `["hello", 5]`},
		{"null result", "update", []int{1}, `null`},
		{"echo object", "echo", map[string]any{"a": 1, "b": []string{"x"}}, `{"a":1,"b":["x"]}`},
		{"echo raw message", "echo", json.RawMessage(`[1, "two", {"three": 3}]`), `[1,"two",{"three":3}]`},
		{"echo escapes", "echo", []string{"<&>", "ü\n\"", "\u2028"}, `["<&>","ü\n\"","\u2028"]`},
		{"echo no params", "echo", nil, `null`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var got json.RawMessage
			err := c.Call(t.Context(), tc.method, tc.params, &got)
			require.NoError(t, err)
			assert.JSONEq(t, tc.want, string(got))
		})
	}

	t.Run("typed results", func(t *testing.T) {
		var n int
		require.NoError(t, c.Call(t.Context(), "subtract", [2]int{5, 7}, &n))
		assert.Equal(t, -2, n)

		var data []any
		require.NoError(t, c.Call(t.Context(), "get_data", nil, &data))
		assert.Equal(t, []any{"hello", float64(5)}, data)

		var s struct{ A string }
		require.NoError(t, c.Call(t.Context(), "echo", map[string]string{"A": "b"}, &s))
		assert.Equal(t, "b", s.A)

		assert.NoError(t, c.Call(t.Context(), "sum", []int{1}, nil), "a nil result discards it")
	})

	t.Run("result does not decode", func(t *testing.T) {
		var s string
		err := c.Call(t.Context(), "sum", []int{1, 2}, &s)
		var te *json.UnmarshalTypeError
		assert.ErrorAs(t, err, &te)
		var werr *jsonrpc.Error
		assert.False(t, errors.As(err, &werr), "a decode error is not a wire error: %v", err)
	})

	t.Run("params not an object or array", func(t *testing.T) {
		for _, params := range []any{5, "x", true, json.RawMessage(`7`), json.RawMessage(`{"a":`)} {
			err := c.Call(t.Context(), "echo", params, nil)
			assert.Error(t, err, "params %#v", params)
		}
		// Nothing went out: the connection still works.
		var n int
		require.NoError(t, c.Call(t.Context(), "sum", []int{2, 3}, &n))
		assert.Equal(t, 5, n)
	})
}

func TestClientConcurrentCalls(t *testing.T) {
	t.Run("answered in reverse order", func(t *testing.T) {
		checkLeaks(t)
		// Handler i returns only once handler i+1 has returned, so the
		// responses go out in the reverse order of the indexes while all
		// the calls are in flight at once. n stays under
		// DefaultMaxInFlight so that every handler runs.
		const n = 48
		finished := make([]chan struct{}, n)
		for i := range finished {
			finished[i] = make(chan struct{})
		}
		mux := new(jsonrpc.Mux)
		mux.Handle("chain", jsonrpc.Func(func(ctx context.Context, p [1]int) (string, error) {
			i := p[0]
			defer close(finished[i])
			if i+1 < n {
				select {
				case <-finished[i+1]:
				case <-ctx.Done():
					return "", ctx.Err()
				}
			}
			return fmt.Sprintf("answer %d", i), nil
		}))
		c := newPair(t, mux)

		type outcome struct {
			i   int
			got string
			err error
		}
		out := make(chan outcome, n)
		for i := range n {
			go func() {
				var s string
				err := c.Call(t.Context(), "chain", [1]int{i}, &s)
				out <- outcome{i, s, err}
			}()
		}
		seen := make(map[int]bool)
		for range n {
			o := recv(t, out, "a chained call")
			if assert.NoError(t, o.err, "call %d", o.i) {
				assert.Equal(t, fmt.Sprintf("answer %d", o.i), o.got)
			}
			seen[o.i] = true
		}
		assert.Len(t, seen, n)
	})

	t.Run("many goroutines", func(t *testing.T) {
		checkLeaks(t)
		mux := new(jsonrpc.Mux)
		mux.Handle("mul", jsonrpc.Func(func(ctx context.Context, p [2]int) (int, error) {
			// Different short delays shuffle the order of the answers.
			time.Sleep(time.Duration((p[0]+p[1])%4) * 50 * time.Microsecond)
			return p[0] * p[1], nil
		}))
		c := newPair(t, mux)
		const goroutines, calls = 32, 40
		errs := make(chan error, goroutines)
		var wg sync.WaitGroup
		for g := range goroutines {
			wg.Go(func() {
				for i := range calls {
					var got int
					if err := c.Call(t.Context(), "mul", [2]int{g, i}, &got); err != nil {
						errs <- fmt.Errorf("mul(%d, %d): %w", g, i, err)
						return
					}
					if got != g*i {
						errs <- fmt.Errorf("mul(%d, %d) = %d; want %d", g, i, got, g*i)
						return
					}
				}
			})
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			assert.NoError(t, err)
		}
	})
}

func TestClientErrors(t *testing.T) {
	checkLeaks(t)
	mux := new(jsonrpc.Mux)
	mux.HandleFunc("custom", func(context.Context, *jsonrpc.Request) (any, error) {
		return nil, jsonrpc.NewError(-32001, "custom failure").WithData(map[string]string{"reason": "demo"})
	})
	mux.HandleFunc("wrapped", func(context.Context, *jsonrpc.Request) (any, error) {
		return nil, fmt.Errorf("while answering: %w", jsonrpc.NewError(42, "the answer"))
	})
	mux.HandleFunc("plain", func(context.Context, *jsonrpc.Request) (any, error) {
		return nil, errors.New("boom")
	})
	mux.HandleFunc("panic", func(context.Context, *jsonrpc.Request) (any, error) {
		panic("kaboom")
	})
	mux.Handle("typed", jsonrpc.Func(func(_ context.Context, p struct{ N int }) (int, error) {
		return p.N, nil
	}))
	c := newPair(t, mux)

	tests := []struct {
		name     string
		method   string
		params   any
		code     jsonrpc.Code
		sentinel error // matches under errors.Is, if set
		message  string
		data     string // JSON, or "" to leave Data unchecked
	}{
		{"method not found", "nope", nil, jsonrpc.CodeMethodNotFound, jsonrpc.ErrMethodNotFound, "Method not found", ""},
		{"custom code and data", "custom", nil, -32001, nil, "custom failure", `{"reason":"demo"}`},
		{"wrapped error keeps its code", "wrapped", nil, 42, nil, "the answer", ""},
		{"plain error", "plain", nil, jsonrpc.CodeInternalError, jsonrpc.ErrInternal, "Internal error", `{"exception":"*errors.errorString","detail":"boom"}`},
		{"panic", "panic", nil, jsonrpc.CodeInternalError, jsonrpc.ErrInternal, "Internal error", `{"exception":"panic","detail":"kaboom"}`},
		{"invalid params", "typed", []int{1}, jsonrpc.CodeInvalidParams, jsonrpc.ErrInvalidParams, "", ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := c.Call(t.Context(), tc.method, tc.params, nil)
			require.Error(t, err)
			var werr *jsonrpc.Error
			require.ErrorAs(t, err, &werr)
			assert.Equal(t, tc.code, werr.Code)
			assert.ErrorIs(t, err, jsonrpc.NewError(tc.code, "any message"), "errors.Is matches by code")
			assert.NotErrorIs(t, err, jsonrpc.NewError(tc.code+1, tc.message))
			if tc.sentinel != nil {
				assert.ErrorIs(t, err, tc.sentinel)
			}
			if tc.message != "" {
				assert.Equal(t, tc.message, werr.Message)
			}
			if tc.data != "" {
				assert.JSONEq(t, tc.data, string(werr.Data))
			}
		})
	}
}

func TestClientNotify(t *testing.T) {
	checkLeaks(t)
	type note struct {
		method string
		params json.RawMessage
	}
	notes := make(chan note, 16)
	mux := new(jsonrpc.Mux)
	mux.HandleFunc("note", func(_ context.Context, req *jsonrpc.Request) (any, error) {
		var p json.RawMessage
		if req.Params != nil {
			p = append(p, req.Params...)
		}
		notes <- note{req.Method, p}
		return "ignored", nil
	})
	mux.HandleFunc("fail", func(context.Context, *jsonrpc.Request) (any, error) {
		return nil, errors.New("fails")
	})
	mux.HandleFunc("echo", func(_ context.Context, req *jsonrpc.Request) (any, error) {
		return req.Params, nil
	})
	var unknown sync.Mutex
	var unknownIDs []string
	c := newPairOpts(t, mux, &jsonrpc.Options{OnUnknownResponse: func(r *jsonrpc.Response) {
		unknown.Lock()
		unknownIDs = append(unknownIDs, r.ID.String())
		unknown.Unlock()
	}})

	tests := []struct {
		name   string
		params any
		want   string // JSON, or "" for no params
	}{
		{"no params", nil, ""},
		{"object", map[string]int{"n": 1}, `{"n":1}`},
		{"array", []string{"a", "b"}, `["a","b"]`},
		{"raw", json.RawMessage(`{"deep":{"x":[1,2]}}`), `{"deep":{"x":[1,2]}}`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			require.NoError(t, c.Notify(t.Context(), "note", tc.params))
			got := recv(t, notes, "the notification at the server")
			assert.Equal(t, "note", got.method)
			if tc.want == "" {
				assert.Nil(t, got.params)
			} else {
				assert.JSONEq(t, tc.want, string(got.params))
			}
		})
	}

	t.Run("no answer even to an error", func(t *testing.T) {
		require.NoError(t, c.Notify(t.Context(), "nope", []int{1}))
		require.NoError(t, c.Notify(t.Context(), "fail", nil))
		// Those handlers run at once, on the server's reading goroutine:
		// an answer to them would come before the answer to this call.
		var got []string
		require.NoError(t, c.Call(t.Context(), "echo", []string{"x"}, &got))
		assert.Equal(t, []string{"x"}, got)
		unknown.Lock()
		defer unknown.Unlock()
		assert.Empty(t, unknownIDs, "responses to notifications")
	})

	t.Run("refused before sending", func(t *testing.T) {
		ctx, cancel := context.WithCancel(t.Context())
		cancel()
		assert.ErrorIs(t, c.Notify(ctx, "note", nil), context.Canceled)
		assert.Error(t, c.Notify(t.Context(), "note", 5), "params must be an object or array")
		assertNone(t, notes, "a refused notification")
	})
}

// TestClientConcurrentNotify sends notifications with typed params, which
// the direct encoder writes in pooled buffers, from many goroutines at
// once, directly and through an interceptor: each must arrive with its own
// params, whatever the other goroutines write meanwhile.
func TestClientConcurrentNotify(t *testing.T) {
	for _, intercepted := range []bool{false, true} {
		t.Run(fmt.Sprintf("intercepted=%v", intercepted), func(t *testing.T) {
			checkLeaks(t)
			type note struct {
				G, I int
				Pad  string
			}
			const goroutines, notes = 16, 50
			got := make(chan string, goroutines*notes)
			mux := new(jsonrpc.Mux)
			mux.HandleFunc("note", func(_ context.Context, req *jsonrpc.Request) (any, error) {
				got <- string(req.Params)
				return nil, nil
			})
			var opts jsonrpc.Options
			var keptMu sync.Mutex
			var kept []json.RawMessage // the params as the interceptor saw them, not copied
			if intercepted {
				opts.Interceptors = []jsonrpc.Interceptor{func(next jsonrpc.SendFunc) jsonrpc.SendFunc {
					return func(ctx context.Context, req *jsonrpc.Request) (json.RawMessage, error) {
						keptMu.Lock()
						kept = append(kept, req.Params)
						keptMu.Unlock()
						return next(ctx, req)
					}
				}}
			}
			c := newPairOpts(t, mux, &opts)
			want := make(map[string]bool)
			var wg sync.WaitGroup
			for g := range goroutines {
				for i := range notes {
					// Sizes that differ, so that a buffer reused too
					// early shows.
					p := note{G: g, I: i, Pad: strings.Repeat("x", (g*7+i*13)%200)}
					b, err := json.Marshal(p)
					require.NoError(t, err)
					want[string(b)] = true
				}
				wg.Go(func() {
					for i := range notes {
						p := note{G: g, I: i, Pad: strings.Repeat("x", (g*7+i*13)%200)}
						assert.NoError(t, c.Notify(t.Context(), "note", p))
					}
				})
			}
			wg.Wait()
			sent := maps.Clone(want)
			for range goroutines * notes {
				params := recv(t, got, "a notification at the server")
				assert.True(t, want[params], "params sent by no one: %s", params)
				delete(want, params)
			}
			assert.Empty(t, want, "notifications that did not arrive")
			// An interceptor may keep the params it was given: they are
			// its own, not overwritten by later sends.
			keptMu.Lock()
			defer keptMu.Unlock()
			for _, params := range kept {
				assert.True(t, sent[string(params)], "kept params changed: %s", params)
			}
			if intercepted {
				assert.Len(t, kept, goroutines*notes)
			}
		})
	}
}

// Conn.Batch refuses, sending nothing, a batch without calls and one
// with params that cannot be a JSON object or array: its doc says these are
// the errors Batch returns itself besides ctx's and the connection's end.
func TestClientBatchRefusedUnsent(t *testing.T) {
	c, peer := newRawPeer(t, nil)
	ctx := t.Context()
	require.Error(t, c.Batch(ctx))
	calls := []*jsonrpc.BatchCall{{Method: "ok", Params: []int{1}}, {Method: "bad", Params: "a string"}}
	err := c.Batch(ctx, calls...)
	require.ErrorIs(t, err, jsonrpc.ErrInvalidParams)
	assert.False(t, jsonrpc.MayHaveRun(err))
	for _, bc := range calls {
		assert.NoError(t, bc.Err, bc.Method)
	}
	require.NoError(t, c.Notify(ctx, "marker", nil))
	assert.Equal(t, "marker", peer.nextMsg(t).Method, "the first line the peer reads")
}

func TestClientBatch(t *testing.T) {
	t.Run("server", func(t *testing.T) {
		checkLeaks(t)
		noted := make(chan string, 4)
		mux := specMux()
		mux.HandleFunc("note", func(_ context.Context, req *jsonrpc.Request) (any, error) {
			noted <- string(req.Params)
			return nil, nil
		})
		c := newPair(t, mux)

		var diff, sum int
		var data []any
		var wrongType string
		calls := []*jsonrpc.BatchCall{
			{Method: "subtract", Params: []int{42, 23}, Result: &diff},
			{Method: "note", Params: []int{7}, Notify: true},
			{Method: "nope", Params: map[string]int{"a": 1}},
			{Method: "sum", Params: []int{1, 2, 3}, Result: &sum},
			{Method: "get_data", Result: &data},
			{Method: "sum", Params: []int{1}, Result: &wrongType},
			{Method: "update", Params: []int{1}},
		}
		require.NoError(t, c.Batch(t.Context(), calls...))
		assert.NoError(t, calls[0].Err)
		assert.Equal(t, 19, diff)
		assert.NoError(t, calls[1].Err, "a notification has no outcome")
		assert.ErrorIs(t, calls[2].Err, jsonrpc.ErrMethodNotFound)
		var werr *jsonrpc.Error
		assert.ErrorAs(t, calls[2].Err, &werr)
		assert.NoError(t, calls[3].Err)
		assert.Equal(t, 6, sum)
		assert.NoError(t, calls[4].Err)
		assert.Equal(t, []any{"hello", float64(5)}, data)
		var te *json.UnmarshalTypeError
		assert.ErrorAs(t, calls[5].Err, &te, "a result that does not decode")
		assert.NoError(t, calls[6].Err)
		assert.Equal(t, "[7]", recv(t, noted, "the notification in the batch"))
	})

	t.Run("empty", func(t *testing.T) {
		checkLeaks(t)
		c := newPair(t, specMux())
		assert.Error(t, c.Batch(t.Context()))
	})

	// The raw peer answers in various shapes; each call must get its own
	// answer whatever the order.
	wireTests := []struct {
		name   string
		answer func(t *testing.T, p *rawPeer, idA, idB json.RawMessage)
	}{
		{"one array in reverse order", func(t *testing.T, p *rawPeer, idA, idB json.RawMessage) {
			p.sendf(t, `[{"jsonrpc":"2.0","id":%s,"result":"B"},{"jsonrpc":"2.0","id":%s,"error":{"code":-32001,"message":"no A"}}]`, idB, idA)
		}},
		{"separate lines", func(t *testing.T, p *rawPeer, idA, idB json.RawMessage) {
			p.sendf(t, `{"jsonrpc":"2.0","id":%s,"result":"B"}`, idB)
			p.sendf(t, `{"jsonrpc":"2.0","id":%s,"error":{"code":-32001,"message":"no A"}}`, idA)
		}},
	}
	for _, tc := range wireTests {
		t.Run("wire/"+tc.name, func(t *testing.T) {
			checkLeaks(t)
			c, p := newRawPeer(t, nil)
			var gotB string
			calls := []*jsonrpc.BatchCall{
				{Method: "a", Params: []int{1}},
				{Method: "n", Params: map[string]bool{"x": true}, Notify: true},
				{Method: "b", Result: &gotB},
			}
			done := make(chan error, 1)
			go func() { done <- c.Batch(t.Context(), calls...) }()

			line := p.next(t)
			var raw []map[string]json.RawMessage
			require.NoError(t, json.Unmarshal([]byte(line), &raw), "the batch is one JSON array on one line: %q", line)
			require.Len(t, raw, 3)
			assert.JSONEq(t, `"a"`, string(raw[0]["method"]))
			assert.JSONEq(t, `[1]`, string(raw[0]["params"]))
			assert.JSONEq(t, `"n"`, string(raw[1]["method"]))
			assert.JSONEq(t, `{"x":true}`, string(raw[1]["params"]))
			assert.NotContains(t, raw[1], "id", "a notification in a batch carries no id")
			assert.JSONEq(t, `"b"`, string(raw[2]["method"]))
			assert.NotContains(t, raw[2], "params")
			idA, idB := raw[0]["id"], raw[2]["id"]
			require.NotNil(t, idA)
			require.NotNil(t, idB)
			assert.NotEqual(t, string(idA), string(idB))
			for _, m := range raw {
				assert.JSONEq(t, `"2.0"`, string(m["jsonrpc"]))
			}

			assertNone(t, done, "Batch before its answers")
			tc.answer(t, p, idA, idB)
			require.NoError(t, recv(t, done, "Batch"))
			var werr *jsonrpc.Error
			if assert.ErrorAs(t, calls[0].Err, &werr) {
				assert.Equal(t, jsonrpc.Code(-32001), werr.Code)
				assert.Equal(t, "no A", werr.Message)
			}
			assert.NoError(t, calls[1].Err)
			assert.NoError(t, calls[2].Err)
			assert.Equal(t, "B", gotB)
		})
	}

	t.Run("wire/only notifications", func(t *testing.T) {
		checkLeaks(t)
		c, p := newRawPeer(t, nil)
		// Nobody answers: Batch returns once the line is written.
		err := c.Batch(t.Context(),
			&jsonrpc.BatchCall{Method: "n1", Notify: true},
			&jsonrpc.BatchCall{Method: "n2", Params: []int{2}, Notify: true})
		require.NoError(t, err)
		assert.JSONEq(t, `[{"jsonrpc":"2.0","method":"n1"},{"jsonrpc":"2.0","method":"n2","params":[2]}]`, p.next(t))
	})

	t.Run("wire/cancelled", func(t *testing.T) {
		checkLeaks(t)
		c, p := newRawPeer(t, nil)
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan error, 1)
		go func() {
			done <- c.Batch(ctx, &jsonrpc.BatchCall{Method: "a"}, &jsonrpc.BatchCall{Method: "b"})
		}()
		var raw []wireMsg
		require.NoError(t, json.Unmarshal([]byte(p.next(t)), &raw))
		require.Len(t, raw, 2)
		cancel()
		assert.ErrorIs(t, recv(t, done, "Batch"), context.Canceled)
		// Each call still waiting is cancelled on the wire.
		got := []string{p.next(t), p.next(t)}
		assert.ElementsMatch(t, []string{
			fmt.Sprintf(`{"jsonrpc":"2.0","method":"$/cancelRequest","params":{"id":%s}}`, raw[0].ID),
			fmt.Sprintf(`{"jsonrpc":"2.0","method":"$/cancelRequest","params":{"id":%s}}`, raw[1].ID),
		}, got)
	})
}

// streamMux serves the streams of TestClientStream. stopped receives the
// name of a producer each time one sees yield return false.
func streamMux(stopped chan<- string) *jsonrpc.Mux {
	mux := new(jsonrpc.Mux)
	mux.Handle("count", jsonrpc.Stream(func(_ context.Context, p countParams) iter.Seq2[map[string]int, error] {
		return func(yield func(map[string]int, error) bool) {
			for i := range p.N {
				if !yield(map[string]int{"index": i}, nil) {
					stopped <- "count"
					return
				}
			}
		}
	}))
	mux.Handle("fail_after", jsonrpc.Stream(func(_ context.Context, p countParams) iter.Seq2[int, error] {
		return func(yield func(int, error) bool) {
			for i := range p.N {
				if !yield(i, nil) {
					return
				}
			}
			yield(0, jsonrpc.NewError(-32001, "stream failed").WithData(map[string]int{"after": p.N}))
		}
	}))
	mux.Handle("plain_error", jsonrpc.Stream(func(context.Context, struct{}) iter.Seq2[string, error] {
		return func(yield func(string, error) bool) {
			if yield("first", nil) {
				yield("", errors.New("broken"))
			}
		}
	}))
	mux.Handle("forever", jsonrpc.Stream(func(ctx context.Context, _ struct{}) iter.Seq2[int, error] {
		return func(yield func(int, error) bool) {
			defer func() { stopped <- "forever" }()
			for i := 0; ; i++ {
				if !yield(i, nil) {
					return
				}
			}
		}
	}))
	mux.Handle("one_then_wait", jsonrpc.Stream(func(ctx context.Context, _ struct{}) iter.Seq2[int, error] {
		return func(yield func(int, error) bool) {
			defer func() { stopped <- "one_then_wait" }()
			if !yield(1, nil) {
				return
			}
			<-ctx.Done()
			yield(0, ctx.Err())
		}
	}))
	return mux
}

func TestClientStream(t *testing.T) {
	checkLeaks(t)
	stopped := make(chan string, 8)
	notified := make(chan string, 1024)
	c := newPairOpts(t, streamMux(stopped), &jsonrpc.Options{
		OnNotify: func(req *jsonrpc.Request) { notified <- req.Method },
	})

	indexes := func(n int) []string {
		var items []string
		for i := range n {
			items = append(items, fmt.Sprintf(`{"index":%d}`, i))
		}
		return items
	}
	tests := []struct {
		name    string
		method  string
		params  any
		items   []string
		errCode jsonrpc.Code // 0: the stream ends without error
		errData string
	}{
		{"empty", "count", map[string]int{"n": 0}, nil, 0, ""},
		{"one", "count", map[string]int{"n": 1}, indexes(1), 0, ""},
		{"five", "count", map[string]int{"n": 5}, indexes(5), 0, ""},
		{"many", "count", map[string]int{"n": 500}, indexes(500), 0, ""},
		{"error after items", "fail_after", map[string]int{"n": 2}, []string{"0", "1"}, -32001, `{"after":2}`},
		{"error at once", "fail_after", map[string]int{"n": 0}, nil, -32001, `{"after":0}`},
		{"plain error", "plain_error", nil, []string{`"first"`}, jsonrpc.CodeInternalError, `{"exception":"*errors.errorString","detail":"broken"}`},
		{"method not found", "nope", nil, nil, jsonrpc.CodeMethodNotFound, ""},
		{"invalid params", "count", []string{"x"}, nil, jsonrpc.CodeInvalidParams, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var items []string
			var errs []error
			for item, err := range c.Stream(t.Context(), tc.method, tc.params) {
				if err != nil {
					errs = append(errs, err)
					continue
				}
				assert.Empty(t, errs, "an item after the error")
				items = append(items, string(item))
			}
			if assert.Len(t, items, len(tc.items)) {
				for i := range items {
					assert.JSONEq(t, tc.items[i], items[i], "item %d", i)
				}
			}
			if tc.errCode == 0 {
				assert.Empty(t, errs)
				return
			}
			require.Len(t, errs, 1, "the error is the last pair")
			var werr *jsonrpc.Error
			require.ErrorAs(t, errs[0], &werr)
			assert.Equal(t, tc.errCode, werr.Code)
			if tc.errData != "" {
				assert.JSONEq(t, tc.errData, string(werr.Data))
			}
		})
	}
	assertNone(t, notified, "a stream item given to OnNotify")

	t.Run("stopping early cancels the producer", func(t *testing.T) {
		n := 0
		for item, err := range c.Stream(t.Context(), "forever", nil) {
			require.NoError(t, err)
			assert.JSONEq(t, fmt.Sprint(n), string(item))
			if n++; n == 3 {
				break
			}
		}
		assert.Equal(t, "forever", recv(t, stopped, "the producer to stop"))
		// The connection goes on, and items of the stopped stream that were
		// still on their way reach neither this stream nor OnNotify.
		var items []string
		for item, err := range c.Stream(t.Context(), "count", map[string]int{"n": 2}) {
			require.NoError(t, err)
			items = append(items, string(item))
		}
		assert.Equal(t, []string{`{"index":0}`, `{"index":1}`}, items)
		assertNone(t, notified, "an item of the stopped stream given to OnNotify")
	})

	t.Run("cancelling ctx ends the stream", func(t *testing.T) {
		ctx, cancel := context.WithCancel(t.Context())
		defer cancel()
		var items []string
		var errs []error
		for item, err := range c.Stream(ctx, "one_then_wait", nil) {
			if err != nil {
				errs = append(errs, err)
				continue
			}
			items = append(items, string(item))
			cancel()
		}
		assert.Equal(t, []string{"1"}, items)
		if assert.Len(t, errs, 1) {
			assert.ErrorIs(t, errs[0], context.Canceled)
		}
		assert.Equal(t, "one_then_wait", recv(t, stopped, "the producer to see the cancel"))
	})
}

// noteLog records what OnNotify receives.
type noteLog struct {
	mu    sync.Mutex
	notes []string // method + " " + params
}

func (l *noteLog) onNotify(req *jsonrpc.Request) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.notes = append(l.notes, req.Method+" "+string(req.Params))
}

// take returns what was recorded and forgets it.
func (l *noteLog) take() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	notes := l.notes
	l.notes = nil
	return notes
}

func TestClientOnNotify(t *testing.T) {
	t.Run("a handler's notifications come before its response", func(t *testing.T) {
		checkLeaks(t)
		mux := new(jsonrpc.Mux)
		mux.Handle("progress", jsonrpc.Func(func(ctx context.Context, p countParams) (string, error) {
			for i := 1; i <= p.N; i++ {
				if err := jsonrpc.Peer(ctx).Notify(ctx, "progress", map[string]int{"done": i}); err != nil {
					return "", err
				}
			}
			return "done", nil
		}))
		var log noteLog
		c := newPairOpts(t, mux, &jsonrpc.Options{OnNotify: log.onNotify})
		for _, count := range []int{0, 1, 10, 1000} {
			t.Run(fmt.Sprint(count), func(t *testing.T) {
				var got string
				require.NoError(t, c.Call(t.Context(), "progress", map[string]int{"n": count}, &got))
				assert.Equal(t, "done", got)
				var want []string
				for i := 1; i <= count; i++ {
					want = append(want, fmt.Sprintf(`progress {"done":%d}`, i))
				}
				assert.Equal(t, want, log.take(), "all of them, in order, when Call returns")
			})
		}
	})

	t.Run("arrival order", func(t *testing.T) {
		checkLeaks(t)
		var log noteLog
		c, p := newRawPeer(t, &jsonrpc.Options{OnNotify: log.onNotify})
		res := goCall(t.Context(), c, "ping", nil)
		req := p.nextMsg(t)
		var want []string
		for i := range 200 {
			method := []string{"a", "b", "c"}[i%3]
			p.sendf(t, `{"jsonrpc":"2.0","method":%q,"params":[%d]}`, method, i)
			want = append(want, fmt.Sprintf("%s [%d]", method, i))
		}
		// A notification without params, and a stream item for no
		// stream: both are plain notifications.
		p.send(t, `{"jsonrpc":"2.0","method":"bare"}`)
		want = append(want, "bare ")
		p.send(t, `{"jsonrpc":"2.0","method":"$/stream","params":{"id":12345,"item":1}}`)
		want = append(want, `$/stream {"id":12345,"item":1}`)
		p.sendf(t, `{"jsonrpc":"2.0","id":%s,"result":"pong"}`, req.ID)
		r := recv(t, res, "the call")
		require.NoError(t, r.err)
		assert.JSONEq(t, `"pong"`, string(r.result))
		assert.Equal(t, want, log.take())
	})
}

func TestClientCancel(t *testing.T) {
	tests := []struct {
		name     string
		noCancel bool
		deadline bool
	}{
		{name: "cancel sends cancelRequest"},
		{name: "deadline sends cancelRequest", deadline: true},
		{name: "CancelQuietly", noCancel: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			checkLeaks(t)
			unknown := make(chan *jsonrpc.Response, 4)
			c, p := newRawPeer(t, &jsonrpc.Options{
				CancelQuietly:     tc.noCancel,
				OnUnknownResponse: func(r *jsonrpc.Response) { unknown <- r },
			})
			ctx, cancel := context.WithCancel(t.Context())
			defer cancel()
			wantErr := context.Canceled
			if tc.deadline {
				ctx, cancel = context.WithTimeout(ctx, 20*time.Millisecond)
				defer cancel()
				wantErr = context.DeadlineExceeded
			}
			slow := goCall(ctx, c, "slow", []int{1})
			req := p.nextMsg(t)
			assert.Equal(t, "slow", req.Method)
			if !tc.deadline {
				cancel()
			}
			// The peer never answers: Call returns because of ctx alone.
			r := recv(t, slow, "the cancelled call to return")
			assert.ErrorIs(t, r.err, wantErr, "Call returns an error wrapping ctx.Err()")
			assert.True(t, jsonrpc.MayHaveRun(r.err), "the request was sent")

			if !tc.noCancel {
				assert.JSONEq(t,
					fmt.Sprintf(`{"jsonrpc":"2.0","method":"$/cancelRequest","params":{"id":%s}}`, req.ID),
					p.next(t))
			}
			// The next line is the next call: with CancelQuietly, no
			// cancel went out in between.
			ping := goCall(t.Context(), c, "ping", nil)
			pingReq := p.nextMsg(t)
			assert.Equal(t, "ping", pingReq.Method)

			// The late answer is dropped and reported, and harms nothing.
			p.sendf(t, `{"jsonrpc":"2.0","id":%s,"result":"late"}`, req.ID)
			p.sendf(t, `{"jsonrpc":"2.0","id":%s,"result":"pong"}`, pingReq.ID)
			r = recv(t, ping, "the call after the cancel")
			require.NoError(t, r.err)
			assert.JSONEq(t, `"pong"`, string(r.result))
			late := recv(t, unknown, "the late response")
			assert.Equal(t, string(req.ID), late.ID.String())
			assert.JSONEq(t, `"late"`, string(late.Result))
			assert.Nil(t, late.Error)
		})
	}

	t.Run("already cancelled", func(t *testing.T) {
		checkLeaks(t)
		c, p := newRawPeer(t, nil)
		ctx, cancel := context.WithCancel(t.Context())
		cancel()
		err := c.Call(ctx, "never", nil, nil)
		assert.ErrorIs(t, err, context.Canceled)
		// Whatever went out (the call and its cancel, or nothing), the
		// connection still works.
		ping := goCall(t.Context(), c, "ping", nil)
		for {
			m := p.nextMsg(t)
			if m.Method == "ping" {
				p.sendf(t, `{"jsonrpc":"2.0","id":%s,"result":1}`, m.ID)
				break
			}
		}
		assert.NoError(t, recv(t, ping, "ping").err)
	})

	t.Run("end to end", func(t *testing.T) {
		checkLeaks(t)
		started := make(chan struct{}, 1)
		sawCancel := make(chan error, 1)
		mux := new(jsonrpc.Mux)
		mux.HandleFunc("block", func(ctx context.Context, _ *jsonrpc.Request) (any, error) {
			started <- struct{}{}
			<-ctx.Done()
			sawCancel <- ctx.Err()
			return nil, ctx.Err()
		})
		mux.HandleFunc("ping", func(context.Context, *jsonrpc.Request) (any, error) { return "pong", nil })
		unknown := make(chan *jsonrpc.Response, 4)
		c := newPairOpts(t, mux, &jsonrpc.Options{
			OnUnknownResponse: func(r *jsonrpc.Response) { unknown <- r },
		})
		ctx, cancel := context.WithCancel(t.Context())
		res := goCall(ctx, c, "block", nil)
		recv(t, started, "the handler to start")
		cancel()
		assert.ErrorIs(t, recv(t, res, "the cancelled call").err, context.Canceled)
		assert.ErrorIs(t, recv(t, sawCancel, "the handler to see the cancel"), context.Canceled)
		// The server answers the cancelled request with -32800, which the
		// client no longer waits for.
		late := recv(t, unknown, "the server's answer to the cancelled call")
		if assert.NotNil(t, late.Error) {
			assert.Equal(t, jsonrpc.CodeRequestCancelled, late.Error.Code)
		}
		var s string
		require.NoError(t, c.Call(t.Context(), "ping", nil, &s))
		assert.Equal(t, "pong", s)
	})
}

func TestClientIncomingRequest(t *testing.T) {
	echoBack := jsonrpc.HandlerFunc(func(_ context.Context, req *jsonrpc.Request) (any, error) {
		return map[string]any{"method": req.Method, "id": req.ID.String(), "params": req.Params}, nil
	})
	refuse := jsonrpc.HandlerFunc(func(context.Context, *jsonrpc.Request) (any, error) {
		return nil, jsonrpc.NewError(-32042, "not from you")
	})
	tests := []struct {
		name    string
		handler jsonrpc.Handler
		request string // %s is the id of the call in flight
		want    string
	}{
		{"no handler", nil,
			`{"jsonrpc":"2.0","id":"s1","method":"hello","params":{"x":1}}`,
			`{"jsonrpc":"2.0","id":"s1","error":{"code":-32601,"message":"Method not found"}}`},
		{"no handler, same id as the call in flight", nil,
			`{"jsonrpc":"2.0","id":%s,"method":"hello"}`,
			`{"jsonrpc":"2.0","id":%s,"error":{"code":-32601,"message":"Method not found"}}`},
		{"handler", echoBack,
			`{"jsonrpc":"2.0","id":"s1","method":"hello","params":[1,2]}`,
			`{"jsonrpc":"2.0","id":"s1","result":{"method":"hello","id":"\"s1\"","params":[1,2]}}`},
		{"handler, same id as the call in flight", echoBack,
			`{"jsonrpc":"2.0","id":%s,"method":"hello"}`,
			`{"jsonrpc":"2.0","id":%s,"result":{"method":"hello","id":"%[1]s","params":null}}`},
		{"handler error", refuse,
			`{"jsonrpc":"2.0","id":7,"method":"hello"}`,
			`{"jsonrpc":"2.0","id":7,"error":{"code":-32042,"message":"not from you"}}`},
		{"invalid request", echoBack,
			`{"jsonrpc":"2.0","id":"bad","method":5}`,
			`{"jsonrpc":"2.0","id":"bad","error":{"code":-32600,"message":"Invalid Request"}}`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			checkLeaks(t)
			c, p := newRawPeer(t, &jsonrpc.Options{Handler: tc.handler})
			res := goCall(t.Context(), c, "ping", nil)
			req := p.nextMsg(t)
			p.send(t, strings.ReplaceAll(tc.request, "%s", string(req.ID)))
			want := strings.ReplaceAll(tc.want, "%[1]s", string(req.ID))
			want = strings.ReplaceAll(want, "%s", string(req.ID))
			assert.JSONEq(t, want, p.next(t))
			// The request did not answer the call in flight.
			assertNone(t, res, "the call, answered by a request")
			p.sendf(t, `{"jsonrpc":"2.0","id":%s,"result":"pong"}`, req.ID)
			r := recv(t, res, "the call")
			require.NoError(t, r.err)
			assert.JSONEq(t, `"pong"`, string(r.result))
		})
	}
}

func TestClientUnknownResponse(t *testing.T) {
	tests := []struct {
		name   string
		line   string
		id     string
		result string // JSON, or "" for an error response
		code   jsonrpc.Code
	}{
		{"number", `{"jsonrpc":"2.0","id":999,"result":{"a":1}}`, "999", `{"a":1}`, 0},
		{"string that looks like ours", `{"jsonrpc":"2.0","id":"1","result":true}`, `"1"`, "true", 0},
		{"fraction", `{"jsonrpc":"2.0","id":1.5,"result":null}`, "1.5", "null", 0},
		{"null id error", `{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Parse error"}}`, "null", "", jsonrpc.CodeParseError},
		{"huge number", `{"jsonrpc":"2.0","id":123456789012345678901234567890,"result":1}`, "123456789012345678901234567890", "1", 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			checkLeaks(t)
			unknown := make(chan *jsonrpc.Response, 4)
			c, p := newRawPeer(t, &jsonrpc.Options{
				OnUnknownResponse: func(r *jsonrpc.Response) { unknown <- r },
			})
			// A call is in flight (with id 1) while the stray response
			// arrives.
			res := goCall(t.Context(), c, "ping", nil)
			req := p.nextMsg(t)
			p.send(t, tc.line)
			got := recv(t, unknown, "the unknown response")
			assert.Equal(t, tc.id, got.ID.String())
			if tc.result != "" {
				assert.Nil(t, got.Error)
				assert.JSONEq(t, tc.result, string(got.Result))
			} else if assert.NotNil(t, got.Error) {
				assert.Equal(t, tc.code, got.Error.Code)
			}
			assertNone(t, res, "the call, answered by a stray response")
			p.sendf(t, `{"jsonrpc":"2.0","id":%s,"result":"pong"}`, req.ID)
			r := recv(t, res, "the call")
			require.NoError(t, r.err)
			assert.JSONEq(t, `"pong"`, string(r.result))
		})
	}

	t.Run("without OnUnknownResponse", func(t *testing.T) {
		checkLeaks(t)
		c, p := newRawPeer(t, nil)
		res := goCall(t.Context(), c, "ping", nil)
		req := p.nextMsg(t)
		p.send(t, `{"jsonrpc":"2.0","id":999,"result":1}`)
		p.sendf(t, `{"jsonrpc":"2.0","id":%s,"result":"pong"}`, req.ID)
		r := recv(t, res, "the call")
		require.NoError(t, r.err)
		assert.JSONEq(t, `"pong"`, string(r.result))
	})

	t.Run("a second answer to the same call", func(t *testing.T) {
		checkLeaks(t)
		unknown := make(chan *jsonrpc.Response, 4)
		c, p := newRawPeer(t, &jsonrpc.Options{
			OnUnknownResponse: func(r *jsonrpc.Response) { unknown <- r },
		})
		res := goCall(t.Context(), c, "ping", nil)
		req := p.nextMsg(t)
		p.sendf(t, `{"jsonrpc":"2.0","id":%s,"result":"first"}`, req.ID)
		p.sendf(t, `{"jsonrpc":"2.0","id":%s,"result":"second"}`, req.ID)
		r := recv(t, res, "the call")
		require.NoError(t, r.err)
		assert.JSONEq(t, `"first"`, string(r.result))
		got := recv(t, unknown, "the second answer")
		assert.JSONEq(t, `"second"`, string(got.Result))
	})
}

func TestClientMalformedLines(t *testing.T) {
	// Each line arrives while a call (whose id replaces %s) is in flight.
	// None of them may complete the call, reach OnNotify or
	// OnUnknownResponse, or stop the connection; each is answered as a
	// server answers it (code, and id: "null", or "id" for the call's),
	// except blank lines, which are skipped.
	tests := []struct {
		name string
		line string
		code jsonrpc.Code
		id   string
	}{
		{"not JSON", `this is not JSON`, -32700, "null"},
		{"truncated object", `{"jsonrpc":"2.0","id":%s,"result":`, -32700, "null"},
		{"unterminated array", `[`, -32700, "null"},
		{"empty batch", `[]`, -32600, "null"},
		{"batch of numbers", `[1,2]`, -32600, "batch"},
		{"number", `42`, -32600, "null"},
		{"string", `"str"`, -32600, "null"},
		{"null", `null`, -32600, "null"},
		{"trailing garbage", `{"jsonrpc":"2.0","id":%s,"result":1} x`, -32700, "null"},
		{"two values", `{"jsonrpc":"2.0","id":%s,"result":1}{"jsonrpc":"2.0","id":%s,"result":2}`, -32700, "null"},
		{"wrong version", `{"jsonrpc":"1.0","id":%s,"result":1}`, -32600, "id"},
		{"no version", `{"id":%s,"result":1}`, -32600, "id"},
		{"neither result nor error", `{"jsonrpc":"2.0","id":%s}`, -32600, "id"},
		{"both result and error", `{"jsonrpc":"2.0","id":%s,"result":1,"error":{"code":1,"message":"m"}}`, -32600, "id"},
		{"error not an object", `{"jsonrpc":"2.0","id":%s,"error":"bad"}`, -32600, "id"},
		{"error code not a number", `{"jsonrpc":"2.0","id":%s,"error":{"code":"x","message":"m"}}`, -32600, "id"},
		{"error without message", `{"jsonrpc":"2.0","id":%s,"error":{"code":1}}`, -32600, "id"},
		{"object id", `{"jsonrpc":"2.0","id":{"a":1},"result":1}`, -32600, "null"},
		{"duplicate member", `{"jsonrpc":"2.0","id":%s,"result":1,"result":2}`, -32600, "id"},
		{"invalid UTF-8", "{\"jsonrpc\":\"2.0\",\"id\":%s,\"result\":\"\xff\"}", -32700, "null"},
		// (With its id first, it fails the call: see
		// TestClientHardeningResponseTooLarge.)
		{"over the size limit", `{"jsonrpc":"2.0","result":"` + strings.Repeat("x", 8192) + `","id":%s}`, -32600, "null"},
		{"notification with bad params", `{"jsonrpc":"2.0","method":"m","params":5}`, -32600, "null"},
		{"blank", `   `, 0, ""},
		{"carriage return only", "\r", 0, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			checkLeaks(t)
			var log noteLog
			unknown := make(chan *jsonrpc.Response, 4)
			c, p := newRawPeer(t, &jsonrpc.Options{
				MaxMessageSize:    4096,
				OnNotify:          log.onNotify,
				OnUnknownResponse: func(r *jsonrpc.Response) { unknown <- r },
			})
			res := goCall(t.Context(), c, "ping", nil)
			req := p.nextMsg(t)
			p.send(t, strings.ReplaceAll(tc.line, "%s", string(req.ID)))
			if tc.code != 0 {
				checkMalformedAnswer(t, p.next(t), tc.code, tc.id, string(req.ID))
			}
			p.sendf(t, `{"jsonrpc":"2.0","id":%s,"result":"pong"}`, req.ID)
			r := recv(t, res, "the call")
			require.NoError(t, r.err)
			assert.JSONEq(t, `"pong"`, string(r.result))
			assertNone(t, unknown, "OnUnknownResponse")
			assert.Empty(t, log.take(), "OnNotify")

			// Later calls still work.
			res = goCall(t.Context(), c, "ping", nil)
			req = p.nextMsg(t)
			p.sendf(t, `{"jsonrpc":"2.0","id":%s,"result":"again"}`, req.ID)
			r = recv(t, res, "the next call")
			require.NoError(t, r.err)
			assert.JSONEq(t, `"again"`, string(r.result))
		})
	}
}

// checkMalformedAnswer checks line, the answer to a malformed message:
// an error with code and the id that id names ("null", or "id" for
// callID), or, for "batch", an array of such errors with null ids.
func checkMalformedAnswer(t *testing.T, line string, code jsonrpc.Code, id, callID string) {
	t.Helper()
	type answer struct {
		ID    json.RawMessage `json:"id"`
		Error *jsonrpc.Error  `json:"error"`
	}
	var answers []answer
	if id == "batch" {
		require.NoError(t, json.Unmarshal([]byte(line), &answers), "answer %q", line)
		assert.NotEmpty(t, answers, "answer %q", line)
		id = "null"
	} else {
		var a answer
		require.NoError(t, json.Unmarshal([]byte(line), &a), "answer %q", line)
		answers = append(answers, a)
	}
	want := "null"
	if id == "id" {
		want = callID
	}
	for _, a := range answers {
		if assert.NotNil(t, a.Error, "answer %q", line) {
			assert.Equal(t, code, a.Error.Code, "answer %q", line)
		}
		assert.Equal(t, want, string(a.ID), "answer %q", line)
	}
}

// brokenReader is a reader that is not an io.Closer: each Read blocks
// until it is sent the error to fail with.
// brokenReader blocks each Read until an error is sent on errc; entered,
// if set, is closed when the first Read begins.
type brokenReader struct {
	errc    chan error
	entered chan struct{}
}

func (r brokenReader) Read([]byte) (int, error) {
	if r.entered != nil {
		select {
		case <-r.entered:
		default:
			close(r.entered)
		}
	}
	return 0, <-r.errc
}

func TestClientClose(t *testing.T) {
	t.Run("idempotent, and everything fails after", func(t *testing.T) {
		checkLeaks(t)
		c := newPair(t, specMux())
		var n int
		require.NoError(t, c.Call(t.Context(), "sum", []int{1, 2}, &n))
		assert.False(t, isDone(c), "the connection ended")
		assert.NoError(t, c.Close())
		assert.NoError(t, c.Close())
		var wg sync.WaitGroup
		for range 4 {
			wg.Go(func() { _ = c.Close() })
		}
		wg.Wait()
		recv(t, c.Done(), "the reader goroutine to end")

		assert.ErrorIs(t, c.Wait(), jsonrpc.ErrClosed)
		assert.ErrorIs(t, c.Call(t.Context(), "sum", []int{1}, &n), jsonrpc.ErrClosed)
		assert.ErrorIs(t, c.Notify(t.Context(), "update", nil), jsonrpc.ErrClosed)
		assert.ErrorIs(t, c.Batch(t.Context(), &jsonrpc.BatchCall{Method: "sum"}), jsonrpc.ErrClosed)
		var errs []error
		for item, err := range c.Stream(t.Context(), "count", nil) {
			assert.Nil(t, item)
			errs = append(errs, err)
		}
		if assert.Len(t, errs, 1) {
			assert.ErrorIs(t, errs[0], jsonrpc.ErrClosed)
		}
	})

	// Each way the connection can end fails every call in flight with an
	// error that wraps ErrClosed and the cause.
	tests := []struct {
		name  string
		cause error // also wrapped, if set
		end   func(c *jsonrpc.Conn, p *rawPeer, r brokenReader)
		// broken makes the client read from a brokenReader.
		broken bool
	}{
		{"Close", nil, func(c *jsonrpc.Conn, _ *rawPeer, _ brokenReader) { _ = c.Close() }, false},
		{"peer closes its end", io.EOF, func(_ *jsonrpc.Conn, p *rawPeer, _ brokenReader) { _ = p.w.Close() }, false},
		{"peer dies mid-line", io.EOF, func(_ *jsonrpc.Conn, p *rawPeer, _ brokenReader) {
			_, _ = io.WriteString(p.w, `{"jsonrpc":"2.0","id":1,"res`)
			_ = p.w.Close()
		}, false},
		{"read error", errBoom, func(_ *jsonrpc.Conn, _ *rawPeer, r brokenReader) { r.errc <- errBoom }, true},
	}
	for _, tc := range tests {
		t.Run("pending calls fail: "+tc.name, func(t *testing.T) {
			checkLeaks(t)
			br := brokenReader{errc: make(chan error, 1)}
			var r io.Reader
			if tc.broken {
				r = br
			}
			c, p := newRawPeerReader(t, r, nil)

			const calls = 5
			results := make(chan error, calls+1)
			for i := range calls {
				go func() { results <- c.Call(t.Context(), "wait", []int{i}, nil) }()
			}
			batch := []*jsonrpc.BatchCall{{Method: "b1"}, {Method: "b2"}}
			batchDone := make(chan error, 1)
			go func() { batchDone <- c.Batch(t.Context(), batch...) }()
			go func() {
				var err error
				for _, e := range c.Stream(t.Context(), "s", nil) {
					err = e
				}
				results <- err
			}()
			for range calls + 2 {
				p.next(t) // every request is out, so every call is pending
			}
			assertNone(t, results, "a call before the end")
			assertNone(t, batchDone, "the batch before the end")

			tc.end(c, p, br)
			checkErr := func(err error, what string) {
				t.Helper()
				assert.ErrorIs(t, err, jsonrpc.ErrClosed, what)
				if tc.cause != nil {
					assert.ErrorIs(t, err, tc.cause, what)
				}
			}
			for range calls + 1 {
				checkErr(recv(t, results, "a pending call to fail"), "Call or Stream")
			}
			batchErr := recv(t, batchDone, "the pending batch to end")
			for i, bc := range batch {
				checkErr(bc.Err, fmt.Sprintf("batch[%d].Err", i))
			}
			t.Run("Batch returns the error", func(t *testing.T) {
				// Batch's doc: it "returns an error only when the batch
				// could not be completed: ctx ended (...), or the client
				// closed."
				assert.ErrorIs(t, batchErr, jsonrpc.ErrClosed)
				if tc.cause != nil {
					assert.ErrorIs(t, batchErr, tc.cause)
				}
			})
			recv(t, c.Done(), "the reader goroutine to end")
			after := c.Call(t.Context(), "sum", nil, nil)
			assert.ErrorIs(t, after, jsonrpc.ErrClosed)
			if tc.cause != nil {
				assert.ErrorIs(t, after, tc.cause)
			}
			err := c.Call(t.Context(), "after", nil, nil)
			assert.ErrorIs(t, err, jsonrpc.ErrClosed)
			if tc.cause != nil {
				assert.ErrorIs(t, err, tc.cause)
			}
			assert.NoError(t, c.Close())
		})
	}

	t.Run("reader that is not a Closer", func(t *testing.T) {
		checkLeaks(t)
		br := brokenReader{errc: make(chan error, 1), entered: make(chan struct{})}
		c, _ := newRawPeerReader(t, br, nil)
		recv(t, br.entered, "the reader goroutine to be in Read")
		// Close cannot interrupt the Read, so it returns at once, the
		// connection ends, and the reader goroutine ends when Read returns
		// (checkLeaks sees to that).
		assert.NoError(t, c.Close())
		recv(t, c.Done(), "the connection to end")
		assert.ErrorIs(t, c.Wait(), jsonrpc.ErrClosed)
		br.errc <- io.EOF
	})

	t.Run("Close cancels and waits for Handler calls", func(t *testing.T) {
		checkLeaks(t)
		started := make(chan struct{})
		returned := make(chan struct{})
		h := jsonrpc.HandlerFunc(func(ctx context.Context, _ *jsonrpc.Request) (any, error) {
			close(started)
			defer close(returned)
			<-ctx.Done()
			return nil, ctx.Err()
		})
		c, p := newRawPeer(t, &jsonrpc.Options{Handler: h})
		p.send(t, `{"jsonrpc":"2.0","id":"srv","method":"block"}`)
		recv(t, started, "the handler to start")
		require.NoError(t, c.Close())
		select {
		case <-returned:
		default:
			assert.Fail(t, "Close returned before the handler")
		}
	})
}

var errBoom = errors.New("boom")

// TestClientRawParamsSpanningLines checks that raw params which span
// several lines are sent on one line.
func TestClientRawParamsSpanningLines(t *testing.T) {
	checkLeaks(t)
	mux := new(jsonrpc.Mux)
	mux.HandleFunc("echo", func(_ context.Context, req *jsonrpc.Request) (any, error) {
		return req.Params, nil
	})
	c := newPair(t, mux)
	var got json.RawMessage
	require.NoError(t, c.Call(t.Context(), "echo", json.RawMessage("{\n  \"x\": 1\n}"), &got))
	assert.JSONEq(t, `{"x":1}`, string(got))
}
