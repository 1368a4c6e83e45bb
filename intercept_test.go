package jsonrpc_test

// Tests of Interceptor: what an interceptor sees of each outgoing call,
// notification, batch entry and stream, over a Conn, a Client and an
// HTTPClient, and what it may change.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"iter"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ndjsonrpc/jsonrpc"
)

// outCaller is what the calling faces have in common.
type outCaller = jsonrpc.Caller

// icNote is the params of "note".
type icNote struct {
	Text string `json:"text"`
}

// icMux serves the methods that the interceptor tests call: "add" adds
// two numbers, "note" sends its text to notes, "count" streams N numbers,
// "fail" answers an error, "block" signals started and waits for its
// context to end, and "headers" answers the HTTP headers it was sent.
func icMux(notes chan<- string, started chan<- struct{}) *jsonrpc.Mux {
	mux := new(jsonrpc.Mux)
	mux.Handle("add", jsonrpc.Func(func(_ context.Context, p [2]int) (int, error) {
		return p[0] + p[1], nil
	}))
	mux.Handle("note", jsonrpc.Func(func(_ context.Context, p icNote) (any, error) {
		notes <- p.Text
		return nil, nil
	}))
	mux.Handle("count", jsonrpc.Stream(func(_ context.Context, p struct{ N int }) iter.Seq2[int, error] {
		return func(yield func(int, error) bool) {
			for i := range p.N {
				if !yield(i, nil) {
					return
				}
			}
		}
	}))
	mux.HandleFunc("fail", func(context.Context, *jsonrpc.Request) (any, error) {
		return nil, jsonrpc.Errorf(-32001, "refused")
	})
	mux.HandleFunc("block", func(ctx context.Context, _ *jsonrpc.Request) (any, error) {
		started <- struct{}{}
		<-ctx.Done()
		return nil, ctx.Err()
	})
	mux.HandleFunc("headers", func(ctx context.Context, _ *jsonrpc.Request) (any, error) {
		r := jsonrpc.HTTPRequestFromContext(ctx)
		if r == nil {
			return nil, errors.New("not over HTTP")
		}
		return map[string][]string{
			"Authorization": r.Header.Values("Authorization"),
			"X-Base":        r.Header.Values("X-Base"),
			"X-Entry":       r.Header.Values("X-Entry"),
		}, nil
	})
	return mux
}

// icTransports are the ways a caller with interceptors reaches a server of
// mux: a Conn, a Client, and an HTTPClient posting to Server.ServeHTTP.
var icTransports = []struct {
	name string
	dial func(t *testing.T, mux *jsonrpc.Mux, ics ...jsonrpc.Interceptor) outCaller
}{
	{"Conn", func(t *testing.T, mux *jsonrpc.Mux, ics ...jsonrpc.Interceptor) outCaller {
		a, _ := twConnPair(t, &jsonrpc.Options{Interceptors: ics}, &jsonrpc.Options{Handler: mux})
		return a
	}},
	{"Client", func(t *testing.T, mux *jsonrpc.Mux, ics ...jsonrpc.Interceptor) outCaller {
		return newPairOpts(t, mux, &jsonrpc.Options{Interceptors: ics})
	}},
	{"HTTPClient", func(t *testing.T, mux *jsonrpc.Mux, ics ...jsonrpc.Interceptor) outCaller {
		ts := httptest.NewServer(&jsonrpc.Server{Options: jsonrpc.Options{Handler: mux}})
		t.Cleanup(ts.Close)
		return &jsonrpc.HTTPClient{URL: ts.URL, HTTP: ts.Client(), Interceptors: ics}
	}},
	{"InProcess", func(t *testing.T, mux *jsonrpc.Mux, ics ...jsonrpc.Interceptor) outCaller {
		return &jsonrpc.InProcess{Handler: mux, Interceptors: ics}
	}},
}

// icRecord is what the recorder saw of one request.
type icRecord struct {
	method, id, params string
	result             string
	err                error
	took               time.Duration
	progress           int32 // the recorder's progress when next returned
	header             bool  // HTTPHeader(ctx) was not nil
}

// recorder is an interceptor that records every request it sees.
type recorder struct {
	progress atomic.Int32 // set by the test, read when next returns
	mu       sync.Mutex
	records  []icRecord
}

