package jsonrpc_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"iter"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ndjsonrpc/jsonrpc"
)

// pipeBackend serves mux on the far end of each connection a Redialer
// dials, over net.Pipe, and can break the connections it served.
type pipeBackend struct {
	mux   *jsonrpc.Mux
	fail  atomic.Int32 // dials to refuse before the next one succeeds
	dials atomic.Int32 // dials attempted

	mu   sync.Mutex
	ends []net.Conn // the server's ends, to break
	wg   sync.WaitGroup
	gate chan struct{} // if not nil, each dial waits for it
}

var errRefused = errors.New("connection refused (test)")

func (b *pipeBackend) dial(ctx context.Context) (*jsonrpc.Conn, error) {
	b.dials.Add(1)
	if b.gate != nil {
		select {
		case <-b.gate:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	if b.fail.Load() > 0 {
		b.fail.Add(-1)
		return nil, errRefused
	}
	client, server := net.Pipe()
	b.mu.Lock()
	b.ends = append(b.ends, server)
	b.mu.Unlock()
	b.wg.Go(func() {
		_ = jsonrpc.Serve(context.Background(), server, server, b.mux)
		_ = server.Close()
	})
	return jsonrpc.NewConn(client, client, nil), nil
}

// breakAll closes the server's end of every connection served so far.
func (b *pipeBackend) breakAll() {
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, c := range b.ends {
		_ = c.Close()
	}
	b.ends = nil
}

func (b *pipeBackend) close() {
	b.breakAll()
	b.wg.Wait()
}

func newBackend() *pipeBackend {
	mux := new(jsonrpc.Mux)
	mux.Handle("add", jsonrpc.Func(func(_ context.Context, p [2]int) (int, error) { return p[0] + p[1], nil }))
	return &pipeBackend{mux: mux}
}

func TestRedialerReconnects(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := newBackend()
		defer b.close()
		var connects atomic.Int32
		r := &jsonrpc.Redialer{
			Dial: b.dial,
			OnConnect: func(ctx context.Context, c *jsonrpc.Conn) error {
				connects.Add(1)
				var n int
				return c.Call(ctx, "add", [2]int{0, 0}, &n) // a session's first call
			},
		}
		defer r.Close()
		for i := range 3 {
			var n int
			require.NoError(t, r.Call(t.Context(), "add", [2]int{i, 1}, &n), "call %d", i)
			assert.Equal(t, i+1, n)
			b.breakAll()
			synctest.Wait() // the connection sees its end
		}
		assert.Equal(t, int32(3), connects.Load(), "OnConnect ran once per connection")
		assert.Equal(t, int32(3), b.dials.Load())
	})
}

func TestRedialerBackoff(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := newBackend()
		defer b.close()
		b.fail.Store(1000) // refuse every dial for now
		r := &jsonrpc.Redialer{Dial: b.dial, MinBackoff: 100 * time.Millisecond, MaxBackoff: time.Second}
		defer r.Close()

		ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
		defer cancel()
		err := r.Call(ctx, "add", [2]int{1, 2}, nil)
		require.ErrorIs(t, err, context.DeadlineExceeded)
		assert.ErrorIs(t, err, errRefused, "the error says why no connection came")
		// Waits of 50-100, 100-200, ... ms, then 0.5-1 s each: in 10 s,
		// between 11 and 22 dials, not thousands.
		n := b.dials.Load()
		assert.GreaterOrEqual(t, n, int32(11), "dials in 10 s")
		assert.LessOrEqual(t, n, int32(22), "dials in 10 s")

		// Once the backend is back, a waiting call goes through.
		b.fail.Store(0)
		var sum int
		require.NoError(t, r.Call(t.Context(), "add", [2]int{1, 2}, &sum))
		assert.Equal(t, 3, sum)
	})
}

func TestRedialerCallsWaitForTheConnection(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := newBackend()
		defer b.close()
		b.gate = make(chan struct{})
		r := &jsonrpc.Redialer{Dial: b.dial}
		defer r.Close()

		results := make(chan error, 4)
		for range 4 {
			go func() {
				var n int
				results <- r.Call(t.Context(), "add", [2]int{2, 2}, &n)
			}()
		}
		short, cancel := context.WithTimeout(t.Context(), time.Second)
		defer cancel()
		assert.ErrorIs(t, r.Call(short, "add", [2]int{1, 1}, nil), context.DeadlineExceeded,
			"a call waits for the connection no longer than its ctx")
		close(b.gate)
		for range 4 {
			assert.NoError(t, <-results)
		}
		assert.Equal(t, int32(1), b.dials.Load(), "one dial serves every waiting call")
	})
}

