package jsonrpc_test

// This file tests InProcess: its zero value, the context and the Peer its
// handlers get, panics, notifications through OnNotify, batches,
// cancellation, and the strict decoding of results, each compared where
// it matters with what a connection to a Server gives.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ndjsonrpc/jsonrpc"
)

func TestInProcessZeroValue(t *testing.T) {
	var ip jsonrpc.InProcess
	ctx := t.Context()

	err := ip.Call(ctx, "anything", []int{1}, nil)
	require.ErrorIs(t, err, jsonrpc.ErrMethodNotFound)
	var werr *jsonrpc.Error
	require.ErrorAs(t, err, &werr)
	assert.Equal(t, jsonrpc.CodeMethodNotFound, werr.Code)

	assert.NoError(t, ip.Notify(ctx, "anything", nil), "a notification gets no answer, not even an error")

	call, note := &jsonrpc.BatchCall{Method: "a"}, &jsonrpc.BatchCall{Method: "b", Notify: true}
	require.NoError(t, ip.Batch(ctx, call, note))
	assert.ErrorIs(t, call.Err, jsonrpc.ErrMethodNotFound)
	assert.NoError(t, note.Err)

	var errs []error
	for item, err := range ip.Stream(ctx, "anything", nil) {
		assert.Nil(t, item)
		errs = append(errs, err)
	}
	if assert.Len(t, errs, 1) {
		assert.ErrorIs(t, errs[0], jsonrpc.ErrMethodNotFound)
	}

	_, err = v1Add.Call(ctx, &ip, v1Operands{A: 1})
	assert.ErrorIs(t, err, jsonrpc.ErrMethodNotFound)
}

// ipKey is the key of a value that a test puts in the caller's context.
type ipKey struct{}

func TestInProcessContext(t *testing.T) {
	var fromCall, fromStream any
	var requestMethod string
	mux := new(jsonrpc.Mux)
	mux.HandleFunc("value", func(ctx context.Context, _ *jsonrpc.Request) (any, error) {
		fromCall = ctx.Value(ipKey{})
		if req := jsonrpc.RequestFromContext(ctx); req != nil {
			requestMethod = req.Method
		}
		return nil, nil
	})
	mux.Handle("values", jsonrpc.Stream(func(ctx context.Context, _ struct{}) iter.Seq2[int, error] {
		return func(yield func(int, error) bool) {
			fromStream = ctx.Value(ipKey{})
			yield(1, nil)
		}
	}))
	ip := &jsonrpc.InProcess{Handler: mux}
	ctx := context.WithValue(t.Context(), ipKey{}, "from the caller")

	require.NoError(t, ip.Call(ctx, "value", nil, nil))
	assert.Equal(t, "from the caller", fromCall)
	assert.Equal(t, "value", requestMethod, "RequestFromContext in the handler")
	fromCall = nil
	require.NoError(t, ip.Notify(ctx, "value", nil))
	assert.Equal(t, "from the caller", fromCall)
	for _, err := range ip.Stream(ctx, "values", nil) {
		require.NoError(t, err)
	}
	assert.Equal(t, "from the caller", fromStream)

	// The handler's context ends when the call returns.
	var handlerCtx context.Context
	mux.HandleFunc("keep", func(ctx context.Context, _ *jsonrpc.Request) (any, error) {
		handlerCtx = ctx
		return nil, ctx.Err()
	})
	require.NoError(t, ip.Call(ctx, "keep", nil, nil))
	require.NotNil(t, handlerCtx)
	assert.ErrorIs(t, handlerCtx.Err(), context.Canceled, "the handler's context once the call has returned")
	assert.NoError(t, ctx.Err(), "the caller's context")
}