func (r *recorder) intercept(next jsonrpc.SendFunc) jsonrpc.SendFunc {
	return func(ctx context.Context, req *jsonrpc.Request) (json.RawMessage, error) {
		rec := icRecord{method: req.Method, id: req.ID.String(), params: string(req.Params), header: jsonrpc.HTTPHeader(ctx) != nil}
		start := time.Now()
		res, err := next(ctx, req)
		rec.took = time.Since(start)
		rec.result, rec.err, rec.progress = string(res), err, r.progress.Load()
		r.mu.Lock()
		r.records = append(r.records, rec)
		r.mu.Unlock()
		return res, err
	}
}

// take returns the records so far, and forgets them.
func (r *recorder) take() []icRecord {
	r.mu.Lock()
	defer r.mu.Unlock()
	got := r.records
	r.records = nil
	return got
}

func TestInterceptorSeesEachRequest(t *testing.T) {
	for _, tr := range icTransports {
		t.Run(tr.name, func(t *testing.T) {
			checkLeaks(t)
			notes := make(chan string, 4)
			rec := new(recorder)
			c := tr.dial(t, icMux(notes, nil), rec.intercept)
			ctx := t.Context()
			overHTTP := tr.name == "HTTPClient"

			var sum int
			require.NoError(t, c.Call(ctx, "add", []int{1, 2}, &sum))
			assert.Equal(t, 3, sum)
			got := rec.take()
			require.Len(t, got, 1)
			assert.Equal(t, "add", got[0].method)
			assert.Regexp(t, `^[1-9][0-9]*$`, got[0].id, "the id is drawn before the chain runs")
			assert.JSONEq(t, `[1,2]`, got[0].params)
			assert.Equal(t, "3", got[0].result)
			assert.NoError(t, got[0].err)
			assert.Positive(t, got[0].took)
			assert.Equal(t, overHTTP, got[0].header, "HTTPHeader is set over HTTP only")

			require.NoError(t, c.Notify(ctx, "note", icNote{"hi"}))
			assert.Equal(t, "hi", recv(t, notes, "the notification"))
			got = rec.take()
			require.Len(t, got, 1)
			assert.Equal(t, icRecord{method: "note", params: `{"text":"hi"}`, took: got[0].took, header: overHTTP}, got[0], "a notification has no id and no result")

			a := &jsonrpc.BatchCall{Method: "add", Params: []int{3, 4}, Result: new(int)}
			n := &jsonrpc.BatchCall{Method: "note", Params: icNote{"batched"}, Notify: true}
			b := &jsonrpc.BatchCall{Method: "add", Params: []int{5, 6}, Result: new(int)}
			require.NoError(t, c.Batch(ctx, a, n, b))
			assert.Equal(t, "batched", recv(t, notes, "the batch's notification"))
			require.NoError(t, a.Err)
			require.NoError(t, b.Err)
			assert.Equal(t, 7, *a.Result.(*int))
			assert.Equal(t, 11, *b.Result.(*int))
			got = rec.take()
			require.Len(t, got, 3, "each entry passes through the chain")
			slices.SortFunc(got, func(x, y icRecord) int { return strings.Compare(x.params, y.params) })
			assert.Equal(t, []string{`[3,4]`, `[5,6]`, `{"text":"batched"}`}, []string{got[0].params, got[1].params, got[2].params})
			assert.Equal(t, []string{"7", "11", ""}, []string{got[0].result, got[1].result, got[2].result})
			assert.NotEmpty(t, got[0].id)
			assert.NotEmpty(t, got[1].id)
			assert.NotEqual(t, got[0].id, got[1].id)
			assert.Empty(t, got[2].id, "the notification's")

			var items []string
			for item, err := range c.Stream(ctx, "count", map[string]int{"N": 3}) {
				require.NoError(t, err)
				items = append(items, string(item))
				rec.progress.Add(1)
			}
			assert.Equal(t, []string{"0", "1", "2"}, items)
			got = rec.take()
			require.Len(t, got, 1, "the stream's call passes through the chain, its items do not")
			assert.Equal(t, "count", got[0].method)
			assert.NotEmpty(t, got[0].id)
			assert.Equal(t, "3", got[0].result, "the stream's result comes back through the chain")
			assert.Equal(t, int32(3), got[0].progress, "next returns once the range has taken every item")
		})
	}
}

