package jsonrpc_test

// This file tests Method and StreamMethod: what NewMethod and
// NewStreamMethod refuse and accept, and typed methods called through
// every Caller (a Conn to a Server, an HTTPClient, an InProcess, and a
// handler's Peer) with the same outcomes everywhere; and that params that
// encode as null go out as no params at all.

import (
	"bytes"
	"context"
	"encoding"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"iter"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ndjsonrpc/jsonrpc"
)

// v1Operands and v1Sum are the params and result of the typed methods.
type v1Operands struct {
	A int `json:"a"`
	B int `json:"b"`
}

type v1Sum struct {
	Sum int `json:"sum"`
}

// v1Note is the params of the notification v1Notify.
type v1Note struct {
	Text string `json:"text"`
}

// v1Count asks a stream for N items, then, if Fail is "rpc" or "plain",
// for an *Error or a plain Go error.
type v1Count struct {
	N    int    `json:"n"`
	Fail string `json:"fail,omitempty"`
}

// v1Item is the item of the typed streams.
type v1Item struct {
	Index int `json:"index"`
}

// v1Bad asks v1/bad for a second item that does not decode into a
// v1Item: of the wrong type ("type") or with a member given twice
// ("duplicate").
type v1Bad struct {
	Kind string `json:"kind"`
}

// v1Marshaled is an int that encodes itself as an array, or as null when
// it is zero.
type v1Marshaled int

func (m v1Marshaled) MarshalJSON() ([]byte, error) {
	if m == 0 {
		return []byte("null"), nil
	}
	return []byte("[" + strconv.Itoa(int(m)) + "]"), nil
}

// v1PtrMarshaled is an int whose MarshalJSON is on its pointer, which
// encoding/json does not see in a value held by an interface: as params,
// it encodes as a number.
type v1PtrMarshaled int

func (m *v1PtrMarshaled) MarshalJSON() ([]byte, error) {
	return []byte("[" + strconv.Itoa(int(*m)) + "]"), nil
}

// v1Bytes is a []byte by another name, which encodes as a string too.
type v1Bytes []byte

// v1PtrByte is a byte whose pointer has a MarshalJSON, so that encoding/json
// encodes a []v1PtrByte as an array of its elements, not as a string.
type v1PtrByte byte

func (b *v1PtrByte) MarshalJSON() ([]byte, error) {
	return []byte(strconv.Itoa(int(*b))), nil
}

// The typed methods of the tests, shared by the handlers and the calls.
var (
	v1Add      = jsonrpc.NewMethod[v1Operands, v1Sum]("v1/add")
	v1AddRaw   = jsonrpc.NewMethod[json.RawMessage, v1Sum]("v1/add") // the same method, for params its types cannot express
	v1Fail     = jsonrpc.NewMethod[v1Operands, v1Sum]("v1/fail")
	v1Plain    = jsonrpc.NewMethod[v1Operands, v1Sum]("v1/plain")
	v1Missing  = jsonrpc.NewMethod[v1Operands, v1Sum]("v1/missing")
	v1Notify   = jsonrpc.NewMethod[v1Note, struct{}]("v1/note")
	v1NoParams = jsonrpc.NewMethod[*struct{}, string]("v1/noparams")

	v1Items       = jsonrpc.NewStreamMethod[v1Count, v1Item]("v1/items")
	v1ItemsRaw    = jsonrpc.NewStreamMethod[json.RawMessage, v1Item]("v1/items")
	v1Held        = jsonrpc.NewStreamMethod[v1Count, v1Item]("v1/held")
	v1BadItems    = jsonrpc.NewStreamMethod[v1Bad, v1Item]("v1/bad")
	v1NoSuchItems = jsonrpc.NewStreamMethod[v1Count, v1Item]("v1/nostream")
)

