package jsonrpc_test

// This file tests Peer where it has no peer to call (outside a handler,
// in a handler served over HTTP), that it reaches the connection from a
// context derived from the handler's, and that it allocates nothing.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"iter"
	"net/http/httptest"
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

// peerOutcome is what each method of a Peer returned.
type peerOutcome struct {
	Call, Notify, Batch error
	Stream              []error // the error of each pair
	StreamItems         int     // the pairs that carried an item
}

// probePeer calls each method of jsonrpc.Peer(ctx).
func probePeer(ctx context.Context) peerOutcome {
	var o peerOutcome
	p := jsonrpc.Peer(ctx)
	o.Call = p.Call(ctx, "m", []int{1}, nil)
	o.Notify = p.Notify(ctx, "n", nil)
	o.Batch = p.Batch(ctx, &jsonrpc.BatchCall{Method: "m"})
	for item, err := range p.Stream(ctx, "s", nil) {
		if item != nil {
			o.StreamItems++
		}
		o.Stream = append(o.Stream, err)
	}
	return o
}

type peerCtxKey struct{}

func TestPeerOutsideHandler(t *testing.T) {
	cancelled, cancel := context.WithCancel(t.Context())
	cancel()
	tests := []struct {
		name string
		ctx  context.Context
	}{
		{"Background", context.Background()},
		{"TODO", context.TODO()},
		{"test context", t.Context()},
		{"with a value", context.WithValue(t.Context(), peerCtxKey{}, 1)},
		{"cancelled", cancelled},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			o := probePeer(tc.ctx)
			assert.ErrorIs(t, o.Call, jsonrpc.ErrNoConnection, "Call")
			assert.ErrorIs(t, o.Notify, jsonrpc.ErrNoConnection, "Notify")
			assert.ErrorIs(t, o.Batch, jsonrpc.ErrNoConnection, "Batch")
			if assert.Len(t, o.Stream, 1, "Stream yields one pair") {
				assert.ErrorIs(t, o.Stream[0], jsonrpc.ErrNoConnection, "Stream")
			}
			assert.Zero(t, o.StreamItems)
		})
	}
	t.Run("a typed method through it", func(t *testing.T) {
		_, err := v1Add.Call(t.Context(), jsonrpc.Peer(t.Context()), v1Operands{})
		assert.ErrorIs(t, err, jsonrpc.ErrNoConnection)
		assert.ErrorIs(t, v1Notify.Notify(t.Context(), jsonrpc.Peer(t.Context()), v1Note{}), jsonrpc.ErrNoConnection)
		var errs []error
		for _, err := range v1Items.Call(t.Context(), jsonrpc.Peer(t.Context()), v1Count{N: 1}) {
			errs = append(errs, err)
		}
		if assert.Len(t, errs, 1) {
			assert.ErrorIs(t, errs[0], jsonrpc.ErrNoConnection)
		}
	})
}

// TestPeerOverHTTP checks that a handler served over HTTP cannot call the
// client: Call, Batch and Stream fail with an error wrapping
// ErrNoConnection, while Notify works (and goes nowhere with a plain JSON
// response).
func TestPeerOverHTTP(t *testing.T) {
	checkLeaks(t)
	mux := new(jsonrpc.Mux)
	mux.HandleFunc("probe", func(ctx context.Context, _ *jsonrpc.Request) (any, error) {
		o := probePeer(ctx)
		return map[string]any{
			"call":        o.Call != nil && errors.Is(o.Call, jsonrpc.ErrNoConnection),
			"batch":       o.Batch != nil && errors.Is(o.Batch, jsonrpc.ErrNoConnection),
			"notify":      o.Notify == nil,
			"streamPairs": len(o.Stream),
			"stream":      len(o.Stream) == 1 && errors.Is(o.Stream[0], jsonrpc.ErrNoConnection),
		}, nil
	})
	ts := httptest.NewServer(&jsonrpc.Server{Options: jsonrpc.Options{Handler: mux}})
	defer ts.Close()
	c := &jsonrpc.HTTPClient{URL: ts.URL, HTTP: ts.Client()}
	var got map[string]any
	require.NoError(t, c.Call(t.Context(), "probe", nil, &got))
	assert.Equal(t, map[string]any{"call": true, "batch": true, "notify": true, "streamPairs": 1.0, "stream": true}, got)
}

