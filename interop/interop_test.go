// Package interop checks that package jsonrpc speaks JSON-RPC 2.0 with
// another implementation, github.com/creachadair/jrpc2, in both
// directions, and with cmd/jsonrpc-demo run as a child process.
package interop

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"iter"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/creachadair/jrpc2"
	"github.com/creachadair/jrpc2/channel"
	"github.com/creachadair/jrpc2/handler"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/ndjsonrpc/jsonrpc"
)

// waitTimeout bounds every wait, so that a bug fails a test instead of
// hanging it. Nothing passes or fails on time.
const waitTimeout = 10 * time.Second

// checkLeaks fails t if a goroutine started during the test still runs
// once the test and its other cleanups are done. Call it first, so that
// its cleanup runs last.
func checkLeaks(t *testing.T) {
	t.Helper()
	opt := goleak.IgnoreCurrent()
	t.Cleanup(func() { goleak.VerifyNone(t, opt) })
}

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

// noteLog records the notifications an OnNotify callback receives.
type noteLog struct {
	mu    sync.Mutex
	notes []string // method + " " + params
}

func (l *noteLog) add(method, params string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.notes = append(l.notes, method+" "+params)
}

// take returns what was recorded and forgets it.
func (l *noteLog) take() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	notes := l.notes
	l.notes = nil
	return notes
}

// assertCode checks that err is a *jsonrpc.Error with code, matching
// under errors.Is by code, and returns it.
func assertCode(t *testing.T, err error, code jsonrpc.Code) *jsonrpc.Error {
	t.Helper()
	var werr *jsonrpc.Error
	if !assert.ErrorAs(t, err, &werr) {
		return nil
	}
	assert.Equal(t, code, werr.Code)
	assert.ErrorIs(t, err, jsonrpc.NewError(code, "any message"))
	return werr
}

// ---------------------------------------------------------------------
// 1. Our Client against a jrpc2 server.

// jrpc2Methods are the methods of the jrpc2 server. notes receives the
// params of each "note" notification.
func jrpc2Methods(notes chan<- string) handler.Map {
	return handler.Map{
		"subtract": handler.New(func(_ context.Context, p []float64) (float64, error) {
			if len(p) != 2 {
				return 0, jrpc2.Errorf(jrpc2.InvalidParams, "want 2 numbers")
			}
			return p[0] - p[1], nil
		}),
		"named": handler.New(func(_ context.Context, p struct {
			Minuend    float64 `json:"minuend"`
			Subtrahend float64 `json:"subtrahend"`
		}) (float64, error) {
			return p.Minuend - p.Subtrahend, nil
		}),
		"sum": handler.New(func(_ context.Context, p []int) (int, error) {
			s := 0
			for _, n := range p {
				s += n
			}
			return s, nil
		}),
		"get_data": handler.New(func(context.Context) ([]any, error) {
			return []any{"hello", 5}, nil
		}),
		"echo": handler.New(func(_ context.Context, req *jrpc2.Request) (json.RawMessage, error) {
			if !req.HasParams() {
				return json.RawMessage("null"), nil
			}
			return json.RawMessage(req.ParamString()), nil
		}),
		"mul": handler.New(func(_ context.Context, p [2]int) (int, error) {
			// Different short delays shuffle the order of the answers.
			time.Sleep(time.Duration((p[0]+p[1])%4) * 100 * time.Microsecond)
			return p[0] * p[1], nil
		}),
		"fail": handler.New(func(context.Context) (any, error) {
			return nil, jrpc2.Errorf(-32001, "custom failure").WithData(map[string]string{"reason": "demo"})
		}),
		"plain": handler.New(func(context.Context) (any, error) {
			return nil, errors.New("plain failure")
		}),
		"sleep": handler.New(func(ctx context.Context, p struct {
			MS int `json:"ms"`
		}) (string, error) {
			tm := time.NewTimer(time.Duration(p.MS) * time.Millisecond)
			defer tm.Stop()
			select {
			case <-tm.C:
				return "slept", nil
			case <-ctx.Done():
				return "", ctx.Err()
			}
		}),
		"sleepNoted": handler.New(func(ctx context.Context, p struct {
			MS int `json:"ms"`
		}) (string, error) {
			notes <- "sleep started" // so that a caller cancels only once it runs
			tm := time.NewTimer(time.Duration(p.MS) * time.Millisecond)
			defer tm.Stop()
			select {
			case <-tm.C:
				return "slept", nil
			case <-ctx.Done():
				return "", ctx.Err()
			}
		}),
		"progress": handler.New(func(ctx context.Context, p struct {
			Count int `json:"count"`
		}) (string, error) {
			srv := jrpc2.ServerFromContext(ctx)
			for i := 1; i <= p.Count; i++ {
				if err := srv.Notify(ctx, "progress", map[string]int{"done": i}); err != nil {
					return "", err
				}
			}
			return "done", nil
		}),
		"whoami": handler.New(func(ctx context.Context) (string, error) {
			rsp, err := jrpc2.ServerFromContext(ctx).Callback(ctx, "name", []string{"please"})
			if err != nil {
				return "", err
			}
			var name string
			if err := rsp.UnmarshalResult(&name); err != nil {
				return "", err
			}
			return "you are " + name, nil
		}),
		"note": handler.New(func(_ context.Context, req *jrpc2.Request) error {
			notes <- req.Method() + " " + req.ParamString()
			return nil
		}),
	}
}

