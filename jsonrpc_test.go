package jsonrpc_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ndjsonrpc/jsonrpc"
)

// TestSpecExamples runs every example of section 7 ("Examples") of the
// JSON-RPC 2.0 specification, https://www.jsonrpc.org/specification,
// copied as written there. Examples that span several lines are joined
// onto one, since a message is one line here. Each runs in its own call to
// Serve, so that answers to separate lines cannot change places.
func TestSpecExamples(t *testing.T) {
	for _, tc := range specExamples {
		t.Run(tc.name, func(t *testing.T) {
			line := joinLines(tc.in)
			got := serveString(t, &jsonrpc.Server{Options: jsonrpc.Options{Handler: specMux()}}, line+"\n")
			if tc.want == "" {
				assert.Empty(t, got, "a notification gets no output")
				return
			}
			require.Len(t, got, 1, "output: %q", got)
			assert.JSONEq(t, tc.want, got[0])
			assert.NotContains(t, got[0], `"data"`, "the examples' errors carry no data")
		})
	}
}

// specExamples are the examples of section 7 of the specification, each
// with the answer it must get ("" for none).
var specExamples = []struct {
	name string
	in   string
	want string // "" for no output at all
}{
	// rpc call with positional parameters:
	{
		name: "positional parameters 1",
		in:   `{"jsonrpc": "2.0", "method": "subtract", "params": [42, 23], "id": 1}`,
		want: `{"jsonrpc": "2.0", "result": 19, "id": 1}`,
	},
	{
		name: "positional parameters 2",
		in:   `{"jsonrpc": "2.0", "method": "subtract", "params": [23, 42], "id": 2}`,
		want: `{"jsonrpc": "2.0", "result": -19, "id": 2}`,
	},
	// rpc call with named parameters:
	{
		name: "named parameters 1",
		in:   `{"jsonrpc": "2.0", "method": "subtract", "params": {"subtrahend": 23, "minuend": 42}, "id": 3}`,
		want: `{"jsonrpc": "2.0", "result": 19, "id": 3}`,
	},
	{
		name: "named parameters 2",
		in:   `{"jsonrpc": "2.0", "method": "subtract", "params": {"minuend": 42, "subtrahend": 23}, "id": 4}`,
		want: `{"jsonrpc": "2.0", "result": 19, "id": 4}`,
	},
	// a Notification:
	{
		name: "notification update",
		in:   `{"jsonrpc": "2.0", "method": "update", "params": [1,2,3,4,5]}`,
	},
	{
		name: "notification foobar",
		in:   `{"jsonrpc": "2.0", "method": "foobar"}`,
	},
	// rpc call of non-existent method:
	{
		name: "non-existent method",
		in:   `{"jsonrpc": "2.0", "method": "foobar", "id": "1"}`,
		want: `{"jsonrpc": "2.0", "error": {"code": -32601, "message": "Method not found"}, "id": "1"}`,
	},
	// rpc call with invalid JSON:
	{
		name: "invalid JSON",
		in:   `{"jsonrpc": "2.0", "method": "foobar, "params": "bar", "baz]`,
		want: `{"jsonrpc": "2.0", "error": {"code": -32700, "message": "Parse error"}, "id": null}`,
	},
	// rpc call with invalid Request object:
	{
		name: "invalid Request object",
		in:   `{"jsonrpc": "2.0", "method": 1, "params": "bar"}`,
		want: `{"jsonrpc": "2.0", "error": {"code": -32600, "message": "Invalid Request"}, "id": null}`,
	},
	// rpc call Batch, invalid JSON:
	{
		name: "batch, invalid JSON",
		in: `[
  {"jsonrpc": "2.0", "method": "sum", "params": [1,2,4], "id": "1"},
  {"jsonrpc": "2.0", "method"
]`,
		want: `{"jsonrpc": "2.0", "error": {"code": -32700, "message": "Parse error"}, "id": null}`,
	},
	// rpc call with an empty Array:
	{
		name: "empty array",
		in:   `[]`,
		want: `{"jsonrpc": "2.0", "error": {"code": -32600, "message": "Invalid Request"}, "id": null}`,
	},
	// rpc call with an invalid Batch (but not empty):
	{
		name: "invalid batch, not empty",
		in:   `[1]`,
		want: `[
  {"jsonrpc": "2.0", "error": {"code": -32600, "message": "Invalid Request"}, "id": null}
]`,
	},
	// rpc call with invalid Batch:
	{
		name: "invalid batch",
		in:   `[1,2,3]`,
		want: `[
  {"jsonrpc": "2.0", "error": {"code": -32600, "message": "Invalid Request"}, "id": null},
  {"jsonrpc": "2.0", "error": {"code": -32600, "message": "Invalid Request"}, "id": null},
  {"jsonrpc": "2.0", "error": {"code": -32600, "message": "Invalid Request"}, "id": null}
]`,
	},
	// rpc call Batch:
	{
		name: "batch",
		in: `[
        {"jsonrpc": "2.0", "method": "sum", "params": [1,2,4], "id": "1"},
        {"jsonrpc": "2.0", "method": "notify_hello", "params": [7]},
        {"jsonrpc": "2.0", "method": "subtract", "params": [42,23], "id": "2"},
        {"foo": "boo"},
        {"jsonrpc": "2.0", "method": "foo.get", "params": {"name": "myself"}, "id": "5"},
        {"jsonrpc": "2.0", "method": "get_data", "id": "9"} 
    ]`,
		want: `[
        {"jsonrpc": "2.0", "result": 7, "id": "1"},
        {"jsonrpc": "2.0", "result": 19, "id": "2"},
        {"jsonrpc": "2.0", "error": {"code": -32600, "message": "Invalid Request"}, "id": null},
        {"jsonrpc": "2.0", "error": {"code": -32601, "message": "Method not found"}, "id": "5"},
        {"jsonrpc": "2.0", "result": ["hello", 5], "id": "9"}
    ]`,
	},
	// rpc call Batch (all notifications):
	{
		name: "batch, all notifications",
		in: `[
        {"jsonrpc": "2.0", "method": "notify_sum", "params": [1,2,4]},
        {"jsonrpc": "2.0", "method": "notify_hello", "params": [7]}
    ]`,
		// Nothing is returned for all notification batches
	},
}

// joinLines puts a message written over several lines onto one.
func joinLines(s string) string {
	lines := strings.Split(s, "\n")
	for i := range lines {
		lines[i] = strings.TrimSpace(lines[i])
	}
	return strings.Join(lines, " ")
}
