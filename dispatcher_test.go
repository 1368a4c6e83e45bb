package jsonrpc_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ndjsonrpc/jsonrpc"
)

func constHandler(v any) jsonrpc.Handler {
	return jsonrpc.HandlerFunc(func(context.Context, *jsonrpc.Request) (any, error) { return v, nil })
}

func TestMuxRegistration(t *testing.T) {
	mux := new(jsonrpc.Mux)
	mux.Handle("a", constHandler("from a"))
	mux.HandleFunc("b", func(context.Context, *jsonrpc.Request) (any, error) { return "from b", nil })

	for _, m := range []string{"a", "b"} {
		h := mux.Handler(m)
		require.NotNil(t, h, m)
		v, err := h.ServeJSONRPC(t.Context(), &jsonrpc.Request{Method: m})
		require.NoError(t, err)
		assert.Equal(t, "from "+m, v)

		v, err = mux.ServeJSONRPC(t.Context(), &jsonrpc.Request{Method: m})
		require.NoError(t, err)
		assert.Equal(t, "from "+m, v)
	}
	assert.Nil(t, mux.Handler("c"))
	assert.Nil(t, mux.Handler("A"), "names are case-sensitive")

	_, err := mux.ServeJSONRPC(t.Context(), &jsonrpc.Request{Method: "c"})
	require.ErrorIs(t, err, jsonrpc.ErrMethodNotFound)

	var zero jsonrpc.Mux
	assert.Nil(t, zero.Handler("a"))
	_, err = zero.ServeJSONRPC(t.Context(), &jsonrpc.Request{Method: "a"})
	require.ErrorIs(t, err, jsonrpc.ErrMethodNotFound)

	var nilMux *jsonrpc.Mux
	assert.Nil(t, nilMux.Handler("a"))
	_, err = nilMux.ServeJSONRPC(t.Context(), &jsonrpc.Request{Method: "a"})
	require.ErrorIs(t, err, jsonrpc.ErrMethodNotFound)
}

func TestMuxHandlePanics(t *testing.T) {
	tests := []struct {
		name string
		reg  func(m *jsonrpc.Mux)
	}{
		{"empty name", func(m *jsonrpc.Mux) { m.Handle("", constHandler(1)) }},
		{"invalid UTF-8", func(m *jsonrpc.Mux) { m.Handle("bad\xff", constHandler(1)) }},
		{"rpc. prefix", func(m *jsonrpc.Mux) { m.Handle("rpc.discover", constHandler(1)) }},
		{"rpc. alone", func(m *jsonrpc.Mux) { m.Handle("rpc.", constHandler(1)) }},
		{"nil handler", func(m *jsonrpc.Mux) { m.Handle("x", nil) }},
		{"nil HandleFunc", func(m *jsonrpc.Mux) { m.HandleFunc("x", nil) }},
		{"duplicate", func(m *jsonrpc.Mux) { m.Handle("taken", constHandler(2)) }},
		{"duplicate HandleFunc", func(m *jsonrpc.Mux) {
			m.HandleFunc("taken", func(context.Context, *jsonrpc.Request) (any, error) { return nil, nil })
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			mux := new(jsonrpc.Mux)
			mux.Handle("taken", constHandler(1))
			assert.Panics(t, func() { tc.reg(mux) })
			v, err := mux.ServeJSONRPC(t.Context(), &jsonrpc.Request{Method: "taken"})
			require.NoError(t, err)
			assert.Equal(t, 1, v, "the first registration stays")
		})
	}
	// Names that merely look like the reserved prefix are fine.
	mux := new(jsonrpc.Mux)
	assert.NotPanics(t, func() {
		mux.Handle("RPC.x", constHandler(1))
		mux.Handle("rpcx", constHandler(1))
		mux.Handle("x.rpc.", constHandler(1))
		mux.Handle("caf\u00e9", constHandler(1))
	})
}

func TestMuxConcurrentRegistration(t *testing.T) {
	mux := new(jsonrpc.Mux)
	var wg sync.WaitGroup
	for i := range 16 {
		wg.Go(func() {
			name := "m" + strconv.Itoa(i)
			mux.Handle(name, constHandler(i))
			_ = mux.Handler("m0")
		})
	}
	wg.Wait()
	for i := range 16 {
		v, err := mux.ServeJSONRPC(t.Context(), &jsonrpc.Request{Method: "m" + strconv.Itoa(i)})
		require.NoError(t, err)
		assert.Equal(t, i, v)
	}
}

type point struct {
	X int    `json:"x"`
	Y int    `json:"y"`
	L string `json:"label"`
}

