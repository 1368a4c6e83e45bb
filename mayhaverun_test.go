package jsonrpc_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ndjsonrpc/jsonrpc"
)

// A callerRig gives a Caller that reaches classifyMux, with ways to end
// its transport.
type callerRig struct {
	// run runs f with the Caller and returns what f returned.
	run func(t *testing.T, f func(ctx context.Context, c jsonrpc.Caller) error) error
	// close closes the caller's side before a call; die ends the
	// transport from the serving side, in a handler. nil where there is
	// no transport.
	close, die func()
}

// classifyMux answers as its methods' names say; "wait" signals started
// and waits for its ctx; "die" ends the transport with die.
func classifyMux(started chan<- struct{}, die func()) *jsonrpc.Mux {
	mux := new(jsonrpc.Mux)
	mux.HandleFunc("ok", func(context.Context, *jsonrpc.Request) (any, error) { return 1, nil })
	mux.HandleFunc("notrun", func(context.Context, *jsonrpc.Request) (any, error) { return nil, jsonrpc.ErrNotRun })
	mux.HandleFunc("overloaded", func(context.Context, *jsonrpc.Request) (any, error) { return nil, jsonrpc.ErrOverloaded })
	mux.HandleFunc("fail", func(context.Context, *jsonrpc.Request) (any, error) {
		return nil, jsonrpc.NewError(-32001, "custom failure")
	})
	mux.HandleFunc("wait", func(ctx context.Context, _ *jsonrpc.Request) (any, error) {
		started <- struct{}{}
		<-ctx.Done()
		return nil, ctx.Err()
	})
	mux.HandleFunc("die", func(ctx context.Context, _ *jsonrpc.Request) (any, error) {
		die()
		<-ctx.Done()
		return nil, ctx.Err()
	})
	return mux
}

// connRig serves classifyMux on one end of a pair of pipes and calls
// through c, the other end's Conn, or through the Peer of a handler of
// the other end when viaPeer is set.
func classifyConnRig(t *testing.T, started chan struct{}, viaPeer bool) callerRig {
	sR, cW := io.Pipe()
	cR, sW := io.Pipe()
	die := func() { _ = sW.Close(); _ = sR.Close() }
	s := jsonrpc.NewConn(sR, sW, &jsonrpc.Options{Handler: classifyMux(started, die)})
	t.Cleanup(func() { _ = s.Close() })
	if !viaPeer {
		c := jsonrpc.NewConn(cR, cW, nil)
		t.Cleanup(func() { _ = c.Close() })
		return callerRig{
			run: func(t *testing.T, f func(context.Context, jsonrpc.Caller) error) error {
				return f(t.Context(), c)
			},
			close: func() { _ = c.Close() },
			die:   die,
		}
	}
	// The handler "probe" of c runs f with its Peer, which is s.
	var f func(context.Context, jsonrpc.Caller) error
	errs := make(chan error, 1)
	c := jsonrpc.NewConn(cR, cW, &jsonrpc.Options{Handler: jsonrpc.HandlerFunc(func(ctx context.Context, _ *jsonrpc.Request) (any, error) {
		errs <- f(ctx, jsonrpc.Peer(ctx))
		return nil, nil
	})})
	t.Cleanup(func() { _ = c.Close() })
	return callerRig{
		run: func(t *testing.T, g func(context.Context, jsonrpc.Caller) error) error {
			f = g
			go func() { _ = s.Call(context.WithoutCancel(t.Context()), "probe", nil, nil) }()
			return recv(t, errs, "the probe's outcome")
		},
		die: die,
	}
}

