package jsonrpc_test

// Strict decoding of params and results: member names match fields
// exactly, and a name given twice in one object is refused, at any depth
// (the message-smuggling class of CVE-2026-27896).

import (
	"context"
	"encoding/json"
	"errors"
	"iter"
	"net/http/httptest"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ndjsonrpc/jsonrpc"
)

// account is the example: a policy that reads "admin" and a
// handler that reads Admin must agree on what was sent.
type account struct {
	Name  string `json:"name"`
	Admin bool   `json:"admin"`
}

type strictBase struct {
	ID int `json:"id"`
}

type strictKey struct {
	Key string `json:"key"`
}

// strictParams has a field of each kind that the strict check walks into.
type strictParams struct {
	strictBase
	User   account            `json:"user"`
	Ptr    *account           `json:"ptr"`
	Users  []account          `json:"users"`
	Pair   [2]account         `json:"pair"`
	ByName map[string]account `json:"byName"`
	ByNum  map[int]string     `json:"byNum"`
	Raw    json.RawMessage    `json:"raw"`
	Any    any                `json:"any"`
	Self   *selfDecoding      `json:"self"`
	Secret string             `json:"-"`
	//lint:ignore SA5008 a field called "-"
	Dash    string               `json:"-,"`
	Opt     int                  `json:"opt,omitempty,string"`
	Untag   string               // matched as "Untag", exactly
	Nested  map[string][]account `json:"nested"`
	Kelvin  strictKey            `json:"kelvin"`
	Escaped string               `json:"a/b~c"`
}

// selfDecoding decodes itself, with encoding/json's own rules.
type selfDecoding struct{ Got map[string]any }

func (s *selfDecoding) UnmarshalJSON(b []byte) error { return json.Unmarshal(b, &s.Got) }

func echoParams[P any](lax bool) jsonrpc.Handler {
	fn := func(_ context.Context, p P) (P, error) { return p, nil }
	if lax {
		return jsonrpc.Func(fn, jsonrpc.LaxParams)
	}
	return jsonrpc.Func(fn)
}

// TestFuncStrictNames checks what a Func handler receives: members that
// match a field only by case, at any depth, leave it alone; anything else
// decodes as encoding/json decodes it.
func TestFuncStrictNames(t *testing.T) {
	tests := []struct {
		name   string
		params string
		want   strictParams
	}{
		{"the issue's example", `{"user":{"NAME":"x","ADMIN":true}}`, strictParams{}},
		{"exact names", `{"user":{"name":"x","admin":true}}`, strictParams{User: account{Name: "x", Admin: true}}},
		{"exact and by case", `{"user":{"name":"a","Name":"b","ADMIN":true}}`, strictParams{User: account{Name: "a"}}},
		{"by case first", `{"user":{"Name":"b","name":"a"}}`, strictParams{User: account{Name: "a"}}},
		{"embedded", `{"ID":1}`, strictParams{}},
		{"embedded exact", `{"id":7}`, strictParams{strictBase: strictBase{ID: 7}}},
		{"pointer", `{"ptr":{"Admin":true,"name":"p"}}`, strictParams{Ptr: &account{Name: "p"}}},
		{"slice", `{"users":[{"ADMIN":true},{"admin":true}]}`, strictParams{Users: []account{{}, {Admin: true}}}},
		{"array", `{"pair":[{"aDmIn":true},{"admin":true}]}`, strictParams{Pair: [2]account{{}, {Admin: true}}}},
		{"map values", `{"byName":{"k":{"ADMIN":true},"K":{"admin":true}}}`,
			strictParams{ByName: map[string]account{"k": {}, "K": {Admin: true}}}},
		{"map of slices", `{"nested":{"a":[{"Admin":true}]}}`, strictParams{Nested: map[string][]account{"a": {{}}}}},
		{"untagged field", `{"untag":"x","UNTAG":"y"}`, strictParams{}},
		{"untagged field exact", `{"Untag":"x"}`, strictParams{Untag: "x"}},
		{"json:\"-\" is no field", `{"Secret":"x","secret":"y"}`, strictParams{}},
		{"json:\"-,\" is called -", `{"-":"x"}`, strictParams{Dash: "x"}},
		{"options after the name", `{"opt":"5"}`, strictParams{Opt: 5}},
		{"options after the name, by case", `{"OPT":"5"}`, strictParams{}},
		{"escaped name", `{"user":{"n\u0061me":"x","\u0041DMIN":true}}`, strictParams{User: account{Name: "x"}}},
		{"Kelvin sign folds to k", `{"kelvin":{"\u212Aey":"x"}}`, strictParams{}},
		{"name with / and ~", `{"a/b~c":"x","A/B~C":"y"}`, strictParams{Escaped: "x"}},
		{"raw keeps its text", `{"raw":{"A":1,"a":2}}`, strictParams{Raw: json.RawMessage(`{"A":1,"a":2}`)}},
		{"any keeps its names", `{"any":{"A":1,"a":2}}`, strictParams{Any: map[string]any{"A": float64(1), "a": float64(2)}}},
		{"own UnmarshalJSON keeps its names", `{"self":{"A":1}}`, strictParams{Self: &selfDecoding{Got: map[string]any{"A": float64(1)}}}},
		{"unknown members", `{"extra":{"x":[1,{"y":2}]},"id":3}`, strictParams{strictBase: strictBase{ID: 3}}},
	}
	h := echoParams[strictParams](false)
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := h.ServeJSONRPC(t.Context(), &jsonrpc.Request{ID: jsonrpc.Int64ID(1), Method: "m", Params: json.RawMessage(tc.params)})
			require.NoError(t, err)
			assert.Equal(t, tc.want, got)
		})
	}
}

