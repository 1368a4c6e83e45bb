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
	for _, in := range inputs {
		for _, mk := range news {
			got, want := mk(), mk()
			gotErr := decodeResult([]byte(in), got)
			wantErr := json.Unmarshal([]byte(in), want)
			if (gotErr == nil) != (wantErr == nil) {
				t.Errorf("%s into %T: error %v, encoding/json %v", in, got, gotErr, wantErr)
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("%s into %T: got %v, encoding/json %v", in, got, reflect.ValueOf(got).Elem(), reflect.ValueOf(want).Elem())
			}
		}
	}
}
