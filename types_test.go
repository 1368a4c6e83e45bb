package jsonrpc_test

import (
	"encoding/json"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ndjsonrpc/jsonrpc"
)

// exactIDs are ids whose JSON text must come back byte for byte.
var exactIDs = []struct{ name, text string }{
	{"big integer", `12345678901234567890`},
	{"fraction", `1.5`},
	{"negative", `-1`},
	{"zero", `0`},
	{"exponent", `1e3`},
	{"negative zero", `-0`},
	{"trailing zero", `1.50`},
	{"empty string", `""`},
	{"escaped string", `"ü\n\"x"`},
	{"unicode escape", `"\u00fc\ud83d\ude00"`},
	{"html", `"<a&b>"`},
	{"null", `null`},
}

func TestIDRoundTripThroughServe(t *testing.T) {
	for _, tc := range exactIDs {
		t.Run(tc.name, func(t *testing.T) {
			got := serveString(t, &jsonrpc.Server{Options: jsonrpc.Options{Handler: specMux()}},
				`{"jsonrpc":"2.0","id": `+tc.text+` ,"method":"echo","params":[1]}`+"\n"+
					`{"jsonrpc":"2.0","id":`+tc.text+`,"method":"nope"}`+"\n")
			require.Len(t, got, 2)
			for _, line := range got {
				r := decodeResponse(t, line)
				assert.Equal(t, tc.text, r.ID.String())
				assert.Contains(t, line, `"id":`+tc.text+`,`, "the id is written back byte for byte")
			}
		})
	}
}

func TestIDJSON(t *testing.T) {
	for _, tc := range exactIDs {
		t.Run(tc.name, func(t *testing.T) {
			var id jsonrpc.ID
			require.NoError(t, id.UnmarshalJSON([]byte(tc.text)))
			assert.Equal(t, tc.text, id.String())
			b, err := id.MarshalJSON()
			require.NoError(t, err)
			assert.Equal(t, tc.text, string(b))

			// Through encoding/json, in a struct.
			var s struct {
				ID jsonrpc.ID `json:"id"`
			}
			require.NoError(t, json.Unmarshal([]byte(`{"id":`+tc.text+`}`), &s))
			assert.Equal(t, tc.text, s.ID.String())
			if !strings.ContainsAny(tc.text, "<&>") { // encoding/json escapes those in a Marshaler's output
				b, err = json.Marshal(s)
				require.NoError(t, err)
				assert.Equal(t, `{"id":`+tc.text+`}`, string(b))
			}
		})
	}
}

func TestIDUnmarshalInvalid(t *testing.T) {
	tests := []struct {
		name, text string
		want       error
	}{
		{"object", `{}`, jsonrpc.ErrInvalidRequest},
		{"array", `[1]`, jsonrpc.ErrInvalidRequest},
		{"true", `true`, jsonrpc.ErrInvalidRequest},
		{"false", `false`, jsonrpc.ErrInvalidRequest},
		{"not JSON", `1.`, jsonrpc.ErrParse},
		{"two values", `1 2`, jsonrpc.ErrParse},
		{"empty", ``, jsonrpc.ErrParse},
		{"bad string", `"a`, jsonrpc.ErrParse},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			id := jsonrpc.StringID("kept")
			err := id.UnmarshalJSON([]byte(tc.text))
			require.ErrorIs(t, err, tc.want)
			assert.Equal(t, `"kept"`, id.String(), "a failed decode leaves the id unchanged")
		})
	}
}