// ipPanicMux serves methods that panic: in a handler, in a stream before
// and after an item.
func ipPanicMux() *jsonrpc.Mux {
	mux := new(jsonrpc.Mux)
	mux.HandleFunc("panic", func(context.Context, *jsonrpc.Request) (any, error) {
		panic("handler lost its mind")
	})
	mux.Handle("panic_stream", jsonrpc.Stream(func(context.Context, struct{}) iter.Seq2[int, error] {
		return func(yield func(int, error) bool) {
			if yield(1, nil) {
				panic(fmt.Errorf("stream lost its mind"))
			}
		}
	}))
	mux.Handle("ok", jsonrpc.Func(func(context.Context, struct{}) (string, error) { return "still here", nil }))
	return mux
}

func TestInProcessPanic(t *testing.T) {
	checkLeaks(t)
	mux := ipPanicMux()
	ip := &jsonrpc.InProcess{Handler: mux}
	conn := newPair(t, mux)
	ctx := t.Context()

	tests := []struct {
		name   string
		method string
		stream bool
		items  int
		detail string
	}{
		{"handler", "panic", false, 0, "handler lost its mind"},
		{"stream", "panic_stream", true, 1, "stream lost its mind"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			// errs[0] is InProcess's, errs[1] the connection's.
			var errs [2]error
			for i, c := range []jsonrpc.Caller{ip, conn} {
				if !tc.stream {
					errs[i] = c.Call(ctx, tc.method, nil, nil)
					continue
				}
				items := 0
				for _, err := range c.Stream(ctx, tc.method, nil) {
					if err != nil {
						errs[i] = err
						continue
					}
					items++
				}
				assert.Equal(t, tc.items, items, "items before the panic")
			}
			var werr *jsonrpc.Error
			require.ErrorAs(t, errs[0], &werr)
			assert.Equal(t, jsonrpc.CodeInternalError, werr.Code)
			assert.ErrorIs(t, errs[0], jsonrpc.ErrInternal)
			assert.JSONEq(t, `{"exception":"panic","detail":"`+tc.detail+`"}`, string(werr.Data))
			assert.Equal(t, v1WireError(t, errs[1]), v1WireError(t, errs[0]), "InProcess answers a panic as a Server does")
		})
	}

	var s string
	require.NoError(t, ip.Call(ctx, "ok", nil, &s), "after the panics")
	assert.Equal(t, "still here", s)
}