// TestFuncDuplicateMembers checks that a name given twice in one object,
// at any depth and inside any field, is answered with Invalid params whose
// data names the member and where it is.
func TestFuncDuplicateMembers(t *testing.T) {
	tests := []struct {
		name, params, member, path string
	}{
		{"the issue's example", `{"name":"a","name":"b"}`, "name", "/name"},
		{"nested", `{"user":{"name":"a","admin":true,"name":"b"}}`, "name", "/user/name"},
		{"unknown member", `{"x":1,"x":2}`, "x", "/x"},
		{"inside an unknown member", `{"extra":[0,{"y":1,"y":2}]}`, "y", "/extra/1/y"},
		{"by escape", `{"user":{"name":"a","n\u0061me":"b"}}`, "name", "/user/name"},
		{"embedded", `{"id":1,"id":2}`, "id", "/id"},
		{"pointer", `{"ptr":{"admin":false,"admin":true}}`, "admin", "/ptr/admin"},
		{"slice element", `{"users":[{},{"admin":false,"admin":true}]}`, "admin", "/users/1/admin"},
		{"map keys", `{"byName":{"k":{},"k":{"admin":true}}}`, "k", "/byName/k"},
		{"integer map keys", `{"byNum":{"1":"a","01":"b"}}`, "01", "/byNum/01"},
		{"signed integer map keys", `{"byNum":{"+1":"a","1":"b"}}`, "1", "/byNum/1"},
		{"raw", `{"raw":{"a":{"b":1,"b":2}}}`, "b", "/raw/a/b"},
		{"any", `{"any":[{"k":1,"k":1}]}`, "k", "/any/0/k"},
		{"own UnmarshalJSON", `{"self":{"a":1,"a":2}}`, "a", "/self/a"},
		{"a name with / and ~", `{"a/b~c":"x","a/b~c":"y"}`, "a/b~c", "/a~1b~0c"},
		{"case apart is no duplicate, but this is", `{"Name":1,"name":2,"Name":3}`, "Name", "/Name"},
		{"after many members", `{` + manyMembers(40, `"u17":0`) + `}`, "u17", "/u17"},
	}
	h := echoParams[strictParams](false)
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := h.ServeJSONRPC(t.Context(), &jsonrpc.Request{ID: jsonrpc.Int64ID(1), Method: "m", Params: json.RawMessage(tc.params)})
			var e *jsonrpc.Error
			require.ErrorAs(t, err, &e)
			assert.Equal(t, jsonrpc.CodeInvalidParams, e.Code)
			assert.Contains(t, e.Message, `duplicate member "`+tc.member+`"`)
			assert.JSONEq(t, `{"reason":"duplicate member","member":`+quote(tc.member)+`,"path":`+quote(tc.path)+`}`, string(e.Data))
		})
	}
}