// TestInterceptorHandlerCall checks that the calls a Conn's handler makes
// with jsonrpc.Call pass through the Conn's interceptors.
func TestInterceptorHandlerCall(t *testing.T) {
	checkLeaks(t)
	rec := new(recorder)
	mux := new(jsonrpc.Mux)
	mux.HandleFunc("ask", func(ctx context.Context, _ *jsonrpc.Request) (any, error) {
		var sum int
		err := jsonrpc.Peer(ctx).Call(ctx, "add", []int{2, 2}, &sum)
		return sum, err
	})
	_, b := twConnPair(t, &jsonrpc.Options{Handler: mux, Interceptors: []jsonrpc.Interceptor{rec.intercept}},
		&jsonrpc.Options{Handler: icMux(nil, nil)})
	var got int
	require.NoError(t, b.Call(t.Context(), "ask", nil, &got))
	assert.Equal(t, 4, got)
	records := rec.take()
	require.Len(t, records, 1)
	assert.Equal(t, "add", records[0].method)
	assert.Equal(t, "4", records[0].result)
}

func TestInterceptorRewritesParams(t *testing.T) {
	times10 := func(next jsonrpc.SendFunc) jsonrpc.SendFunc {
		return func(ctx context.Context, req *jsonrpc.Request) (json.RawMessage, error) {
			switch req.Method {
			case "add":
				var p [2]int
				if err := json.Unmarshal(req.Params, &p); err != nil {
					return nil, err
				}
				req.Params = json.RawMessage(fmt.Sprintf("[%d,%d]", p[0]*10, p[1]*10))
			case "bad":
				req.Params = json.RawMessage(`"not an object or an array"`)
			case "broken":
				req.Params = json.RawMessage(`[1,`)
			}
			return next(ctx, req)
		}
	}
	for _, tr := range icTransports {
		t.Run(tr.name, func(t *testing.T) {
			checkLeaks(t)
			c := tr.dial(t, icMux(nil, nil), times10)
			ctx := t.Context()
			var sum int
			require.NoError(t, c.Call(ctx, "add", []int{1, 2}, &sum))
			assert.Equal(t, 30, sum)

			a := &jsonrpc.BatchCall{Method: "add", Params: []int{3, 4}, Result: new(int)}
			bad := &jsonrpc.BatchCall{Method: "bad", Params: []int{1}}
			require.NoError(t, c.Batch(ctx, a, bad))
			assert.NoError(t, a.Err)
			assert.Equal(t, 70, *a.Result.(*int))
			assert.ErrorIs(t, bad.Err, jsonrpc.ErrInvalidParams, "params that are no object or array are refused, and the entry not sent")

			for _, method := range []string{"bad", "broken"} {
				err := c.Call(ctx, method, nil, nil)
				assert.ErrorIs(t, err, jsonrpc.ErrInvalidParams, method)
			}
		})
	}
}

func TestInterceptorHTTPHeader(t *testing.T) {
	checkLeaks(t)
	var sawBase []string
	var mu sync.Mutex
	auth := func(next jsonrpc.SendFunc) jsonrpc.SendFunc {
		return func(ctx context.Context, req *jsonrpc.Request) (json.RawMessage, error) {
			h := jsonrpc.HTTPHeader(ctx)
			mu.Lock()
			sawBase = append(sawBase, h.Get("X-Base"))
			mu.Unlock()
			h.Set("Authorization", "Bearer t0ken")
			h.Add("X-Entry", req.ID.String())
			if string(req.Params) == `["drop"]` {
				h.Del("X-Base")
			}
			return next(ctx, req)
		}
	}
	ts := httptest.NewServer(&jsonrpc.Server{Options: jsonrpc.Options{Handler: icMux(nil, nil)}})
	defer ts.Close()
	c := &jsonrpc.HTTPClient{URL: ts.URL, HTTP: ts.Client(), Header: http.Header{"X-Base": {"base"}},
		Interceptors: []jsonrpc.Interceptor{auth}}
	ctx := t.Context()

	var got map[string][]string
	require.NoError(t, c.Call(ctx, "headers", nil, &got))
	assert.Equal(t, []string{"Bearer t0ken"}, got["Authorization"], "seen by the server")
	assert.Len(t, got["X-Entry"], 1)
	assert.Equal(t, []string{"base"}, got["X-Base"])
	assert.Equal(t, []string{"base"}, sawBase, "HTTPHeader starts as a copy of Header")

	var dropped map[string][]string
	require.NoError(t, c.Call(ctx, "headers", []string{"drop"}, &dropped))
	assert.Nil(t, dropped["X-Base"], "the interceptor removed it from its request")
	assert.Equal(t, http.Header{"X-Base": {"base"}}, c.Header, "and not from Header")

	var one, two map[string][]string
	b1 := &jsonrpc.BatchCall{Method: "headers", Result: &one}
	b2 := &jsonrpc.BatchCall{Method: "headers", Result: &two}
	require.NoError(t, c.Batch(ctx, b1, b2))
	require.NoError(t, b1.Err)
	require.NoError(t, b2.Err)
	assert.Equal(t, one, two, "a batch is one request")
	assert.Equal(t, []string{"Bearer t0ken"}, one["Authorization"], "a value every entry adds is sent once")
	assert.Len(t, one["X-Entry"], 2, "the values of every entry are merged")
	assert.Equal(t, []string{"base"}, one["X-Base"])

	assert.Nil(t, jsonrpc.HTTPHeader(ctx))
}

