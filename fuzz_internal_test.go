package jsonrpc

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"reflect"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

// scanSeeds are inputs for FuzzScan: the specification's examples, and the
// corners of the grammar where a hand-written scanner goes wrong.
var scanSeeds = []string{
	`{"jsonrpc": "2.0", "method": "subtract", "params": [42, 23], "id": 1}`,
	`{"jsonrpc": "2.0", "method": "subtract", "params": {"subtrahend": 23, "minuend": 42}, "id": 3}`,
	`{"jsonrpc": "2.0", "method": "update", "params": [1,2,3,4,5]}`,
	`{"jsonrpc": "2.0", "method": "foobar, "params": "bar", "baz]`,
	`{"jsonrpc": "2.0", "method": 1, "params": "bar"}`,
	`[{"jsonrpc": "2.0", "method": "sum", "params": [1,2,4], "id": "1"},{"jsonrpc": "2.0", "method"]`,
	`[]`, `[1]`, `[1,2,3]`, ` [ ] `, `[ 1 , 2 ]`, `[{}]`, `[{},]`, `[,]`, `[1,]`, `[`, `]`, `{`, `}`,
	`[{"jsonrpc": "2.0", "method": "sum", "params": [1,2,4], "id": "1"},{"jsonrpc": "2.0", "method": "notify_hello", "params": [7]},{"foo": "boo"}]`,
	`{"jsonrpc":"2.0","id":1,"result":19}`,
	`{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Invalid Request"}}`,
	`{"id":1,"id":2}`, `{"\u0069d":1,"id":2}`, `{"jsonrpc":"2.0","jsonrpc":"2.0"}`, `{"x":1,"x":2}`,
	`{"jsonrpc":"\u0032.0","method":"a\u0000b"}`, `{"method":"\ud800"}`,
	``, ` `, "\t\r\n ", `null`, `true`, `false`, `nul`, `nulll`, `tru`, `"`, `""`, `"\"`, `"\u00"`, `"\u00zz"`,
	`"\x"`, `"\/"`, "\"\x00\"", "\"\x1f\"", "\"\x7f\"", "\"\xff\"", "\"\xc0\xaf\"", "\"\xed\xa0\x80\"",
	"\"\xe2\x82\"", "\"\xf4\x90\x80\x80\"", "\"é€😀\"", "\xef\xbb\xbf{}",
	`0`, `-0`, `-`, `01`, `1.`, `.1`, `1e`, `1e+`, `1E-5`, `1e999`, `-1.5e-10`, `+1`, `0x10`, `12345678901234567890`,
	`{"a":1}x`, `{"a":1} {"b":2}`, `{"a":1}{"b":2}`, `1 2`, `[] []`, `{"a" 1}`, `{"a":}`, `{a:1}`, `{"a":1,}`,
	`[[[[[[[[[[]]]]]]]]]]`, `[[[[[[[[[[`, `]]]]`, `{"a":{"b":{"c":[{"d":[]}]}}}`,
	strings.Repeat(`[`, 300) + strings.Repeat(`]`, 300), strings.Repeat(`{"a":`, 300) + `1` + strings.Repeat(`}`, 300),
	strings.Repeat(`[`, 300) + strings.Repeat(`]`, 299),
	"{\"a\":1}\x00", "\x00", "[1\x00]",
}