func quote(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// TestStrictParamsOverTheWire checks the examples end to end: the
// answer a server writes.
func TestStrictParamsOverTheWire(t *testing.T) {
	mux := new(jsonrpc.Mux)
	mux.Handle("grant", jsonrpc.Func(func(_ context.Context, a account) (account, error) { return a, nil }))
	mux.Handle("grantLax", jsonrpc.Func(func(_ context.Context, a account) (account, error) { return a, nil }, jsonrpc.LaxParams))
	mux.Handle("items", jsonrpc.Stream(func(_ context.Context, a account) iter.Seq2[string, error] {
		return func(yield func(string, error) bool) { yield(a.Name, nil) }
	}))
	input := strings.Join([]string{
		req("1", "grant", `{"NAME":"x","ADMIN":true}`),
		req("2", "grant", `{"name":"a","name":"b"}`),
		req("3", "grant", `{"name":"a","extra":{"admin":true,"admin":false}}`),
		req("4", "grantLax", `{"NAME":"x","ADMIN":true}`),
		req("5", "grantLax", `{"name":"a","name":"b"}`),
		req("6", "items", `{"name":"a","name":"b"}`),
		`[` + req("7", "grant", `{"admin":true,"admin":false}`) + `,` + req("8", "grant", `{"name":"ok"}`) + `]`,
	}, "\n") + "\n"
	got := serveString(t, &jsonrpc.Server{Options: jsonrpc.Options{Handler: mux}}, input)
	dup := func(id, member, path string) string {
		return `{"jsonrpc":"2.0","id":` + id + `,"error":{"code":-32602,"message":` + quote(`Invalid params: duplicate member "`+member+`" at `+path) + `,` +
			`"data":{"reason":"duplicate member","member":` + quote(member) + `,"path":` + quote(path) + `}}}`
	}
	want := []string{
		`{"jsonrpc":"2.0","id":1,"result":{"name":"","admin":false}}`,
		dup("2", "name", "/name"),
		dup("3", "admin", "/extra/admin"),
		`{"jsonrpc":"2.0","id":4,"result":{"name":"x","admin":true}}`,
		`{"jsonrpc":"2.0","id":5,"result":{"name":"b","admin":false}}`,
		dup("6", "name", "/name"),
		`[` + dup("7", "admin", "/admin") + `,{"jsonrpc":"2.0","id":8,"result":{"name":"ok","admin":false}}]`,
	}
	require.Len(t, got, len(want))
	for i := range want {
		assert.JSONEq(t, want[i], got[i])
	}
}

// TestStreamStrictNames: Stream decodes its params as Func does, and
// LaxParams restores encoding/json's rules for it too.
func TestStreamStrictNames(t *testing.T) {
	names := func(lax bool) jsonrpc.Handler {
		fn := func(_ context.Context, a account) iter.Seq2[string, error] {
			return func(yield func(string, error) bool) { yield(a.Name, nil) }
		}
		if lax {
			return jsonrpc.Stream(fn, jsonrpc.LaxParams)
		}
		return jsonrpc.Stream(fn)
	}
	collect := func(h jsonrpc.Handler, params string) ([]string, error) {
		var got []string
		for item, err := range itemsOf(t.Context(), h, &jsonrpc.Request{ID: jsonrpc.Int64ID(1), Method: "s", Params: json.RawMessage(params)}) {
			if err != nil {
				return got, err
			}
			got = append(got, string(item))
		}
		return got, nil
	}
	got, err := collect(names(false), `{"NAME":"x"}`)
	require.NoError(t, err)
	assert.Equal(t, []string{`""`}, got)
	_, err = collect(names(false), `{"name":"a","name":"b"}`)
	assert.ErrorIs(t, err, jsonrpc.ErrInvalidParams)

	got, err = collect(names(true), `{"NAME":"x"}`)
	require.NoError(t, err)
	assert.Equal(t, []string{`"x"`}, got)
	got, err = collect(names(true), `{"name":"a","name":"b"}`)
	require.NoError(t, err)
	assert.Equal(t, []string{`"b"`}, got)
}

// TestFuncLaxParams checks that LaxParams gives encoding/json's rules back.
func TestFuncLaxParams(t *testing.T) {
	h := echoParams[strictParams](true)
	got, err := h.ServeJSONRPC(t.Context(), &jsonrpc.Request{ID: jsonrpc.Int64ID(1), Method: "m",
		Params: json.RawMessage(`{"USER":{"NAME":"x","ADMIN":true},"id":1,"id":2,"raw":{"a":1,"a":2}}`)})
	require.NoError(t, err)
	assert.Equal(t, strictParams{strictBase: strictBase{ID: 2}, User: account{Name: "x", Admin: true}, Raw: json.RawMessage(`{"a":1,"a":2}`)}, got)
}

// TestFuncStrictDeepAndInvalid: nesting deeper than encoding/json allows
// is refused even where encoding/json would not look (a type that decodes
// itself), and so is invalid UTF-8 that encoding/json would let pass, in
// params handed to a handler directly rather than read by a server.
func TestFuncStrictDeepAndInvalid(t *testing.T) {
	deep := strings.Repeat("[", 10001) + strings.Repeat("]", 10001)
	for _, tc := range []struct {
		name, params, reason string
	}{
		{"deep", `{"self":` + deep + `}`, "nesting too deep"},
		{"invalid UTF-8", "{\"x\":{\"a\":1,\"a\":\"\xff\"}}", "invalid UTF-8"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := echoParams[strictParams](false).ServeJSONRPC(t.Context(), &jsonrpc.Request{ID: jsonrpc.Int64ID(1), Method: "m", Params: json.RawMessage(tc.params)})
			var e *jsonrpc.Error
			require.ErrorAs(t, err, &e)
			assert.Equal(t, jsonrpc.CodeInvalidParams, e.Code)
			var data struct{ Reason string }
			require.NoError(t, json.Unmarshal(e.Data, &data))
			assert.Equal(t, tc.reason, data.Reason)
		})
	}
	// 10,000 levels are allowed, as in encoding/json.
	ok := strings.Repeat("[", 9999) + strings.Repeat("]", 9999)
	_, err := echoParams[strictParams](false).ServeJSONRPC(t.Context(), &jsonrpc.Request{ID: jsonrpc.Int64ID(1), Method: "m", Params: json.RawMessage(`{"any":` + ok + `}`)})
	assert.NoError(t, err)
}