// v1Mux serves the typed methods. v1/note sends the text of each
// notification to notes; v1/held and v1/bad hold their call open once
// their items are out and send its context's error to stopped when it
// ends (see v1AwaitEnd).
func v1Mux(notes chan<- string, stopped chan<- error) *jsonrpc.Mux {
	mux := new(jsonrpc.Mux)
	v1Add.Register(mux, func(_ context.Context, p v1Operands) (v1Sum, error) {
		return v1Sum{Sum: p.A + p.B}, nil
	})
	v1Fail.Register(mux, func(_ context.Context, p v1Operands) (v1Sum, error) {
		return v1Sum{}, jsonrpc.NewError(-32001, "no can do").WithData(map[string]int{"a": p.A})
	})
	v1Plain.Register(mux, func(context.Context, v1Operands) (v1Sum, error) {
		return v1Sum{}, errors.New("disk on fire")
	})
	v1Notify.Register(mux, func(_ context.Context, p v1Note) (struct{}, error) {
		notes <- p.Text
		return struct{}{}, nil
	})
	v1NoParams.Register(mux, func(_ context.Context, p *struct{}) (string, error) {
		if p == nil {
			return "none", nil
		}
		return "some", nil
	})
	v1Items.Register(mux, func(_ context.Context, p v1Count) iter.Seq2[v1Item, error] {
		return func(yield func(v1Item, error) bool) {
			for i := range p.N {
				if !yield(v1Item{Index: i}, nil) {
					return
				}
			}
			switch p.Fail {
			case "rpc":
				yield(v1Item{}, jsonrpc.NewError(-32001, "stream failed").WithData(map[string]int{"after": p.N}))
			case "plain":
				yield(v1Item{}, errors.New("stream broke"))
			}
		}
	})
	v1Held.Register(mux, func(ctx context.Context, p v1Count) iter.Seq2[v1Item, error] {
		return func(yield func(v1Item, error) bool) {
			defer v1AwaitEnd(ctx, stopped)
			for i := range p.N {
				if !yield(v1Item{Index: i}, nil) {
					return
				}
			}
		}
	})
	mux.Handle("v1/bad", jsonrpc.Stream(func(ctx context.Context, p v1Bad) iter.Seq2[json.RawMessage, error] {
		return func(yield func(json.RawMessage, error) bool) {
			defer v1AwaitEnd(ctx, stopped)
			if !yield(json.RawMessage(`{"index":0}`), nil) {
				return
			}
			bad := json.RawMessage(`"one"`)
			if p.Kind == "duplicate" {
				bad = json.RawMessage(`{"index":1,"index":2}`)
			}
			yield(bad, nil)
		}
	}))
	return mux
}

// v1AwaitEnd waits for ctx to end and sends its error to stopped; if it
// does not end within waitTimeout, it sends an error saying so, so that a
// handler run on the test's goroutine (by InProcess) fails the test
// rather than hang it.
func v1AwaitEnd(ctx context.Context, stopped chan<- error) {
	select {
	case <-ctx.Done():
		stopped <- ctx.Err()
	case <-time.After(waitTimeout):
		stopped <- errors.New("the handler's context did not end")
	}
}

// A v1Caller is one way of calling: run calls f with the Caller and a
// context to call with, and returns once f has returned.
type v1Caller struct {
	name string
	run  func(t *testing.T, f func(ctx context.Context, c jsonrpc.Caller))
}

// v1Callers returns every kind of Caller, each reaching a peer served by
// h: a Conn to a Server over io.Pipes, an HTTPClient to the Server's
// ServeHTTP (asking for plain JSON, and accepting streams), an InProcess, and the Peer of a handler on one end of a pair
// of Conns, which calls the other end, served by h. Cleanups end them all.
func v1Callers(t *testing.T, h jsonrpc.Handler) []v1Caller {
	t.Helper()
	conn := newPair(t, h)

	ts := httptest.NewServer(&jsonrpc.Server{Options: jsonrpc.Options{Handler: h}})
	t.Cleanup(ts.Close)
	hc := &jsonrpc.HTTPClient{URL: ts.URL, HTTP: ts.Client()}
	// With OnNotify set, Call and Batch accept a streamed response too.
	hcStreams := &jsonrpc.HTTPClient{URL: ts.URL, HTTP: ts.Client(), OnNotify: func(*jsonrpc.Request) {}}

	// The end that runs the test's function in a handler, with its Peer.
	fns := make(chan func(context.Context, jsonrpc.Caller), 1)
	runner := new(jsonrpc.Mux)
	runner.HandleFunc("run", func(ctx context.Context, _ *jsonrpc.Request) (any, error) {
		f := <-fns
		f(ctx, jsonrpc.Peer(ctx))
		return nil, nil
	})
	_, other := twConnPair(t, &jsonrpc.Options{Handler: runner}, &jsonrpc.Options{Handler: h})

	direct := func(c jsonrpc.Caller) func(*testing.T, func(context.Context, jsonrpc.Caller)) {
		return func(t *testing.T, f func(context.Context, jsonrpc.Caller)) { f(t.Context(), c) }
	}
	return []v1Caller{
		{"Conn", direct(conn)},
		{"HTTPClient", direct(hc)},
		{"HTTPClient accepting streams", direct(hcStreams)},
		{"InProcess", direct(&jsonrpc.InProcess{Handler: h})},
		{"Peer", func(t *testing.T, f func(context.Context, jsonrpc.Caller)) {
			t.Helper()
			done := make(chan struct{})
			fns <- func(ctx context.Context, c jsonrpc.Caller) {
				defer close(done)
				f(ctx, c)
			}
			require.NoError(t, other.Call(t.Context(), "run", nil, nil))
			recv(t, done, "the handler that calls its peer")
		}},
	}
}

// v1Panic returns what f panics with, or nil.
func v1Panic(f func()) (v any) {
	defer func() { v = recover() }()
	f()
	return nil
}

// v1Makers holds a call of NewMethod and one of NewStreamMethod with
// params of type P, each returning the Name of what it made.
type v1Makers struct {
	method, stream func() string
}