func TestFunc(t *testing.T) {
	echoStruct := jsonrpc.Func(func(_ context.Context, p point) (point, error) { return p, nil })
	echoSlice := jsonrpc.Func(func(_ context.Context, p []int) ([]int, error) { return p, nil })
	echoArray := jsonrpc.Func(func(_ context.Context, p [2]string) ([2]string, error) { return p, nil })
	echoMap := jsonrpc.Func(func(_ context.Context, p map[string]int) (int, error) { return len(p), nil })
	echoPtr := jsonrpc.Func(func(_ context.Context, p *point) (bool, error) { return p == nil, nil })
	raw := jsonrpc.Func(func(_ context.Context, p json.RawMessage) (json.RawMessage, error) { return p, nil })

	tests := []struct {
		name   string
		h      jsonrpc.Handler
		params string
		want   any
	}{
		{"object into struct", echoStruct, `{"x":1,"y":2,"label":"p","extra":true}`, point{1, 2, "p"}},
		{"absent params into struct", echoStruct, ``, point{}},
		{"array into slice", echoSlice, `[1,2,3]`, []int{1, 2, 3}},
		{"empty array into slice", echoSlice, `[]`, []int{}},
		{"absent params into slice", echoSlice, ``, []int(nil)},
		{"array into array", echoArray, `["a","b"]`, [2]string{"a", "b"}},
		{"short array into array", echoArray, `["a"]`, [2]string{"a", ""}},
		{"object into map", echoMap, `{"a":1,"b":2}`, 2},
		{"absent params into pointer", echoPtr, ``, true},
		{"object into pointer", echoPtr, `{"x":1}`, false},
		{"raw", raw, `[1, {"a" : 2}]`, json.RawMessage(`[1, {"a" : 2}]`)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := &jsonrpc.Request{ID: jsonrpc.Int64ID(1), Method: "m"}
			if tc.params != "" {
				r.Params = json.RawMessage(tc.params)
			}
			v, err := tc.h.ServeJSONRPC(t.Context(), r)
			require.NoError(t, err)
			assert.Equal(t, tc.want, v)
		})
	}
}

// pair refuses anything but two numbers, with its own message.
type pair [2]float64

func (p *pair) UnmarshalJSON(b []byte) error {
	var a []float64
	if err := json.Unmarshal(b, &a); err != nil || len(a) != 2 {
		return errors.New("want [minuend, subtrahend]")
	}
	copy(p[:], a)
	return nil
}

func TestFuncDecodeError(t *testing.T) {
	structH := jsonrpc.Func(func(_ context.Context, p point) (int, error) { return p.X, nil })
	pairH := jsonrpc.Func(func(_ context.Context, p pair) (float64, error) { return p[0] - p[1], nil })
	scalarH := jsonrpc.Func(func(_ context.Context, p int) (int, error) { return p, nil })
	sliceH := jsonrpc.Func(func(_ context.Context, p []int) (int, error) { return len(p), nil })
	arrayH := jsonrpc.Func(func(_ context.Context, p [2]int) (int, error) { return p[0], nil })

	tests := []struct {
		name     string
		h        jsonrpc.Handler
		params   string
		mentions []string // the message says what was wrong
		blames   string   // what it must not say instead, if anything
	}{
		{"array into struct", structH, `[1,2]`, []string{"object", "array"}, ""},
		{"wrong field type", structH, `{"x":"one"}`, []string{`"x"`, "int", "string"}, ""},
		{"wrong nested type", structH, `{"label":5}`, []string{`"label"`, "string", "number"}, ""},
		{"object into slice", sliceH, `{"a":1}`, []string{"array", "object"}, ""},
		{"wrong element type", sliceH, `[1,"two"]`, []string{"element", "int", "string"}, "want an array"},
		{"object into array", arrayH, `{"a":1}`, []string{"array", "object"}, ""},
		{"fraction into int", arrayH, `[1.5,2]`, []string{"element", "int", "number 1.5"}, "want an array"},
		{"own UnmarshalJSON", pairH, `[1]`, []string{"want [minuend, subtrahend]"}, ""},
		{"array into scalar", scalarH, `[1]`, []string{"int", "array"}, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := tc.h.ServeJSONRPC(t.Context(), &jsonrpc.Request{ID: jsonrpc.Int64ID(1), Method: "m", Params: json.RawMessage(tc.params)})
			require.ErrorIs(t, err, jsonrpc.ErrInvalidParams)
			var e *jsonrpc.Error
			require.ErrorAs(t, err, &e)
			for _, m := range tc.mentions {
				assert.Contains(t, e.Message, m)
			}
			if tc.blames != "" {
				assert.NotContains(t, e.Message, tc.blames, "the params as a whole are not what was wrong")
			}
			assert.NotContains(t, e.Message, "json: ", "the message is for the peer, not a Go error dump")

			// The same over the wire.
			mux := new(jsonrpc.Mux)
			mux.Handle("m", tc.h)
			got := serveString(t, &jsonrpc.Server{Options: jsonrpc.Options{Handler: mux}}, req("1", "m", tc.params)+"\n")
			require.Len(t, got, 1)
			r := decodeResponse(t, got[0])
			require.NotNil(t, r.Error)
			assert.Equal(t, jsonrpc.CodeInvalidParams, r.Error.Code)
			assert.Equal(t, e.Message, r.Error.Message)
		})
	}
}