// TestPeerDerivedContext checks that Peer reaches the connection from a
// context derived from the handler's, on a connection and in process.
func TestPeerDerivedContext(t *testing.T) {
	checkLeaks(t)
	var notes []string
	inner := new(jsonrpc.Mux)
	inner.HandleFunc("derived", func(ctx context.Context, _ *jsonrpc.Request) (any, error) {
		ctx, cancel := context.WithCancel(context.WithValue(ctx, peerCtxKey{}, "x"))
		defer cancel()
		return nil, jsonrpc.Peer(ctx).Notify(ctx, "from/derived", []string{ctx.Value(peerCtxKey{}).(string)})
	})
	ip := &jsonrpc.InProcess{Handler: inner, OnNotify: func(req *jsonrpc.Request) {
		notes = append(notes, req.Method+" "+string(req.Params))
	}}
	require.NoError(t, ip.Call(t.Context(), "derived", nil, nil))
	assert.Equal(t, []string{`from/derived ["x"]`}, notes)

	got := make(chan string, 1)
	c := newPairOpts(t, inner, &jsonrpc.Options{OnNotify: func(req *jsonrpc.Request) {
		got <- req.Method + " " + string(req.Params)
	}})
	require.NoError(t, c.Call(t.Context(), "derived", nil, nil))
	assert.Equal(t, `from/derived ["x"]`, recv(t, got, "the notification"))
}

// peerSink keeps what Peer returns, so that the compiler cannot drop the
// call.
var peerSink jsonrpc.Caller

// allocsOfPeer measures the allocations of Peer(ctx) and of Peer on a
// context derived from ctx.
func allocsOfPeer(ctx context.Context) [2]float64 {
	derived := context.WithValue(ctx, peerCtxKey{}, 1)
	return [2]float64{
		testing.AllocsPerRun(100, func() { peerSink = jsonrpc.Peer(ctx) }),
		testing.AllocsPerRun(100, func() { peerSink = jsonrpc.Peer(derived) }),
	}
}

func TestPeerDoesNotAllocate(t *testing.T) {
	checkLeaks(t)
	mux := new(jsonrpc.Mux)
	mux.HandleFunc("allocs", func(ctx context.Context, _ *jsonrpc.Request) (any, error) {
		return allocsOfPeer(ctx), nil
	})
	mux.Handle("stream_allocs", jsonrpc.Stream(func(ctx context.Context, _ struct{}) iter.Seq2[[2]float64, error] {
		return func(yield func([2]float64, error) bool) { yield(allocsOfPeer(ctx), nil) }
	}))
	a, _ := twConnPair(t, nil, &jsonrpc.Options{Handler: mux})
	tests := []struct {
		name string
		c    jsonrpc.Caller
	}{
		{"on a connection", newPair(t, mux)},
		{"on a two-way Conn", a},
		{"in process", &jsonrpc.InProcess{Handler: mux}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var got [2]float64
			require.NoError(t, tc.c.Call(t.Context(), "allocs", nil, &got))
			assert.Equal(t, [2]float64{0, 0}, got, "allocations of Peer(ctx) and Peer(derived ctx) in a handler")
			n := 0
			for raw, err := range tc.c.Stream(t.Context(), "stream_allocs", nil) {
				require.NoError(t, err)
				require.NoError(t, json.Unmarshal(raw, &got))
				n++
			}
			assert.Equal(t, 1, n)
			assert.Equal(t, [2]float64{0, 0}, got, "allocations of Peer(ctx) and Peer(derived ctx) in a stream")
		})
	}
	t.Run("outside a handler", func(t *testing.T) {
		assert.Equal(t, [2]float64{0, 0}, allocsOfPeer(t.Context()))
	})
}