// resultMux answers each method with its name's result, as raw JSON.
func resultMux(results map[string]string) *jsonrpc.Mux {
	mux := new(jsonrpc.Mux)
	for method, result := range results {
		mux.Handle(method, jsonrpc.RawHandlerFunc(func(context.Context, *jsonrpc.Request) (json.RawMessage, error) {
			return json.RawMessage(result), nil
		}))
	}
	return mux
}

var strictResults = map[string]string{
	"byCase":   `{"NAME":"x","ADMIN":true}`,
	"dup":      `{"name":"a","name":"b"}`,
	"deepDup":  `{"users":[{"admin":false,"admin":true}]}`,
	"exact":    `{"name":"x","admin":true}`,
	"mixed":    `{"name":"a","Name":"b"}`,
	"rawDup":   `{"raw":{"k":1,"k":2}}`,
	"arrayDup": `[{"k":1},{"k":1,"k":2}]`,
}

// resultCaller is what the callers of TestStrictResults have in common.
type resultCaller = jsonrpc.Caller

// TestStrictResults checks that results decode by the same rules as
// params, for each caller: a name given twice is an error wrapping
// ErrDuplicateMember, and a member that matches a field only by case
// leaves it alone; a json.RawMessage takes the result as it is.
func TestStrictResults(t *testing.T) {
	checkLeaks(t)
	mux := resultMux(strictResults)
	ts := httptest.NewServer(&jsonrpc.Server{Options: jsonrpc.Options{Handler: mux}})
	t.Cleanup(ts.Close)
	callers := map[string]resultCaller{
		"Client":     newPair(t, mux),
		"HTTPClient": &jsonrpc.HTTPClient{URL: ts.URL},
	}
	for name, c := range callers {
		t.Run(name, func(t *testing.T) {
			var a account
			require.NoError(t, c.Call(t.Context(), "byCase", nil, &a))
			assert.Equal(t, account{}, a)
			require.NoError(t, c.Call(t.Context(), "mixed", nil, &a))
			assert.Equal(t, account{Name: "a"}, a)
			require.NoError(t, c.Call(t.Context(), "exact", nil, &a))
			assert.Equal(t, account{Name: "x", Admin: true}, a)

			assert.ErrorIs(t, c.Call(t.Context(), "dup", nil, &a), jsonrpc.ErrDuplicateMember)
			var p strictParams
			assert.ErrorIs(t, c.Call(t.Context(), "deepDup", nil, &p), jsonrpc.ErrDuplicateMember)
			assert.ErrorIs(t, c.Call(t.Context(), "rawDup", nil, &p), jsonrpc.ErrDuplicateMember)
			var v any
			assert.ErrorIs(t, c.Call(t.Context(), "arrayDup", nil, &v), jsonrpc.ErrDuplicateMember)
			var m map[string]any
			err := c.Call(t.Context(), "dup", nil, &m)
			require.ErrorIs(t, err, jsonrpc.ErrDuplicateMember)
			var rpcErr *jsonrpc.Error
			assert.False(t, errors.As(err, &rpcErr), "not an error the peer sent")

			var raw json.RawMessage
			require.NoError(t, c.Call(t.Context(), "dup", nil, &raw))
			assert.Equal(t, strictResults["dup"], string(raw))

			calls := []*jsonrpc.BatchCall{
				{Method: "dup", Result: new(account)},
				{Method: "byCase", Result: new(account)},
				{Method: "exact", Result: new(account)},
			}
			require.NoError(t, c.Batch(t.Context(), calls...))
			assert.ErrorIs(t, calls[0].Err, jsonrpc.ErrDuplicateMember)
			assert.NoError(t, calls[1].Err)
			assert.Equal(t, &account{}, calls[1].Result)
			assert.NoError(t, calls[2].Err)
			assert.Equal(t, &account{Name: "x", Admin: true}, calls[2].Result)
		})
	}
}