// newJRPC2Server starts a jrpc2 server with newline framing and returns
// our client connected to it by two io.Pipe pairs. A cleanup closes the
// client, which ends the server's input, and waits for the server.
func newJRPC2Server(t *testing.T, methods handler.Map, opts *jsonrpc.Options) *jsonrpc.Conn {
	t.Helper()
	reqR, reqW := io.Pipe()   // client -> server
	respR, respW := io.Pipe() // server -> client
	srv := jrpc2.NewServer(methods, &jrpc2.ServerOptions{AllowPush: true, Concurrency: 16})
	srv.Start(channel.Line(reqR, respW))
	c := jsonrpc.NewConn(respR, reqW, opts)
	t.Cleanup(func() {
		assert.NoError(t, c.Close())
		assert.NoError(t, srv.Wait())
		_ = reqR.Close()
		_ = respW.Close()
	})
	return c
}

func TestClientWithJRPC2Server(t *testing.T) {
	checkLeaks(t)
	notes := make(chan string, 16)
	var log noteLog
	unknown := make(chan *jsonrpc.Response, 16)
	c := newJRPC2Server(t, jrpc2Methods(notes), &jsonrpc.Options{
		OnNotify:          func(req *jsonrpc.Request) { log.add(req.Method, string(req.Params)) },
		OnUnknownResponse: func(r *jsonrpc.Response) { unknown <- r },
		Handler: jsonrpc.HandlerFunc(func(_ context.Context, req *jsonrpc.Request) (any, error) {
			if req.Method != "name" {
				return nil, jsonrpc.ErrMethodNotFound
			}
			return "our client, asked " + string(req.Params), nil
		}),
	})

	t.Run("calls", func(t *testing.T) {
		tests := []struct {
			name   string
			method string
			params any
			want   string
		}{
			{"positional", "subtract", []int{42, 23}, `19`},
			{"named", "named", map[string]int{"minuend": 42, "subtrahend": 23}, `19`},
			{"sum", "sum", []int{1, 2, 3, 4}, `10`},
			{"no params", "get_data", nil, `["hello",5]`},
			{"echo object", "echo", map[string]any{"a": []any{1, "x", nil}}, `{"a":[1,"x",null]}`},
			{"echo unicode", "echo", []string{"ü", "<&>", "a\nb"}, `["ü","<&>","a\nb"]`},
		}
		for _, tc := range tests {
			t.Run(tc.name, func(t *testing.T) {
				var got json.RawMessage
				require.NoError(t, c.Call(t.Context(), tc.method, tc.params, &got))
				assert.JSONEq(t, tc.want, string(got))
			})
		}
	})

	t.Run("errors", func(t *testing.T) {
		tests := []struct {
			name    string
			method  string
			params  any
			code    jsonrpc.Code
			message string
			data    string
		}{
			{"method not found", "nope", nil, jsonrpc.CodeMethodNotFound, "", ""},
			{"invalid params", "sum", map[string]int{"a": 1}, jsonrpc.CodeInvalidParams, "", ""},
			{"custom code and data", "fail", nil, -32001, "custom failure", `{"reason":"demo"}`},
			{"plain error", "plain", nil, jsonrpc.Code(jrpc2.SystemError), "plain failure", ""},
		}
		for _, tc := range tests {
			t.Run(tc.name, func(t *testing.T) {
				err := c.Call(t.Context(), tc.method, tc.params, nil)
				werr := assertCode(t, err, tc.code)
				if werr == nil {
					return
				}
				if tc.message != "" {
					assert.Equal(t, tc.message, werr.Message)
				}
				if tc.data != "" {
					assert.JSONEq(t, tc.data, string(werr.Data))
				}
			})
		}
		assert.ErrorIs(t, c.Call(t.Context(), "nope", nil, nil), jsonrpc.ErrMethodNotFound)
	})

	t.Run("notifications to the server", func(t *testing.T) {
		require.NoError(t, c.Notify(t.Context(), "note", map[string]int{"n": 1}))
		require.NoError(t, c.Notify(t.Context(), "note", []string{"two"}))
		got := []string{recv(t, notes, "a notification"), recv(t, notes, "a notification")}
		assert.ElementsMatch(t, []string{`note {"n":1}`, `note ["two"]`}, got)
	})

	t.Run("notifications from the server", func(t *testing.T) {
		var got string
		require.NoError(t, c.Call(t.Context(), "progress", map[string]int{"count": 5}, &got))
		assert.Equal(t, "done", got)
		var want []string
		for i := 1; i <= 5; i++ {
			want = append(want, fmt.Sprintf(`progress {"done":%d}`, i))
		}
		assert.Equal(t, want, log.take(), "pushed before the response, so delivered before Call returns")
	})

	t.Run("callback answered by our Handler", func(t *testing.T) {
		var got string
		require.NoError(t, c.Call(t.Context(), "whoami", nil, &got))
		assert.Equal(t, `you are our client, asked ["please"]`, got)
	})

	t.Run("batch", func(t *testing.T) {
		var diff float64
		var sum int
		var data []any
		calls := []*jsonrpc.BatchCall{
			{Method: "subtract", Params: []int{42, 23}, Result: &diff},
			{Method: "note", Params: []string{"in a batch"}, Notify: true},
			{Method: "nope"},
			{Method: "sum", Params: []int{1, 2, 3}, Result: &sum},
			{Method: "fail"},
			{Method: "get_data", Result: &data},
		}
		require.NoError(t, c.Batch(t.Context(), calls...))
		assert.NoError(t, calls[0].Err)
		assert.Equal(t, 19.0, diff)
		assert.NoError(t, calls[1].Err)
		assertCode(t, calls[2].Err, jsonrpc.CodeMethodNotFound)
		assert.NoError(t, calls[3].Err)
		assert.Equal(t, 6, sum)
		assertCode(t, calls[4].Err, -32001)
		assert.NoError(t, calls[5].Err)
		assert.Equal(t, []any{"hello", float64(5)}, data)
		assert.Equal(t, `note ["in a batch"]`, recv(t, notes, "the notification in the batch"))
	})

	t.Run("concurrent calls", func(t *testing.T) { checkConcurrentMul(t, c.Call) })

	t.Run("cancelled call", func(t *testing.T) {
		// jrpc2 ignores "$/cancelRequest" (an unknown notification), so its
		// answer comes later and is reported as unknown.
		// The call is cancelled once jrpc2 runs it: a call whose ctx has
		// ended before it is written is not sent at all.
		ctx, cancel := context.WithCancel(t.Context())
		res := make(chan error, 1)
		go func() { res <- c.Call(ctx, "sleepNoted", map[string]int{"ms": 100}, nil) }()
		assert.Equal(t, "sleep started", recv(t, notes, "the call to start"))
		cancel()
		assert.ErrorIs(t, recv(t, res, "the cancelled call"), context.Canceled)
		var late *jsonrpc.Response
		for late == nil || late.Error != nil && late.Error.Code == jsonrpc.CodeMethodNotFound {
			// Skip anything jrpc2 may have said about the cancel itself.
			late = recv(t, unknown, "the late answer")
		}
		assert.Nil(t, late.Error)
		assert.JSONEq(t, `"slept"`, string(late.Result))
		var got float64
		require.NoError(t, c.Call(t.Context(), "subtract", []int{2, 1}, &got))
		assert.Equal(t, 1.0, got)
	})
}