// A handler may hand its Peer to work that outlives it: Call still
// reaches the other side, for as long as the connection lasts, while
// Notify, which belongs to the handler's response, fails.
func TestPeerAfterHandlerReturned(t *testing.T) {
	checkLeaks(t)
	type late struct {
		answer       string
		call, notify error
	}
	got := make(chan late, 1)
	srv := new(jsonrpc.Mux)
	srv.HandleFunc("start", func(ctx context.Context, _ *jsonrpc.Request) (any, error) {
		returned := make(chan struct{})
		go func() {
			<-returned
			ctx := context.WithoutCancel(ctx)
			var l late
			l.call = jsonrpc.Peer(ctx).Call(ctx, "ask", nil, &l.answer)
			l.notify = jsonrpc.Peer(ctx).Notify(ctx, "note", nil)
			got <- l
		}()
		defer close(returned)
		return "started", nil
	})
	cli := new(jsonrpc.Mux)
	cli.HandleFunc("ask", func(context.Context, *jsonrpc.Request) (any, error) { return "yes", nil })
	c := newPairOpts(t, srv, &jsonrpc.Options{Handler: cli})
	var s string
	require.NoError(t, c.Call(t.Context(), "start", nil, &s))
	assert.Equal(t, "started", s)
	l := recv(t, got, "the late call")
	assert.NoError(t, l.call)
	assert.Equal(t, "yes", l.answer)
	assert.Error(t, l.notify, "Notify after the handler returned")
}

// A call that work a handler started makes with the handler's context
// gives up the handler's slot while it waits; when the handler returns
// before the call ends, the slot is not given back twice: MaxInFlight
// still bounds the handlers that run.
func TestPeerCallOutlivesHandlerSlot(t *testing.T) {
	checkLeaks(t)
	ready := make(chan struct{})
	late := make(chan error, 1)
	var running, most atomic.Int32
	second := make(chan struct{}, 4)
	mux := new(jsonrpc.Mux)
	mux.HandleFunc("spawn", func(ctx context.Context, _ *jsonrpc.Request) (any, error) {
		go func() { late <- jsonrpc.Peer(ctx).Call(context.WithoutCancel(ctx), "later", nil, nil) }()
		<-ready // the call is out, and has given the slot up
		return "ok", nil
	})
	mux.HandleFunc("slow", func(context.Context, *jsonrpc.Request) (any, error) {
		n := running.Add(1)
		defer running.Add(-1)
		for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
		}
		if n > 1 {
			second <- struct{}{}
		}
		select {
		case <-second: // another runs beside this one
		case <-time.After(100 * time.Millisecond):
		}
		return "s", nil
	})
	_, peer := newRawPeer(t, &jsonrpc.Options{Handler: mux, MaxInFlight: 1})
	peer.send(t, `{"jsonrpc":"2.0","id":"sp","method":"spawn"}`)
	later := peer.nextMsg(t)
	require.Equal(t, "later", later.Method)
	close(ready)
	assert.JSONEq(t, `{"jsonrpc":"2.0","id":"sp","result":"ok"}`, peer.next(t))
	for i := range 4 {
		peer.sendf(t, `{"jsonrpc":"2.0","id":%d,"method":"slow"}`, i)
	}
	for range 4 {
		peer.next(t)
	}
	peer.sendf(t, `{"jsonrpc":"2.0","id":%s,"result":1}`, later.ID)
	assert.NoError(t, recv(t, late, "the late call's return"))
	for i := range 2 {
		peer.sendf(t, `{"jsonrpc":"2.0","id":%d,"method":"slow"}`, 10+i)
	}
	peer.next(t)
	peer.next(t)
	assert.Equal(t, int32(1), most.Load(), "handlers that ran at once with MaxInFlight 1")
}