func TestFuncPassesErrorAndContext(t *testing.T) {
	type key struct{}
	errFn := errors.New("fn failed")
	h := jsonrpc.Func(func(ctx context.Context, p []int) (int, error) {
		if ctx.Value(key{}) != "v" {
			return 0, errors.New("context not passed")
		}
		return 0, errFn
	})
	_, err := h.ServeJSONRPC(context.WithValue(t.Context(), key{}, "v"), &jsonrpc.Request{Params: json.RawMessage(`[1]`)})
	require.ErrorIs(t, err, errFn)
}

// countTo streams 0..n-1, then fails with failAt's error if failAt >= 0.
func countTo(stopped *bool) func(ctx context.Context, p struct {
	N      int `json:"n"`
	FailAt int `json:"failAt"`
}) iter.Seq2[map[string]int, error] {
	return func(ctx context.Context, p struct {
		N      int `json:"n"`
		FailAt int `json:"failAt"`
	}) iter.Seq2[map[string]int, error] {
		return func(yield func(map[string]int, error) bool) {
			for i := range p.N {
				if p.FailAt > 0 && i == p.FailAt {
					yield(nil, jsonrpc.NewError(-32001, "failed at "+strconv.Itoa(i)))
					return
				}
				if !yield(map[string]int{"index": i}, nil) {
					if stopped != nil {
						*stopped = true
					}
					return
				}
			}
		}
	}
}

func TestStreamItems(t *testing.T) {
	h := jsonrpc.Stream(countTo(nil))
	tests := []struct {
		name    string
		params  string
		items   []string
		errCode jsonrpc.Code // 0 when the sequence ends without an error
	}{
		{"three", `{"n":3}`, []string{`{"index":0}`, `{"index":1}`, `{"index":2}`}, 0},
		{"none", `{"n":0}`, nil, 0},
		{"absent params", ``, nil, 0},
		{"error mid-stream", `{"n":5,"failAt":2}`, []string{`{"index":0}`, `{"index":1}`}, -32001},
		{"bad params", `[1]`, nil, jsonrpc.CodeInvalidParams},
	}
	unencodable := jsonrpc.Stream(func(context.Context, struct{}) iter.Seq2[any, error] {
		return func(yield func(any, error) bool) {
			if yield(1, nil) {
				yield(func() {}, nil)
			}
		}
	})
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := &jsonrpc.Request{ID: jsonrpc.Int64ID(1), Method: "count"}
			if tc.params != "" {
				r.Params = json.RawMessage(tc.params)
			}
			var items []string
			var errs []error
			for item, err := range itemsOf(t.Context(), h, r) {
				if err != nil {
					errs = append(errs, err)
					continue
				}
				require.Empty(t, errs, "no item after the error")
				items = append(items, string(item))
			}
			require.Len(t, items, len(tc.items))
			for i := range items {
				assert.JSONEq(t, tc.items[i], items[i])
			}
			if tc.errCode == 0 {
				assert.Empty(t, errs)
				return
			}
			require.Len(t, errs, 1, "the error is the last pair")
			var e *jsonrpc.Error
			require.ErrorAs(t, errs[0], &e)
			assert.Equal(t, tc.errCode, e.Code)
		})
	}
	t.Run("item that cannot be encoded", func(t *testing.T) {
		var items []string
		var errs []error
		for item, err := range itemsOf(t.Context(), unencodable, &jsonrpc.Request{ID: jsonrpc.Int64ID(1)}) {
			if err != nil {
				errs = append(errs, err)
			} else {
				items = append(items, string(item))
			}
		}
		assert.Equal(t, []string{"1"}, items)
		assert.Len(t, errs, 1)
	})
	t.Run("item that cannot be encoded, over the wire", func(t *testing.T) {
		mux := new(jsonrpc.Mux)
		mux.Handle("s", unencodable)
		got := serveString(t, &jsonrpc.Server{Options: jsonrpc.Options{Handler: mux}}, req("1", "s", "")+"\n")
		require.Len(t, got, 2)
		assert.JSONEq(t, `{"jsonrpc":"2.0","method":"$/stream","params":{"id":1,"item":1}}`, got[0])
		r := decodeResponse(t, got[1])
		if assert.NotNil(t, r.Error) {
			assert.Equal(t, jsonrpc.CodeInternalError, r.Error.Code)
		}
	})
}