func TestIDConstructors(t *testing.T) {
	marshaled, err := json.Marshal("a\xffb")
	require.NoError(t, err)
	invalidUTF8 := string(marshaled)
	tests := []struct {
		name         string
		id           jsonrpc.ID
		text         string
		zero, isNull bool
		json         string
	}{
		{"zero", jsonrpc.ID{}, "", true, false, "null"},
		{"null", jsonrpc.NullID(), "null", false, true, "null"},
		{"string", jsonrpc.StringID("ü\n\"x"), `"ü\n\"x"`, false, false, `"ü\n\"x"`},
		{"string with html", jsonrpc.StringID("<&>"), `"<&>"`, false, false, `"<&>"`},
		{"string with controls", jsonrpc.StringID("\t\r\x01\\"), `"\t\r\u0001\\"`, false, false, `"\t\r\u0001\\"`},
		// As encoding/json writes it: the escape \ufffd, or the
		// character itself under GOEXPERIMENT=jsonv2.
		{"invalid UTF-8", jsonrpc.StringID("a\xffb"), invalidUTF8, false, false, invalidUTF8},
		{"empty string", jsonrpc.StringID(""), `""`, false, false, `""`},
		{"int", jsonrpc.Int64ID(42), "42", false, false, "42"},
		{"negative int", jsonrpc.Int64ID(-9223372036854775808), "-9223372036854775808", false, false, "-9223372036854775808"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.text, tc.id.String())
			assert.Equal(t, tc.zero, tc.id.IsZero())
			assert.Equal(t, tc.isNull, tc.id.IsNull())
			b, err := tc.id.MarshalJSON()
			require.NoError(t, err)
			assert.Equal(t, tc.json, string(b))
		})
	}
	assert.Equal(t, jsonrpc.StringID("a"), jsonrpc.StringID("a"), "ids are comparable")
	assert.NotEqual(t, jsonrpc.StringID("1"), jsonrpc.Int64ID(1))
	assert.NotEqual(t, jsonrpc.ID{}, jsonrpc.NullID())
	m := map[jsonrpc.ID]int{jsonrpc.Int64ID(1): 1, jsonrpc.StringID("1"): 2}
	assert.Len(t, m, 2, "ids are usable as map keys")
}

func TestIDSource(t *testing.T) {
	var src jsonrpc.IDSource
	assert.Equal(t, "1", src.Next().String(), "the zero IDSource starts at 1")
	assert.Equal(t, "2", src.Next().String())

	const goroutines, each = 32, 200
	var wg sync.WaitGroup
	got := make([][]int64, goroutines)
	for g := range goroutines {
		wg.Go(func() {
			for range each {
				id := src.Next()
				n, err := strconv.ParseInt(id.String(), 10, 64)
				if err != nil {
					return // reported below: the slice comes up short
				}
				got[g] = append(got[g], n)
			}
		})
	}
	wg.Wait()
	var all []int64
	for g := range goroutines {
		require.Len(t, got[g], each, "every id is a number")
		assert.True(t, slices.IsSorted(got[g]), "ids increase on each goroutine")
		all = append(all, got[g]...)
	}
	slices.Sort(all)
	for i, n := range all {
		if !assert.Equal(t, int64(i+3), n, "all ids are distinct and none is skipped") {
			break
		}
	}
}

func TestRequestNotificationVersusNullID(t *testing.T) {
	var n, r jsonrpc.Request
	require.NoError(t, json.Unmarshal([]byte(`{"jsonrpc":"2.0","method":"m"}`), &n))
	require.NoError(t, json.Unmarshal([]byte(`{"jsonrpc":"2.0","method":"m","id":null}`), &r))
	assert.True(t, n.ID.IsZero())
	assert.True(t, n.ID.IsZero())
	assert.False(t, r.ID.IsZero(), "a null id is not a notification")
	assert.True(t, r.ID.IsNull())

	b, err := json.Marshal(n)
	require.NoError(t, err)
	assert.JSONEq(t, `{"jsonrpc":"2.0","method":"m"}`, string(b))
	b, err = json.Marshal(r)
	require.NoError(t, err)
	assert.JSONEq(t, `{"jsonrpc":"2.0","method":"m","id":null}`, string(b))

	got := serveString(t, &jsonrpc.Server{Options: jsonrpc.Options{Handler: specMux()}},
		`{"jsonrpc":"2.0","method":"echo","params":[1]}`+"\n"+`{"jsonrpc":"2.0","method":"echo","params":[2],"id":null}`+"\n")
	require.Len(t, got, 1)
	assert.JSONEq(t, `{"jsonrpc":"2.0","id":null,"result":[2]}`, got[0])
}