func TestInProcessOnNotify(t *testing.T) {
	var notes []string // appended by OnNotify, on the caller's goroutine
	var notifyErrs []error
	mux := new(jsonrpc.Mux)
	mux.HandleFunc("work", func(ctx context.Context, _ *jsonrpc.Request) (any, error) {
		for i := range 3 {
			notifyErrs = append(notifyErrs, jsonrpc.Peer(ctx).Notify(ctx, "progress", map[string]int{"i": i}))
		}
		notifyErrs = append(notifyErrs, v1Notify.Notify(ctx, jsonrpc.Peer(ctx), v1Note{Text: "typed"}))
		return "done", nil
	})
	mux.Handle("stream", jsonrpc.Stream(func(ctx context.Context, _ struct{}) iter.Seq2[int, error] {
		return func(yield func(int, error) bool) {
			notifyErrs = append(notifyErrs, jsonrpc.Peer(ctx).Notify(ctx, "before", nil))
			if yield(1, nil) {
				notifyErrs = append(notifyErrs, jsonrpc.Peer(ctx).Notify(ctx, "after", []int{1}))
			}
		}
	}))
	onNotify := func(req *jsonrpc.Request) {
		notes = append(notes, req.Method+" "+string(req.Params))
	}
	ip := &jsonrpc.InProcess{Handler: mux, OnNotify: onNotify}
	ctx := t.Context()

	t.Run("Call", func(t *testing.T) {
		notes, notifyErrs = nil, nil
		var res string
		require.NoError(t, ip.Call(ctx, "work", nil, &res))
		assert.Equal(t, "done", res)
		assert.Equal(t, []string{`progress {"i":0}`, `progress {"i":1}`, `progress {"i":2}`, `v1/note {"text":"typed"}`}, notes,
			"every notification is given to OnNotify, in order, before Call returns")
		assert.Equal(t, []error{nil, nil, nil, nil}, notifyErrs)
	})
	t.Run("Notify", func(t *testing.T) {
		notes, notifyErrs = nil, nil
		require.NoError(t, ip.Notify(ctx, "work", nil))
		assert.Len(t, notes, 4)
	})
	t.Run("Batch", func(t *testing.T) {
		notes, notifyErrs = nil, nil
		a, b := &jsonrpc.BatchCall{Method: "work"}, &jsonrpc.BatchCall{Method: "work", Notify: true}
		require.NoError(t, ip.Batch(ctx, a, b))
		assert.NoError(t, a.Err)
		assert.NoError(t, b.Err)
		assert.Len(t, notes, 8)
	})
	t.Run("Stream", func(t *testing.T) {
		notes, notifyErrs = nil, nil
		var seen [][]string // the notes seen as each item arrived
		for _, err := range ip.Stream(ctx, "stream", nil) {
			require.NoError(t, err)
			seen = append(seen, append([]string(nil), notes...))
		}
		assert.Equal(t, [][]string{{"before "}}, seen, "a notification comes before the items after it")
		assert.Equal(t, []string{"before ", "after [1]"}, notes)
		assert.Equal(t, []error{nil, nil}, notifyErrs)
	})
	t.Run("without OnNotify", func(t *testing.T) {
		notes, notifyErrs = nil, nil
		quiet := &jsonrpc.InProcess{Handler: mux}
		require.NoError(t, quiet.Call(ctx, "work", nil, nil))
		assert.Empty(t, notes)
		assert.Equal(t, []error{nil, nil, nil, nil}, notifyErrs, "notifications are dropped without error")
	})
	t.Run("params that cannot be params", func(t *testing.T) {
		var nerr error
		bad := &jsonrpc.InProcess{Handler: jsonrpc.HandlerFunc(func(ctx context.Context, _ *jsonrpc.Request) (any, error) {
			nerr = jsonrpc.Peer(ctx).Notify(ctx, "n", 42)
			return nil, nil
		}), OnNotify: onNotify}
		notes = nil
		require.NoError(t, bad.Call(ctx, "m", nil, nil))
		assert.ErrorIs(t, nerr, jsonrpc.ErrInvalidParams)
		assert.Empty(t, notes)
	})
}

func TestInProcessPeerHasNoConnection(t *testing.T) {
	type outcome struct {
		call, batch, notify error
		stream              []error
		streamItems         int
	}
	var got outcome
	probe := func(ctx context.Context) {
		p := jsonrpc.Peer(ctx)
		got.call = p.Call(ctx, "m", nil, nil)
		got.batch = p.Batch(ctx, &jsonrpc.BatchCall{Method: "m"})
		got.notify = p.Notify(ctx, "m", nil)
		got.stream, got.streamItems = nil, 0
		for item, err := range p.Stream(ctx, "m", nil) {
			if item != nil {
				got.streamItems++
			}
			got.stream = append(got.stream, err)
		}
	}
	mux := new(jsonrpc.Mux)
	mux.HandleFunc("probe", func(ctx context.Context, _ *jsonrpc.Request) (any, error) {
		probe(ctx)
		return nil, nil
	})
	mux.Handle("probe_stream", jsonrpc.Stream(func(ctx context.Context, _ struct{}) iter.Seq2[int, error] {
		return func(yield func(int, error) bool) {
			probe(ctx)
			yield(1, nil)
		}
	}))
	ip := &jsonrpc.InProcess{Handler: mux}
	ctx := t.Context()
	for _, tc := range []struct {
		name string
		run  func() error
	}{
		{"Call", func() error { return ip.Call(ctx, "probe", nil, nil) }},
		{"Notify", func() error { return ip.Notify(ctx, "probe", nil) }},
		{"Batch", func() error { return ip.Batch(ctx, &jsonrpc.BatchCall{Method: "probe"}) }},
		{"Stream", func() error {
			for _, err := range ip.Stream(ctx, "probe_stream", nil) {
				if err != nil {
					return err
				}
			}
			return nil
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got = outcome{}
			require.NoError(t, tc.run())
			assert.ErrorIs(t, got.call, jsonrpc.ErrNoConnection, "Peer(ctx).Call")
			assert.ErrorIs(t, got.batch, jsonrpc.ErrNoConnection, "Peer(ctx).Batch")
			assert.NoError(t, got.notify, "Peer(ctx).Notify (dropped without OnNotify)")
			if assert.Len(t, got.stream, 1, "Peer(ctx).Stream yields one pair") {
				assert.ErrorIs(t, got.stream[0], jsonrpc.ErrNoConnection, "Peer(ctx).Stream")
			}
			assert.Zero(t, got.streamItems)
		})
	}
}

