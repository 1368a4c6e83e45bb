package jsonrpc

import (
	"encoding/json"
	"reflect"
	"testing"
)

// TestDecodeResultMatchesEncodingJSON checks that the short ways of
// decodeResult decode exactly as json.Unmarshal does, errors included.
func TestDecodeResultMatchesEncodingJSON(t *testing.T) {
	inputs := []string{`19`, `-19`, `0`, `-0`, `1.5`, `1e2`, `1E-2`, `-1.25e+3`, `12345678901234567890`,
		`1e999`, `null`, `true`, `false`, `"x"`, `""`, `"a\"b"`, `"ü"`, `"\u00fc"`, `[1]`, `{"a":1}`}
	news := []func() any{
		func() any { return new(int) }, func() any { return new(int64) }, func() any { return new(float64) },
		func() any { return new(string) }, func() any { return new(bool) }, func() any { return new(json.RawMessage) },
	}
	// A result no scanner of ours has read (an in-process handler's, an
	// interceptor's) may have space around the value, as json.Encoder's
	// newline.
	var padded []string
	for _, in := range inputs {
		padded = append(padded, in+" ", in+"\n", " \t"+in+"\t\r\n ")
	}
	for _, d := range []struct {
		decode func([]byte, any) error
		inputs []string
	}{{decodeResult, inputs}, {decodeUnscannedResult, append(padded, inputs...)}} {
		for _, in := range d.inputs {
			checkDecodeResult(t, d.decode, in, news)
		}
	}
}

// checkDecodeResult decodes in with decode into a new value of each of
// news, and fails t where json.Unmarshal decodes it otherwise.
func checkDecodeResult(t *testing.T, decode func([]byte, any) error, in string, news []func() any) {
	t.Helper()
	for _, mk := range news {
		got, want := mk(), mk()
		gotErr := decode([]byte(in), got)
		wantErr := json.Unmarshal([]byte(in), want)
		if (gotErr == nil) != (wantErr == nil) {
			t.Errorf("%q into %T: error %v, encoding/json %v", in, got, gotErr, wantErr)
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%q into %T: got %v, encoding/json %v", in, got, reflect.ValueOf(got).Elem(), reflect.ValueOf(want).Elem())
		}
	}
}