// TestMayHaveRun classifies the failures of every Caller alike.
func TestMayHaveRun(t *testing.T) {
	rigs := []struct {
		name string
		make func(t *testing.T, started chan struct{}) callerRig
	}{
		{"Conn", func(t *testing.T, started chan struct{}) callerRig { return classifyConnRig(t, started, false) }},
		{"Peer", func(t *testing.T, started chan struct{}) callerRig { return classifyConnRig(t, started, true) }},
		{"HTTPClient", func(t *testing.T, started chan struct{}) callerRig {
			var ts *httptest.Server
			die := func() { ts.CloseClientConnections() }
			srv := &jsonrpc.Server{Options: jsonrpc.Options{Handler: classifyMux(started, die)}}
			ts = httptest.NewServer(srv)
			t.Cleanup(ts.Close)
			c := &jsonrpc.HTTPClient{URL: ts.URL, HTTP: ts.Client()}
			return callerRig{
				run: func(t *testing.T, f func(context.Context, jsonrpc.Caller) error) error {
					return f(t.Context(), c)
				},
				close: func() { _ = srv.Close(); ts.Close() },
				die:   die,
			}
		}},
		{"InProcess", func(t *testing.T, started chan struct{}) callerRig {
			c := &jsonrpc.InProcess{Handler: classifyMux(started, nil)}
			return callerRig{run: func(t *testing.T, f func(context.Context, jsonrpc.Caller) error) error {
				return f(t.Context(), c)
			}}
		}},
	}
	cases := []struct {
		name    string
		call    func(ctx context.Context, c jsonrpc.Caller, started <-chan struct{}) error
		closed  bool // close the caller first
		dies    bool // the serving side ends the transport
		is      error
		mayHave bool
	}{
		{name: "params cannot be encoded", call: func(ctx context.Context, c jsonrpc.Caller, _ <-chan struct{}) error {
			return c.Call(ctx, "ok", make(chan int), nil)
		}},
		{name: "params not an object or array", is: jsonrpc.ErrInvalidParams, call: func(ctx context.Context, c jsonrpc.Caller, _ <-chan struct{}) error {
			return c.Call(ctx, "ok", "a string", nil)
		}},
		{name: "batch params not an object or array", is: jsonrpc.ErrInvalidParams, call: func(ctx context.Context, c jsonrpc.Caller, _ <-chan struct{}) error {
			bc := &jsonrpc.BatchCall{Method: "ok", Params: 7}
			if err := c.Batch(ctx, bc); err != nil {
				return err
			}
			return bc.Err
		}},
		{name: "ctx ended before", is: context.Canceled, call: func(ctx context.Context, c jsonrpc.Caller, _ <-chan struct{}) error {
			ctx, cancel := context.WithCancel(ctx)
			cancel()
			return c.Call(ctx, "ok", nil, nil)
		}},
		{name: "closed before", closed: true, is: jsonrpc.ErrClosed, call: func(ctx context.Context, c jsonrpc.Caller, _ <-chan struct{}) error {
			return c.Call(ctx, "ok", nil, nil)
		}},
		{name: "answered not run", is: jsonrpc.ErrNotRun, call: func(ctx context.Context, c jsonrpc.Caller, _ <-chan struct{}) error {
			return c.Call(ctx, "notrun", nil, nil)
		}},
		{name: "answered overloaded", is: jsonrpc.ErrOverloaded, call: func(ctx context.Context, c jsonrpc.Caller, _ <-chan struct{}) error {
			return c.Call(ctx, "overloaded", nil, nil)
		}},
		{name: "method not found", is: jsonrpc.ErrMethodNotFound, call: func(ctx context.Context, c jsonrpc.Caller, _ <-chan struct{}) error {
			return c.Call(ctx, "nope", nil, nil)
		}},
		{name: "answered another error", mayHave: true, is: jsonrpc.NewError(-32001, ""), call: func(ctx context.Context, c jsonrpc.Caller, _ <-chan struct{}) error {
			return c.Call(ctx, "fail", nil, nil)
		}},
		{name: "result cannot be decoded", mayHave: true, call: func(ctx context.Context, c jsonrpc.Caller, _ <-chan struct{}) error {
			var s string
			return c.Call(ctx, "ok", nil, &s)
		}},
		{name: "ctx ended after the send", mayHave: true, is: context.Canceled, call: func(ctx context.Context, c jsonrpc.Caller, started <-chan struct{}) error {
			ctx, cancel := context.WithCancel(ctx)
			go func() { <-started; cancel() }()
			return c.Call(ctx, "wait", nil, nil)
		}},
		{name: "batch: ctx ended after the send", mayHave: true, is: context.Canceled, call: func(ctx context.Context, c jsonrpc.Caller, started <-chan struct{}) error {
			ctx, cancel := context.WithCancel(ctx)
			go func() { <-started; cancel() }()
			bc := &jsonrpc.BatchCall{Method: "wait"}
			err := c.Batch(ctx, bc)
			assert.True(t, jsonrpc.MayHaveRun(bc.Err), "the call's MayHaveRun(%v)", bc.Err)
			if err == nil { // InProcess: the handler answered with ctx's error
				return bc.Err
			}
			return err
		}},
		{name: "connection ended after the send", dies: true, mayHave: true, is: jsonrpc.ErrClosed, call: func(ctx context.Context, c jsonrpc.Caller, _ <-chan struct{}) error {
			return c.Call(ctx, "die", nil, nil)
		}},
	}
	for _, r := range rigs {
		t.Run(r.name, func(t *testing.T) {
			for _, tc := range cases {
				t.Run(tc.name, func(t *testing.T) {
					checkLeaks(t)
					started := make(chan struct{}, 1)
					rig := r.make(t, started)
					if tc.closed && rig.close == nil || tc.dies && rig.die == nil {
						t.Skip("no transport")
					}
					if tc.closed {
						rig.close()
					}
					err := rig.run(t, func(ctx context.Context, c jsonrpc.Caller) error {
						return tc.call(ctx, c, started)
					})
					require.Error(t, err)
					if tc.is != nil {
						assert.ErrorIs(t, err, tc.is)
					}
					assert.Equal(t, tc.mayHave, jsonrpc.MayHaveRun(err), "MayHaveRun(%v)", err)
				})
			}
		})
	}
}