func TestItemsBreakStopsProducer(t *testing.T) {
	var stopped bool
	var ctxErr error
	produced := 0
	h := jsonrpc.Stream(func(ctx context.Context, _ struct{}) iter.Seq2[int, error] {
		return func(yield func(int, error) bool) {
			for i := 0; ; i++ {
				produced++
				if !yield(i, nil) {
					stopped = true
					ctxErr = ctx.Err()
					return
				}
				if i > 1000 {
					return // the producer was not stopped: fail below, not hang
				}
			}
		}
	})
	var got []string
	for item, err := range itemsOf(t.Context(), h, &jsonrpc.Request{ID: jsonrpc.Int64ID(1), Method: "s"}) {
		require.NoError(t, err)
		got = append(got, string(item))
		if len(got) == 3 {
			break
		}
	}
	assert.Equal(t, []string{"0", "1", "2"}, got)
	assert.True(t, stopped, "yield returns false to the producer once the range stops")
	assert.Equal(t, 3, produced, "the producer produces nothing after yield returned false")
	assert.ErrorIs(t, ctxErr, context.Canceled, "stopping early cancels the handler's context")
}

func TestItemsOfPlainHandler(t *testing.T) {
	t.Run("success yields nothing", func(t *testing.T) {
		n := 0
		for range itemsOf(t.Context(), constHandler(5), &jsonrpc.Request{Method: "m"}) {
			n++
		}
		assert.Zero(t, n)
	})
	t.Run("error yields only the error", func(t *testing.T) {
		var errs []error
		for item, err := range itemsOf(t.Context(), new(jsonrpc.Mux), &jsonrpc.Request{Method: "m"}) {
			assert.Nil(t, item)
			errs = append(errs, err)
		}
		require.Len(t, errs, 1)
		assert.ErrorIs(t, errs[0], jsonrpc.ErrMethodNotFound)
	})
	t.Run("Notify is dropped", func(t *testing.T) {
		h := jsonrpc.HandlerFunc(func(ctx context.Context, _ *jsonrpc.Request) (any, error) {
			return nil, jsonrpc.Peer(ctx).Notify(ctx, "progress", map[string]int{"n": 1})
		})
		n := 0
		for _, err := range itemsOf(t.Context(), h, &jsonrpc.Request{Method: "m"}) {
			assert.NoError(t, err)
			n++
		}
		assert.Zero(t, n)
	})
}

func TestStreamOverTheWire(t *testing.T) {
	mux := new(jsonrpc.Mux)
	mux.Handle("count", jsonrpc.Stream(countTo(nil)))
	tests := []struct {
		name  string
		id    string
		param string
		items []string
		final string // the "result" or "error" member of the response
	}{
		{"three", `1`, `{"n":3}`, []string{`{"index":0}`, `{"index":1}`, `{"index":2}`}, `"result":3`},
		{"string id", `"s-1"`, `{"n":2}`, []string{`{"index":0}`, `{"index":1}`}, `"result":2`},
		{"null id", `null`, `{"n":1}`, []string{`{"index":0}`}, `"result":1`},
		{"none", `7`, `{"n":0}`, nil, `"result":0`},
		{"error mid-stream", `"e"`, `{"n":4,"failAt":2}`, []string{`{"index":0}`, `{"index":1}`},
			`"error":{"code":-32001,"message":"failed at 2"}`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := serveString(t, &jsonrpc.Server{Options: jsonrpc.Options{Handler: mux}}, req(tc.id, "count", tc.param)+"\n")
			require.Len(t, got, len(tc.items)+1, "output: %q", got)
			for i, item := range tc.items {
				assert.JSONEq(t, `{"jsonrpc":"2.0","method":"$/stream","params":{"id":`+tc.id+`,"item":`+item+`}}`, got[i])
			}
			assert.JSONEq(t, `{"jsonrpc":"2.0","id":`+tc.id+`,`+tc.final+`}`, got[len(got)-1])
		})
	}
	t.Run("notification", func(t *testing.T) {
		// No one takes a notification's items: the producer runs, and is
		// stopped at its first item, so that a peer cannot make it run
		// on for nothing ({"n": 4611686018427387904}, say).
		var yielded, stopped int
		mux := new(jsonrpc.Mux)
		mux.Handle("s", jsonrpc.Stream(func(context.Context, struct{}) iter.Seq2[int, error] {
			return func(yield func(int, error) bool) {
				for i := range 1000 {
					yielded++
					if !yield(i, nil) {
						stopped++
						return
					}
				}
			}
		}))
		got := serveString(t, &jsonrpc.Server{Options: jsonrpc.Options{Handler: mux}}, req("", "s", "")+"\n")
		assert.Empty(t, got, "a notification gets neither items nor a response")
		assert.Equal(t, 1, yielded, "the producer runs to its first item")
		assert.Equal(t, 1, stopped, "yield reports false there")
	})
}