// TestInterceptorHTTPURL checks that HTTPURL gives an interceptor the
// HTTPClient's URL for every kind of request, and "" off HTTP.
func TestInterceptorHTTPURL(t *testing.T) {
	for _, tr := range icTransports {
		t.Run(tr.name, func(t *testing.T) {
			checkLeaks(t)
			var mu sync.Mutex
			var saw []string
			see := func(next jsonrpc.SendFunc) jsonrpc.SendFunc {
				return func(ctx context.Context, req *jsonrpc.Request) (json.RawMessage, error) {
					mu.Lock()
					saw = append(saw, req.Method+" "+jsonrpc.HTTPURL(ctx))
					mu.Unlock()
					return next(ctx, req)
				}
			}
			notes := make(chan string, 4)
			c := tr.dial(t, icMux(notes, nil), see)
			ctx := t.Context()
			url := ""
			if hc, ok := c.(*jsonrpc.HTTPClient); ok {
				url = hc.URL
			}

			require.NoError(t, c.Call(ctx, "add", []int{1, 2}, nil))
			require.NoError(t, c.Notify(ctx, "note", icNote{"hi"}))
			assert.Equal(t, "hi", recv(t, notes, "the notification"))
			b1 := &jsonrpc.BatchCall{Method: "add", Params: []int{3, 4}}
			b2 := &jsonrpc.BatchCall{Method: "add", Params: []int{5, 6}}
			require.NoError(t, c.Batch(ctx, b1, b2))
			for _, err := range c.Stream(ctx, "count", struct{ N int }{2}) {
				require.NoError(t, err)
			}
			mu.Lock()
			defer mu.Unlock()
			want := []string{"add " + url, "note " + url, "add " + url, "add " + url, "count " + url}
			assert.Equal(t, want, saw)
		})
	}
	assert.Empty(t, jsonrpc.HTTPURL(t.Context()))
}