// FuzzScan checks the scanner against encoding/json: validJSON agrees with
// json.Valid (plus valid UTF-8), scanLine classifies the line as the
// decoded value says, and the envelope it records holds exactly the members
// a reference decoding finds.
func FuzzScan(f *testing.F) {
	for _, s := range scanSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		want := json.Valid(b) && utf8.Valid(b)
		if got := validJSON(b); got != want {
			t.Fatalf("validJSON(%q) = %v, want %v", b, got, want)
		}

		var one envelope
		kind, batch := scanLine(b, &one, nil, math.MaxInt)
		if !want {
			if kind != lineInvalidJSON {
				t.Fatalf("scanLine(%q) = %s, want lineInvalidJSON", b, kindName(kind))
			}
			return
		}
		trimmed := bytes.TrimLeft(b, " \t\r\n")
		switch trimmed[0] {
		case '{':
			if kind != lineObject {
				t.Fatalf("scanLine(%q) = %s, want lineObject", b, kindName(kind))
			}
			checkEnvelope(t, trimmed, &one)
		case '[':
			var elems []json.RawMessage
			if err := json.Unmarshal(b, &elems); err != nil {
				t.Fatalf("json.Unmarshal(%q): %v", b, err)
			}
			if len(elems) == 0 {
				if kind != lineEmptyBatch {
					t.Fatalf("scanLine(%q) = %s, want lineEmptyBatch", b, kindName(kind))
				}
				return
			}
			if kind != lineBatch {
				t.Fatalf("scanLine(%q) = %s, want lineBatch", b, kindName(kind))
			}
			if len(batch) != len(elems) {
				t.Fatalf("scanLine(%q): %d envelopes, want %d", b, len(batch), len(elems))
			}
			for i, el := range elems {
				if el[0] == '{' {
					checkEnvelope(t, el, &batch[i])
				} else if batch[i].object {
					t.Fatalf("scanLine(%q): element %d (%s) scanned as an object", b, i, el)
				}
			}
			// With a limit below its length, the array is refused as too
			// long, and no more than the limit is recorded.
			if limit := len(elems) - 1; limit > 0 {
				kind, short := scanLine(b, &one, nil, limit)
				if kind != lineBatchTooLong || len(short) != limit {
					t.Fatalf("scanLine(%q, limit %d) = %s with %d envelopes, want lineBatchTooLong with %d",
						b, limit, kindName(kind), len(short), limit)
				}
			}
		default:
			if kind != lineOther {
				t.Fatalf("scanLine(%q) = %s, want lineOther", b, kindName(kind))
			}
		}
	})
}

// checkEnvelope compares the envelope the scanner recorded for the object
// obj (valid JSON) with a decoding by encoding/json.
func checkEnvelope(t *testing.T, obj []byte, e *envelope) {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(obj))
	if _, err := dec.Token(); err != nil { // {
		t.Fatalf("decoding %q: %v", obj, err)
	}
	last := make(map[string][]byte)
	count := make(map[string]int)
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			t.Fatalf("decoding %q: %v", obj, err)
		}
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			t.Fatalf("decoding %q: %v", obj, err)
		}
		k := tok.(string)
		last[k] = v
		count[k]++
	}
	if !e.object {
		t.Fatalf("envelope of %q: object = false", obj)
	}
	members := []struct {
		name string
		got  []byte
	}{
		{"jsonrpc", e.version}, {"method", e.method}, {"params", e.params},
		{"id", e.id}, {"result", e.result}, {"error", e.err},
	}
	for _, m := range members {
		want, ok := last[m.name]
		if ok != (m.got != nil) || !bytes.Equal(m.got, want) {
			t.Fatalf("envelope of %q: %s = %q, want %q (present %v)", obj, m.name, m.got, want, ok)
		}
	}
	// Any member that appears twice, known or not, makes it invalid.
	dup := false
	for _, n := range count {
		dup = dup || n > 1
	}
	if e.dup != dup {
		t.Fatalf("envelope of %q: dup = %v, want %v", obj, e.dup, dup)
	}
}

// kindName names a lineKind in failure messages.
func kindName(k lineKind) string {
	switch k {
	case lineInvalidJSON:
		return "lineInvalidJSON"
	case lineObject:
		return "lineObject"
	case lineBatch:
		return "lineBatch"
	case lineEmptyBatch:
		return "lineEmptyBatch"
	case lineBatchTooLong:
		return "lineBatchTooLong"
	case lineOther:
		return "lineOther"
	}
	return "lineKind(?)"
}