func TestStreamCancelledOverTheWire(t *testing.T) {
	checkLeaks(t)
	stopped := make(chan bool, 1)
	mux := new(jsonrpc.Mux)
	mux.Handle("s", jsonrpc.Stream(func(ctx context.Context, _ struct{}) iter.Seq2[int, error] {
		return func(yield func(int, error) bool) {
			if !yield(0, nil) {
				stopped <- false
				return
			}
			<-ctx.Done()
			stopped <- !yield(1, nil)
		}
	}))
	p := startPipe(t, t.Context(), &jsonrpc.Server{Options: jsonrpc.Options{Handler: mux}})
	p.send(req("9", "s", ""))
	assert.JSONEq(t, `{"jsonrpc":"2.0","method":"$/stream","params":{"id":9,"item":0}}`, p.recv())
	p.send(cancelLine("9"))
	assert.True(t, <-stopped, "yield returns false once the request is cancelled")
	var last jsonrpc.Response
	for {
		line := p.recv()
		if strings.Contains(line, `"$/stream"`) {
			continue // an item may already be on its way
		}
		last = decodeResponse(t, line)
		break
	}
	assert.Equal(t, "9", last.ID.String())
	if assert.NotNil(t, last.Error) {
		assert.Equal(t, jsonrpc.CodeRequestCancelled, last.Error.Code)
	}
	require.NoError(t, p.finish())
	assert.Empty(t, p.rest())
}

func TestNotifyPrecedesResponse(t *testing.T) {
	mux := new(jsonrpc.Mux)
	mux.Handle("progress", jsonrpc.Func(func(ctx context.Context, p struct {
		Count int `json:"count"`
	}) (string, error) {
		for i := 1; i <= p.Count; i++ {
			if err := jsonrpc.Peer(ctx).Notify(ctx, "progress", map[string]any{"id": strconv.Itoa(p.Count), "done": i}); err != nil {
				return "", err
			}
		}
		if err := jsonrpc.Peer(ctx).Notify(ctx, "bare", nil); err != nil {
			return "", err
		}
		if err := jsonrpc.Peer(ctx).Notify(ctx, "list", []int{1}); err != nil {
			return "", err
		}
		return "done", nil
	}))
	var lines []string
	for n := 1; n <= 20; n++ {
		lines = append(lines, req(strconv.Quote(strconv.Itoa(n)), "progress", `{"count":`+strconv.Itoa(n)+`}`))
	}
	got := serveString(t, &jsonrpc.Server{Options: jsonrpc.Options{Handler: mux, MaxInFlight: 4}}, strings.Join(lines, "\n")+"\n")

	seen := make(map[string]int)      // progress notifications seen per id
	answered := make(map[string]bool) // ids answered
	bare := 0
	for _, line := range got {
		var m struct {
			Method string          `json:"method"`
			Params json.RawMessage `json:"params"`
			ID     json.RawMessage `json:"id"`
			Result string          `json:"result"`
		}
		require.NoError(t, json.Unmarshal([]byte(line), &m), line)
		switch m.Method {
		case "progress":
			var params struct {
				ID   string `json:"id"`
				Done int    `json:"done"`
			}
			require.NoError(t, json.Unmarshal(m.Params, &params), line)
			m.Params = nil
			id := strconv.Quote(params.ID)
			assert.False(t, answered[id], "notification for %s after its response", id)
			seen[id]++
			assert.Equal(t, seen[id], params.Done, "notifications in order")
			continue
		case "bare":
			assert.NotContains(t, line, `"params"`)
			bare++
		case "list":
			assert.Contains(t, line, `"params":[1]`)
		case "":
			id := string(m.ID)
			assert.Equal(t, "done", m.Result)
			n, err := strconv.Unquote(id)
			require.NoError(t, err)
			assert.Equal(t, n, strconv.Itoa(seen[id]), "every notification of %s precedes its response", id)
			answered[id] = true
		default:
			assert.Fail(t, "unexpected line", line)
		}
	}
	assert.Len(t, answered, 20)
	assert.Equal(t, 20, bare)
}

func TestNotifyErrors(t *testing.T) {
	t.Run("no connection", func(t *testing.T) {
		require.ErrorIs(t, jsonrpc.Peer(t.Context()).Notify(t.Context(), "m", nil), jsonrpc.ErrNoConnection)
		require.ErrorIs(t, jsonrpc.Peer(context.Background()).Notify(context.Background(), "m", []int{1}), jsonrpc.ErrNoConnection)
	})
	t.Run("bad params", func(t *testing.T) {
		errs := make(chan error, 3)
		mux := new(jsonrpc.Mux)
		mux.HandleFunc("m", func(ctx context.Context, _ *jsonrpc.Request) (any, error) {
			errs <- jsonrpc.Peer(ctx).Notify(ctx, "n", 5)
			errs <- jsonrpc.Peer(ctx).Notify(ctx, "n", "text")
			errs <- jsonrpc.Peer(ctx).Notify(ctx, "n", make(chan int))
			return nil, nil
		})
		got := serveString(t, &jsonrpc.Server{Options: jsonrpc.Options{Handler: mux}}, req("1", "m", "")+"\n")
		require.Len(t, got, 1, "no notification went out")
		assert.JSONEq(t, `{"jsonrpc":"2.0","id":1,"result":null}`, got[0])
		assert.ErrorIs(t, <-errs, jsonrpc.ErrInvalidParams)
		assert.ErrorIs(t, <-errs, jsonrpc.ErrInvalidParams)
		assert.Error(t, <-errs)
	})
}