func TestRequestJSONRoundTrip(t *testing.T) {
	tests := []struct {
		name string
		req  jsonrpc.Request
		want string
	}{
		{"call", jsonrpc.Request{ID: jsonrpc.Int64ID(1), Method: "subtract", Params: json.RawMessage(`[42,23]`)},
			`{"jsonrpc":"2.0","id":1,"method":"subtract","params":[42,23]}`},
		{"named", jsonrpc.Request{ID: jsonrpc.StringID("a"), Method: "m", Params: json.RawMessage(`{"x":{"y":[1]}}`)},
			`{"jsonrpc":"2.0","id":"a","method":"m","params":{"x":{"y":[1]}}}`},
		{"no params", jsonrpc.Request{ID: jsonrpc.NullID(), Method: "m"}, `{"jsonrpc":"2.0","id":null,"method":"m"}`},
		{"notification", jsonrpc.Request{Method: "notify", Params: json.RawMessage(`[]`)}, `{"jsonrpc":"2.0","method":"notify","params":[]}`},
		{"escaped method", jsonrpc.Request{ID: jsonrpc.Int64ID(2), Method: "a\"b\\c\n"}, `{"jsonrpc":"2.0","id":2,"method":"a\"b\\c\n"}`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b, err := json.Marshal(tc.req)
			require.NoError(t, err)
			assert.JSONEq(t, tc.want, string(b))

			var got jsonrpc.Request
			require.NoError(t, json.Unmarshal(b, &got))
			assert.Equal(t, tc.req, got)

			// As fields, by value and by pointer.
			type wrap struct {
				Req jsonrpc.Request  `json:"req"`
				Ptr *jsonrpc.Request `json:"ptr"`
			}
			in := wrap{Req: tc.req, Ptr: &tc.req}
			b, err = json.Marshal(in)
			require.NoError(t, err)
			assert.JSONEq(t, `{"req":`+tc.want+`,"ptr":`+tc.want+`}`, string(b))
			var out wrap
			require.NoError(t, json.Unmarshal(b, &out))
			assert.Equal(t, tc.req, out.Req)
			if assert.NotNil(t, out.Ptr) {
				assert.Equal(t, tc.req, *out.Ptr)
			}
		})
	}
}

func TestRequestMarshalInvalidParams(t *testing.T) {
	for _, p := range []string{`1`, `"x"`, `null`, `{`, `true`} {
		t.Run(p, func(t *testing.T) {
			_, err := jsonrpc.Request{ID: jsonrpc.Int64ID(1), Method: "m", Params: json.RawMessage(p)}.MarshalJSON()
			require.ErrorIs(t, err, jsonrpc.ErrInvalidParams)
		})
	}
}