func TestRedialerRetry(t *testing.T) {
	for _, tc := range []struct {
		name  string
		retry bool
	}{{"not idempotent", false}, {"idempotent", true}} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				b := newBackend()
				defer b.close()
				var runs atomic.Int32
				started := make(chan struct{}, 2)
				b.mux.Handle("slow", jsonrpc.Func(func(ctx context.Context, _ struct{}) (string, error) {
					if runs.Add(1) == 1 {
						started <- struct{}{}
						<-ctx.Done() // the first run never answers: its connection breaks
						return "", ctx.Err()
					}
					return "done", nil
				}))
				r := &jsonrpc.Redialer{Dial: b.dial, Retry: func(method string) bool { return tc.retry && method == "slow" }}
				defer r.Close()

				res := make(chan error, 1)
				var got string
				go func() { res <- r.Call(t.Context(), "slow", nil, &got) }()
				<-started
				b.breakAll()
				err := <-res
				if tc.retry {
					require.NoError(t, err)
					assert.Equal(t, "done", got)
					assert.Equal(t, int32(2), runs.Load(), "made again on a new connection")
				} else {
					require.ErrorIs(t, err, jsonrpc.ErrClosed)
					assert.Equal(t, int32(1), runs.Load(), "not made again: it may have run")
				}
			})
		})
	}
}

func TestRedialerStreamBreaks(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := newBackend()
		defer b.close()
		release := make(chan struct{})
		b.mux.Handle("items", jsonrpc.Stream(func(ctx context.Context, _ struct{}) iter.Seq2[int, error] {
			return func(yield func(int, error) bool) {
				if !yield(1, nil) {
					return
				}
				select {
				case <-release:
				case <-ctx.Done():
				}
			}
		}))
		r := &jsonrpc.Redialer{Dial: b.dial}
		defer r.Close()
		var items int
		var last error
		for _, err := range r.Stream(t.Context(), "items", nil) {
			if err != nil {
				last = err
				break
			}
			items++
			b.breakAll()
		}
		close(release)
		assert.Equal(t, 1, items)
		assert.ErrorIs(t, last, jsonrpc.ErrClosed, "a stream whose connection broke ends with an error")
	})
}

// A Batch goes on the current connection, and on a new one once that
// broke, dialled at once since its answers count as calls answered; a
// batch whose connection breaks while it waits is not made again: its
// calls without an answer fail with errors wrapping ErrClosed.
func TestRedialerBatch(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := newBackend()
		defer b.close()
		var held atomic.Int32
		release := make(chan struct{})
		b.mux.Handle("hold", jsonrpc.Func(func(ctx context.Context, _ struct{}) (int, error) {
			held.Add(1)
			select {
			case <-release:
			case <-ctx.Done():
			}
			return 0, nil
		}))
		r := &jsonrpc.Redialer{Dial: b.dial}
		defer r.Close()

		for round := range 2 {
			var x, y int
			calls := []*jsonrpc.BatchCall{
				{Method: "add", Params: [2]int{round, 1}, Result: &x},
				{Method: "add", Params: [2]int{round, 2}, Result: &y},
			}
			require.NoError(t, r.Batch(t.Context(), calls...), "round %d", round)
			require.NoError(t, calls[0].Err)
			require.NoError(t, calls[1].Err)
			assert.Equal(t, [2]int{round + 1, round + 2}, [2]int{x, y}, "round %d", round)
			b.breakAll()
			synctest.Wait() // the connection sees its end
		}
		assert.Equal(t, int32(2), b.dials.Load(), "one connection per round")

		calls := []*jsonrpc.BatchCall{
			{Method: "add", Params: [2]int{2, 2}},
			{Method: "hold"},
		}
		done := make(chan error, 1)
		go func() { done <- r.Batch(t.Context(), calls...) }()
		synctest.Wait() // the batch is served, but for hold
		// The third connection is dialled at once: the batches answered
		// on the first two count as calls answered, so that letting them
		// go is no sign of a peer that accepts and serves nothing.
		require.Equal(t, int32(1), held.Load(), "the batch is served without a backoff first")
		b.breakAll()
		err := <-done
		close(release)
		synctest.Wait()
		assert.Equal(t, int32(1), held.Load(), "the batch was not made again")
		assert.Equal(t, int32(3), b.dials.Load(), "no dial for the batch")
		if assert.Error(t, err) {
			assert.ErrorIs(t, err, jsonrpc.ErrClosed)
		}
		// A batch is answered in one array, once every entry is done: the
		// break left both calls without an answer.
		for i, bc := range calls {
			assert.ErrorIs(t, bc.Err, jsonrpc.ErrClosed, "call %d", i)
			assert.True(t, jsonrpc.MayHaveRun(bc.Err), "call %d was sent, and may have run", i)
		}

		// With no connection to be had, each call says so, unsent, as
		// Conn.Batch's calls do on a connection that has ended.
		b.fail.Store(1000)
		b.breakAll()
		synctest.Wait()
		ctx, cancel := context.WithTimeout(t.Context(), time.Second)
		defer cancel()
		calls = []*jsonrpc.BatchCall{{Method: "add", Params: [2]int{1, 1}}, {Method: "add", Notify: true}}
		err = r.Batch(ctx, calls...)
		require.ErrorIs(t, err, context.DeadlineExceeded)
		assert.ErrorIs(t, calls[0].Err, context.DeadlineExceeded)
		assert.False(t, jsonrpc.MayHaveRun(calls[0].Err), "never sent")
		assert.NoError(t, calls[1].Err, "a notification has no outcome")
		require.NoError(t, r.Close())
		calls[0].Err = nil
		assert.ErrorIs(t, r.Batch(t.Context(), calls...), jsonrpc.ErrClosed)
		assert.ErrorIs(t, calls[0].Err, jsonrpc.ErrClosed, "after Close")
	})
}