// TestCallFromHandlerStrictResult: a handler's call to the peer decodes
// its result by the same rules.
func TestCallFromHandlerStrictResult(t *testing.T) {
	checkLeaks(t)
	mux := resultMux(strictResults)
	mux.Handle("ask", jsonrpc.Func(func(ctx context.Context, p struct {
		Method string `json:"method"`
	}) (account, error) {
		var a account
		err := jsonrpc.Peer(ctx).Call(ctx, p.Method, nil, &a)
		if errors.Is(err, jsonrpc.ErrDuplicateMember) {
			return a, jsonrpc.NewError(-32001, "duplicate")
		}
		return a, err
	}))
	client := newPairOpts(t, mux, &jsonrpc.Options{Handler: mux})
	var a account
	require.NoError(t, client.Call(t.Context(), "ask", map[string]string{"method": "byCase"}, &a))
	assert.Equal(t, account{}, a)
	err := client.Call(t.Context(), "ask", map[string]string{"method": "dup"}, &a)
	var e *jsonrpc.Error
	require.ErrorAs(t, err, &e)
	assert.Equal(t, jsonrpc.Code(-32001), e.Code)
}

// TestStrictNestingOfArrays: params nested deeper than 10,000 levels are
// refused with the documented data however they nest, arrays alone
// included (the check once looked only at input holding an object), for
// every kind of params; 10,000 levels are taken.
func TestStrictNestingOfArrays(t *testing.T) {
	mux := new(jsonrpc.Mux)
	mux.Handle("any", jsonrpc.Func(func(context.Context, any) (int, error) { return 1, nil }))
	mux.Handle("raw", jsonrpc.Func(func(context.Context, json.RawMessage) (int, error) { return 1, nil }))
	mux.Handle("slice", jsonrpc.Func(func(context.Context, []any) (int, error) { return 1, nil }))
	srv := &jsonrpc.Server{Options: jsonrpc.Options{Handler: mux}}
	nested := func(depth int) string { return strings.Repeat("[", depth) + strings.Repeat("]", depth) }
	for _, m := range []string{"any", "raw", "slice"} {
		got := serveString(t, srv, `{"jsonrpc":"2.0","id":1,"method":"`+m+`","params":`+nested(10001)+`}`+"\n"+
			`{"jsonrpc":"2.0","id":2,"method":"`+m+`","params":`+nested(10000)+`}`+"\n")
		require.Len(t, got, 2, m)
		// The two run concurrently if the first holds the reader up
		// long enough (a loaded machine): answers come in either order.
		if strings.Contains(got[0], `"id":2`) {
			got[0], got[1] = got[1], got[0]
		}
		assert.Contains(t, got[0], `"code":-32602`, "%s: 10,001 levels", m)
		assert.Contains(t, got[0], `"data":{"reason":"nesting too deep","limit":10000}`, "%s: 10,001 levels", m)
		assert.Equal(t, `{"jsonrpc":"2.0","id":2,"result":1}`, got[1], "%s: 10,000 levels", m)
	}
}