func TestBatches(t *testing.T) {
	tests := []struct {
		name     string
		maxBatch int
		in       string
		want     string // the one output line, "" for none
	}{
		{
			name: "array in, array out, in order",
			in:   `[` + req("1", "echo", "[1]") + `,` + req(`"b"`, "sum", "[1,2]") + `,` + req("3", "nope", "") + `]`,
			want: `[{"jsonrpc":"2.0","id":1,"result":[1]},{"jsonrpc":"2.0","id":"b","result":3},` +
				`{"jsonrpc":"2.0","id":3,"error":{"code":-32601,"message":"Method not found"}}]`,
		},
		{
			name: "notifications get no entry",
			in:   `[` + req("", "echo", "[1]") + `,` + req("2", "echo", "[2]") + `,` + req("", "nope", "") + `]`,
			want: `[{"jsonrpc":"2.0","id":2,"result":[2]}]`,
		},
		{
			name: "all notifications, no output",
			in:   `[` + req("", "echo", "[1]") + `,` + req("", "nope", "") + `]`,
		},
		{
			name: "empty array is one Invalid Request",
			in:   ` [ ] `,
			want: `{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Invalid Request"}}`,
		},
		{
			name: "each invalid entry gets its own error",
			in:   `[1,{"jsonrpc":"2.0"},` + req("3", "sum", "[1]") + `,{"jsonrpc":"1.0","method":"x","id":"four"},[],null]`,
			want: `[{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Invalid Request"}},` +
				`{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Invalid Request"}},` +
				`{"jsonrpc":"2.0","id":3,"result":1},` +
				`{"jsonrpc":"2.0","id":"four","error":{"code":-32600,"message":"Invalid Request"}},` +
				`{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Invalid Request"}},` +
				`{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Invalid Request"}}]`,
		},
		{
			name: "nested batch entry is invalid",
			in:   `[[` + req("1", "echo", "") + `]]`,
			want: `[{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Invalid Request"}}]`,
		},
		{
			name: "trailing comma is a parse error",
			in:   `[` + req("1", "echo", "") + `,]`,
			want: `{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Parse error"}}`,
		},
		{
			name: "garbage after the array is a parse error",
			in:   `[` + req("1", "echo", "") + `] 1`,
			want: `{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Parse error"}}`,
		},
		{
			name: "garbage after an empty array is a parse error",
			in:   `[] []`,
			want: `{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Parse error"}}`,
		},
		{
			name:     "at MaxBatch",
			maxBatch: 2,
			in:       `[` + req("1", "echo", "[1]") + `,` + req("2", "echo", "[2]") + `]`,
			want:     `[{"jsonrpc":"2.0","id":1,"result":[1]},{"jsonrpc":"2.0","id":2,"result":[2]}]`,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := serveString(t, &jsonrpc.Server{Options: jsonrpc.Options{Handler: specMux(), MaxBatch: tc.maxBatch}}, tc.in+"\n")
			if tc.want == "" {
				assert.Empty(t, got)
				return
			}
			require.Len(t, got, 1, "output: %q", got)
			assert.JSONEq(t, tc.want, got[0])
		})
	}
}

func TestBatchOverMaxBatch(t *testing.T) {
	var ran bool
	mux := specMux()
	mux.HandleFunc("mark", func(context.Context, *jsonrpc.Request) (any, error) { ran = true; return nil, nil })
	in := `[` + req("1", "mark", "") + `,` + req("2", "echo", "[2]") + `,` + req("", "mark", "") + `]`
	got := serveString(t, &jsonrpc.Server{Options: jsonrpc.Options{Handler: mux, MaxBatch: 2}}, in+"\n"+req("4", "echo", "[4]")+"\n")
	require.Len(t, got, 2)
	r := decodeResponse(t, got[0])
	assert.True(t, r.ID.IsNull(), "one error with a null id, not an array: %s", got[0])
	if assert.NotNil(t, r.Error) {
		assert.Equal(t, jsonrpc.CodeInvalidRequest, r.Error.Code)
	}
	assert.False(t, ran, "no entry of the batch runs")
	assert.JSONEq(t, `{"jsonrpc":"2.0","id":4,"result":[4]}`, got[1], "the next line is served")
}

