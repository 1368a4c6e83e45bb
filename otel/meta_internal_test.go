package jsonrpcotel

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/propagation"
)

// metaSeeds are params that a scan of the top level can get wrong:
// escaped names, escaped quotes and brackets inside strings, duplicate
// members, nesting, whitespace, and objects that are not well formed.
var metaSeeds = []string{
	`{}`, ` { } `, `[]`, `null`, `"_meta"`, `{"_meta":{}}`,
	`{"_meta":{"traceparent":"t"}}`,
	`{"a":1,"_meta":{"k":"v"},"b":[1,{"_meta":2}]}`,
	`{"\u005fmeta":{"k":"escaped name"}}`,
	`{"_META":{"k":"v"}}`,
	`{"_meta":{"k":"first"},"_meta":{"k":"last"}}`,
	`{"s":"a\"b\\","_meta":{"k":"after escapes"}}`,
	`{"s":"\\\\\"}{][","_meta" : { "k" : "v" } }`,
	`{"a":{"_meta":{"k":"nested"}}}`,
	`{"_meta":null}`, `{"_meta":"str"}`, `{"_meta":[1]}`, `{"_meta":1e3,"x":true}`,
	"{\n\t\"_meta\"\r:\n{\"k\":\"v\"}\n}",
	`{"a":1`, `{"a"}`, `{"a":}`, `{"a":1,}`, `{"_meta":{"k":"v"`, `{"a":"\"}`, `{"a":1 "b":2}`,
}

// oldMeta is the _meta member as encoding/json finds it: by exact name,
// the last of duplicates.
func oldMeta(params []byte) (json.RawMessage, bool) {
	var obj map[string]json.RawMessage
	if json.Unmarshal(params, &obj) != nil || obj == nil {
		return nil, false
	}
	m, ok := obj[metaName]
	return m, ok
}

// checkFindMember holds findMember to encoding/json on valid JSON.
func checkFindMember(t *testing.T, params []byte) {
	if !json.Valid(params) {
		findMember(params, metaName) // must not panic
		return
	}
	start, end, ok := findMember(params, metaName)
	want, found := oldMeta(params)
	if !ok {
		assert.False(t, found, "%s: not an object for findMember, an object for encoding/json", params)
		return
	}
	require.Equal(t, found, start != end, "%s: whether _meta is there", params)
	if found {
		assert.Equal(t, string(want), string(params[start:end]), "%s", params)
	}
}

func TestFindMember(t *testing.T) {
	for _, s := range metaSeeds {
		checkFindMember(t, []byte(s))
	}
}

// checkWithMeta holds withMeta to what decoding, setting and encoding the
// params would give: every other member kept, _meta's members merged.
func checkWithMeta(t *testing.T, params []byte) {
	mc := propagation.MapCarrier{"traceparent": "00-t-s-01", "k": "new"}
	out, ok := withMeta(params, mc)
	var obj map[string]any
	if !json.Valid(params) || json.Unmarshal(params, &obj) != nil || obj == nil {
		return // anything but a panic
	}
	old, hasMeta := obj[metaName]
	oldMap, isMap := old.(map[string]any)
	if hasMeta && !isMap {
		assert.False(t, ok, "%s: _meta is not an object", params)
		return
	}
	require.True(t, ok, "%s", params)
	require.True(t, json.Valid(out), "%s -> %s", params, out)
	var got map[string]any
	require.NoError(t, json.Unmarshal(out, &got))
	if oldMap == nil {
		oldMap = map[string]any{}
	}
	for k, v := range mc {
		oldMap[k] = v
	}
	obj[metaName] = oldMap
	assert.Equal(t, obj, got, "%s -> %s", params, out)
	// The members before _meta are kept as written.
	if i := bytes.Index(params, []byte(`"s":`)); i >= 0 && !bytes.Contains(params, []byte(`\u005f`)) {
		assert.Contains(t, string(out), string(params[i:i+6]))
	}
}

func TestWithMeta(t *testing.T) {
	for _, s := range metaSeeds {
		checkWithMeta(t, []byte(s))
	}
	out, ok := withMeta([]byte(`{"b":"<x>","a":1}`), propagation.MapCarrier{"k": "v"})
	require.True(t, ok)
	assert.Equal(t, `{"_meta":{"k":"v"},"b":"<x>","a":1}`, string(out), "the members' order and bytes are kept")
}

func FuzzMeta(f *testing.F) {
	for _, s := range metaSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, params []byte) {
		checkFindMember(t, params)
		checkWithMeta(t, params)
	})
}