// ---------------------------------------------------------------------
// 2. A jrpc2 client against our Serve.

// ourMethods are the methods of our server for the jrpc2 client. notes
// receives each "note" notification; sawCancel receives the error of each
// "block" call once its context ends.
func ourMethods(notes chan<- string, sawCancel chan<- error) *jsonrpc.Mux {
	mux := new(jsonrpc.Mux)
	mux.Handle("subtract", jsonrpc.Func(func(_ context.Context, p json.RawMessage) (float64, error) {
		var a [2]float64
		if err := json.Unmarshal(p, &a); err == nil {
			return a[0] - a[1], nil
		}
		var o struct{ Minuend, Subtrahend *float64 }
		if err := json.Unmarshal(p, &o); err != nil || o.Minuend == nil || o.Subtrahend == nil {
			return 0, jsonrpc.ErrInvalidParams
		}
		return *o.Minuend - *o.Subtrahend, nil
	}))
	mux.Handle("sum", jsonrpc.Func(func(_ context.Context, nums []int) (int, error) {
		s := 0
		for _, n := range nums {
			s += n
		}
		return s, nil
	}))
	mux.HandleFunc("echo", func(_ context.Context, req *jsonrpc.Request) (any, error) {
		return req.Params, nil
	})
	mux.Handle("mul", jsonrpc.Func(func(_ context.Context, p [2]int) (int, error) {
		time.Sleep(time.Duration((p[0]+p[1])%4) * 100 * time.Microsecond)
		return p[0] * p[1], nil
	}))
	mux.HandleFunc("fail", func(context.Context, *jsonrpc.Request) (any, error) {
		return nil, jsonrpc.NewError(-32001, "custom failure").WithData(map[string]string{"reason": "demo"})
	})
	mux.HandleFunc("plain", func(context.Context, *jsonrpc.Request) (any, error) {
		return nil, errors.New("boom")
	})
	mux.Handle("progress", jsonrpc.Func(func(ctx context.Context, p struct {
		Count int `json:"count"`
	}) (string, error) {
		for i := 1; i <= p.Count; i++ {
			if err := jsonrpc.Peer(ctx).Notify(ctx, "progress", map[string]int{"done": i}); err != nil {
				return "", err
			}
		}
		return "done", nil
	}))
	mux.Handle("count", jsonrpc.Stream(func(_ context.Context, p struct {
		N int `json:"n"`
	}) iter.Seq2[map[string]int, error] {
		return func(yield func(map[string]int, error) bool) {
			for i := range p.N {
				if !yield(map[string]int{"index": i}, nil) {
					return
				}
			}
		}
	}))
	mux.HandleFunc("block", func(ctx context.Context, _ *jsonrpc.Request) (any, error) {
		<-ctx.Done()
		sawCancel <- ctx.Err()
		return nil, ctx.Err()
	})
	mux.HandleFunc("note", func(_ context.Context, req *jsonrpc.Request) (any, error) {
		notes <- req.Method + " " + string(req.Params)
		return nil, nil
	})
	return mux
}