// A handler's call to the peer returns once its ctx ends even while every
// handler slot is taken: it gave its slot up to wait, and does not wait
// for one to come back before it returns (it goes on over MaxInFlight,
// as it would after an abort).
func TestPeerCallCtxWhileSlotsTaken(t *testing.T) {
	checkLeaks(t)
	release := make(chan struct{})
	blockStarted := make(chan struct{})
	outer := make(chan error, 1)
	mux := new(jsonrpc.Mux)
	mux.HandleFunc("outer", func(ctx context.Context, _ *jsonrpc.Request) (any, error) {
		cctx, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
		defer cancel()
		err := jsonrpc.Peer(ctx).Call(cctx, "neverAnswered", nil, nil)
		outer <- err
		return nil, err
	})
	mux.HandleFunc("block", func(context.Context, *jsonrpc.Request) (any, error) {
		close(blockStarted)
		<-release
		return "done", nil
	})
	_, peer := newRawPeer(t, &jsonrpc.Options{Handler: mux, MaxInFlight: 1})
	defer close(release)
	peer.send(t, `{"jsonrpc":"2.0","id":1,"method":"outer"}`)
	require.Equal(t, "neverAnswered", peer.nextMsg(t).Method) // outer waits, its slot given up
	peer.send(t, `{"jsonrpc":"2.0","id":2,"method":"block"}`)
	recv(t, blockStarted, "block to take the slot")
	err := recv(t, outer, "the call with a 100 ms ctx to return while block holds the slot")
	assert.ErrorIs(t, err, context.DeadlineExceeded)
}

// After a handler whose call's ctx ended went on over MaxInFlight (see
// TestPeerCallCtxWhileSlotsTaken) returns, MaxInFlight bounds the
// handlers again: the excess is not handed on, so a queued unit does not
// start while another handler holds the only slot, and starts once it is
// free.
func TestPeerCallOverBoundEndsWithIt(t *testing.T) {
	checkLeaks(t)
	release := make(chan struct{})
	cancelOuter := make(chan struct{})
	outerDone := make(chan struct{})
	started := make(chan string, 4)
	var running, most atomic.Int32
	mux := new(jsonrpc.Mux)
	mux.HandleFunc("outer", func(ctx context.Context, _ *jsonrpc.Request) (any, error) {
		defer close(outerDone)
		cctx, cancel := context.WithCancel(ctx)
		go func() { <-cancelOuter; cancel() }()
		err := jsonrpc.Peer(ctx).Call(cctx, "neverAnswered", nil, nil)
		return nil, err
	})
	mux.HandleFunc("block", func(ctx context.Context, r *jsonrpc.Request) (any, error) {
		n := running.Add(1)
		defer running.Add(-1)
		for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
		}
		started <- r.ID.String()
		<-release
		return "done", nil
	})
	_, peer := newRawPeer(t, &jsonrpc.Options{Handler: mux, MaxInFlight: 1})
	peer.send(t, `{"jsonrpc":"2.0","id":1,"method":"outer"}`)
	require.Equal(t, "neverAnswered", peer.nextMsg(t).Method)
	peer.send(t, `{"jsonrpc":"2.0","id":2,"method":"block"}`)
	recv(t, started, "block 2 to take the slot")
	peer.send(t, `{"jsonrpc":"2.0","id":3,"method":"block"}`)
	time.Sleep(300 * time.Millisecond) // block 3 queued behind the slot
	close(cancelOuter)
	recv(t, outerDone, "outer to return")
	select {
	case id := <-started:
		t.Errorf("block %s started while block 2 still runs, MaxInFlight 1", id)
	case <-time.After(300 * time.Millisecond):
	}
	assert.Equal(t, int32(1), most.Load(), "handlers that ran at once with MaxInFlight 1")
	close(release) // block 2 ends: block 3 must now start (not starved)
	recv(t, started, "block 3 to start once block 2 ended")
	peer.next(t)
	peer.next(t)
	peer.next(t)
}

// A handler's Notify to a peer that stops reading returns once its ctx
// ends: the handler never writes the notification itself, so it does not
// block in a Write that nothing ends.
func TestPeerNotifyCtxWhilePeerStopsReading(t *testing.T) {
	checkLeaks(t)
	returned := make(chan error, 1)
	mux := new(jsonrpc.Mux)
	mux.HandleFunc("flood", func(ctx context.Context, _ *jsonrpc.Request) (any, error) {
		nctx, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
		defer cancel()
		big := []string{strings.Repeat("x", 64<<10)}
		for {
			if err := jsonrpc.Peer(ctx).Notify(nctx, "progress", big); err != nil {
				returned <- err
				return nil, err
			}
		}
	})
	_, send := serveNonReader(t, mux)
	send(`{"jsonrpc":"2.0","id":1,"method":"flood"}`)
	err := recv(t, returned, "Notify to return once its ctx ended, the peer reading nothing")
	assert.ErrorIs(t, err, context.DeadlineExceeded)
}