func TestInProcessBatch(t *testing.T) {
	var noted []string
	mux := v1Mux(nil, nil)
	mux.HandleFunc("record", func(_ context.Context, req *jsonrpc.Request) (any, error) {
		noted = append(noted, string(req.Params))
		return "recorded", nil
	})
	ip := &jsonrpc.InProcess{Handler: mux}

	sum := &jsonrpc.BatchCall{Method: v1Add.Name(), Params: v1Operands{A: 1, B: 2}, Result: new(v1Sum)}
	dropped := &jsonrpc.BatchCall{Method: v1Add.Name(), Params: v1Operands{A: 3, B: 4}}
	failed := &jsonrpc.BatchCall{Method: v1Fail.Name(), Params: v1Operands{A: 5}, Result: new(v1Sum)}
	missing := &jsonrpc.BatchCall{Method: "nope", Result: new(v1Sum)}
	badParams := &jsonrpc.BatchCall{Method: v1Add.Name(), Params: 42}
	duplicate := &jsonrpc.BatchCall{Method: v1Add.Name(), Params: json.RawMessage(`{"a":1,"a":1}`)}
	note := &jsonrpc.BatchCall{Method: "record", Params: []int{1}, Notify: true}
	noteMissing := &jsonrpc.BatchCall{Method: "nope", Notify: true}
	record := &jsonrpc.BatchCall{Method: "record", Params: []int{2}, Result: new(string)}
	require.NoError(t, ip.Batch(t.Context(), sum, dropped, failed, missing, badParams, duplicate, note, noteMissing, record))

	assert.NoError(t, sum.Err)
	assert.Equal(t, &v1Sum{Sum: 3}, sum.Result)
	assert.NoError(t, dropped.Err, "a call whose result is dropped")
	var werr *jsonrpc.Error
	if assert.ErrorAs(t, failed.Err, &werr) {
		assert.Equal(t, jsonrpc.Code(-32001), werr.Code)
		assert.JSONEq(t, `{"a":5}`, string(werr.Data))
	}
	assert.Equal(t, &v1Sum{}, failed.Result, "a failed call's result is left alone")
	assert.ErrorIs(t, missing.Err, jsonrpc.ErrMethodNotFound)
	assert.ErrorIs(t, badParams.Err, jsonrpc.ErrInvalidParams)
	assert.ErrorIs(t, duplicate.Err, jsonrpc.ErrInvalidParams)
	assert.NoError(t, note.Err, "a notification")
	assert.NoError(t, noteMissing.Err, "a notification of a method nobody serves")
	assert.NoError(t, record.Err)
	assert.Equal(t, "recorded", *record.Result.(*string))
	assert.Equal(t, []string{"[1]", "[2]"}, noted, "the calls are made in turn")

	t.Run("ctx ended", func(t *testing.T) {
		ctx, cancel := context.WithCancel(t.Context())
		cancel()
		noted = nil
		c := &jsonrpc.BatchCall{Method: "record"}
		assert.ErrorIs(t, ip.Batch(ctx, c), context.Canceled)
		assert.Empty(t, noted, "no call is made once ctx has ended")
	})
}