func TestBatchEntriesRunInOrder(t *testing.T) {
	var mu sync.Mutex
	var order []string
	mux := new(jsonrpc.Mux)
	mux.HandleFunc("rec", func(_ context.Context, r *jsonrpc.Request) (any, error) {
		mu.Lock()
		defer mu.Unlock()
		order = append(order, string(r.Params))
		return len(order), nil
	})
	var entries []string
	var want []string
	for i := range 50 {
		id := ""
		if i%2 == 0 {
			id = strconv.Itoa(i)
		}
		entries = append(entries, req(id, "rec", "["+strconv.Itoa(i)+"]"))
		want = append(want, "["+strconv.Itoa(i)+"]")
	}
	got := serveString(t, &jsonrpc.Server{Options: jsonrpc.Options{Handler: mux}}, "["+strings.Join(entries, ",")+"]\n")
	require.Len(t, got, 1)
	var resps []jsonrpc.Response
	require.NoError(t, json.Unmarshal([]byte(got[0]), &resps))
	require.Len(t, resps, 25)
	for i, r := range resps {
		assert.Equal(t, strconv.Itoa(2*i), r.ID.String())
	}
	assert.Equal(t, want, order)
}

// TestMiddlewareReplacedParamsAreChecked: a handler that echoes params
// that middleware replaced with bytes the scanner never saw gets them
// checked before they are written, as any other raw result.
func TestMiddlewareReplacedParamsAreChecked(t *testing.T) {
	for _, name := range []string{"raw", "any"} {
		t.Run(name, func(t *testing.T) {
			mux := new(jsonrpc.Mux)
			mux.Handle("echo", jsonrpc.RawHandlerFunc(func(_ context.Context, req *jsonrpc.Request) (json.RawMessage, error) {
				return req.Params, nil
			}))
			mux.HandleFunc("echoAny", func(_ context.Context, req *jsonrpc.Request) (any, error) {
				return req.Params, nil
			})
			mux.Use(func(next jsonrpc.Handler) jsonrpc.Handler {
				return jsonrpc.HandlerFunc(func(ctx context.Context, req *jsonrpc.Request) (any, error) {
					req.Params = json.RawMessage(`{"broken":`)
					return next.ServeJSONRPC(ctx, req)
				})
			})
			method := map[string]string{"raw": "echo", "any": "echoAny"}[name]
			out := serveString(t, &jsonrpc.Server{Options: jsonrpc.Options{Handler: mux}}, `{"jsonrpc":"2.0","id":1,"method":"`+method+`","params":{"a":1}}`+"\n")
			require.Len(t, out, 1)
			assert.True(t, json.Valid([]byte(out[0])), "invalid JSON written: %s", out[0])
			assert.Contains(t, out[0], `"code":-32603`)
		})
	}
}

// TestMuxUseSeesUnknownMethods checks that middleware wraps the answer to
// a method with no handler, in process and on a connection, while
// Handler still reports that there is none.
func TestMuxUseSeesUnknownMethods(t *testing.T) {
	var seen []string
	mux := new(jsonrpc.Mux)
	mux.HandleFunc("known", func(context.Context, *jsonrpc.Request) (any, error) { return "ok", nil })
	mux.Use(func(next jsonrpc.Handler) jsonrpc.Handler {
		return jsonrpc.HandlerFunc(func(ctx context.Context, req *jsonrpc.Request) (any, error) {
			v, err := next.ServeJSONRPC(ctx, req)
			seen = append(seen, fmt.Sprintf("%s %v", req.Method, errors.Is(err, jsonrpc.ErrMethodNotFound)))
			return v, err
		})
	})
	assert.Nil(t, mux.Handler("unknown"))

	_, err := mux.ServeJSONRPC(t.Context(), &jsonrpc.Request{ID: jsonrpc.Int64ID(1), Method: "unknown"})
	assert.ErrorIs(t, err, jsonrpc.ErrMethodNotFound)

	var out bytes.Buffer
	in := strings.NewReader(`{"jsonrpc":"2.0","id":2,"method":"unknown"}` + "\n" + `{"jsonrpc":"2.0","id":3,"method":"known"}` + "\n")
	require.NoError(t, jsonrpc.Serve(t.Context(), in, &out, mux))
	assert.Contains(t, out.String(), `{"jsonrpc":"2.0","id":2,"error":{"code":-32601,"message":"Method not found"}}`)
	assert.Equal(t, []string{"unknown true", "unknown true", "known false"}, seen)
}