// TestMayHaveRunValues classifies errors made by hand.
func TestMayHaveRunValues(t *testing.T) {
	tests := []struct {
		name string
		err  error
		want bool
	}{
		{"nil: it ran", nil, true},
		{"HTTP 415 refuses", &jsonrpc.HTTPError{StatusCode: 415}, false},
		{"HTTP 502 after the server took it", &jsonrpc.HTTPError{StatusCode: 502}, true},
		{"invalid params: the handler ran", jsonrpc.ErrInvalidParams, true},
		{"parse error", jsonrpc.ErrParse, false},
		{"a bare ErrClosed was never sent", jsonrpc.ErrClosed, false},
		{"a bare ctx error was never sent", context.Canceled, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, jsonrpc.MayHaveRun(tc.err))
		})
	}
}

// shortWriter takes the first n bytes written to it, and fails the write
// that would pass them and every write after.
type shortWriter struct {
	mu   sync.Mutex
	n    int
	took []byte
}

func (w *shortWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	k := min(len(p), w.n-len(w.took))
	w.took = append(w.took, p[:k]...)
	if k < len(p) {
		return k, errors.New("the write failed (test)")
	}
	return k, nil
}

// TestMayHaveRunFailedWrite: a call whose write fails says it may have
// run once any byte of its request went out (the peer may read a line
// that lacks only its newline, or the whole request went out before the
// failure), and says it did not when none did.
func TestMayHaveRunFailedWrite(t *testing.T) {
	const request = `{"jsonrpc":"2.0","id":1,"method":"m"}` + "\n"
	for _, tc := range []struct {
		name string
		n    int // bytes the writer takes
		ran  bool
	}{
		{"nothing written", 0, false},
		{"a part written", 10, true},
		{"all but the newline", len(request) - 1, true},
	} {
		// A call whose ctx can end buffers its request, which a
		// goroutine of the connection's writes; one whose ctx cannot
		// writes it itself.
		for _, cancellable := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/cancellable=%v", tc.name, cancellable), func(t *testing.T) {
				checkLeaks(t)
				pr, pw := io.Pipe()
				w := &shortWriter{n: tc.n}
				c := jsonrpc.NewConn(pr, w, nil)
				ctx := context.Background()
				if cancellable {
					var cancel context.CancelFunc
					ctx, cancel = context.WithCancel(ctx)
					defer cancel()
				}
				err := c.Call(ctx, "m", nil, nil)
				require.ErrorIs(t, err, jsonrpc.ErrClosed)
				assert.Equal(t, tc.ran, jsonrpc.MayHaveRun(err), "%v", err)
				w.mu.Lock()
				assert.Equal(t, request[:tc.n], string(w.took))
				w.mu.Unlock()
				_ = pw.Close()
				_ = c.Close()
			})
		}
	}
	// So do the calls of a batch, one line for all.
	for _, n := range []int{0, 10} {
		pr, pw := io.Pipe()
		c := jsonrpc.NewConn(pr, &shortWriter{n: n}, nil)
		ctx, cancel := context.WithCancel(context.Background())
		a, b := &jsonrpc.BatchCall{Method: "a"}, &jsonrpc.BatchCall{Method: "b"}
		err := c.Batch(ctx, &jsonrpc.BatchCall{Method: "n", Notify: true}, a, b)
		cancel()
		assert.ErrorIs(t, err, jsonrpc.ErrClosed)
		for _, bc := range []*jsonrpc.BatchCall{a, b} {
			assert.ErrorIs(t, bc.Err, jsonrpc.ErrClosed)
			assert.Equal(t, n > 0, jsonrpc.MayHaveRun(bc.Err), "batch, %d bytes written: %v", n, bc.Err)
		}
		_ = pw.Close()
		_ = c.Close()
	}
}