func TestInterceptorShortCircuits(t *testing.T) {
	checkLeaks(t)
	denied := errors.New("denied")
	local := func(next jsonrpc.SendFunc) jsonrpc.SendFunc {
		return func(ctx context.Context, req *jsonrpc.Request) (json.RawMessage, error) {
			switch req.Method {
			case "cached":
				return json.RawMessage(`{"N":42}`), nil
			case "denied":
				return nil, denied
			case "invalid":
				return json.RawMessage(`{"N":`), nil
			case "quiet":
				return nil, nil
			}
			return next(ctx, req)
		}
	}
	c, peer := newRawPeer(t, &jsonrpc.Options{Interceptors: []jsonrpc.Interceptor{local}})
	ctx := t.Context()
	type result struct{ N int }

	var r result
	require.NoError(t, c.Call(ctx, "cached", nil, &r))
	assert.Equal(t, 42, r.N, "the interceptor's result is decoded into the caller's")
	assert.ErrorIs(t, c.Call(ctx, "denied", nil, &r), denied)
	assert.Error(t, c.Call(ctx, "invalid", nil, &r), "a result that is not JSON")
	require.NoError(t, c.Notify(ctx, "quiet", nil))
	for _, err := range c.Stream(ctx, "cached", nil) {
		assert.Fail(t, "a stream answered by an interceptor has no items", "got %v", err)
	}

	// In a batch, only the entries whose chain calls next go out.
	cached, real := &jsonrpc.BatchCall{Method: "cached", Result: new(result)}, &jsonrpc.BatchCall{Method: "real", Result: new(result)}
	done := make(chan error, 1)
	go func() { done <- c.Batch(ctx, cached, &jsonrpc.BatchCall{Method: "quiet", Notify: true}, real) }()
	line := peer.next(t)
	var sent []wireMsg
	require.NoError(t, json.Unmarshal([]byte(line), &sent), "the batch %s", line)
	require.Len(t, sent, 1, "the batch %s", line)
	assert.Equal(t, "real", sent[0].Method, "nothing was sent before it, either")
	peer.sendf(t, `[{"jsonrpc":"2.0","id":%s,"result":{"N":7}}]`, sent[0].ID)
	require.NoError(t, recv(t, done, "the batch"))
	assert.NoError(t, cached.Err)
	assert.Equal(t, 42, cached.Result.(*result).N)
	assert.NoError(t, real.Err)
	assert.Equal(t, 7, real.Result.(*result).N)

	// A batch that no entry's chain passes on sends nothing.
	require.NoError(t, c.Batch(ctx, &jsonrpc.BatchCall{Method: "quiet", Notify: true}))
	require.NoError(t, c.Notify(ctx, "last", nil))
	assert.JSONEq(t, `{"jsonrpc":"2.0","method":"last"}`, peer.next(t))
}

func TestInterceptorOrder(t *testing.T) {
	for _, tr := range icTransports {
		t.Run(tr.name, func(t *testing.T) {
			checkLeaks(t)
			var log []string
			mark := func(name string) jsonrpc.Interceptor {
				return func(next jsonrpc.SendFunc) jsonrpc.SendFunc {
					return func(ctx context.Context, req *jsonrpc.Request) (json.RawMessage, error) {
						log = append(log, name+" sees "+string(req.Params))
						req.Params = json.RawMessage(strings.Replace(string(req.Params), "]", `,"`+name+`"]`, 1))
						res, err := next(ctx, req)
						log = append(log, name+" returns "+string(res))
						return json.RawMessage(`{"` + name + `":` + string(res) + `}`), err
					}
				}
			}
			mux := new(jsonrpc.Mux)
			mux.HandleFunc("echo", func(_ context.Context, req *jsonrpc.Request) (any, error) {
				return req.Params, nil
			})
			c := tr.dial(t, mux, mark("outer"), mark("inner"))
			var got json.RawMessage
			require.NoError(t, c.Call(t.Context(), "echo", []int{0}, &got))
			assert.JSONEq(t, `{"outer":{"inner":[0,"outer","inner"]}}`, string(got))
			assert.Equal(t, []string{
				`outer sees [0]`,
				`inner sees [0,"outer"]`,
				`inner returns [0,"outer","inner"]`,
				`outer returns {"inner":[0,"outer","inner"]}`,
			}, log, "the first Interceptor is the outermost")
		})
	}
}

func TestInterceptorSeesErrors(t *testing.T) {
	for _, tr := range icTransports {
		t.Run(tr.name, func(t *testing.T) {
			checkLeaks(t)
			rec := new(recorder)
			started := make(chan struct{}, 1)
			c := tr.dial(t, icMux(nil, started), rec.intercept)

			err := c.Call(t.Context(), "fail", nil, nil)
			var werr *jsonrpc.Error
			require.ErrorAs(t, err, &werr)
			assert.Equal(t, jsonrpc.Code(-32001), werr.Code)
			got := rec.take()
			require.Len(t, got, 1)
			assert.Same(t, werr, got[0].err, "the interceptor sees the peer's *Error, as the caller does")

			ctx, cancel := context.WithCancel(t.Context())
			done := make(chan error, 1)
			go func() { done <- c.Call(ctx, "block", nil, nil) }()
			recv(t, started, "the handler to start")
			cancel()
			assert.ErrorIs(t, recv(t, done, "the cancelled call"), context.Canceled)
			got = rec.take()
			require.Len(t, got, 1)
			assert.ErrorIs(t, got[0].err, context.Canceled)

			var stopped error
			for _, err := range c.Stream(t.Context(), "count", map[string]int{"N": 1000}) {
				require.NoError(t, err)
				break
			}
			got = rec.take()
			require.Len(t, got, 1)
			stopped = got[0].err
			assert.ErrorIs(t, stopped, context.Canceled, "a stream whose range stopped early")

			closer, ok := c.(interface{ Close() error })
			if !ok {
				return // an HTTPClient has nothing to close
			}
			require.NoError(t, closer.Close())
			assert.ErrorIs(t, c.Call(t.Context(), "add", []int{1, 1}, nil), jsonrpc.ErrClosed)
			got = rec.take()
			require.Len(t, got, 1)
			assert.ErrorIs(t, got[0].err, jsonrpc.ErrClosed)
		})
	}
}