func v1Make[P any](name string) v1Makers {
	return v1Makers{
		method: func() string { return jsonrpc.NewMethod[P, int](name).Name() },
		stream: func() string { return jsonrpc.NewStreamMethod[P, int](name).Name() },
	}
}

func TestNewMethodPanics(t *testing.T) {
	tests := []struct {
		name   string
		method string // the method's name, which the message must hold
		make   v1Makers
	}{
		{"empty name", "", v1Make[struct{}]("")},
		{"rpc. prefix", "rpc.discover", v1Make[struct{}]("rpc.discover")},
		{"rpc. alone", "rpc.", v1Make[struct{}]("rpc.")},
		{"int params", "m/int", v1Make[int]("m/int")},
		{"string params", "m/string", v1Make[string]("m/string")},
		{"bool params", "m/bool", v1Make[bool]("m/bool")},
		{"float64 params", "m/float64", v1Make[float64]("m/float64")},
		{"[]byte params", "m/bytes", v1Make[[]byte]("m/bytes")},
		{"*int params", "m/ptrint", v1Make[*int]("m/ptrint")},
		{"**string params", "m/ptrptr", v1Make[**string]("m/ptrptr")},
		{"json.Number params", "m/number", v1Make[json.Number]("m/number")},
		{"time.Duration params", "m/duration", v1Make[time.Duration]("m/duration")},
		{"named []byte params", "m/named", v1Make[v1Bytes]("m/named")},
		// Types whose encoding/json encoding is a string or a number,
		// whatever their kind.
		{"struct with MarshalText", "m/addr", v1Make[netip.Addr]("m/addr")},
		{"*struct with MarshalText", "m/ptraddr", v1Make[*netip.Addr]("m/ptraddr")},
		{"MarshalJSON on the pointer only", "m/ptrmarshal", v1Make[v1PtrMarshaled]("m/ptrmarshal")},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			for kind, f := range map[string]func() string{"NewMethod": tc.make.method, "NewStreamMethod": tc.make.stream} {
				v := v1Panic(func() { f() })
				require.NotNil(t, v, "%s did not panic", kind)
				msg, ok := v.(string)
				require.True(t, ok, "%s panicked with %T, not a string: %v", kind, v, v)
				assert.Contains(t, msg, "jsonrpc: ", kind)
				if tc.method != "" {
					assert.Contains(t, msg, tc.method, "%s: the message names the method", kind)
				}
			}
		})
	}
}

func TestNewMethodAccepts(t *testing.T) {
	type anyOf interface{ Method() string }
	tests := []struct {
		name string
		make v1Makers
	}{
		{"empty struct", v1Make[struct{}]("m/empty")},
		{"struct", v1Make[v1Operands]("m/struct")},
		{"*struct", v1Make[*v1Operands]("m/ptrstruct")},
		{"**struct", v1Make[**v1Operands]("m/ptrptrstruct")},
		{"map[string]int", v1Make[map[string]int]("m/map")},
		{"[]int", v1Make[[]int]("m/slice")},
		{"[2]int", v1Make[[2]int]("m/array")},
		{"[]json.RawMessage", v1Make[[]json.RawMessage]("m/raws")},
		{"any", v1Make[any]("m/any")},
		{"another interface", v1Make[anyOf]("m/iface")},
		{"an interface with MarshalText", v1Make[encoding.TextMarshaler]("m/textiface")},
		{"json.RawMessage", v1Make[json.RawMessage]("m/raw")},
		{"*json.RawMessage", v1Make[*json.RawMessage]("m/ptrraw")},
		{"own MarshalJSON", v1Make[v1Marshaled]("m/marshaled")},
		{"*own MarshalJSON", v1Make[*v1Marshaled]("m/ptrmarshaled")},
		{"*type with MarshalJSON on the pointer", v1Make[*v1PtrMarshaled]("m/ptrptrmarshal")},
		{"bytes that encode as an array", v1Make[[]v1PtrByte]("m/ptrbytes")},
		{"name with a dot", v1Make[struct{}]("rpc/x.y")},
		{"rpc without the dot", v1Make[struct{}]("rpcx")},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var name string
			assert.NotPanics(t, func() { name = tc.make.method() }, "NewMethod")
			assert.NotEmpty(t, name, "NewMethod(...).Name()")
			var sname string
			assert.NotPanics(t, func() { sname = tc.make.stream() }, "NewStreamMethod")
			assert.Equal(t, name, sname, "NewStreamMethod(...).Name()")
		})
	}
}