func TestInProcessCancelled(t *testing.T) {
	mux := new(jsonrpc.Mux)
	mux.HandleFunc("ctx_err", func(ctx context.Context, _ *jsonrpc.Request) (any, error) {
		<-ctx.Done()
		return nil, ctx.Err()
	})
	mux.HandleFunc("wrapped", func(ctx context.Context, _ *jsonrpc.Request) (any, error) {
		<-ctx.Done()
		return nil, fmt.Errorf("gave up: %w", context.Cause(ctx))
	})
	mux.HandleFunc("own_error", func(ctx context.Context, _ *jsonrpc.Request) (any, error) {
		<-ctx.Done()
		return nil, jsonrpc.NewError(-32001, "stopped")
	})
	ip := &jsonrpc.InProcess{Handler: mux}

	cancelled, cancel := context.WithCancel(t.Context())
	cancel()
	deadline, cancelDeadline := context.WithDeadline(t.Context(), time.Unix(0, 0))
	defer cancelDeadline()
	withCause, cancelCause := context.WithCancelCause(t.Context())
	cancelCause(errors.New("the user left"))

	tests := []struct {
		name string
		ctx  context.Context
		want error
	}{
		{"cancelled", cancelled, context.Canceled},
		{"deadline", deadline, context.DeadlineExceeded},
		{"cancelled with a cause", withCause, context.Canceled},
	}
	for _, tc := range tests {
		for _, method := range []string{"ctx_err", "wrapped", "own_error"} {
			t.Run(tc.name+"/"+method, func(t *testing.T) {
				err := ip.Call(tc.ctx, method, nil, nil)
				assert.Equal(t, tc.want, err, "Call returns ctx.Err() itself, as a connection's Call does")

				var errs []error
				for _, err := range ip.Stream(tc.ctx, method, nil) {
					errs = append(errs, err)
				}
				if assert.Len(t, errs, 1) {
					assert.ErrorIs(t, errs[0], tc.want, "Stream")
				}
			})
		}
	}
}

func TestInProcessStrictResult(t *testing.T) {
	result := func(raw string) jsonrpc.Handler {
		return jsonrpc.RawHandlerFunc(func(context.Context, *jsonrpc.Request) (json.RawMessage, error) {
			return json.RawMessage(raw), nil
		})
	}
	type inner struct {
		B int `json:"b"`
	}
	type outer struct {
		A int   `json:"a"`
		X inner `json:"x"`
	}
	tests := []struct {
		name    string
		result  string
		into    func() any
		want    any // the decoded value, when err is nil
		wantErr error
	}{
		{"duplicate into a struct", `{"a":1,"a":2}`, func() any { return new(outer) }, nil, jsonrpc.ErrDuplicateMember},
		{"nested duplicate into a struct", `{"a":1,"x":{"b":1,"b":1}}`, func() any { return new(outer) }, nil, jsonrpc.ErrDuplicateMember},
		{"duplicate into any", `[{"k":1,"k":1}]`, func() any { return new(any) }, nil, jsonrpc.ErrDuplicateMember},
		{"duplicate into a map", `{"k":1,"k":2}`, func() any { return new(map[string]int) }, nil, jsonrpc.ErrDuplicateMember},
		{"names match only exactly", `{"A":1,"a":2}`, func() any { return new(outer) }, &outer{A: 2}, nil},
		{"duplicate into json.RawMessage, unchecked", `{"a":1,"a":2}`, func() any { return new(json.RawMessage) },
			ptr(json.RawMessage(`{"a":1,"a":2}`)), nil},
		{"a valid result", `{"a":1,"x":{"b":2}}`, func() any { return new(outer) }, &outer{A: 1, X: inner{B: 2}}, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ip := &jsonrpc.InProcess{Handler: result(tc.result)}
			dest := tc.into()
			err := ip.Call(t.Context(), "m", nil, dest)
			if tc.wantErr != nil {
				assert.ErrorIs(t, err, tc.wantErr)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.want, dest)
			// A dropped result is not decoded at all.
			assert.NoError(t, ip.Call(t.Context(), "m", nil, nil))
		})
	}
	t.Run("a dropped result is not checked", func(t *testing.T) {
		ip := &jsonrpc.InProcess{Handler: result(`{"a":1,"a":2}`)}
		assert.NoError(t, ip.Call(t.Context(), "m", nil, nil))
	})
}