// A handler's notification reaches the peer while the handler still runs,
// with nothing else written after it: the connection writes it (see
// TestPeerNotifyCtxWhilePeerStopsReading), soon, not with the answer.
func TestPeerNotifyWrittenWhileHandlerRuns(t *testing.T) {
	checkLeaks(t)
	seen := make(chan string, 1)
	mux := new(jsonrpc.Mux)
	mux.HandleFunc("work", func(ctx context.Context, _ *jsonrpc.Request) (any, error) {
		// The reader, which flushes the output before it waits in Read,
		// is there by now: nothing else writes what Notify adds.
		time.Sleep(50 * time.Millisecond)
		if err := jsonrpc.Peer(ctx).Notify(ctx, "progress", []int{1}); err != nil {
			return nil, err
		}
		select {
		case m := <-seen:
			return m, nil
		case <-time.After(waitTimeout):
			return nil, errors.New("the peer did not see the notification while the handler ran")
		}
	})
	c := newPairOpts(t, mux, &jsonrpc.Options{OnNotify: func(r *jsonrpc.Request) {
		seen <- r.Method
	}})
	var got string
	require.NoError(t, c.Call(context.Background(), "work", nil, &got))
	assert.Equal(t, "progress", got)
}

// A Stream's producer whose items a peer that stops reading does not take
// stops once the request is cancelled: its yield waits for room in the
// output only while the handler's ctx lasts, as Notify does.
func TestStreamCancelWhilePeerStopsReading(t *testing.T) {
	checkLeaks(t)
	stopped := make(chan struct{})
	mux := new(jsonrpc.Mux)
	mux.Handle("flood", jsonrpc.Stream(func(ctx context.Context, _ struct{}) iter.Seq2[string, error] {
		return func(yield func(string, error) bool) {
			defer close(stopped)
			big := strings.Repeat("x", 64<<10)
			for yield(big, nil) {
			}
		}
	}))
	c, send := serveNonReader(t, mux)
	// A connection that has sent a message of its own reads on while its
	// output is stuck (one that only answers stops reading instead), so
	// the cancel is read.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	require.NoError(t, c.Notify(ctx, "hello", nil))
	send(`{"jsonrpc":"2.0","id":1,"method":"flood"}`)
	time.Sleep(100 * time.Millisecond) // the output fills up
	send(`{"jsonrpc":"2.0","method":"$/cancelRequest","params":{"id":1}}`)
	recv(t, stopped, "the producer to stop once its request was cancelled, the peer reading nothing")
}

// slowSizeWriter notes the largest Write it is given, and takes each
// slowly.
type slowSizeWriter struct {
	mu      sync.Mutex
	largest int
}

func (w *slowSizeWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	w.largest = max(w.largest, len(p))
	w.mu.Unlock()
	time.Sleep(2 * time.Millisecond)
	return len(p), nil
}

// A handler that sends notifications or stream items faster than the
// peer takes them waits for room once a megabyte is buffered, also
// before the write that the connection's goroutine is to make begins:
// it went on adding there, and on one CPU a single Write carried 5 MiB of
// notifications, 12 MiB of items.
func TestHandlerOutputBounded(t *testing.T) {
	const n, size = 200, 200 << 10
	bound := outputHighWater + 2*size + 1024 // the buffer holds highWater plus a line
	mux := new(jsonrpc.Mux)
	mux.HandleFunc("notify", func(ctx context.Context, _ *jsonrpc.Request) (any, error) {
		item := []string{strings.Repeat("x", size)}
		for range n {
			if err := jsonrpc.Peer(ctx).Notify(ctx, "n", item); err != nil {
				return nil, err
			}
		}
		return "ok", nil
	})
	mux.Handle("stream", jsonrpc.Stream(func(context.Context, struct{}) iter.Seq2[string, error] {
		return func(yield func(string, error) bool) {
			item := strings.Repeat("x", size)
			for i := 0; i < n && yield(item, nil); i++ {
			}
		}
	}))
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	for _, method := range []string{"notify", "stream"} {
		t.Run(method, func(t *testing.T) {
			checkLeaks(t)
			w := new(slowSizeWriter)
			in := `{"jsonrpc":"2.0","id":1,"method":"` + method + `"}` + "\n"
			srv := &jsonrpc.Server{Options: jsonrpc.Options{Handler: mux}}
			require.NoError(t, srv.Serve(t.Context(), strings.NewReader(in), w))
			assert.LessOrEqual(t, w.largest, bound, "the largest Write")
		})
	}
}