// TestNewMethodParamsEncode checks that the types NewMethod accepts as
// params do encode as an object or an array (or as null, for none): each
// is called in process and its params reach the handler.
func TestNewMethodParamsEncode(t *testing.T) {
	tests := []struct {
		name   string
		call   func(ctx context.Context, c jsonrpc.Caller) (json.RawMessage, error)
		params string // what the handler sees; "" for none
	}{
		{"own MarshalJSON", func(ctx context.Context, c jsonrpc.Caller) (json.RawMessage, error) {
			return jsonrpc.NewMethod[v1Marshaled, json.RawMessage]("echo").Call(ctx, c, 7)
		}, `[7]`},
		{"own MarshalJSON that says null", func(ctx context.Context, c jsonrpc.Caller) (json.RawMessage, error) {
			return jsonrpc.NewMethod[v1Marshaled, json.RawMessage]("echo").Call(ctx, c, 0)
		}, ``},
		{"*type with MarshalJSON on the pointer", func(ctx context.Context, c jsonrpc.Caller) (json.RawMessage, error) {
			v := v1PtrMarshaled(3)
			return jsonrpc.NewMethod[*v1PtrMarshaled, json.RawMessage]("echo").Call(ctx, c, &v)
		}, `[3]`},
		{"bytes that encode as an array", func(ctx context.Context, c jsonrpc.Caller) (json.RawMessage, error) {
			return jsonrpc.NewMethod[[]v1PtrByte, json.RawMessage]("echo").Call(ctx, c, []v1PtrByte{1, 2})
		}, `[1,2]`},
		{"array", func(ctx context.Context, c jsonrpc.Caller) (json.RawMessage, error) {
			return jsonrpc.NewMethod[[2]int, json.RawMessage]("echo").Call(ctx, c, [2]int{4, 5})
		}, `[4,5]`},
		{"any holding a map", func(ctx context.Context, c jsonrpc.Caller) (json.RawMessage, error) {
			return jsonrpc.NewMethod[any, json.RawMessage]("echo").Call(ctx, c, map[string]int{"x": 1})
		}, `{"x":1}`},
	}
	mux := new(jsonrpc.Mux)
	mux.Handle("echo", jsonrpc.RawHandlerFunc(func(_ context.Context, req *jsonrpc.Request) (json.RawMessage, error) {
		if req.Params == nil {
			return json.RawMessage(`"none"`), nil
		}
		return req.Params, nil
	}))
	ip := &jsonrpc.InProcess{Handler: mux}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := tc.call(t.Context(), ip)
			require.NoError(t, err)
			if tc.params == "" {
				assert.JSONEq(t, `"none"`, string(got))
				return
			}
			assert.JSONEq(t, tc.params, string(got))
		})
	}
}

func TestMethodName(t *testing.T) {
	for _, name := range []string{"add", "a/b.c", "$/progress", "textDocument/didOpen", "ünï"} {
		assert.Equal(t, name, jsonrpc.NewMethod[struct{}, int](name).Name())
		assert.Equal(t, name, jsonrpc.NewStreamMethod[[]int, string](name).Name())
	}
}

// v1WireError is e as its JSON, to compare errors across Callers.
func v1WireError(t *testing.T, err error) string {
	t.Helper()
	var e *jsonrpc.Error
	if !errors.As(err, &e) {
		return fmt.Sprintf("not an *Error: %v", err)
	}
	b, jerr := json.Marshal(e)
	require.NoError(t, jerr)
	return string(b)
}