// stuckWriter takes nothing: its Write says when it has started, and
// blocks until Close, which fails it with none of its bytes written.
type stuckWriter struct {
	entered chan struct{}
	closed  chan struct{}
	once    sync.Once
}

func (w *stuckWriter) Write([]byte) (int, error) {
	select {
	case w.entered <- struct{}{}:
	default:
	}
	<-w.closed
	return 0, io.ErrClosedPipe
}

func (w *stuckWriter) Close() error {
	w.once.Do(func() { close(w.closed) })
	return nil
}

// TestMayHaveRunCloseDuringWrite: Close while a call's request is stuck in
// a Write that then fails having taken none of its bytes: the call surely
// did not run. (Close set the writer's error while the write was in
// flight, which once hid how much of it went out.)
func TestMayHaveRunCloseDuringWrite(t *testing.T) {
	checkLeaks(t)
	pr, pw := io.Pipe()
	defer pw.Close()
	w := &stuckWriter{entered: make(chan struct{}, 1), closed: make(chan struct{})}
	c := jsonrpc.NewConn(pr, w, &jsonrpc.Options{StopGrace: 50 * time.Millisecond})
	errc := make(chan error, 1)
	go func() { errc <- c.Call(context.Background(), "m", nil, nil) }()
	recv(t, w.entered, "the request's Write")
	require.NoError(t, c.Close())
	err := recv(t, errc, "the call to fail")
	require.ErrorIs(t, err, jsonrpc.ErrClosed)
	assert.False(t, jsonrpc.MayHaveRun(err), "MayHaveRun(%v) = true, but not one byte of the request was written", err)
}

// failedWriteTransport hands nothing back, and fails every WriteMessage after
// the message may have gone out, as a transport whose write timed out
// once its bytes were on the wire does.
type failedWriteTransport struct {
	closed chan struct{}
	once   sync.Once
	sent   chan string
}

func (t *failedWriteTransport) ReadMessage() ([]byte, error) {
	<-t.closed
	return nil, io.EOF
}

func (t *failedWriteTransport) WriteMessage(msg []byte) error {
	t.sent <- string(msg)
	return errors.New("the write timed out after the message went out (test)")
}

func (t *failedWriteTransport) Close() error {
	t.once.Do(func() { close(t.closed) })
	return nil
}

// TestMayHaveRunFailedTransportWrite: over a Transport, a request handed
// to WriteMessage may have run, whatever WriteMessage returned.
func TestMayHaveRunFailedTransportWrite(t *testing.T) {
	checkLeaks(t)
	tr := &failedWriteTransport{closed: make(chan struct{}), sent: make(chan string, 1)}
	c := jsonrpc.NewTransportConn(tr, nil)
	err := c.Call(context.Background(), "m", nil, nil)
	require.ErrorIs(t, err, jsonrpc.ErrClosed)
	assert.Equal(t, `{"jsonrpc":"2.0","id":1,"method":"m"}`, recv(t, tr.sent, "the request handed to the transport"))
	assert.True(t, jsonrpc.MayHaveRun(err), "%v", err)
	_ = c.Close()
}

// TestMayHaveRunBatchCtxThroughInterceptors: a batch whose calls pass
// through interceptors, and whose ctx ends once it went out, fails with
// an error that says it may have run, as one without interceptors does.
func TestMayHaveRunBatchCtxThroughInterceptors(t *testing.T) {
	checkLeaks(t)
	pass := func(next jsonrpc.SendFunc) jsonrpc.SendFunc { return next }
	c, peer := newRawPeer(t, &jsonrpc.Options{Interceptors: []jsonrpc.Interceptor{pass}})
	ctx, cancel := context.WithCancel(t.Context())
	errc := make(chan error, 1)
	bc := &jsonrpc.BatchCall{Method: "m"}
	go func() { errc <- c.Batch(ctx, bc) }()
	peer.next(t) // the batch went out, and is never answered
	cancel()
	err := recv(t, errc, "Batch to return")
	require.ErrorIs(t, err, context.Canceled)
	assert.True(t, jsonrpc.MayHaveRun(err), "MayHaveRun(%v)", err)
	assert.True(t, jsonrpc.MayHaveRun(bc.Err), "the call's MayHaveRun(%v)", bc.Err)
}