// serveNonReader serves h on a Conn whose peer never reads what it
// writes, and returns the Conn and a function that sends the Conn a line
// from the peer. A cleanup closes the pipes and the Conn.
func serveNonReader(t *testing.T, h jsonrpc.Handler) (*jsonrpc.Conn, func(line string)) {
	t.Helper()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe() // the peer never reads
	c := jsonrpc.NewConn(inR, outW, &jsonrpc.Options{Handler: h, StopGrace: 100 * time.Millisecond})
	t.Cleanup(func() {
		_ = outR.Close()
		_ = inW.Close()
		_ = c.Close()
	})
	return c, func(line string) {
		go func() { _, _ = inW.Write([]byte(line + "\n")) }() // a pipe's Write waits for the read
	}
}

// TestPeerWaitGivesUpSlot: a handler that waits for the peer, through
// Peer(ctx)'s Call, Batch or Stream, with the connection's interceptors or
// without, gives up its slot meanwhile, so that the peer's handler can
// call back into this side under MaxInFlight 1: outer (a) -> middle (b)
// -> inner (a). Without the slot given up, the call back waits to the
// guard.
func TestPeerWaitGivesUpSlot(t *testing.T) {
	for _, how := range []string{"call", "batch", "stream"} {
		for _, intercepted := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/intercepted=%v", how, intercepted), func(t *testing.T) {
				checkLeaks(t)
				rec := new(recorder)
				aMux := new(jsonrpc.Mux)
				aMux.Handle("outer", jsonrpc.Func(func(ctx context.Context, _ struct{}) (string, error) {
					var s string
					var err error
					switch how {
					case "call":
						err = jsonrpc.Peer(ctx).Call(ctx, "middle", [1]int{7}, &s)
					case "batch":
						call := &jsonrpc.BatchCall{Method: "middle", Params: [1]int{7}, Result: &s}
						if err = jsonrpc.Peer(ctx).Batch(ctx, call); err == nil {
							err = call.Err
						}
					case "stream":
						for item, ierr := range jsonrpc.Peer(ctx).Stream(ctx, "middles", [1]int{7}) {
							if err = ierr; err == nil {
								err = json.Unmarshal(item, &s)
							}
						}
					}
					return "outer(" + s + ")", err
				}))
				aMux.Handle("inner", jsonrpc.Func(func(_ context.Context, p [1]int) (string, error) {
					return "inner" + strconv.Itoa(p[0]), nil
				}))
				middle := func(ctx context.Context, p [1]int) (string, error) {
					var s string
					err := jsonrpc.Peer(ctx).Call(ctx, "inner", p, &s)
					return "middle(" + s + ")", err
				}
				bMux := new(jsonrpc.Mux)
				bMux.Handle("middle", jsonrpc.Func(middle))
				bMux.Handle("middles", jsonrpc.Stream(func(ctx context.Context, p [1]int) iter.Seq2[string, error] {
					return func(yield func(string, error) bool) {
						yield(middle(ctx, p))
					}
				}))
				aOpts := &jsonrpc.Options{Handler: aMux, MaxInFlight: 1}
				if intercepted {
					aOpts.Interceptors = []jsonrpc.Interceptor{rec.intercept}
				}
				_, b := twConnPair(t, aOpts, &jsonrpc.Options{Handler: bMux})
				ctx, cancel := context.WithTimeout(t.Context(), twGuard)
				defer cancel()
				var got string
				require.NoError(t, b.Call(ctx, "outer", nil, &got))
				assert.Equal(t, "outer(middle(inner7))", got)
				if intercepted {
					assert.Len(t, rec.take(), 1, "outer's call to the peer passed through the interceptor")
				}
			})
		}
	}
}