// TestInterceptorBatchConcurrent checks that a batch's entries pass
// through the chain at once, and go out together in one array.
func TestInterceptorBatchConcurrent(t *testing.T) {
	checkLeaks(t)
	bArrived := make(chan struct{})
	meet := func(next jsonrpc.SendFunc) jsonrpc.SendFunc {
		return func(ctx context.Context, req *jsonrpc.Request) (json.RawMessage, error) {
			switch req.Method {
			case "a":
				select {
				case <-bArrived:
				case <-time.After(waitTimeout):
					return nil, errors.New("b's chain did not run while a's waited")
				}
			case "b":
				close(bArrived)
			}
			return next(ctx, req)
		}
	}
	c, peer := newRawPeer(t, &jsonrpc.Options{Interceptors: []jsonrpc.Interceptor{meet}})
	a, b := &jsonrpc.BatchCall{Method: "a", Result: new(string)}, &jsonrpc.BatchCall{Method: "b", Result: new(string)}
	done := make(chan error, 1)
	go func() { done <- c.Batch(t.Context(), a, b) }()
	var sent []wireMsg
	line := peer.next(t)
	require.NoError(t, json.Unmarshal([]byte(line), &sent), "the batch %s", line)
	require.Len(t, sent, 2, "one array of both entries: %s", line)
	assert.Equal(t, "a", sent[0].Method)
	assert.Equal(t, "b", sent[1].Method)
	peer.sendf(t, `[{"jsonrpc":"2.0","id":%s,"result":"B"},{"jsonrpc":"2.0","id":%s,"result":"A"}]`, sent[1].ID, sent[0].ID)
	require.NoError(t, recv(t, done, "the batch"))
	require.NoError(t, a.Err)
	require.NoError(t, b.Err)
	assert.Equal(t, "A", *a.Result.(*string))
	assert.Equal(t, "B", *b.Result.(*string))
}

// TestInterceptorRetry has an interceptor call next again after an error:
// the request goes out again, with a new id.
func TestInterceptorRetry(t *testing.T) {
	checkLeaks(t)
	var ids []string
	retry := func(next jsonrpc.SendFunc) jsonrpc.SendFunc {
		return func(ctx context.Context, req *jsonrpc.Request) (json.RawMessage, error) {
			ids = append(ids, req.ID.String())
			res, err := next(ctx, req)
			if err != nil {
				ids = append(ids, req.ID.String())
				res, err = next(ctx, req)
				ids = append(ids, req.ID.String())
			}
			return res, err
		}
	}
	c, peer := newRawPeer(t, &jsonrpc.Options{Interceptors: []jsonrpc.Interceptor{retry}})
	done := goCall(t.Context(), c, "flaky", []int{1})
	first := peer.nextMsg(t)
	peer.sendf(t, `{"jsonrpc":"2.0","id":%s,"error":{"code":-32000,"message":"try again"}}`, first.ID)
	second := peer.nextMsg(t)
	assert.Equal(t, "flaky", second.Method)
	assert.JSONEq(t, `[1]`, string(second.Params))
	assert.NotEqual(t, string(first.ID), string(second.ID), "a retry has an id of its own")
	peer.sendf(t, `{"jsonrpc":"2.0","id":%s,"result":"ok"}`, second.ID)
	res := recv(t, done, "the retried call")
	require.NoError(t, res.err)
	assert.Equal(t, `"ok"`, string(res.result))
	assert.Equal(t, []string{string(first.ID), string(first.ID), string(second.ID)}, ids, "req.ID tells the retry's id")
}