func TestMethodEveryCaller(t *testing.T) {
	checkLeaks(t)
	notes := make(chan string, 16)
	stopped := make(chan error, 16)
	callers := v1Callers(t, v1Mux(notes, stopped))

	tests := []struct {
		name     string
		call     func(ctx context.Context, c jsonrpc.Caller) (any, error)
		want     any
		wantErr  *jsonrpc.Error // nil for success; its Message and Data are checked unless empty
		sentinel error          // what the error also matches under errors.Is
	}{
		{
			name: "success",
			call: func(ctx context.Context, c jsonrpc.Caller) (any, error) {
				return v1Add.Call(ctx, c, v1Operands{A: 2, B: 3})
			},
			want: v1Sum{Sum: 5},
		},
		{
			name: "no params",
			call: func(ctx context.Context, c jsonrpc.Caller) (any, error) { return v1NoParams.Call(ctx, c, nil) },
			want: "none",
		},
		{
			name: "empty params",
			call: func(ctx context.Context, c jsonrpc.Caller) (any, error) { return v1NoParams.Call(ctx, c, &struct{}{}) },
			want: "some",
		},
		{
			name:    "handler *Error",
			call:    func(ctx context.Context, c jsonrpc.Caller) (any, error) { return v1Fail.Call(ctx, c, v1Operands{A: 7}) },
			wantErr: &jsonrpc.Error{Code: -32001, Message: "no can do", Data: json.RawMessage(`{"a":7}`)},
		},
		{
			name: "plain Go error",
			call: func(ctx context.Context, c jsonrpc.Caller) (any, error) { return v1Plain.Call(ctx, c, v1Operands{}) },
			wantErr: &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "Internal error",
				Data: json.RawMessage(`{"exception":"*errors.errorString","detail":"disk on fire"}`)},
			sentinel: jsonrpc.ErrInternal,
		},
		{
			name:     "method not found",
			call:     func(ctx context.Context, c jsonrpc.Caller) (any, error) { return v1Missing.Call(ctx, c, v1Operands{}) },
			wantErr:  &jsonrpc.Error{Code: jsonrpc.CodeMethodNotFound, Message: "Method not found"},
			sentinel: jsonrpc.ErrMethodNotFound,
		},
		{
			name: "duplicate member",
			call: func(ctx context.Context, c jsonrpc.Caller) (any, error) {
				return v1AddRaw.Call(ctx, c, json.RawMessage(`{"a":1,"b":2,"a":3}`))
			},
			wantErr: &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: `Invalid params: duplicate member "a" at /a`,
				Data: json.RawMessage(`{"reason":"duplicate member","member":"a","path":"/a"}`)},
			sentinel: jsonrpc.ErrInvalidParams,
		},
		{
			name: "nested duplicate member",
			call: func(ctx context.Context, c jsonrpc.Caller) (any, error) {
				return v1AddRaw.Call(ctx, c, json.RawMessage(`{"a":1,"b":2,"c":[{"d":1,"d":1}]}`))
			},
			wantErr: &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: `Invalid params: duplicate member "d" at /c/0/d`,
				Data: json.RawMessage(`{"reason":"duplicate member","member":"d","path":"/c/0/d"}`)},
			sentinel: jsonrpc.ErrInvalidParams,
		},
		{
			name: "params of the wrong type",
			call: func(ctx context.Context, c jsonrpc.Caller) (any, error) {
				return v1AddRaw.Call(ctx, c, json.RawMessage(`{"a":"one"}`))
			},
			wantErr:  &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams}, // the decoder's words, the same everywhere (see below)
			sentinel: jsonrpc.ErrInvalidParams,
		},
	}
	// seen[case] holds each Caller's error as JSON, to compare them.
	seen := make(map[string]map[string]string)
	for _, caller := range callers {
		t.Run(caller.name, func(t *testing.T) {
			for _, tc := range tests {
				t.Run(tc.name, func(t *testing.T) {
					var got any
					var err error
					caller.run(t, func(ctx context.Context, c jsonrpc.Caller) { got, err = tc.call(ctx, c) })
					if tc.wantErr == nil {
						require.NoError(t, err)
						assert.Equal(t, tc.want, got)
						return
					}
					var werr *jsonrpc.Error
					require.ErrorAs(t, err, &werr)
					assert.Equal(t, tc.wantErr.Code, werr.Code)
					if tc.wantErr.Message != "" {
						assert.Equal(t, tc.wantErr.Message, werr.Message)
					}
					if tc.wantErr.Data != nil {
						assert.JSONEq(t, string(tc.wantErr.Data), string(werr.Data))
					}
					assert.ErrorIs(t, err, &jsonrpc.Error{Code: tc.wantErr.Code})
					if tc.sentinel != nil {
						assert.ErrorIs(t, err, tc.sentinel)
					}
					if seen[tc.name] == nil {
						seen[tc.name] = make(map[string]string)
					}
					seen[tc.name][caller.name] = v1WireError(t, err)
				})
			}
		})
	}
	t.Run("errors are the same through every Caller", func(t *testing.T) {
		for _, tc := range tests {
			if tc.wantErr == nil {
				continue
			}
			byCaller := seen[tc.name]
			for _, caller := range callers[1:] {
				assert.Equal(t, byCaller[callers[0].name], byCaller[caller.name], "%s: %s and %s", tc.name, callers[0].name, caller.name)
			}
		}
	})
}

func TestMethodNotifyEveryCaller(t *testing.T) {
	checkLeaks(t)
	notes := make(chan string, 16)
	callers := v1Callers(t, v1Mux(notes, make(chan error, 16)))
	for _, caller := range callers {
		t.Run(caller.name, func(t *testing.T) {
			var err error
			caller.run(t, func(ctx context.Context, c jsonrpc.Caller) {
				err = v1Notify.Notify(ctx, c, v1Note{Text: "from " + caller.name})
			})
			require.NoError(t, err)
			assert.Equal(t, "from "+caller.name, recv(t, notes, "the notification"))
			// A notification of a method nobody serves goes unanswered and
			// unnoticed.
			caller.run(t, func(ctx context.Context, c jsonrpc.Caller) {
				err = v1Missing.Notify(ctx, c, v1Operands{})
			})
			assert.NoError(t, err)
			assertNone(t, notes, "another notification")
		})
	}
}

