package jsonrpc_test

import (
	"context"
	"encoding/json"
	"iter"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ndjsonrpc/jsonrpc"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Regression tests for faults a review of InProcess, interceptors and
// streams found: what may have run says so through interceptors and
// StreamMethod, a Batch's calls not made have an error, and InProcess
// behaves as a connection does where it did not (a notification to a
// stream method, a Notify after the handler returned, an ended ctx).

func passThrough(next jsonrpc.SendFunc) jsonrpc.SendFunc {
	return func(ctx context.Context, req *jsonrpc.Request) (json.RawMessage, error) {
		return next(ctx, req)
	}
}

// A call that ran and whose result does not decode: MayHaveRun must say it
// may have run, with or without a pass-through interceptor.
func TestCallerHardeningInterceptorDecodeErrorMayHaveRun(t *testing.T) {
	var ran int
	h := jsonrpc.HandlerFunc(func(ctx context.Context, req *jsonrpc.Request) (any, error) {
		ran++
		return "not an int", nil
	})
	var out int
	plain := newPair(t, h)
	err1 := plain.Call(t.Context(), "m", nil, &out)
	withIC := newPairOpts(t, h, &jsonrpc.Options{Interceptors: []jsonrpc.Interceptor{passThrough}})
	err2 := withIC.Call(t.Context(), "m", nil, &out)
	if err1 == nil || err2 == nil {
		t.Fatalf("errs %v %v", err1, err2)
	}
	t.Logf("ran=%d err1=%v err2=%v", ran, err1, err2)
	if jsonrpc.MayHaveRun(err1) != jsonrpc.MayHaveRun(err2) || !jsonrpc.MayHaveRun(err2) {
		t.Errorf("MayHaveRun: without interceptor %v, with a pass-through interceptor %v; the handler ran %d times", jsonrpc.MayHaveRun(err1), jsonrpc.MayHaveRun(err2), ran)
	}
}

func TestCallerHardeningInterceptorInvalidResultMayHaveRun(t *testing.T) {
	var ran int
	h := jsonrpc.HandlerFunc(func(ctx context.Context, req *jsonrpc.Request) (any, error) {
		ran++
		return 1, nil
	})
	bad := func(next jsonrpc.SendFunc) jsonrpc.SendFunc {
		return func(ctx context.Context, req *jsonrpc.Request) (json.RawMessage, error) {
			if _, err := next(ctx, req); err != nil {
				return nil, err
			}
			return json.RawMessage("{"), nil
		}
	}
	var out int
	c := newPairOpts(t, h, &jsonrpc.Options{Interceptors: []jsonrpc.Interceptor{bad}})
	err := c.Call(t.Context(), "m", nil, &out)
	if err == nil || ran != 1 || !jsonrpc.MayHaveRun(err) {
		t.Errorf("err=%v ran=%d MayHaveRun=%v; want an error for which MayHaveRun is true (the handler ran)", err, ran, jsonrpc.MayHaveRun(err))
	}
}

func TestCallerHardeningInProcessDecodeErrorMayHaveRunIC(t *testing.T) {
	h := jsonrpc.HandlerFunc(func(ctx context.Context, req *jsonrpc.Request) (any, error) {
		return "not an int", nil
	})
	var out int
	ip := &jsonrpc.InProcess{Handler: h, Interceptors: []jsonrpc.Interceptor{passThrough}}
	err := ip.Call(t.Context(), "m", nil, &out)
	if err == nil || !jsonrpc.MayHaveRun(err) {
		t.Errorf("err=%v MayHaveRun=%v", err, jsonrpc.MayHaveRun(err))
	}
}

func TestCallerHardeningHTTPInterceptorDecodeErrorMayHaveRun(t *testing.T) {
	h := jsonrpc.HandlerFunc(func(ctx context.Context, req *jsonrpc.Request) (any, error) {
		return "not an int", nil
	})
	ts := httptest.NewServer(&jsonrpc.Server{Options: jsonrpc.Options{Handler: h}})
	defer ts.Close()
	var out int
	plain := &jsonrpc.HTTPClient{URL: ts.URL}
	err1 := plain.Call(t.Context(), "m", nil, &out)
	ic := &jsonrpc.HTTPClient{URL: ts.URL, Interceptors: []jsonrpc.Interceptor{passThrough}}
	err2 := ic.Call(t.Context(), "m", nil, &out)
	t.Logf("plain %v %v; ic %v %v", err1, jsonrpc.MayHaveRun(err1), err2, jsonrpc.MayHaveRun(err2))
	if jsonrpc.MayHaveRun(err1) != jsonrpc.MayHaveRun(err2) {
		t.Errorf("MayHaveRun differs")
	}
	ts.Client().CloseIdleConnections()
}

func TestCallerHardeningStreamMethodDecodeErrorMayHaveRun(t *testing.T) {
	var runs atomic.Int64
	mux := new(jsonrpc.Mux)
	jsonrpc.NewStreamMethod[[]int, string]("s").Register(mux, func(ctx context.Context, p []int) iter.Seq2[string, error] {
		runs.Add(1)
		return func(yield func(string, error) bool) { yield("x", nil) }
	})
	asInt := jsonrpc.NewStreamMethod[[]int, int]("s")
	for name, c := range map[string]jsonrpc.Caller{"wire": newPair(t, mux), "inprocess": &jsonrpc.InProcess{Handler: mux}} {
		var last error
		for _, err := range asInt.Call(t.Context(), c, []int{}) {
			last = err
		}
		if last == nil || !jsonrpc.MayHaveRun(last) {
			t.Errorf("%s: err=%v MayHaveRun=%v, though the handler ran (%d runs)", name, last, jsonrpc.MayHaveRun(last), runs.Load())
		}
	}
}

// slowMux serves "slow", which reports on started that it runs, then
// waits for its ctx to end or release to close.
func slowMux(release <-chan struct{}) (*jsonrpc.Mux, <-chan struct{}) {
	mux := new(jsonrpc.Mux)
	started := make(chan struct{}, 4)
	mux.Handle("slow", jsonrpc.Func(func(ctx context.Context, p []int) (int, error) {
		started <- struct{}{}
		select {
		case <-ctx.Done():
		case <-release:
		}
		return 1, nil
	}))
	return mux, started
}

func hardeningBatchCancelRan(t *testing.T, opts *jsonrpc.Options) {
	checkLeaks(t)
	release := make(chan struct{})
	defer close(release)
	mux, started := slowMux(release)
	c := newPairOpts(t, mux, opts)
	a, b, err := cancelBatchOnceRunning(t, started, c.Batch)
	assert.ErrorIs(t, err, context.Canceled)
	if a.Err == nil || !jsonrpc.MayHaveRun(a.Err) || !jsonrpc.MayHaveRun(b.Err) {
		t.Errorf("the batch was sent and its first handler ran, yet MayHaveRun(a.Err=%v)=%v, MayHaveRun(b.Err=%v)=%v; want true, true", a.Err, jsonrpc.MayHaveRun(a.Err), b.Err, jsonrpc.MayHaveRun(b.Err))
	}
}

// cancelBatchOnceRunning makes a batch of two "slow" calls (see slowMux)
// with batch, and ends its ctx once the first has started; it returns the
// calls and the error of batch, which must return within 10 s.
func cancelBatchOnceRunning(t *testing.T, started <-chan struct{}, batch func(context.Context, ...*jsonrpc.BatchCall) error) (a, b *jsonrpc.BatchCall, err error) {
	ctx, cancel := context.WithCancel(t.Context())
	go func() { <-started; cancel() }()
	var r1, r2 int
	a = &jsonrpc.BatchCall{Method: "slow", Params: []int{}, Result: &r1}
	b = &jsonrpc.BatchCall{Method: "slow", Params: []int{}, Result: &r2}
	done := make(chan error, 1)
	go func() { done <- batch(ctx, a, b) }()
	select {
	case err = <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("Batch ignored its ctx")
	}
	return a, b, err
}

func TestCallerHardeningBatchCancelRanPlain(t *testing.T) { hardeningBatchCancelRan(t, nil) }
func TestCallerHardeningBatchCancelRanIC(t *testing.T) {
	hardeningBatchCancelRan(t, &jsonrpc.Options{Interceptors: []jsonrpc.Interceptor{passThrough}})
}

func hardeningHTTPBatchCancel(t *testing.T, ics []jsonrpc.Interceptor) {
	release := make(chan struct{})
	mux, started := slowMux(release)
	ts := httptest.NewServer(&jsonrpc.Server{Options: jsonrpc.Options{Handler: mux}})
	defer ts.Close()
	defer close(release)
	c := &jsonrpc.HTTPClient{URL: ts.URL, Interceptors: ics}
	a, _, _ := cancelBatchOnceRunning(t, started, c.Batch)
	assert.True(t, jsonrpc.MayHaveRun(a.Err), "MayHaveRun(a.Err=%v) false though a's handler ran", a.Err)
}

func TestCallerHardeningHTTPBatchCancelPlain(t *testing.T) { hardeningHTTPBatchCancel(t, nil) }
func TestCallerHardeningHTTPBatchCancelIC(t *testing.T) {
	hardeningHTTPBatchCancel(t, []jsonrpc.Interceptor{passThrough})
}

func hardeningBatchCancel(t *testing.T, mk func(h jsonrpc.Handler) jsonrpc.Caller) {
	var cancel context.CancelFunc
	var aRan, bRan atomic.Bool
	mux := new(jsonrpc.Mux)
	mux.Handle("A", jsonrpc.Func(func(ctx context.Context, p []int) (int, error) {
		aRan.Store(true)
		cancel()
		return 1, nil
	}))
	mux.Handle("B", jsonrpc.Func(func(ctx context.Context, p []int) (int, error) {
		bRan.Store(true)
		return 2, nil
	}))
	c := mk(mux)
	ctx, cf := context.WithTimeout(t.Context(), 10*time.Second)
	cancel = cf
	var ra, rb int
	a := &jsonrpc.BatchCall{Method: "A", Params: []int{}, Result: &ra}
	b := &jsonrpc.BatchCall{Method: "B", Params: []int{}, Result: &rb}
	err := c.Batch(ctx, a, b)
	t.Logf("Batch err=%v MayHaveRun=%v; a.Err=%v b.Err=%v (bRan=%v) MayHaveRun(b.Err)=%v", err, jsonrpc.MayHaveRun(err), a.Err, b.Err, bRan.Load(), jsonrpc.MayHaveRun(b.Err))
	if err == nil && (a.Err != nil || b.Err != nil) {
		t.Fatal("Batch: want ctx error, for a batch that lost a call")
	}
	if !bRan.Load() && b.Err == nil {
		t.Errorf("B never ran, yet its Err is nil (looks like success, result %d)", rb)
	}
}

// cancelOnDecode ends a context as a result is decoded into it, on the
// connection's reader: the call's answer is being delivered as its ctx
// ends.
type cancelOnDecode struct{ cancel context.CancelFunc }

func (c *cancelOnDecode) UnmarshalJSON([]byte) error { c.cancel(); return nil }

// A batch whose ctx ends while the answer of its last call waiting is
// delivered is complete: Batch returns nil, as Call returns the answer
// that way.
func TestCallerHardeningBatchAnsweredAsCtxEnds(t *testing.T) {
	checkLeaks(t)
	c, peer := newRawPeer(t, nil)
	ctx, cancel := context.WithCancel(t.Context())
	a := &jsonrpc.BatchCall{Method: "a", Result: &cancelOnDecode{cancel}}
	done := make(chan error, 1)
	go func() { done <- c.Batch(ctx, a) }()
	var batch []wireMsg
	require.NoError(t, json.Unmarshal([]byte(peer.next(t)), &batch))
	require.Len(t, batch, 1)
	peer.sendf(t, `[{"jsonrpc":"2.0","id":%s,"result":1}]`, batch[0].ID)
	err := recv(t, done, "Batch's return")
	assert.NoError(t, a.Err)
	assert.NoError(t, err, "every call of the batch got its answer")
	assert.Error(t, ctx.Err())
}

func TestCallerHardeningBatchCancelWire(t *testing.T) {
	hardeningBatchCancel(t, func(h jsonrpc.Handler) jsonrpc.Caller { return newPair(t, h) })
}

func TestCallerHardeningBatchCancelInProcess(t *testing.T) {
	hardeningBatchCancel(t, func(h jsonrpc.Handler) jsonrpc.Caller { return &jsonrpc.InProcess{Handler: h} })
}

func deadCtx(next jsonrpc.SendFunc) jsonrpc.SendFunc {
	return func(ctx context.Context, req *jsonrpc.Request) (json.RawMessage, error) {
		ctx, cancel := context.WithCancel(ctx)
		cancel()
		return next(ctx, req)
	}
}

func TestCallerHardeningDeadCtxFromInterceptor(t *testing.T) {
	var runs atomic.Int64
	mux := new(jsonrpc.Mux)
	mux.Handle("m", jsonrpc.Func(func(ctx context.Context, p []int) (int, error) {
		runs.Add(1)
		return 1, nil
	}))
	c := newPairOpts(t, mux, &jsonrpc.Options{Interceptors: []jsonrpc.Interceptor{deadCtx}})
	var x int
	werr := c.Call(t.Context(), "m", []int{}, &x)
	_ = newPair(t, mux) // nothing
	plain := newPair(t, mux)
	_ = plain.Call(t.Context(), "nosuch", nil, &x)
	wruns := runs.Swap(0)
	ip := &jsonrpc.InProcess{Handler: mux, Interceptors: []jsonrpc.Interceptor{deadCtx}}
	ierr := ip.Call(t.Context(), "m", []int{}, &x)
	t.Logf("wire: err=%v MayHaveRun=%v runs=%d; inprocess: err=%v MayHaveRun=%v runs=%d", werr, jsonrpc.MayHaveRun(werr), wruns, ierr, jsonrpc.MayHaveRun(ierr), runs.Load())
	if wruns != runs.Load() {
		t.Errorf("handler runs: wire %d, in process %d", wruns, runs.Load())
	}
}

func lostCtx(next jsonrpc.SendFunc) jsonrpc.SendFunc {
	return func(ctx context.Context, req *jsonrpc.Request) (json.RawMessage, error) {
		return next(context.WithoutCancel(context.Background()), req)
	}
}

func hardeningLostCtxStream(t *testing.T, c jsonrpc.Caller) {
	n, errs := 0, 0
	for _, err := range c.Stream(t.Context(), "s", []int{}) {
		if err != nil {
			errs++
			t.Logf("err %v", err)
		} else {
			n++
		}
	}
	if errs == 0 && n != 3 {
		t.Errorf("stream through an interceptor that lost its ctx: %d items, no error; want the 3 items or an error", n)
	}
}

func hardeningStreamMux() *jsonrpc.Mux {
	mux := new(jsonrpc.Mux)
	mux.Handle("s", jsonrpc.Stream(func(ctx context.Context, p []int) iter.Seq2[int, error] {
		return func(yield func(int, error) bool) {
			for i := range 3 {
				if !yield(i, nil) {
					return
				}
			}
		}
	}))
	return mux
}

func TestCallerHardeningLostCtxStreamWire(t *testing.T) {
	c := newPairOpts(t, hardeningStreamMux(), &jsonrpc.Options{Interceptors: []jsonrpc.Interceptor{lostCtx}})
	hardeningLostCtxStream(t, c)
}

func TestCallerHardeningNotifyCancelledCtx(t *testing.T) {
	var ran atomic.Int64
	mux := new(jsonrpc.Mux)
	mux.Handle("n", jsonrpc.Func(func(ctx context.Context, p []int) (any, error) { ran.Add(1); return nil, nil }))
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	c := newPair(t, mux)
	werr := c.Notify(ctx, "n", []int{})
	var x int
	_ = c.Call(t.Context(), "nosuch", nil, &x)
	wireRan := ran.Swap(0)
	ip := &jsonrpc.InProcess{Handler: mux}
	ierr := ip.Notify(ctx, "n", []int{})
	t.Logf("wire: err=%v ran=%d; inprocess: err=%v ran=%d", werr, wireRan, ierr, ran.Load())
	if wireRan != ran.Load() {
		t.Errorf("Notify with an ended ctx: wire ran %d (err %v), in process ran %d (err %v)", wireRan, werr, ran.Load(), ierr)
	}
}

// Stream doc: a notification to a stream method runs the producer until its
// first item: yield returns false there. On the wire it does; in process not.
func TestCallerHardeningInProcessNotifyStreamRunsProducerToEnd(t *testing.T) {
	var produced atomic.Int64
	mux := new(jsonrpc.Mux)
	mux.Handle("count", jsonrpc.Stream(func(ctx context.Context, p []int) iter.Seq2[int, error] {
		return func(yield func(int, error) bool) {
			for i := range 1000 {
				produced.Add(1)
				if !yield(i, nil) {
					return
				}
			}
		}
	}))
	// wire
	c := newPair(t, mux)
	if err := c.Notify(t.Context(), "count", []int{}); err != nil {
		t.Fatal(err)
	}
	var out int
	_ = c.Call(t.Context(), "nosuch", nil, &out) // a round trip: the notification has been handled
	wire := produced.Swap(0)

	ip := &jsonrpc.InProcess{Handler: mux}
	if err := ip.Notify(t.Context(), "count", []int{}); err != nil {
		t.Fatal(err)
	}
	inproc := produced.Load()
	if wire != inproc {
		t.Errorf("producer ran %d items for a notification over the wire, %d in process", wire, inproc)
	}
}

// OnNotify doc: called on the handler's goroutine, before the call returns;
// on the wire a notify after return fails with an error.
func TestCallerHardeningInProcessNotifyAfterReturn(t *testing.T) {
	var late atomic.Int64
	done := make(chan error, 1)
	ip := &jsonrpc.InProcess{
		Handler: jsonrpc.HandlerFunc(func(ctx context.Context, req *jsonrpc.Request) (any, error) {
			p := jsonrpc.Peer(ctx)
			go func() {
				<-ctx.Done() // the handler has returned
				time.Sleep(10 * time.Millisecond)
				done <- p.Notify(context.Background(), "late", []int{1})
			}()
			return 1, nil
		}),
	}
	var returned atomic.Bool
	ip.OnNotify = func(req *jsonrpc.Request) {
		if returned.Load() {
			late.Add(1)
		}
	}
	if err := ip.Call(t.Context(), "m", nil, nil); err != nil {
		t.Fatal(err)
	}
	returned.Store(true)
	err := <-done
	if late.Load() != 0 || err == nil {
		t.Errorf("Notify after the handler returned: err=%v, OnNotify called after Call returned %d times; want an error and no call", err, late.Load())
	}
}

// panicky is an interceptor that panics.
func panicky(next jsonrpc.SendFunc) jsonrpc.SendFunc {
	return func(ctx context.Context, req *jsonrpc.Request) (json.RawMessage, error) {
		panic("interceptor bug (test)")
	}
}

// A panic in an interceptor reaches the caller of Batch, as it reaches the
// caller of Call, rather than killing the process from a goroutine of the
// library's; on a Conn and on an HTTPClient.
func TestCallerHardeningInterceptorPanicInBatch(t *testing.T) {
	checkLeaks(t)
	mux := new(jsonrpc.Mux)
	mux.Handle("m", jsonrpc.Func(func(ctx context.Context, p []int) (int, error) { return 1, nil }))
	recovered := func(f func()) (v any) {
		defer func() { v = recover() }()
		f()
		return nil
	}
	c := newPairOpts(t, mux, &jsonrpc.Options{Interceptors: []jsonrpc.Interceptor{panicky}})
	assert.Equal(t, "interceptor bug (test)", recovered(func() { _ = c.Call(t.Context(), "m", []int{}, nil) }), "Call")
	assert.Equal(t, "interceptor bug (test)", recovered(func() {
		_ = c.Batch(t.Context(), &jsonrpc.BatchCall{Method: "m", Params: []int{}}, &jsonrpc.BatchCall{Method: "m", Params: []int{1}})
	}), "Conn.Batch")

	srv := httptest.NewServer(&jsonrpc.Server{Options: jsonrpc.Options{Handler: mux}})
	defer srv.Close()
	hc := &jsonrpc.HTTPClient{URL: srv.URL, Interceptors: []jsonrpc.Interceptor{panicky}}
	assert.Equal(t, "interceptor bug (test)", recovered(func() {
		_ = hc.Batch(t.Context(), &jsonrpc.BatchCall{Method: "m", Params: []int{}})
	}), "HTTPClient.Batch")
}

// retryOnce is an interceptor that calls next again when it fails.
func retryOnce(next jsonrpc.SendFunc) jsonrpc.SendFunc {
	return func(ctx context.Context, req *jsonrpc.Request) (json.RawMessage, error) {
		res, err := next(ctx, req)
		if err != nil {
			return next(ctx, req) // a naive retry
		}
		return res, err
	}
}

// A retry of a stream whose range stopped early does not run its handler
// again, in process as over a connection.
func TestCallerHardeningStreamStoppedRetry(t *testing.T) {
	runs := func(mk func(h jsonrpc.Handler) jsonrpc.Caller) int64 {
		var runs atomic.Int64
		mux := new(jsonrpc.Mux)
		mux.Handle("s", jsonrpc.Stream(func(ctx context.Context, p []int) iter.Seq2[int, error] {
			runs.Add(1)
			return func(yield func(int, error) bool) {
				for i := range 100 {
					if !yield(i, nil) {
						return
					}
				}
			}
		}))
		c := mk(mux)
		for range c.Stream(t.Context(), "s", []int{}) {
			break
		}
		return runs.Load()
	}
	retrying := []jsonrpc.Interceptor{retryOnce}
	assert.Equal(t, int64(1), runs(func(h jsonrpc.Handler) jsonrpc.Caller {
		return newPairOpts(t, h, &jsonrpc.Options{Interceptors: retrying})
	}), "over a connection")
	assert.Equal(t, int64(1), runs(func(h jsonrpc.Handler) jsonrpc.Caller {
		return &jsonrpc.InProcess{Handler: h, Interceptors: retrying}
	}), "in process")
}

// An interceptor that passes on a context not derived from its own loses
// the call in process as over a connection: an error, not silence.
func TestCallerHardeningLostCtxStreamInProcess(t *testing.T) {
	hardeningLostCtxStream(t, &jsonrpc.InProcess{Handler: hardeningStreamMux(), Interceptors: []jsonrpc.Interceptor{lostCtx}})
}

// A retry in process gives the request a new id, as the Interceptor doc
// says and a connection does.
func TestCallerHardeningInProcessRetryNewID(t *testing.T) {
	var ids []string
	ip := &jsonrpc.InProcess{
		Handler: jsonrpc.HandlerFunc(func(ctx context.Context, req *jsonrpc.Request) (any, error) {
			ids = append(ids, req.ID.String())
			return 1, nil
		}),
		Interceptors: []jsonrpc.Interceptor{func(next jsonrpc.SendFunc) jsonrpc.SendFunc {
			return func(ctx context.Context, req *jsonrpc.Request) (json.RawMessage, error) {
				if _, err := next(ctx, req); err != nil {
					return nil, err
				}
				return next(ctx, req)
			}
		}},
	}
	require.NoError(t, ip.Call(t.Context(), "m", nil, nil))
	if assert.Len(t, ids, 2) {
		assert.NotEqual(t, ids[0], ids[1], "ids seen by the handler")
	}
}