// newOurServer serves h with jsonrpc.Serve and returns a jrpc2 client,
// with newline framing, connected to it by two io.Pipe pairs. A cleanup
// closes the client, which ends the server's input, and checks that Serve
// returned nil.
func newOurServer(t *testing.T, h jsonrpc.Handler, opts *jrpc2.ClientOptions) *jrpc2.Client {
	t.Helper()
	reqR, reqW := io.Pipe()   // client -> server
	respR, respW := io.Pipe() // server -> client
	served := make(chan error, 1)
	go func() {
		err := jsonrpc.Serve(context.Background(), reqR, respW, h)
		_ = respW.Close() // the client's reader sees the end
		served <- err
	}()
	cli := jrpc2.NewClient(channel.Line(respR, reqW), opts)
	t.Cleanup(func() {
		// Close closes reqW, so Serve sees the end of its input, and waits
		// for its reader, which ends when Serve closes respW.
		assert.NoError(t, cli.Close())
		assert.NoError(t, recv(t, served, "Serve to return"))
		_ = reqR.Close()
		_ = respR.Close()
	})
	return cli
}

func TestJRPC2ClientWithOurServer(t *testing.T) {
	checkLeaks(t)
	notes := make(chan string, 16)
	sawCancel := make(chan error, 1)
	pushed := make(chan string, 1024)
	cli := newOurServer(t, ourMethods(notes, sawCancel), &jrpc2.ClientOptions{
		OnNotify: func(req *jrpc2.Request) { pushed <- req.Method() + " " + req.ParamString() },
		// jrpc2 sends nothing when a call's context ends; this hook tells
		// our server, in its own dialect.
		OnCancel: func(cli *jrpc2.Client, rsp *jrpc2.Response) {
			_ = cli.Notify(context.Background(), "$/cancelRequest", // LSP's, the zero jsonrpc.Cancellation
				map[string]json.RawMessage{"id": json.RawMessage(rsp.ID())})
		},
	})

	t.Run("calls", func(t *testing.T) {
		tests := []struct {
			name   string
			method string
			params any
			want   string
		}{
			{"positional", "subtract", []int{42, 23}, `19`},
			{"named", "subtract", map[string]int{"Minuend": 42, "Subtrahend": 23}, `19`},
			{"sum", "sum", []int{1, 2, 3, 4}, `10`},
			{"echo", "echo", map[string]any{"a": []any{1, "x", nil}}, `{"a":[1,"x",null]}`},
			{"echo unicode", "echo", []string{"ü", "<&>", "a\nb", "\u2028"}, `["ü","<&>","a\nb","\u2028"]`},
			{"echo no params", "echo", nil, `null`},
		}
		for _, tc := range tests {
			t.Run(tc.name, func(t *testing.T) {
				rsp, err := cli.Call(t.Context(), tc.method, tc.params)
				require.NoError(t, err)
				assert.JSONEq(t, tc.want, rsp.ResultString())
			})
		}
		var n int
		require.NoError(t, cli.CallResult(t.Context(), "sum", []int{5, 6}, &n))
		assert.Equal(t, 11, n)
	})

	t.Run("errors", func(t *testing.T) {
		tests := []struct {
			name    string
			method  string
			params  any
			code    jrpc2.Code
			message string
			data    string
		}{
			{"method not found", "nope", nil, jrpc2.MethodNotFound, "Method not found", ""},
			{"invalid params", "sum", map[string]int{"a": 1}, jrpc2.InvalidParams, "", ""},
			{"custom code and data", "fail", nil, -32001, "custom failure", `{"reason":"demo"}`},
			{"plain error", "plain", nil, jrpc2.InternalError, "Internal error", `{"exception":"*errors.errorString","detail":"boom"}`},
		}
		for _, tc := range tests {
			t.Run(tc.name, func(t *testing.T) {
				_, err := cli.Call(t.Context(), tc.method, tc.params)
				var jerr *jrpc2.Error
				require.ErrorAs(t, err, &jerr)
				assert.Equal(t, tc.code, jerr.Code)
				if tc.message != "" {
					assert.Equal(t, tc.message, jerr.Message)
				}
				if tc.data != "" {
					assert.JSONEq(t, tc.data, string(jerr.Data))
				}
			})
		}
	})

	t.Run("notifications to the server", func(t *testing.T) {
		require.NoError(t, cli.Notify(t.Context(), "note", map[string]int{"n": 1}))
		require.NoError(t, cli.Notify(t.Context(), "note", []string{"two"}))
		require.NoError(t, cli.Notify(t.Context(), "nope", []int{3}), "no answer, not even an error")
		got := []string{recv(t, notes, "a notification"), recv(t, notes, "a notification")}
		assert.ElementsMatch(t, []string{`note {"n":1}`, `note ["two"]`}, got)
	})

	t.Run("notifications from the server", func(t *testing.T) {
		rsp, err := cli.Call(t.Context(), "progress", map[string]int{"count": 5})
		require.NoError(t, err)
		assert.JSONEq(t, `"done"`, rsp.ResultString())
		// jrpc2 delivers each message on a goroutine of its own, so the
		// order is not kept on its side.
		var got []string
		for range 5 {
			got = append(got, recv(t, pushed, "a progress notification"))
		}
		var want []string
		for i := 1; i <= 5; i++ {
			want = append(want, fmt.Sprintf(`progress {"done":%d}`, i))
		}
		assert.ElementsMatch(t, want, got)
	})

	t.Run("stream items as notifications", func(t *testing.T) {
		rsp, err := cli.Call(t.Context(), "count", map[string]int{"n": 3})
		require.NoError(t, err)
		assert.JSONEq(t, `3`, rsp.ResultString(), "the result of a stream is its number of items")
		var got []string
		for range 3 {
			got = append(got, recv(t, pushed, "a stream item"))
		}
		sort.Strings(got)
		want := make([]string, 3)
		for i := range want {
			want[i] = fmt.Sprintf(`%s {"id":%s,"item":{"index":%d}}`, jsonrpc.StreamItemMethod, rsp.ID(), i)
		}
		assert.Equal(t, want, got)
	})

	t.Run("batch", func(t *testing.T) {
		rsps, err := cli.Batch(t.Context(), []jrpc2.Spec{
			{Method: "subtract", Params: []int{42, 23}},
			{Method: "note", Params: []string{"in a batch"}, Notify: true},
			{Method: "nope"},
			{Method: "sum", Params: []int{1, 2, 3}},
			{Method: "fail"},
		})
		require.NoError(t, err)
		require.Len(t, rsps, 4, "no response for the notification")
		assert.Nil(t, rsps[0].Error())
		assert.JSONEq(t, `19`, rsps[0].ResultString())
		if assert.NotNil(t, rsps[1].Error()) {
			assert.Equal(t, jrpc2.MethodNotFound, rsps[1].Error().Code)
		}
		assert.Nil(t, rsps[2].Error())
		assert.JSONEq(t, `6`, rsps[2].ResultString())
		if assert.NotNil(t, rsps[3].Error()) {
			assert.Equal(t, jrpc2.Code(-32001), rsps[3].Error().Code)
		}
		assert.Equal(t, `note ["in a batch"]`, recv(t, notes, "the notification in the batch"))
	})

	t.Run("concurrent calls", func(t *testing.T) { checkConcurrentMul(t, cli.CallResult) })

	t.Run("cancel through OnCancel", func(t *testing.T) {
		ctx, cancel := context.WithCancel(t.Context())
		res := make(chan error, 1)
		go func() {
			_, err := cli.Call(ctx, "block", nil)
			res <- err
		}()
		// Cancel once the call is out: a sum that comes back proves the
		// server has read the line before it.
		var n int
		require.NoError(t, cli.CallResult(t.Context(), "sum", []int{1}, &n))
		cancel()
		assert.ErrorIs(t, recv(t, res, "the cancelled call"), context.Canceled)
		assert.ErrorIs(t, recv(t, sawCancel, "our handler to see the cancel"), context.Canceled)
	})
}