func TestStreamMethodEveryCaller(t *testing.T) {
	checkLeaks(t)
	stopped := make(chan error, 16)
	callers := v1Callers(t, v1Mux(make(chan string, 16), stopped))

	items := func(n int) []v1Item {
		var out []v1Item
		for i := range n {
			out = append(out, v1Item{Index: i})
		}
		return out
	}
	tests := []struct {
		name     string
		call     func(ctx context.Context, c jsonrpc.Caller) iter.Seq2[v1Item, error]
		items    []v1Item
		wantErr  *jsonrpc.Error // nil: the stream ends without error; its Data is checked unless nil
		sentinel error
	}{
		{
			name: "no items",
			call: func(ctx context.Context, c jsonrpc.Caller) iter.Seq2[v1Item, error] {
				return v1Items.Call(ctx, c, v1Count{N: 0})
			},
		},
		{
			name: "three items in order",
			call: func(ctx context.Context, c jsonrpc.Caller) iter.Seq2[v1Item, error] {
				return v1Items.Call(ctx, c, v1Count{N: 3})
			},
			items: items(3),
		},
		{
			name: "many items in order",
			call: func(ctx context.Context, c jsonrpc.Caller) iter.Seq2[v1Item, error] {
				return v1Items.Call(ctx, c, v1Count{N: 300})
			},
			items: items(300),
		},
		{
			name: "handler *Error after items",
			call: func(ctx context.Context, c jsonrpc.Caller) iter.Seq2[v1Item, error] {
				return v1Items.Call(ctx, c, v1Count{N: 2, Fail: "rpc"})
			},
			items:   items(2),
			wantErr: &jsonrpc.Error{Code: -32001, Message: "stream failed", Data: json.RawMessage(`{"after":2}`)},
		},
		{
			name: "handler *Error at once",
			call: func(ctx context.Context, c jsonrpc.Caller) iter.Seq2[v1Item, error] {
				return v1Items.Call(ctx, c, v1Count{N: 0, Fail: "rpc"})
			},
			wantErr: &jsonrpc.Error{Code: -32001, Message: "stream failed", Data: json.RawMessage(`{"after":0}`)},
		},
		{
			name: "handler Go error",
			call: func(ctx context.Context, c jsonrpc.Caller) iter.Seq2[v1Item, error] {
				return v1Items.Call(ctx, c, v1Count{N: 1, Fail: "plain"})
			},
			items: items(1),
			wantErr: &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "Internal error",
				Data: json.RawMessage(`{"exception":"*errors.errorString","detail":"stream broke"}`)},
			sentinel: jsonrpc.ErrInternal,
		},
		{
			name: "method not found",
			call: func(ctx context.Context, c jsonrpc.Caller) iter.Seq2[v1Item, error] {
				return v1NoSuchItems.Call(ctx, c, v1Count{N: 1})
			},
			wantErr:  &jsonrpc.Error{Code: jsonrpc.CodeMethodNotFound, Message: "Method not found"},
			sentinel: jsonrpc.ErrMethodNotFound,
		},
		{
			name: "duplicate member in params",
			call: func(ctx context.Context, c jsonrpc.Caller) iter.Seq2[v1Item, error] {
				return v1ItemsRaw.Call(ctx, c, json.RawMessage(`{"n":1,"n":2}`))
			},
			wantErr: &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: `Invalid params: duplicate member "n" at /n`,
				Data: json.RawMessage(`{"reason":"duplicate member","member":"n","path":"/n"}`)},
			sentinel: jsonrpc.ErrInvalidParams,
		},
	}
	for _, caller := range callers {
		t.Run(caller.name, func(t *testing.T) {
			for _, tc := range tests {
				t.Run(tc.name, func(t *testing.T) {
					var got []v1Item
					var errs []error
					caller.run(t, func(ctx context.Context, c jsonrpc.Caller) {
						for item, err := range tc.call(ctx, c) {
							if err != nil {
								errs = append(errs, err)
								continue
							}
							if len(errs) > 0 {
								errs = append(errs, fmt.Errorf("item %v after the error", item))
							}
							got = append(got, item)
						}
					})
					assert.Equal(t, tc.items, got)
					if tc.wantErr == nil {
						assert.Empty(t, errs)
						return
					}
					require.Len(t, errs, 1, "the error is the last pair, and the only one")
					var werr *jsonrpc.Error
					require.ErrorAs(t, errs[0], &werr)
					assert.Equal(t, tc.wantErr.Code, werr.Code)
					assert.Equal(t, tc.wantErr.Message, werr.Message)
					if tc.wantErr.Data != nil {
						assert.JSONEq(t, string(tc.wantErr.Data), string(werr.Data))
					}
					if tc.sentinel != nil {
						assert.ErrorIs(t, errs[0], tc.sentinel)
					}
				})
			}

			t.Run("an item that does not decode ends the stream", func(t *testing.T) {
				for _, kind := range []string{"type", "duplicate"} {
					var got []v1Item
					var errs []error
					caller.run(t, func(ctx context.Context, c jsonrpc.Caller) {
						for item, err := range v1BadItems.Call(ctx, c, v1Bad{Kind: kind}) {
							if err != nil {
								errs = append(errs, err)
								continue
							}
							got = append(got, item)
						}
					})
					assert.Equal(t, []v1Item{{Index: 0}}, got, kind)
					if assert.Len(t, errs, 1, kind) {
						if kind == "duplicate" {
							assert.ErrorIs(t, errs[0], jsonrpc.ErrDuplicateMember)
						} else {
							var terr *json.UnmarshalTypeError
							assert.ErrorAs(t, errs[0], &terr)
						}
					}
					// The call is cancelled: the handler's context ends.
					assert.ErrorIs(t, recv(t, stopped, "the handler's context to end"), context.Canceled, kind)
				}
			})

			t.Run("breaking early cancels the call", func(t *testing.T) {
				var got []v1Item
				var errs []error
				caller.run(t, func(ctx context.Context, c jsonrpc.Caller) {
					for item, err := range v1Held.Call(ctx, c, v1Count{N: 3}) {
						if err != nil {
							errs = append(errs, err)
							continue
						}
						if got = append(got, item); len(got) == 2 {
							break
						}
					}
				})
				assert.Equal(t, items(2), got)
				assert.Empty(t, errs)
				assert.ErrorIs(t, recv(t, stopped, "the handler's context to end"), context.Canceled)
			})
		})
	}
	assertNone(t, stopped, "a handler stopped twice")
}