// NoHandler tells the middleware of a Mux that a request has no handler,
// however the Mux is served, and whatever middleware inside answers it.
func TestNoHandler(t *testing.T) {
	var seen []string
	mux := new(jsonrpc.Mux)
	mux.HandleFunc("known", func(context.Context, *jsonrpc.Request) (any, error) { return 1, nil })
	record := func(next jsonrpc.Handler) jsonrpc.Handler {
		return jsonrpc.HandlerFunc(func(ctx context.Context, req *jsonrpc.Request) (any, error) {
			seen = append(seen, fmt.Sprintf("%s:%v", req.Method, jsonrpc.NoHandler(ctx)))
			return next.ServeJSONRPC(ctx, req)
		})
	}
	deny := func(next jsonrpc.Handler) jsonrpc.Handler {
		return jsonrpc.HandlerFunc(func(ctx context.Context, req *jsonrpc.Request) (any, error) {
			if req.Method == "made.up" {
				return nil, &jsonrpc.Error{Code: -32001, Message: "Unauthorized"}
			}
			return next.ServeJSONRPC(ctx, req)
		})
	}
	mux.Use(record, deny)
	in := `{"jsonrpc":"2.0","id":1,"method":"known"}` + "\n" +
		`{"jsonrpc":"2.0","id":2,"method":"made.up"}` + "\n" +
		`{"jsonrpc":"2.0","id":3,"method":"other"}` + "\n"
	var out bytes.Buffer
	require.NoError(t, jsonrpc.Serve(t.Context(), strings.NewReader(in), &out, mux))
	assert.Equal(t, []string{"known:false", "made.up:true", "other:true"}, seen, "served by a connection")
	assert.Contains(t, out.String(), `"id":2,"error":{"code":-32001`)
	assert.Contains(t, out.String(), `"id":3,"error":{"code":-32601`)

	seen = nil
	for _, m := range []string{"known", "made.up"} {
		_, _ = mux.ServeJSONRPC(t.Context(), &jsonrpc.Request{ID: jsonrpc.Int64ID(1), Method: m})
	}
	assert.Equal(t, []string{"known:false", "made.up:true"}, seen, "called directly")
	assert.False(t, jsonrpc.NoHandler(t.Context()))
}

// NoHandler speaks of the dispatch nearest the handler: a Mux's
// middleware that passes a request with no handler to a second Mux (a
// fallback), directly or through an InProcess, or an InProcess that
// serves a handler of its own, does not make the second say so.
func TestNoHandlerNearestDispatch(t *testing.T) {
	var seen []string
	legacy := new(jsonrpc.Mux)
	legacy.HandleFunc("old", func(context.Context, *jsonrpc.Request) (any, error) { return 1, nil })
	legacy.Use(func(next jsonrpc.Handler) jsonrpc.Handler {
		return jsonrpc.HandlerFunc(func(ctx context.Context, req *jsonrpc.Request) (any, error) {
			seen = append(seen, fmt.Sprintf("legacy %s:%v", req.Method, jsonrpc.NoHandler(ctx)))
			return next.ServeJSONRPC(ctx, req)
		})
	})
	plain := &jsonrpc.InProcess{Handler: jsonrpc.HandlerFunc(func(ctx context.Context, req *jsonrpc.Request) (any, error) {
		seen = append(seen, fmt.Sprintf("plain %s:%v", req.Method, jsonrpc.NoHandler(ctx)))
		return 2, nil
	})}
	for _, pass := range []string{"direct", "in process", "plain"} {
		seen = nil
		front := new(jsonrpc.Mux)
		front.Use(func(next jsonrpc.Handler) jsonrpc.Handler {
			return jsonrpc.HandlerFunc(func(ctx context.Context, req *jsonrpc.Request) (any, error) {
				seen = append(seen, fmt.Sprintf("front %s:%v", req.Method, jsonrpc.NoHandler(ctx)))
				if !jsonrpc.NoHandler(ctx) {
					return next.ServeJSONRPC(ctx, req)
				}
				var r any
				var err error
				switch pass {
				case "direct":
					return legacy.ServeJSONRPC(ctx, req)
				case "in process":
					err = (&jsonrpc.InProcess{Handler: legacy}).Call(ctx, req.Method, req.Params, &r)
				default:
					err = plain.Call(ctx, req.Method, req.Params, &r)
				}
				return r, err
			})
		})
		want := []string{"front old:true", "legacy old:false"}
		if pass == "plain" {
			want[1] = "plain old:false"
		}
		var out bytes.Buffer
		require.NoError(t, jsonrpc.Serve(t.Context(), strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"old"}`+"\n"), &out, front), pass)
		assert.NotContains(t, out.String(), "error", pass)
		assert.Equal(t, want, seen, "%s, front served by a connection", pass)

		seen = nil
		var r any
		require.NoError(t, (&jsonrpc.InProcess{Handler: front}).Call(t.Context(), "old", nil, &r), pass)
		assert.Equal(t, want, seen, "%s, front served in process", pass)
	}
}
