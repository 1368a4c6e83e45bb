//go:build goexperiment.jsonv2

package jsonrpc

// The strict rules against encoding/json/v2, which Go 1.26 offers only
// behind an experiment: run with
//
//	GOEXPERIMENT=jsonv2 go test -run XXX -fuzz FuzzStrictAgainstV2 -fuzztime 60s .

import (
	"bytes"
	"encoding/json/jsontext"
	jsonv2 "encoding/json/v2"
	"io"
	"reflect"
	"testing"
	"unicode/utf8"
)

// invalidEscapes reports whether b is valid JSON only if an escaped
// surrogate that is not half of a pair may stand for U+FFFD: v2 refuses
// it; encoding/json, and our scanner, take it as U+FFFD.
func invalidEscapes(b []byte) bool {
	if !utf8.Valid(b) {
		return false
	}
	valid := func(opts ...jsontext.Options) bool {
		dec := jsontext.NewDecoder(bytes.NewReader(b), append(opts, jsontext.AllowDuplicateNames(true))...)
		if err := dec.SkipValue(); err != nil {
			return false
		}
		_, err := dec.ReadToken()
		return err == io.EOF
	}
	return !valid() && valid(jsontext.AllowInvalidUTF8(true))
}

// FuzzStrictAgainstV2 checks that the strict rules accept exactly what
// encoding/json/v2's Unmarshal accepts with its default options, for each
// shape, and decode the same value when both accept, as a handler decodes
// params in process and as a server does.
//
// One difference is deliberate and skipped: v2 refuses an escaped
// surrogate that is not half of a pair ("\ud800"), which encoding/json and
// our scanner take as U+FFFD; it is about UTF-8, not names.
func FuzzStrictAgainstV2(f *testing.F) {
	for _, s := range strictSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if len(b) == 0 || invalidEscapes(b) {
			return // absent params; see above
		}
		for _, s := range fuzzShapes {
			want := s.fresh()
			wantErr := jsonv2.Unmarshal(b, want)
			check := func(how string, got any, err error) {
				t.Helper()
				if (err == nil) != (wantErr == nil) {
					t.Fatalf("%s, %s: %q gives error %v; v2 gives %v", s.name, how, b, err, wantErr)
				}
				if err == nil && !reflect.DeepEqual(got, want) {
					t.Fatalf("%s, %s: %q decodes to %#v; v2 to %#v", s.name, how, b, got, want)
				}
			}
			got, err := s.strict(b, false)
			check("in process", got, err)
			if validParams(b) {
				got, err := s.strict(b, true)
				check("as a server", got, err)
			}
		}
	})
}