// A Stream answered counts as a call answered too: after streams on
// connections let go one after another, the next connection is dialled
// at once.
func TestRedialerStreamAnswered(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := newBackend()
		defer b.close()
		b.mux.Handle("two", jsonrpc.Stream(func(context.Context, struct{}) iter.Seq2[int, error] {
			return func(yield func(int, error) bool) {
				_ = yield(1, nil) && yield(2, nil)
			}
		}))
		r := &jsonrpc.Redialer{Dial: b.dial}
		defer r.Close()
		start := time.Now()
		for round := range 3 {
			var items []string
			for item, err := range r.Stream(t.Context(), "two", nil) {
				require.NoError(t, err, "round %d", round)
				items = append(items, string(item))
			}
			assert.Equal(t, []string{"1", "2"}, items, "round %d", round)
			b.breakAll()
			synctest.Wait() // the connection sees its end
		}
		assert.Equal(t, int32(3), b.dials.Load())
		assert.Zero(t, time.Since(start), "no wait between the connections")
	})
}

// A call whose own context ends shows nothing of its connection: it is
// no answer, and connections let go one after another with only such
// calls between them are dialled again after a wait.
func TestRedialerTimeoutIsNoAnswer(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := newBackend()
		defer b.close()
		b.mux.Handle("hang", jsonrpc.Func(func(ctx context.Context, _ struct{}) (int, error) {
			<-ctx.Done()
			return 0, ctx.Err()
		}))
		r := &jsonrpc.Redialer{Dial: b.dial, MinBackoff: 100 * time.Millisecond}
		defer r.Close()
		for round := range 2 {
			ctx, cancel := context.WithTimeout(t.Context(), 10*time.Millisecond)
			err := r.Call(ctx, "hang", nil, nil)
			cancel()
			require.ErrorIs(t, err, context.DeadlineExceeded, "round %d", round)
			b.breakAll()
			synctest.Wait() // the connection sees its end
		}
		// The third connection, the second let go in a row, comes after
		// a wait of 50-100 ms.
		start := time.Now()
		var sum int
		require.NoError(t, r.Call(t.Context(), "add", [2]int{1, 2}, &sum))
		assert.Equal(t, 3, sum)
		assert.GreaterOrEqual(t, time.Since(start), 50*time.Millisecond)
		assert.Equal(t, int32(3), b.dials.Load())
	})
}

func TestRedialerClose(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := newBackend()
		defer b.close()
		b.gate = make(chan struct{}) // the dial never finishes
		r := &jsonrpc.Redialer{Dial: b.dial}
		res := make(chan error, 1)
		go func() { res <- r.Call(t.Context(), "add", [2]int{1, 1}, nil) }()
		synctest.Wait()
		require.NoError(t, r.Close())
		assert.ErrorIs(t, <-res, jsonrpc.ErrClosed, "a call waiting for a connection fails at Close")
		assert.ErrorIs(t, r.Call(t.Context(), "add", [2]int{1, 1}, nil), jsonrpc.ErrClosed)
		assert.NoError(t, r.Close(), "Close is idempotent")
	})
}