// lowerKey is a map key that decodes itself, folding case, and has no
// MarshalText.
type lowerKey string

func (k *lowerKey) UnmarshalText(b []byte) error {
	*k = lowerKey(strings.ToLower(string(b)))
	return nil
}

// Two names that a key type's UnmarshalText decodes to one Go key are a
// duplicate, as two spellings of one integer are: encoding/json would
// keep the last, where a proxy that reads the first sees another value.
func TestFuncDuplicateDecodedMapKeys(t *testing.T) {
	type params struct {
		Deny  map[netip.Addr]bool `json:"deny"`
		Lower map[lowerKey]int    `json:"lower"`
	}
	h := jsonrpc.Func(func(_ context.Context, p params) (params, error) { return p, nil })
	call := func(t *testing.T, raw string) (any, error) {
		return h.ServeJSONRPC(t.Context(), &jsonrpc.Request{ID: jsonrpc.Int64ID(1), Method: "m", Params: json.RawMessage(raw)})
	}
	for _, tc := range []struct{ name, params, member, path string }{
		{"netip.Addr", `{"deny":{"::1":true,"0::1":false}}`, "0::1", "/deny/0::1"},
		{"netip.Addr, escaped", `{"deny":{"10.0.0.1":true,"10.0.0.\u0031":false}}`, "10.0.0.1", "/deny/10.0.0.1"},
		{"no MarshalText", `{"lower":{"Key":1,"kEY":2}}`, "kEY", "/lower/kEY"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := call(t, tc.params)
			var e *jsonrpc.Error
			require.ErrorAs(t, err, &e)
			assert.Equal(t, jsonrpc.CodeInvalidParams, e.Code)
			assert.JSONEq(t, `{"reason":"duplicate member","member":`+quote(tc.member)+`,"path":`+quote(tc.path)+`}`, string(e.Data))
		})
	}
	t.Run("distinct keys", func(t *testing.T) {
		got, err := call(t, `{"deny":{"::1":true,"::2":false},"lower":{"a":1,"b":2}}`)
		require.NoError(t, err)
		assert.Equal(t, params{
			Deny:  map[netip.Addr]bool{netip.MustParseAddr("::1"): true, netip.MustParseAddr("::2"): false},
			Lower: map[lowerKey]int{"a": 1, "b": 2},
		}, got)
	})
	t.Run("one instant in two locations is two keys", func(t *testing.T) {
		type times struct {
			At map[time.Time]int `json:"at"`
		}
		h := jsonrpc.Func(func(_ context.Context, p times) (int, error) { return len(p.At), nil })
		got, err := h.ServeJSONRPC(t.Context(), &jsonrpc.Request{ID: jsonrpc.Int64ID(1), Method: "m",
			Params: json.RawMessage(`{"at":{"2020-01-01T00:00:00Z":1,"2020-01-01T00:00:00+00:00":2}}`)})
		require.NoError(t, err)
		assert.Equal(t, 2, got, "entries, as encoding/json makes them")
	})
	t.Run("a key that does not decode", func(t *testing.T) {
		_, err := call(t, `{"deny":{"not an address":true}}`)
		var e *jsonrpc.Error
		require.ErrorAs(t, err, &e)
		assert.Equal(t, jsonrpc.CodeInvalidParams, e.Code)
	})
}