// TestInterceptorLostContext has an interceptor pass next a context that
// does not derive from its own: the request is not sent.
func TestInterceptorLostContext(t *testing.T) {
	checkLeaks(t)
	detach := func(next jsonrpc.SendFunc) jsonrpc.SendFunc {
		return func(_ context.Context, req *jsonrpc.Request) (json.RawMessage, error) {
			return next(context.Background(), req)
		}
	}
	c, peer := newRawPeer(t, &jsonrpc.Options{Interceptors: []jsonrpc.Interceptor{detach}})
	assert.Error(t, c.Call(t.Context(), "x", nil, nil))
	assert.Error(t, c.Notify(t.Context(), "y", nil))
	assertNone(t, peer.lines, "a request sent")
}

func TestInterceptorNilPanics(t *testing.T) {
	checkLeaks(t)
	assert.PanicsWithValue(t, "jsonrpc: nil Interceptor", func() {
		jsonrpc.NewConn(strings.NewReader(""), io.Discard, &jsonrpc.Options{Interceptors: []jsonrpc.Interceptor{nil}})
	})
	assert.PanicsWithValue(t, "jsonrpc: an Interceptor returned a nil SendFunc", func() {
		c := &jsonrpc.HTTPClient{URL: "http://127.0.0.1:0/", Interceptors: []jsonrpc.Interceptor{
			func(jsonrpc.SendFunc) jsonrpc.SendFunc { return nil },
		}}
		_ = c.Call(t.Context(), "x", nil, nil)
	})
}

// TestInterceptorBatchEnds ends batches through interceptors early: one
// entry's own context, Batch's context, a closed connection, and an HTTP
// error.
func TestInterceptorBatchEnds(t *testing.T) {
	t.Run("an entry's context", func(t *testing.T) {
		checkLeaks(t)
		cancels := make(chan context.CancelFunc, 1)
		own := func(next jsonrpc.SendFunc) jsonrpc.SendFunc {
			return func(ctx context.Context, req *jsonrpc.Request) (json.RawMessage, error) {
				if req.Method == "slow" {
					var cancel context.CancelFunc
					ctx, cancel = context.WithCancel(ctx)
					defer cancel()
					cancels <- cancel
				}
				return next(ctx, req)
			}
		}
		rec := new(recorder)
		c, peer := newRawPeer(t, &jsonrpc.Options{Interceptors: []jsonrpc.Interceptor{own, rec.intercept}})
		slow, fast := &jsonrpc.BatchCall{Method: "slow"}, &jsonrpc.BatchCall{Method: "fast", Result: new(int)}
		done := make(chan error, 1)
		go func() { done <- c.Batch(t.Context(), slow, fast) }()
		var sent []wireMsg
		line := peer.next(t)
		require.NoError(t, json.Unmarshal([]byte(line), &sent), "the batch %s", line)
		require.Len(t, sent, 2)
		recv(t, cancels, "the slow entry's cancel")()
		cancel := peer.nextMsg(t)
		assert.Equal(t, "$/cancelRequest", cancel.Method)
		assert.JSONEq(t, `{"id":`+string(sent[0].ID)+`}`, string(cancel.Params), "the entry whose context ended is cancelled alone")
		peer.sendf(t, `[{"jsonrpc":"2.0","id":%s,"result":1}]`, sent[1].ID)
		require.NoError(t, recv(t, done, "the batch"))
		assert.ErrorIs(t, slow.Err, context.Canceled)
		assert.NoError(t, fast.Err)
		assert.Equal(t, 1, *fast.Result.(*int))
		got := rec.take()
		require.Len(t, got, 2)
		slices.SortFunc(got, func(x, y icRecord) int { return strings.Compare(x.method, y.method) })
		assert.NoError(t, got[0].err, "fast")
		assert.ErrorIs(t, got[1].err, context.Canceled, "slow")
	})
	t.Run("Batch's context", func(t *testing.T) {
		checkLeaks(t)
		rec := new(recorder)
		c, peer := newRawPeer(t, &jsonrpc.Options{Interceptors: []jsonrpc.Interceptor{rec.intercept}})
		ctx, cancel := context.WithCancel(t.Context())
		a, b := &jsonrpc.BatchCall{Method: "a"}, &jsonrpc.BatchCall{Method: "b"}
		done := make(chan error, 1)
		go func() { done <- c.Batch(ctx, a, b, &jsonrpc.BatchCall{Method: "n", Notify: true}) }()
		peer.next(t)
		cancel()
		assert.ErrorIs(t, recv(t, done, "the batch"), context.Canceled)
		assert.ErrorIs(t, a.Err, context.Canceled)
		assert.ErrorIs(t, b.Err, context.Canceled)
		got := rec.take()
		require.Len(t, got, 3)
		for _, r := range got {
			if r.method != "n" {
				assert.ErrorIs(t, r.err, context.Canceled, r.method)
			}
		}
	})
	t.Run("closed", func(t *testing.T) {
		checkLeaks(t)
		rec := new(recorder)
		c, _ := newRawPeer(t, &jsonrpc.Options{Interceptors: []jsonrpc.Interceptor{rec.intercept}})
		require.NoError(t, c.Close())
		a, n := &jsonrpc.BatchCall{Method: "a"}, &jsonrpc.BatchCall{Method: "n", Notify: true}
		assert.ErrorIs(t, c.Batch(t.Context(), a, n), jsonrpc.ErrClosed)
		assert.ErrorIs(t, a.Err, jsonrpc.ErrClosed)
		got := rec.take()
		require.Len(t, got, 2)
		for _, r := range got {
			assert.ErrorIs(t, r.err, jsonrpc.ErrClosed, r.method)
		}
	})
	t.Run("HTTP error", func(t *testing.T) {
		checkLeaks(t)
		ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			http.Error(w, "no", http.StatusTeapot)
		}))
		defer ts.Close()
		rec := new(recorder)
		c := &jsonrpc.HTTPClient{URL: ts.URL, HTTP: ts.Client(), Interceptors: []jsonrpc.Interceptor{rec.intercept}}
		a, n := &jsonrpc.BatchCall{Method: "a"}, &jsonrpc.BatchCall{Method: "n", Notify: true}
		var herr *jsonrpc.HTTPError
		require.ErrorAs(t, c.Batch(t.Context(), a, n), &herr)
		assert.Equal(t, http.StatusTeapot, herr.StatusCode)
		assert.ErrorAs(t, a.Err, &herr)
		got := rec.take()
		require.Len(t, got, 2)
		for _, r := range got {
			assert.ErrorAs(t, r.err, &herr, r.method)
		}
		assert.ErrorAs(t, c.Call(t.Context(), "x", nil, nil), &herr)
		require.Len(t, rec.take(), 1)
	})
}