func TestRedialerNotRunMovesOn(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := newBackend()
		defer b.close()
		var runs atomic.Int32
		b.mux.Handle("work", jsonrpc.Func(func(context.Context, struct{}) (int32, error) {
			if n := runs.Add(1); n == 1 {
				return 0, jsonrpc.ErrNotRun // as a server that is stopping answers
			} else {
				return n, nil
			}
		}))
		r := &jsonrpc.Redialer{Dial: b.dial}
		defer r.Close()
		var n int32
		require.NoError(t, r.Call(t.Context(), "work", nil, &n))
		assert.Equal(t, int32(2), n, "made again after the peer said it did not run it")
		assert.Equal(t, int32(2), b.dials.Load(), "on a new connection")
	})
}

// TestRedialerNotRunBacksOff: a peer that answers every call ErrNotRun and
// keeps its connections open. Each connection let go is dialed again
// after a wait that grows (not in a tight loop), is shut down rather than
// left open, and none is still open once the Redialer is closed.
func TestRedialerNotRunBacksOff(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := newBackend()
		defer b.close()
		b.mux.Handle("work", jsonrpc.Func(func(context.Context, struct{}) (int, error) {
			return 0, jsonrpc.ErrNotRun
		}))
		var mu sync.Mutex
		var conns []*jsonrpc.Conn
		r := &jsonrpc.Redialer{Dial: func(ctx context.Context) (*jsonrpc.Conn, error) {
			if b.dials.Load() >= 100 {
				return nil, errRefused // enough to show a tight loop
			}
			c, err := b.dial(ctx)
			if err == nil {
				mu.Lock()
				conns = append(conns, c)
				mu.Unlock()
			}
			return c, err
		}}
		ctx, cancel := context.WithTimeout(t.Context(), 2*time.Second)
		defer cancel()
		assert.ErrorIs(t, r.Call(ctx, "work", nil, nil), context.DeadlineExceeded)
		// 2 s of waits from 25-50 ms up, doubling: about eight dials.
		assert.LessOrEqual(t, b.dials.Load(), int32(12), "dials in 2 s")
		assert.GreaterOrEqual(t, b.dials.Load(), int32(3), "dials in 2 s")
		require.NoError(t, r.Close())
		mu.Lock()
		defer mu.Unlock()
		for i, c := range conns {
			select {
			case <-c.Done():
			default:
				t.Errorf("connection %d of %d still open after the Redialer's Close", i+1, len(conns))
			}
		}
	})
}

// TestRedialerLetsEndingConnectionGo: the peer ends its output while a
// handler of ours still runs, so the connection fails every call at once
// (not sent) but is not done yet (StopGrace). A call must not be tried on
// it again and again until it is: it takes a new connection.
func TestRedialerLetsEndingConnectionGo(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		held := make(chan struct{})
		var attempts atomic.Int32
		count := func(next jsonrpc.SendFunc) jsonrpc.SendFunc {
			return func(ctx context.Context, req *jsonrpc.Request) (json.RawMessage, error) {
				if attempts.Add(1) > 1000 {
					return nil, errors.New("a tight loop (test)")
				}
				return next(ctx, req)
			}
		}
		hold := jsonrpc.HandlerFunc(func(ctx context.Context, _ *jsonrpc.Request) (any, error) {
			close(held)
			<-ctx.Done()
			return nil, ctx.Err()
		})
		var dials atomic.Int32
		var pipes []io.Closer
		r := &jsonrpc.Redialer{Dial: func(ctx context.Context) (*jsonrpc.Conn, error) {
			if dials.Add(1) > 1 {
				return nil, errRefused
			}
			inR, inW := io.Pipe()   // the peer's output
			outR, outW := io.Pipe() // ours
			go func() { _, _ = io.Copy(io.Discard, outR) }()
			pipes = append(pipes, inW, outR)
			go func() {
				_, _ = io.WriteString(inW, `{"jsonrpc":"2.0","id":1,"method":"hold"}`+"\n")
				<-held
				_ = inW.Close() // the peer's output ends
			}()
			return jsonrpc.NewConn(inR, outW, &jsonrpc.Options{Handler: hold, StopGrace: time.Second, Interceptors: []jsonrpc.Interceptor{count}}), nil
		}}
		defer func() {
			_ = r.Close()
			for _, p := range pipes {
				_ = p.Close()
			}
		}()
		ctx, cancel := context.WithTimeout(t.Context(), 10*time.Millisecond)
		_ = r.Call(ctx, "x", nil, nil) // makes the connection
		cancel()
		<-held
		synctest.Wait() // the peer's output has ended
		attempts.Store(0)
		ctx, cancel = context.WithTimeout(t.Context(), 200*time.Millisecond)
		defer cancel()
		err := r.Call(ctx, "x", nil, nil)
		assert.ErrorIs(t, err, context.DeadlineExceeded, "no second backend to call")
		assert.LessOrEqual(t, attempts.Load(), int32(2), "attempts on the ending connection")
	})
}