// v1Keys returns the members of the JSON object line.
func v1Keys(t *testing.T, line string) map[string]json.RawMessage {
	t.Helper()
	var m map[string]json.RawMessage
	require.NoError(t, json.Unmarshal([]byte(line), &m), "line %q", line)
	return m
}

// v1NullParams are params that encode as JSON null, and so mean none.
var v1NullParams = []struct {
	name   string
	params any
}{
	{"nil", nil},
	{"nil *struct", (*struct{})(nil)},
	{"nil *v1Operands", (*v1Operands)(nil)},
	{"nil map", map[string]int(nil)},
	{"nil slice", []int(nil)},
	{"nil json.RawMessage", json.RawMessage(nil)},
	{"json.RawMessage null", json.RawMessage("null")},
	{"json.RawMessage null between spaces", json.RawMessage(" \tnull ")},
	{"json.RawMessage null between lines", json.RawMessage("\r\nnull\n")},
	{"MarshalJSON that says null", v1Marshaled(0)},
}

// v1NextLine returns the next line p reads from its client, failing t at
// once if the call that should send it returns first.
func v1NextLine(t *testing.T, p *rawPeer, done <-chan error) string {
	t.Helper()
	select {
	case line := <-p.lines:
		return line
	case err := <-done:
		require.FailNow(t, "the call returned without sending anything", "error: %v", err)
	case <-time.After(waitTimeout):
		require.FailNow(t, "timed out", "waiting for a line from the client")
	}
	panic("unreachable")
}