// foldKey is a map key with both UnmarshalJSON and UnmarshalText, each
// folding case: the default encoding/json calls the first, with the key
// as written (quotes and escapes included), encoding/json on json/v2 the
// second, with the key unescaped.
type foldKey string

func (k *foldKey) UnmarshalJSON(b []byte) error {
	*k = foldKey("json:" + strings.ToLower(string(b)))
	return nil
}

func (k *foldKey) UnmarshalText(b []byte) error {
	*k = foldKey("text:" + strings.ToUpper(string(b)))
	return nil
}

// Keys of a type with UnmarshalJSON and UnmarshalText are compared as the
// Go keys that the encoding/json the package is built with makes of them:
// a duplicate exactly where that encoding/json would keep one entry for
// two members.
func TestFuncDuplicateMapKeysDecodedByUnmarshalJSON(t *testing.T) {
	type params struct {
		Fold map[foldKey]int `json:"fold"`
	}
	h := jsonrpc.Func(func(_ context.Context, p params) (params, error) { return p, nil })
	dups := 0
	for _, raw := range []string{
		`{"fold":{"Key":1,"kEY":2}}`,
		`{"fold":{"key":1,"k\u0065y":2}}`,
		`{"fold":{"kEy":1,"k\u0045y":2}}`,
		`{"fold":{"a":1,"b":2}}`,
	} {
		var want params
		require.NoError(t, json.Unmarshal([]byte(raw), &want), raw)
		got, err := h.ServeJSONRPC(t.Context(), &jsonrpc.Request{ID: jsonrpc.Int64ID(1), Method: "m", Params: json.RawMessage(raw)})
		if len(want.Fold) < 2 {
			dups++
			var e *jsonrpc.Error
			require.ErrorAs(t, err, &e, "%s: encoding/json keeps %v", raw, want.Fold)
			assert.Equal(t, jsonrpc.CodeInvalidParams, e.Code, raw)
			assert.Contains(t, string(e.Data), `"reason":"duplicate member"`, raw)
			continue
		}
		require.NoError(t, err, raw)
		assert.Equal(t, want, got, raw)
	}
	assert.Positive(t, dups, "cases where encoding/json keeps one entry for two members")
}

// selfParams decodes itself, keeping the text it is handed.
type selfParams struct{ got string }

func (s *selfParams) UnmarshalJSON(b []byte) error {
	s.got = string(b)
	return nil
}

// A P that decodes itself is handed the params' value alone, without the
// whitespace around it, as encoding/json hands it, strict or lax.
func TestFuncSelfDecodingParamsTrimmed(t *testing.T) {
	raw := func(_ context.Context, p json.RawMessage) (string, error) { return string(p), nil }
	self := func(_ context.Context, p selfParams) (string, error) { return p.got, nil }
	for name, h := range map[string]jsonrpc.Handler{
		"RawMessage":         jsonrpc.Func(raw),
		"RawMessage, lax":    jsonrpc.Func(raw, jsonrpc.LaxParams),
		"UnmarshalJSON":      jsonrpc.Func(self),
		"UnmarshalJSON, lax": jsonrpc.Func(self, jsonrpc.LaxParams),
	} {
		p := &jsonrpc.InProcess{Handler: h}
		var got string
		require.NoError(t, p.Call(t.Context(), "m", json.RawMessage(" \t{} "), &got), name)
		assert.Equal(t, "{}", got, name)
	}
}

// A json.RawMessage result is the value alone too, without the whitespace
// around it that an in-process handler's raw result may hold.
func TestRawResultTrimmed(t *testing.T) {
	p := &jsonrpc.InProcess{Handler: jsonrpc.HandlerFunc(func(context.Context, *jsonrpc.Request) (any, error) {
		return json.RawMessage(" \t{} "), nil
	})}
	var got json.RawMessage
	require.NoError(t, p.Call(t.Context(), "m", nil, &got))
	assert.Equal(t, "{}", string(got))
}