// FuzzDecodeParams checks the pooled Decoders of Func against
// json.Unmarshal: for any params, into each of several types, by strict
// and by lax rules, the same
// value and the same error, whatever the decoders decoded before.
func FuzzDecodeParams(f *testing.F) {
	for _, s := range []string{
		`{"a":1,"b":"x","c":[1.5,2],"d":{"k":null},"e":true,"f":[1,{"g":2}]}`,
		`{"a":"1"}`, `{"a":1.5}`, `{"a":99999999999999999999}`, `{"b":1}`, `{"c":{}}`, `{"e":"true"}`,
		`{"A":1,"B":"y"}`, `{"a":1,"a":2}`, `{"h":"2026-01-01T00:00:00Z"}`, `{"h":"yesterday"}`,
		`[1,2]`, `[1,2,3]`, `[1,"2"]`, `[]`, `{}`, ` [ 1 , 2 ] `, `[1,2] `, `{"a":1}x`, `{"a":`, `[1,2`,
		`1`, `"s"`, `null`, "{\"b\":\"\xff\"}", `{"b":"\ud800"}`, `{"i":{"i":{"i":{"a":7}}}}`, `{"r":[1, 2]}`,
	} {
		f.Add([]byte(s), []byte(`{"a":2,"f":[3]}`))
	}
	deep := strings.Repeat(`[`, 10001) + strings.Repeat(`]`, 10001) // past encoding/json's depth limit
	f.Add([]byte(`{"f":`+deep+`}`), []byte(`[1]`))
	f.Add([]byte(`[1,2]`), []byte(deep))
	type inner struct {
		A int             `json:"a"`
		I *inner          `json:"i"`
		R json.RawMessage `json:"r"`
	}
	type params struct {
		inner
		B string         `json:"b"`
		C []float64      `json:"c"`
		D map[string]any `json:"d"`
		E bool           `json:"e"`
		F []any          `json:"f"`
		H time.Time      `json:"h"`
	}
	ds := new(paramDecoders)
	f.Fuzz(func(t *testing.T, b, before []byte) {
		check := func(name string, fresh func() any, rules nameRules) {
			if rules.lax {
				name += " (lax)"
			}
			x := fresh()
			_ = ds.decode(before, x, false, rules) // leaves a Decoder in the pool, or not
			got, want := fresh(), fresh()
			gotErr := ds.decode(b, got, false, rules)
			wantErr := decodeParams(b, want, rules)
			if fmt.Sprint(gotErr) != fmt.Sprint(wantErr) {
				t.Fatalf("%s: decode(%q) = %v, json.Unmarshal gives %v", name, b, gotErr, wantErr)
			}
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("%s: decode(%q) = %#v, json.Unmarshal gives %#v", name, b, got, want)
			}
			if validParams(b) {
				// As a server calls it, with params it validated.
				trusted := fresh()
				err := ds.decode(b, trusted, true, rules)
				if fmt.Sprint(err) != fmt.Sprint(wantErr) || !reflect.DeepEqual(trusted, want) {
					t.Fatalf("%s: decode(%q) of valid params = %#v, %v; json.Unmarshal gives %#v, %v", name, b, trusted, err, want, wantErr)
				}
			}
			if validParams(b) && len(b) <= maxPooledParams {
				// The errors themselves, as json.Unmarshal returns them.
				gotErr, wantErr := ds.decodeValid(b, fresh()), json.Unmarshal(b, fresh())
				if fmt.Sprintf("%T %v", gotErr, gotErr) != fmt.Sprintf("%T %v", wantErr, wantErr) {
					t.Fatalf("%s: decodeValid(%q) = %T %v, json.Unmarshal gives %T %v", name, b, gotErr, gotErr, wantErr, wantErr)
				}
			}
		}
		for _, lax := range []bool{false, true} {
			for _, c := range []struct {
				name  string
				fresh func() any
			}{
				{"struct", func() any { return new(params) }},
				{"array", func() any { return new([2]int) }},
				{"slice", func() any { return new([]any) }},
				{"map", func() any { return new(map[string]int) }},
				{"any", func() any { return new(any) }},
			} {
				rules := nameRules{lax: true}
				if !lax {
					rules = nameRules{plan: planFor(reflect.TypeOf(c.fresh()))}
				}
				check(c.name, c.fresh, rules)
			}
		}
	})
}