func TestMethodNilParams(t *testing.T) {
	checkLeaks(t)

	t.Run("Conn", func(t *testing.T) {
		c, p := newRawPeer(t, nil)
		calls := []struct {
			name string
			call func(ctx context.Context) error
		}{
			{"Method.Call with nil", func(ctx context.Context) error {
				_, err := v1NoParams.Call(ctx, c, nil)
				return err
			}},
		}
		for _, np := range v1NullParams {
			calls = append(calls, struct {
				name string
				call func(ctx context.Context) error
			}{"Call with " + np.name, func(ctx context.Context) error { return c.Call(ctx, "m", np.params, nil) }})
		}
		for _, tc := range calls {
			t.Run(tc.name, func(t *testing.T) {
				done := make(chan error, 1)
				go func() { done <- tc.call(t.Context()) }()
				m := v1Keys(t, v1NextLine(t, p, done))
				assert.NotContains(t, m, "params")
				require.Contains(t, m, "id")
				p.sendf(t, `{"jsonrpc":"2.0","id":%s,"result":"none"}`, m["id"])
				assert.NoError(t, recv(t, done, "the call to return"))
			})
		}
		for _, np := range v1NullParams {
			t.Run("Notify with "+np.name, func(t *testing.T) {
				require.NoError(t, c.Notify(t.Context(), "n", np.params))
				m := v1Keys(t, p.next(t))
				assert.NotContains(t, m, "params")
				assert.NotContains(t, m, "id")
			})
		}
		t.Run("Method.Notify with nil", func(t *testing.T) {
			require.NoError(t, v1NoParams.Notify(t.Context(), c, nil))
			assert.NotContains(t, v1Keys(t, p.next(t)), "params")
		})
		t.Run("Batch", func(t *testing.T) {
			var calls []*jsonrpc.BatchCall
			for _, np := range v1NullParams {
				calls = append(calls, &jsonrpc.BatchCall{Method: "m", Params: np.params})
			}
			done := make(chan error, 1)
			go func() { done <- c.Batch(t.Context(), calls...) }()
			var batch []map[string]json.RawMessage
			line := v1NextLine(t, p, done)
			require.NoError(t, json.Unmarshal([]byte(line), &batch), "line %q", line)
			require.Len(t, batch, len(calls))
			var answers []string
			for i, m := range batch {
				assert.NotContains(t, m, "params", v1NullParams[i].name)
				answers = append(answers, `{"jsonrpc":"2.0","id":`+string(m["id"])+`,"result":null}`)
			}
			p.send(t, "["+strings.Join(answers, ",")+"]")
			require.NoError(t, recv(t, done, "the batch to return"))
			for i, bc := range calls {
				assert.NoError(t, bc.Err, v1NullParams[i].name)
			}
		})
		t.Run("Stream", func(t *testing.T) {
			done := make(chan error, 1)
			go func() {
				var err error
				for _, e := range c.Stream(t.Context(), "s", (*v1Count)(nil)) {
					err = e
				}
				done <- err
			}()
			m := v1Keys(t, p.next(t))
			assert.NotContains(t, m, "params")
			p.sendf(t, `{"jsonrpc":"2.0","id":%s,"result":null}`, m["id"])
			assert.NoError(t, recv(t, done, "the stream to end"))
		})
	})

	t.Run("HTTPClient", func(t *testing.T) {
		bodies := make(chan string, 64)
		srv := &jsonrpc.Server{Options: jsonrpc.Options{Handler: v1Mux(make(chan string, 1), make(chan error, 1))}}
		ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			body, err := io.ReadAll(r.Body)
			if err != nil {
				http.Error(w, err.Error(), http.StatusBadRequest)
				return
			}
			bodies <- string(body)
			r.Body = io.NopCloser(bytes.NewReader(body))
			srv.ServeHTTP(w, r)
		}))
		defer ts.Close()
		c := &jsonrpc.HTTPClient{URL: ts.URL, HTTP: ts.Client()}

		got, err := v1NoParams.Call(t.Context(), c, nil)
		require.NoError(t, err)
		assert.Equal(t, "none", got)
		assert.NotContains(t, v1Keys(t, recv(t, bodies, "the body")), "params")
		for _, np := range v1NullParams {
			var res string
			require.NoError(t, c.Call(t.Context(), v1NoParams.Name(), np.params, &res), np.name)
			assert.Equal(t, "none", res, np.name)
			assert.NotContains(t, v1Keys(t, recv(t, bodies, "the body")), "params", np.name)
		}
	})

	t.Run("InProcess", func(t *testing.T) {
		var seen []json.RawMessage
		ip := &jsonrpc.InProcess{Handler: jsonrpc.HandlerFunc(func(_ context.Context, req *jsonrpc.Request) (any, error) {
			seen = append(seen, req.Params)
			return "none", nil
		})}
		got, err := v1NoParams.Call(t.Context(), ip, nil)
		require.NoError(t, err)
		assert.Equal(t, "none", got)
		for _, np := range v1NullParams {
			require.NoError(t, ip.Call(t.Context(), "m", np.params, nil), np.name)
			require.NoError(t, ip.Notify(t.Context(), "m", np.params), np.name)
		}
		require.Len(t, seen, 1+2*len(v1NullParams))
		for i, p := range seen {
			assert.Nil(t, p, "call %d", i)
		}
	})
}

// TestStreamBodyPanicEveryCaller checks that a panic in the body of a
// range over a stream reaches the caller as it is, and cancels the call,
// as stopping the range does; and so does a body that ends its goroutine
// with runtime.Goexit, as t.FailNow does.
func TestStreamBodyPanicEveryCaller(t *testing.T) {
	checkLeaks(t)
	stopped := make(chan error, 16)
	callers := v1Callers(t, v1Mux(make(chan string, 16), stopped))
	boom := errors.New("boom in the range body")
	for _, caller := range callers {
		t.Run(caller.name, func(t *testing.T) {
			t.Run("panic", func(t *testing.T) {
				var v any
				var items int
				caller.run(t, func(ctx context.Context, c jsonrpc.Caller) {
					v = v1Panic(func() {
						for _, err := range v1Held.Call(ctx, c, v1Count{N: 3}) {
							if err == nil {
								items++
							}
							panic(boom)
						}
					})
				})
				assert.Equal(t, 1, items)
				assert.Equal(t, boom, v, "the panic reaches the caller as it is")
				assert.ErrorIs(t, recv(t, stopped, "the handler's context to end"), context.Canceled)
			})
			t.Run("Goexit", func(t *testing.T) {
				exited := make(chan struct{})
				caller.run(t, func(ctx context.Context, c jsonrpc.Caller) {
					// The body's goroutine is not the one run runs f on,
					// which Goexit would end.
					go func() {
						defer close(exited)
						for range v1Held.Call(ctx, c, v1Count{N: 3}) {
							runtime.Goexit()
						}
					}()
					<-exited
				})
				recv(t, exited, "the goroutine to exit")
				assert.ErrorIs(t, recv(t, stopped, "the handler's context to end"), context.Canceled)
			})
		})
	}
}