// ptr returns a pointer to v.
func ptr[T any](v T) *T { return &v }

func TestInProcessRawResults(t *testing.T) {
	checkLeaks(t)
	tests := []struct {
		name   string
		result json.RawMessage
		want   string // what a json.RawMessage result receives
	}{
		{"object with its spacing", json.RawMessage(`{ "b" : 2 ,"a":[1, 2] }`), `{ "b" : 2 ,"a":[1, 2] }`},
		{"string", json.RawMessage(`"x\u00e9"`), `"x\u00e9"`},
		{"number", json.RawMessage(`1e3`), `1e3`},
		{"nil", nil, `null`},
	}
	mux := new(jsonrpc.Mux)
	var next json.RawMessage
	mux.Handle("raw", jsonrpc.RawHandlerFunc(func(context.Context, *jsonrpc.Request) (json.RawMessage, error) {
		return next, nil
	}))
	mux.Handle("boxed", jsonrpc.HandlerFunc(func(context.Context, *jsonrpc.Request) (any, error) {
		return next, nil
	}))
	ip := &jsonrpc.InProcess{Handler: mux}
	for _, tc := range tests {
		for _, method := range []string{"raw", "boxed"} {
			t.Run(tc.name+"/"+method, func(t *testing.T) {
				next = tc.result
				var got json.RawMessage
				require.NoError(t, ip.Call(t.Context(), method, nil, &got))
				assert.Equal(t, tc.want, string(got), "the bytes pass through as they are")
			})
		}
	}

	t.Run("a result that does not encode is an error, as a Server answers it", func(t *testing.T) {
		next = json.RawMessage(`{"a":`)
		mux.HandleFunc("chan", func(context.Context, *jsonrpc.Request) (any, error) { return make(chan int), nil })
		conn := newPair(t, mux)
		for _, method := range []string{"raw", "boxed", "chan"} {
			errIn := ip.Call(t.Context(), method, nil, nil)
			errConn := conn.Call(t.Context(), method, nil, nil)
			assert.ErrorIs(t, errIn, jsonrpc.ErrInternal, method)
			assert.Equal(t, v1WireError(t, errConn), v1WireError(t, errIn), method)
		}
	})
}

// TestInProcessResultsNotScanned checks that a result no scanner has read
// (an interceptor's or a handler's own JSON) decodes as encoding/json
// decodes it: empty, cut short or followed by more, it is an error, not a
// panic or a value read past; a string with invalid UTF-8 takes U+FFFD.
func TestInProcessResultsNotScanned(t *testing.T) {
	type result struct {
		A int    `json:"a"`
		S string `json:"s"`
		B bool   `json:"b"`
	}
	for _, tc := range []struct {
		raw     string
		want    result
		wantErr string
	}{
		{"", result{}, "unexpected end of JSON input"},
		{" ", result{}, "unexpected end of JSON input"},
		{`{"a":1`, result{}, "unexpected end of JSON input"},
		{`{"b":tru}`, result{}, "invalid character '}' in literal true (expecting 'e')"},
		{`{"a":1}x`, result{}, "invalid character 'x' after top-level value"},
		{`{"b":txyz}`, result{}, "invalid character 'x' in literal true (expecting 'r')"},
		{"{\"s\":\"a\xffb\",\"a\":2}", result{A: 2, S: "a\ufffdb"}, ""},
		{`{"a":3,"s":"ok"}`, result{A: 3, S: "ok"}, ""},
	} {
		p := &jsonrpc.InProcess{Interceptors: []jsonrpc.Interceptor{func(jsonrpc.SendFunc) jsonrpc.SendFunc {
			return func(context.Context, *jsonrpc.Request) (json.RawMessage, error) {
				if tc.raw == "" {
					return nil, nil
				}
				return json.RawMessage(tc.raw), nil
			}
		}}}
		var got result
		err := p.Call(context.Background(), "m", nil, &got)
		if tc.wantErr != "" {
			if assert.Error(t, err, "%q", tc.raw) {
				assert.Contains(t, err.Error(), tc.wantErr, "%q", tc.raw)
			}
			continue
		}
		assert.NoError(t, err, "%q", tc.raw)
		assert.Equal(t, tc.want, got, "%q", tc.raw)
	}
}