func TestRequestUnmarshalStrict(t *testing.T) {
	tests := []struct {
		name   string
		in     string
		want   error  // nil for a valid request
		method string // for a valid request
		params string
		id     string
	}{
		{name: "valid", in: `{"jsonrpc":"2.0","method":"m","params":[1],"id":1}`, method: "m", params: `[1]`, id: "1"},
		{name: "whitespace", in: " {\t\"jsonrpc\" : \"2.0\" ,\n\"method\":\"m\" } ", method: "m"},
		{name: "unknown members ignored", in: `{"jsonrpc":"2.0","method":"m","id":2,"extra":{"a":[1,{"b":null}]},"x":1}`, method: "m", id: "2"},
		{name: "escaped member name", in: `{"jsonrpc":"2.0","\u006dethod":"m","id":3}`, method: "m", id: "3"},
		{name: "escaped version", in: `{"jsonrpc":"2\u002e0","method":"m"}`, method: "m"},
		{name: "escaped method", in: `{"jsonrpc":"2.0","method":"a\u0062\n"}`, method: "ab\n"},
		{name: "empty params object", in: `{"jsonrpc":"2.0","method":"m","params":{}}`, method: "m", params: `{}`},
		{name: "ID is an unknown member", in: `{"jsonrpc":"2.0","method":"m","ID":1}`, method: "m"},
		{name: "not JSON", in: `{"jsonrpc":"2.0",`, want: jsonrpc.ErrParse},
		{name: "invalid UTF-8", in: "{\"jsonrpc\":\"2.0\",\"method\":\"\xff\"}", want: jsonrpc.ErrParse},
		{name: "array", in: `[{"jsonrpc":"2.0","method":"m"}]`, want: jsonrpc.ErrInvalidRequest},
		{name: "scalar", in: `1`, want: jsonrpc.ErrInvalidRequest},
		{name: "missing jsonrpc", in: `{"method":"m","id":1}`, want: jsonrpc.ErrInvalidRequest},
		{name: "jsonrpc 1.0", in: `{"jsonrpc":"1.0","method":"m","id":1}`, want: jsonrpc.ErrInvalidRequest},
		{name: "jsonrpc number", in: `{"jsonrpc":2.0,"method":"m","id":1}`, want: jsonrpc.ErrInvalidRequest},
		{name: "jsonrpc 2.0 with space", in: `{"jsonrpc":"2.0 ","method":"m","id":1}`, want: jsonrpc.ErrInvalidRequest},
		{name: "JSONRPC upper case", in: `{"JSONRPC":"2.0","method":"m","id":1}`, want: jsonrpc.ErrInvalidRequest},
		{name: "missing method", in: `{"jsonrpc":"2.0","id":1}`, want: jsonrpc.ErrInvalidRequest},
		{name: "METHOD upper case", in: `{"jsonrpc":"2.0","METHOD":"m","id":1}`, want: jsonrpc.ErrInvalidRequest},
		{name: "method number", in: `{"jsonrpc":"2.0","method":1,"id":1}`, want: jsonrpc.ErrInvalidRequest},
		{name: "method null", in: `{"jsonrpc":"2.0","method":null,"id":1}`, want: jsonrpc.ErrInvalidRequest},
		{name: "params string", in: `{"jsonrpc":"2.0","method":"m","params":"bar","id":1}`, want: jsonrpc.ErrInvalidRequest},
		{name: "params number", in: `{"jsonrpc":"2.0","method":"m","params":1,"id":1}`, want: jsonrpc.ErrInvalidRequest},
		{name: "params null", in: `{"jsonrpc":"2.0","method":"m","params":null,"id":1}`, want: jsonrpc.ErrInvalidRequest},
		{name: "params true", in: `{"jsonrpc":"2.0","method":"m","params":true,"id":1}`, want: jsonrpc.ErrInvalidRequest},
		{name: "id object", in: `{"jsonrpc":"2.0","method":"m","id":{}}`, want: jsonrpc.ErrInvalidRequest},
		{name: "id array", in: `{"jsonrpc":"2.0","method":"m","id":[1]}`, want: jsonrpc.ErrInvalidRequest},
		{name: "id true", in: `{"jsonrpc":"2.0","method":"m","id":true}`, want: jsonrpc.ErrInvalidRequest},
		{name: "id false", in: `{"jsonrpc":"2.0","method":"m","id":false}`, want: jsonrpc.ErrInvalidRequest},
		{name: "duplicate method", in: `{"jsonrpc":"2.0","method":"m","method":"m","id":1}`, want: jsonrpc.ErrInvalidRequest},
		{name: "duplicate id", in: `{"jsonrpc":"2.0","method":"m","id":1,"id":2}`, want: jsonrpc.ErrInvalidRequest},
		{name: "duplicate jsonrpc", in: `{"jsonrpc":"2.0","jsonrpc":"2.0","method":"m"}`, want: jsonrpc.ErrInvalidRequest},
		{name: "duplicate params", in: `{"jsonrpc":"2.0","method":"m","params":[],"params":[]}`, want: jsonrpc.ErrInvalidRequest},
		{name: "duplicate through escape", in: `{"jsonrpc":"2.0","method":"m","\u006dethod":"n"}`, want: jsonrpc.ErrInvalidRequest},
		{name: "duplicate unknown member", in: `{"jsonrpc":"2.0","method":"m","x":1,"x":2}`, want: jsonrpc.ErrInvalidRequest},
		{name: "duplicate unknown member through escape", in: `{"jsonrpc":"2.0","method":"m","xy":1,"x\u0079":2}`, want: jsonrpc.ErrInvalidRequest},
		{name: "many unknown members", in: `{"jsonrpc":"2.0","method":"m",` + manyMembers(40, "") + `}`, method: "m"},
		{name: "duplicate among many unknown members", in: `{"jsonrpc":"2.0","method":"m",` + manyMembers(40, `"u7":0`) + `}`, want: jsonrpc.ErrInvalidRequest},
		{name: "duplicate of an early name past many", in: `{"jsonrpc":"2.0","method":"m",` + manyMembers(20, `"u30":0,"u1":0`) + `}`, want: jsonrpc.ErrInvalidRequest},
		{name: "carries result", in: `{"jsonrpc":"2.0","method":"m","id":1,"result":1}`, want: jsonrpc.ErrInvalidRequest},
		{name: "carries error", in: `{"jsonrpc":"2.0","method":"m","id":1,"error":{"code":1,"message":"x"}}`, want: jsonrpc.ErrInvalidRequest},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			// Called directly: encoding/json would refuse input that is
			// not JSON before UnmarshalJSON sees it.
			var r jsonrpc.Request
			err := r.UnmarshalJSON([]byte(tc.in))
			if tc.want != nil {
				require.ErrorIs(t, err, tc.want)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.method, r.Method)
			assert.Equal(t, tc.id, r.ID.String())
			if tc.params == "" {
				assert.Nil(t, r.Params)
			} else {
				assert.JSONEq(t, tc.params, string(r.Params))
			}
		})
	}
}