// A result that an interceptor makes itself, as json.Encoder writes it
// (with a newline after the value), decodes as json.Unmarshal decodes it,
// over a Conn and in process: the space is not part of a string nor of a
// json.RawMessage.
func TestInterceptorResultWithSpace(t *testing.T) {
	checkLeaks(t)
	answer := func(raw string) jsonrpc.Interceptor {
		return func(jsonrpc.SendFunc) jsonrpc.SendFunc {
			return func(context.Context, *jsonrpc.Request) (json.RawMessage, error) {
				return json.RawMessage(raw), nil
			}
		}
	}
	for _, raw := range []string{"\"abc\"\n", `{"a":1}` + "\n", " \t[1] \r\n"} {
		var want json.RawMessage
		var wantAny any
		require.NoError(t, json.Unmarshal([]byte(raw), &want))
		require.NoError(t, json.Unmarshal([]byte(raw), &wantAny))
		opts := &jsonrpc.Options{Interceptors: []jsonrpc.Interceptor{answer(raw)}}
		inR, _ := io.Pipe() // a peer that never answers: the interceptor does
		conn := jsonrpc.NewConn(inR, io.Discard, opts)
		for name, c := range map[string]jsonrpc.Caller{
			"Conn":      conn,
			"InProcess": &jsonrpc.InProcess{Handler: new(jsonrpc.Mux), Interceptors: opts.Interceptors},
		} {
			var got json.RawMessage
			var gotAny any
			require.NoError(t, c.Call(t.Context(), "m", nil, &got), name)
			require.NoError(t, c.Call(t.Context(), "m", nil, &gotAny), name)
			assert.Equal(t, string(want), string(got), "%s, %q into a json.RawMessage", name, raw)
			assert.Equal(t, wantAny, gotAny, "%s, %q into an any", name, raw)
			if s, ok := wantAny.(string); ok {
				var gotString string
				require.NoError(t, c.Call(t.Context(), "m", nil, &gotString), name)
				assert.Equal(t, s, gotString, "%s, %q into a string", name, raw)
			}
		}
		require.NoError(t, conn.Close())
	}
}