// TestUnscannedResultNamesAsDecoded checks that names in a result no
// scanner of ours read (here an interceptor's), valid JSON but for its
// UTF-8, are compared as encoding/json decodes them, each invalid byte as
// U+FFFD: two that decode alike are a duplicate member, at any depth,
// however each is written. The check compared their bytes, and let them
// through to a map where one overwrote the other.
func TestUnscannedResultNamesAsDecoded(t *testing.T) {
	call := func(raw string) (map[string]any, error) {
		p := &jsonrpc.InProcess{Interceptors: []jsonrpc.Interceptor{func(jsonrpc.SendFunc) jsonrpc.SendFunc {
			return func(context.Context, *jsonrpc.Request) (json.RawMessage, error) {
				return json.RawMessage(raw), nil
			}
		}}}
		var got map[string]any
		err := p.Call(context.Background(), "m", nil, &got)
		return got, err
	}
	for _, raw := range []string{
		"{\"\xff\":1,\"\xfe\":2}",
		"{\"\xff\":1,\"\\ufffd\":2}",
		"{\"a\":{\"x\xff\":1,\"x\xfe\":2}}",
		"{\"a\":[{\"\xc3\":1,\"\xff\":2}]}",
	} {
		_, err := call(raw)
		assert.ErrorIs(t, err, jsonrpc.ErrDuplicateMember, "%q", raw)
	}
	got, err := call("{\"\xff\":1,\"a\":{\"\xff\":2}}")
	require.NoError(t, err)
	assert.Equal(t, map[string]any{"\ufffd": 1.0, "a": map[string]any{"\ufffd": 2.0}}, got)
}

// An interceptor that answers a call itself, with or without passing it
// on, gets the same outcome in process as over a connection: what the
// result decodes to, whether the call fails, and MayHaveRun (a call the
// chain never passed on did not run). Invalid JSON into a json.RawMessage
// used to pass in process, and every decoding failure said "may have run".
func TestInProcessInterceptorAnswerAsConn(t *testing.T) {
	answer := func(res string, pass bool) jsonrpc.Interceptor {
		return func(next jsonrpc.SendFunc) jsonrpc.SendFunc {
			return func(ctx context.Context, req *jsonrpc.Request) (json.RawMessage, error) {
				if pass {
					if _, err := next(ctx, req); err != nil {
						return nil, err
					}
				}
				return json.RawMessage(res), nil
			}
		}
	}
	mux := new(jsonrpc.Mux)
	mux.HandleFunc("echo", func(_ context.Context, r *jsonrpc.Request) (any, error) { return r.Params, nil })
	dests := []func() any{
		func() any { return new(json.RawMessage) }, func() any { return new(int) }, func() any { return new(any) },
	}
	for _, res := range []string{"{bad", "null", `"s"`, `{"a":1,"a":2}`, "7"} {
		for _, pass := range []bool{false, true} {
			ics := []jsonrpc.Interceptor{answer(res, pass)}
			conn := newPairOpts(t, mux, &jsonrpc.Options{Interceptors: ics})
			ip := &jsonrpc.InProcess{Handler: mux, Interceptors: ics}
			for _, dest := range dests {
				d1, d2 := dest(), dest()
				e1 := conn.Call(t.Context(), "echo", []int{1}, d1)
				e2 := ip.Call(t.Context(), "echo", []int{1}, d2)
				what := fmt.Sprintf("result %s, passed on %v, into %T", res, pass, d1)
				assert.Equal(t, e1 == nil, e2 == nil, "%s: failed (Conn %v, InProcess %v)", what, e1, e2)
				assert.Equal(t, jsonrpc.MayHaveRun(e1), jsonrpc.MayHaveRun(e2), "%s: MayHaveRun (Conn %v, InProcess %v)", what, e1, e2)
				assert.Equal(t, d1, d2, "%s: the result", what)
			}
		}
	}
}