// manyMembers returns n members "u0".."u<n-1>", then extra if it is set.
func manyMembers(n int, extra string) string {
	var b strings.Builder
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(`"u` + strconv.Itoa(i) + `":` + strconv.Itoa(i))
	}
	if extra != "" {
		b.WriteString("," + extra)
	}
	return b.String()
}

// TestServeInvalidRequestID checks which id an Invalid Request answer
// carries: the request's own when that id is valid, null otherwise.
func TestServeInvalidRequestID(t *testing.T) {
	tests := []struct {
		name, in, id string
	}{
		{"bad version, number id", `{"jsonrpc":"1.0","method":"m","id":7}`, `7`},
		{"bad version, string id", `{"jsonrpc":"1.0","method":"m","id":"x"}`, `"x"`},
		{"method number", `{"jsonrpc":"2.0","method":1,"id":"a"}`, `"a"`},
		{"params string", `{"jsonrpc":"2.0","method":"m","params":"bar","id":1.5}`, `1.5`},
		{"METHOD upper case", `{"jsonrpc":"2.0","METHOD":"m","id":3}`, `3`},
		{"no id", `{"jsonrpc":"2.0","method":1}`, `null`},
		{"null id", `{"jsonrpc":"2.0","method":1,"id":null}`, `null`},
		{"id object", `{"jsonrpc":"2.0","method":"m","id":{"a":1}}`, `null`},
		{"id array", `{"jsonrpc":"2.0","method":"m","id":[1]}`, `null`},
		{"id true", `{"jsonrpc":"2.0","method":"m","id":true}`, `null`},
		{"duplicate id", `{"jsonrpc":"2.0","method":"m","id":1,"id":2}`, `null`},
		{"duplicate method, valid id", `{"jsonrpc":"2.0","method":"m","method":"n","id":5}`, `5`},
		{"duplicate unknown member, valid id", `{"jsonrpc":"2.0","method":"m","x":1,"x":2,"id":"d"}`, `"d"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := serveString(t, &jsonrpc.Server{Options: jsonrpc.Options{Handler: specMux()}}, tc.in+"\n"+"["+tc.in+"]\n")
			require.Len(t, got, 2)
			assert.JSONEq(t, `{"jsonrpc":"2.0","id":`+tc.id+`,"error":{"code":-32600,"message":"Invalid Request"}}`, got[0])
			assert.JSONEq(t, `[{"jsonrpc":"2.0","id":`+tc.id+`,"error":{"code":-32600,"message":"Invalid Request"}}]`, got[1], "inside a batch")
		})
	}
}

func TestResponseJSONRoundTrip(t *testing.T) {
	tests := []struct {
		name string
		resp jsonrpc.Response
		want string
	}{
		{"result", jsonrpc.Response{ID: jsonrpc.Int64ID(1), Result: json.RawMessage(`{"a":[1,2]}`)},
			`{"jsonrpc":"2.0","id":1,"result":{"a":[1,2]}}`},
		{"string result", jsonrpc.Response{ID: jsonrpc.StringID("x"), Result: json.RawMessage(`"r"`)},
			`{"jsonrpc":"2.0","id":"x","result":"r"}`},
		{"error", jsonrpc.Response{ID: jsonrpc.StringID("e"), Error: jsonrpc.NewError(jsonrpc.CodeMethodNotFound, "Method not found")},
			`{"jsonrpc":"2.0","id":"e","error":{"code":-32601,"message":"Method not found"}}`},
		{"error with data", jsonrpc.Response{ID: jsonrpc.NullID(), Error: jsonrpc.NewError(-32001, "x").WithData(map[string]int{"n": 1})},
			`{"jsonrpc":"2.0","id":null,"error":{"code":-32001,"message":"x","data":{"n":1}}}`},
		{"null result", jsonrpc.Response{ID: jsonrpc.Int64ID(2), Result: json.RawMessage(`null`)},
			`{"jsonrpc":"2.0","id":2,"result":null}`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b, err := json.Marshal(tc.resp)
			require.NoError(t, err)
			assert.JSONEq(t, tc.want, string(b))
			var got jsonrpc.Response
			require.NoError(t, json.Unmarshal(b, &got))
			assert.Equal(t, tc.resp, got)

			type wrap struct {
				Resp jsonrpc.Response   `json:"resp"`
				List []jsonrpc.Response `json:"list"`
			}
			in := wrap{Resp: tc.resp, List: []jsonrpc.Response{tc.resp, tc.resp}}
			b, err = json.Marshal(in)
			require.NoError(t, err)
			var out wrap
			require.NoError(t, json.Unmarshal(b, &out))
			assert.Equal(t, in, out)
		})
	}
}

func TestResponseMarshal(t *testing.T) {
	tests := []struct {
		name string
		resp jsonrpc.Response
		want string
		err  error
	}{
		{"zero id and nil result", jsonrpc.Response{}, `{"jsonrpc":"2.0","id":null,"result":null}`, nil},
		{"error wins over result", jsonrpc.Response{ID: jsonrpc.Int64ID(1), Result: json.RawMessage(`1`), Error: jsonrpc.ErrInternal},
			`{"jsonrpc":"2.0","id":1,"error":{"code":-32603,"message":"Internal error"}}`, nil},
		{"invalid result", jsonrpc.Response{ID: jsonrpc.Int64ID(1), Result: json.RawMessage(`{`)}, "", jsonrpc.ErrInternal},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b, err := tc.resp.MarshalJSON()
			if tc.err != nil {
				require.ErrorIs(t, err, tc.err)
				return
			}
			require.NoError(t, err)
			assert.JSONEq(t, tc.want, string(b))
		})
	}
}

func TestResponseUnmarshalStrict(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want error
	}{
		{"result", `{"jsonrpc":"2.0","id":1,"result":1}`, nil},
		{"null result", `{"jsonrpc":"2.0","id":1,"result":null}`, nil},
		{"error", `{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"m"}}`, nil},
		{"unknown members", `{"jsonrpc":"2.0","id":1,"result":1,"x":[]}`, nil},
		{"both result and error", `{"jsonrpc":"2.0","id":1,"result":1,"error":{"code":1,"message":"m"}}`, jsonrpc.ErrInvalidRequest},
		{"neither result nor error", `{"jsonrpc":"2.0","id":1}`, jsonrpc.ErrInvalidRequest},
		{"no id", `{"jsonrpc":"2.0","result":1}`, jsonrpc.ErrInvalidRequest},
		{"id object", `{"jsonrpc":"2.0","id":{},"result":1}`, jsonrpc.ErrInvalidRequest},
		{"bad version", `{"jsonrpc":"1.0","id":1,"result":1}`, jsonrpc.ErrInvalidRequest},
		{"no version", `{"id":1,"result":1}`, jsonrpc.ErrInvalidRequest},
		{"has method", `{"jsonrpc":"2.0","id":1,"result":1,"method":"m"}`, jsonrpc.ErrInvalidRequest},
		{"duplicate result", `{"jsonrpc":"2.0","id":1,"result":1,"result":2}`, jsonrpc.ErrInvalidRequest},
		{"error not an object", `{"jsonrpc":"2.0","id":1,"error":"bad"}`, jsonrpc.ErrInvalidRequest},
		{"error code fraction", `{"jsonrpc":"2.0","id":1,"error":{"code":1.5,"message":"m"}}`, jsonrpc.ErrInvalidRequest},
		{"error code missing", `{"jsonrpc":"2.0","id":1,"error":{"message":"m"}}`, jsonrpc.ErrInvalidRequest},
		{"error message missing", `{"jsonrpc":"2.0","id":1,"error":{"code":1}}`, jsonrpc.ErrInvalidRequest},
		{"error message number", `{"jsonrpc":"2.0","id":1,"error":{"code":1,"message":2}}`, jsonrpc.ErrInvalidRequest},
		{"array", `[{"jsonrpc":"2.0","id":1,"result":1}]`, jsonrpc.ErrInvalidRequest},
		{"not JSON", `{"jsonrpc":"2.0","id":1,"result":}`, jsonrpc.ErrParse},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var r jsonrpc.Response
			err := r.UnmarshalJSON([]byte(tc.in))
			if tc.want != nil {
				require.ErrorIs(t, err, tc.want)
				return
			}
			require.NoError(t, err)
			assert.True(t, (r.Error == nil) != (r.Result == nil), "exactly one of Result and Error")
		})
	}
}

func TestResponseUnmarshalCopies(t *testing.T) {
	in := []byte(`{"jsonrpc":"2.0","id":"abc","error":{"code":-32001,"message":"m","data":{"k":"v"}}}`)
	var r jsonrpc.Response
	require.NoError(t, json.Unmarshal(in, &r))
	for i := range in {
		in[i] = ' '
	}
	assert.Equal(t, `"abc"`, r.ID.String())
	require.NotNil(t, r.Error)
	assert.Equal(t, jsonrpc.Code(-32001), r.Error.Code)
	assert.Equal(t, "m", r.Error.Message)
	assert.JSONEq(t, `{"k":"v"}`, string(r.Error.Data))

	in = []byte(`{"jsonrpc":"2.0","id":1,"method":"m","params":[1,2]}`)
	var q jsonrpc.Request
	require.NoError(t, json.Unmarshal(in, &q))
	for i := range in {
		in[i] = ' '
	}
	assert.Equal(t, "m", q.Method)
	assert.Equal(t, "1", q.ID.String())
	assert.JSONEq(t, `[1,2]`, string(q.Params))
}
