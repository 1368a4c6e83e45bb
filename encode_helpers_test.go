package jsonrpc

// Helpers of the encoding tests, built with GOEXPERIMENT=jsonv2 too, under
// which the direct encoder's own tests are not (jsonv2_off.go).

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// flatSub is a struct of two ints, as a typical call passes.
type flatSub struct {
	Minuend    int `json:"minuend"`
	Subtrahend int `json:"subtrahend"`
}

// encodingJSON is v as a json.Encoder writes it, with or without HTML
// escapes, without the newline.
func encodingJSON(v any, html bool) (string, error) {
	var out bytes.Buffer
	e := json.NewEncoder(&out)
	e.SetEscapeHTML(html)
	if err := e.Encode(v); err != nil {
		return "", err
	}
	return strings.TrimSuffix(out.String(), "\n"), nil
}

// stringTextKey is a key type of string kind with a MarshalText method,
// which the default encoding/json does not call for map keys and
// encoding/json on v2 does. Its text sorts otherwise than the key.
type stringTextKey string

func (k stringTextKey) MarshalText() ([]byte, error) { return []byte("~" + k), nil }

// TestWrittenAsThisEncodingJSON holds results and params to the bytes of
// the encoding/json the package is built with, for values that the
// default one and the one on v2 (GOEXPERIMENT=jsonv2) write differently:
// CI runs it both ways.
func TestWrittenAsThisEncodingJSON(t *testing.T) {
	for _, v := range []any{
		struct{ S string }{"a\xffb"},
		map[string]int{"\xff": 1},
		map[stringTextKey]int{"a": 1, "b": 2, "~": 3},
		struct{ M map[stringTextKey]string }{map[stringTextKey]string{"k": "v"}},
	} {
		want, err := encodingJSON(v, false)
		require.NoError(t, err)
		var es encoders
		res, e, err := es.encode(v)
		require.NoError(t, err)
		assert.Equal(t, want, string(res), "%T as a result", v)
		if e != nil {
			es.put(e)
		}
		params, err := encodeParams(v)
		require.NoError(t, err)
		assert.Equal(t, want, string(params), "%T as params", v)
	}
	want, err := json.Marshal("a\xffb")
	require.NoError(t, err)
	assert.Equal(t, string(want), string(appendString(nil, "a\xffb")), "a string")
}