// A chain of interceptors that cannot be built (a nil Interceptor)
// panics at every call, not only at the first: a caller that recovered
// from the first panic must not make calls that skip the interceptors.
func TestLazyChainPanicsEveryCall(t *testing.T) {
	var seen atomic.Int32
	count := func(next jsonrpc.SendFunc) jsonrpc.SendFunc {
		return func(ctx context.Context, req *jsonrpc.Request) (json.RawMessage, error) {
			seen.Add(1)
			return next(ctx, req)
		}
	}
	ics := []jsonrpc.Interceptor{count, nil}
	var ran atomic.Int32
	mux := new(jsonrpc.Mux)
	mux.HandleFunc("m", func(context.Context, *jsonrpc.Request) (any, error) { ran.Add(1); return 1, nil })
	srv := httptest.NewServer(&jsonrpc.Server{Options: jsonrpc.Options{Handler: mux}})
	defer srv.Close()
	for name, c := range map[string]jsonrpc.Caller{
		"InProcess":  &jsonrpc.InProcess{Handler: mux, Interceptors: ics},
		"HTTPClient": &jsonrpc.HTTPClient{URL: srv.URL, Interceptors: ics},
	} {
		for i := range 3 {
			assert.Panics(t, func() { _ = c.Call(t.Context(), "m", nil, nil) }, "%s, call %d", name, i)
		}
	}
	assert.Zero(t, ran.Load(), "calls that ran without their interceptors")
	assert.Zero(t, seen.Load())
}

// What an interceptor's next returns in process is a copy, as over a
// connection, and so are a stream's items: changing it changes neither
// the handler's own json.RawMessage nor the null that the package writes
// as the id of every parse error.
func TestInProcessResultIsACopy(t *testing.T) {
	cached := json.RawMessage(`{"v":"aaa"}`)
	mux := new(jsonrpc.Mux)
	mux.HandleFunc("cached", func(context.Context, *jsonrpc.Request) (any, error) { return cached, nil })
	mux.HandleFunc("nothing", func(context.Context, *jsonrpc.Request) (any, error) { return nil, nil })
	mux.Handle("nulls", jsonrpc.Stream(func(context.Context, struct{}) iter.Seq2[json.RawMessage, error] {
		return func(yield func(json.RawMessage, error) bool) { yield(nil, nil) }
	}))
	scribble := func(b []byte) {
		for i := range b {
			b[i] = 'x'
		}
	}
	scribbler := func(next jsonrpc.SendFunc) jsonrpc.SendFunc {
		return func(ctx context.Context, req *jsonrpc.Request) (json.RawMessage, error) {
			res, err := next(ctx, req)
			defer scribble(res) // after the caller's copy is taken
			return bytes.Clone(res), err
		}
	}
	ip := &jsonrpc.InProcess{Handler: mux, Interceptors: []jsonrpc.Interceptor{scribbler}}
	var got json.RawMessage
	require.NoError(t, ip.Call(t.Context(), "cached", nil, &got))
	assert.JSONEq(t, `{"v":"aaa"}`, string(got))
	assert.Equal(t, `{"v":"aaa"}`, string(cached), "the handler's own value")
	require.NoError(t, ip.Call(t.Context(), "nothing", nil, &got))
	for item, err := range (&jsonrpc.InProcess{Handler: mux}).Stream(t.Context(), "nulls", nil) {
		require.NoError(t, err)
		scribble(item)
	}
	out := serveString(t, &jsonrpc.Server{}, "{bad\n")
	assert.Equal(t, []string{`{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Parse error"}}`}, out)
}