// ---------------------------------------------------------------------
// 3. Our Client against cmd/jsonrpc-demo as a child process.

var demo struct {
	once sync.Once
	path string
	err  error
}

// demoPath builds cmd/jsonrpc-demo, through the replace directive, the
// first time it is called, and returns the binary's path.
func demoPath(t *testing.T) string {
	t.Helper()
	demo.once.Do(func() {
		path := filepath.Join(binDir, "demo")
		cmd := exec.Command("go", "build", "-o", path, "github.com/ndjsonrpc/jsonrpc/cmd/jsonrpc-demo")
		if out, err := cmd.CombinedOutput(); err != nil {
			demo.err = fmt.Errorf("go build: %v\n%s", err, out)
			return
		}
		demo.path = path
	})
	require.NoError(t, demo.err)
	return demo.path
}

// binDir holds the demo binary; TestMain removes it at the end.
var binDir string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "jsonrpc-interop-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	binDir = dir
	code := m.Run()
	_ = os.RemoveAll(dir)
	os.Exit(code)
}

func TestDemo(t *testing.T) {
	checkLeaks(t)
	var log noteLog
	unknown := make(chan *jsonrpc.Response, 16)
	p, err := jsonrpc.StartProcess(t.Context(), exec.Command(demoPath(t)), &jsonrpc.Options{
		OnNotify:          func(req *jsonrpc.Request) { log.add(req.Method, string(req.Params)) },
		OnUnknownResponse: func(r *jsonrpc.Response) { unknown <- r },
	})
	require.NoError(t, err)
	t.Cleanup(func() { _ = p.Close() })

	t.Run("results", func(t *testing.T) {
		tests := []struct {
			name   string
			method string
			params any
			want   string
		}{
			{"subtract array", "subtract", []int{42, 23}, `19`},
			{"subtract array reversed", "subtract", []int{23, 42}, `-19`},
			{"subtract object", "subtract", map[string]int{"minuend": 42, "subtrahend": 23}, `19`},
			{"subtract object reordered", "subtract", json.RawMessage(`{"subtrahend": 23, "minuend": 42}`), `19`},
			{"sum", "sum", []float64{1, 2, 4.5}, `7.5`},
			{"sum empty", "sum", []int{}, `0`},
			{"get_data", "get_data", nil, `["hello", 5]`},
			{"update", "update", []int{1, 2, 3, 4, 5}, `null`},
			{"notify_hello", "notify_hello", []int{7}, `null`},
			{"notify_sum", "notify_sum", []int{1, 2, 4}, `null`},
			{"echo object", "echo", map[string]any{"a": []any{1, "x", nil, true}}, `{"a":[1,"x",null,true]}`},
			{"echo array", "echo", []any{"ü", "<&>", "a\nb"}, `["ü","<&>","a\nb"]`},
			{"echo no params", "echo", nil, `null`},
			{"progress none", "progress", map[string]int{"count": 0}, `"done"`},
			{"sleep", "sleep", map[string]int{"ms": 5}, `"slept"`},
		}
		for _, tc := range tests {
			t.Run(tc.name, func(t *testing.T) {
				var got json.RawMessage
				require.NoError(t, p.Call(t.Context(), tc.method, tc.params, &got))
				assert.JSONEq(t, tc.want, string(got))
			})
		}
	})

	t.Run("notifications", func(t *testing.T) {
		for _, m := range []string{"update", "notify_hello", "notify_sum", "nope"} {
			require.NoError(t, p.Notify(t.Context(), m, []int{1, 2}))
		}
		var got float64
		require.NoError(t, p.Call(t.Context(), "subtract", []int{1, 2}, &got))
		assert.Equal(t, -1.0, got)
		assert.Empty(t, log.take(), "the demo sends nothing back for notifications")
	})

	t.Run("errors", func(t *testing.T) {
		tests := []struct {
			name    string
			method  string
			params  any
			code    jsonrpc.Code
			message string
			data    string
		}{
			{"fail", "fail", nil, -32001, "custom failure", `{"reason":"demo"}`},
			{"internal", "internal", nil, jsonrpc.CodeInternalError, "Internal error", `{"exception":"*errors.errorString","detail":"boom"}`},
			{"panic", "panic", nil, jsonrpc.CodeInternalError, "Internal error", ""},
			{"method not found", "nope", nil, jsonrpc.CodeMethodNotFound, "Method not found", ""},
			{"subtract one number", "subtract", []int{1}, jsonrpc.CodeInvalidParams, "", ""},
			{"subtract missing member", "subtract", map[string]int{"minuend": 1}, jsonrpc.CodeInvalidParams, "", ""},
			{"sum of strings", "sum", []string{"a"}, jsonrpc.CodeInvalidParams, "", ""},
		}
		for _, tc := range tests {
			t.Run(tc.name, func(t *testing.T) {
				err := p.Call(t.Context(), tc.method, tc.params, nil)
				werr := assertCode(t, err, tc.code)
				if werr == nil {
					return
				}
				if tc.message != "" {
					assert.Equal(t, tc.message, werr.Message)
				}
				if tc.data != "" {
					assert.JSONEq(t, tc.data, string(werr.Data))
				}
				// The demo keeps serving, panic included.
				var got float64
				require.NoError(t, p.Call(t.Context(), "subtract", []int{10, 4}, &got))
				assert.Equal(t, 6.0, got)
			})
		}
		var werr *jsonrpc.Error
		require.ErrorAs(t, p.Call(t.Context(), "fail", nil, nil), &werr)
		var data struct{ Reason string }
		require.NoError(t, json.Unmarshal(werr.Data, &data))
		assert.Equal(t, "demo", data.Reason)
		assert.ErrorIs(t, p.Call(t.Context(), "internal", nil, nil), jsonrpc.ErrInternal)
	})

	t.Run("progress", func(t *testing.T) {
		for _, count := range []int{1, 3, 100} {
			var got string
			require.NoError(t, p.Call(t.Context(), "progress", map[string]int{"count": count}, &got))
			assert.Equal(t, "done", got)
			var want []string
			for i := 1; i <= count; i++ {
				want = append(want, fmt.Sprintf(`progress {"done":%d,"total":%d}`, i, count))
			}
			assert.Equal(t, want, log.take(), "every notification, in order, before Call returns")
		}
	})

	t.Run("count", func(t *testing.T) {
		for _, n := range []int{0, 1, 5, 200} {
			t.Run(fmt.Sprint(n), func(t *testing.T) {
				var got []int
				for item, err := range p.Stream(t.Context(), "count", map[string]int{"n": n}) {
					require.NoError(t, err)
					var v map[string]int
					require.NoError(t, json.Unmarshal(item, &v))
					assert.Len(t, v, 1, "item %s", item)
					got = append(got, v["index"])
				}
				require.Len(t, got, n)
				for i, idx := range got {
					assert.Equal(t, i, idx)
				}
			})
		}
		assert.Empty(t, log.take(), "stream items do not reach OnNotify")
	})

	t.Run("batch", func(t *testing.T) {
		var diff, sum float64
		calls := []*jsonrpc.BatchCall{
			{Method: "subtract", Params: []int{42, 23}, Result: &diff},
			{Method: "notify_hello", Params: []int{7}, Notify: true},
			{Method: "sum", Params: []int{1, 2, 3}, Result: &sum},
			{Method: "fail"},
		}
		require.NoError(t, p.Batch(t.Context(), calls...))
		assert.NoError(t, calls[0].Err)
		assert.Equal(t, 19.0, diff)
		assert.NoError(t, calls[2].Err)
		assert.Equal(t, 6.0, sum)
		assertCode(t, calls[3].Err, -32001)
	})

	t.Run("cancel sleep", func(t *testing.T) {
		var got float64
		for attempt := 1; ; attempt++ {
			ctx, cancel := context.WithCancel(t.Context())
			res := make(chan error, 1)
			go func() { res <- p.Call(ctx, "sleep", map[string]int{"ms": 60_000}, nil) }()
			// A call answered after the sleep was sent proves the demo
			// has it, if it was sent by then: on a busy machine the
			// goroutine may not have run before the cancel, and the
			// sleep is then never sent (MayHaveRun says so), which
			// leaves nothing to cancel: try again.
			require.NoError(t, p.Call(t.Context(), "subtract", []int{3, 1}, &got))
			start := time.Now()
			cancel()
			err := recv(t, res, "the cancelled call")
			assert.ErrorIs(t, err, context.Canceled)
			assert.Less(t, time.Since(start), 5*time.Second, "Call returns at once")
			if jsonrpc.MayHaveRun(err) {
				break
			}
			require.Less(t, attempt, 10, "the sleep was never sent before its cancel")
		}
		// The demo got "$/cancelRequest": the sleep ends with -32800,
		// which the client reports as an unknown response.
		late := recv(t, unknown, "the demo's answer to the cancelled sleep")
		if assert.NotNil(t, late.Error) {
			assert.Equal(t, jsonrpc.CodeRequestCancelled, late.Error.Code)
		}
		require.NoError(t, p.Call(t.Context(), "subtract", []int{5, 1}, &got))
		assert.Equal(t, 4.0, got, "the demo keeps serving")
	})

	t.Run("1000 calls from 32 goroutines", func(t *testing.T) {
		const goroutines, total = 32, 1000
		errs := make(chan error, total)
		var wg sync.WaitGroup
		for g := range goroutines {
			wg.Go(func() {
				for i := g; i < total; i += goroutines {
					if i%2 == 0 {
						var got float64
						if err := p.Call(t.Context(), "subtract", []int{i * 3, i}, &got); err != nil {
							errs <- fmt.Errorf("subtract %d: %w", i, err)
						} else if got != float64(2*i) {
							errs <- fmt.Errorf("subtract [%d, %d] = %v; want %d", i*3, i, got, 2*i)
						}
						continue
					}
					var got struct {
						G int `json:"g"`
						I int `json:"i"`
					}
					if err := p.Call(t.Context(), "echo", map[string]int{"g": g, "i": i}, &got); err != nil {
						errs <- fmt.Errorf("echo %d: %w", i, err)
					} else if got.G != g || got.I != i {
						errs <- fmt.Errorf("echo {g:%d, i:%d} = %+v", g, i, got)
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

	t.Run("Close", func(t *testing.T) {
		require.NoError(t, p.Close(), "the demo exits 0 at the end of its input")
		assert.NoError(t, p.Close())
		assert.ErrorIs(t, p.Call(t.Context(), "subtract", []int{1, 1}, nil), jsonrpc.ErrClosed)
	})
}

// checkConcurrentMul calls "mul" from 16 goroutines at once, 50 times each,
// through call, and checks every answer.
func checkConcurrentMul(t *testing.T, call func(ctx context.Context, method string, params, result any) error) {
	const goroutines, calls = 16, 50
	errs := make(chan error, goroutines)
	var wg sync.WaitGroup
	for g := range goroutines {
		wg.Go(func() {
			for i := range calls {
				var got int
				if err := call(t.Context(), "mul", [2]int{g, i}, &got); err != nil {
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
}
