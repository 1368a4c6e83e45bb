package jsonrpc

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"io"
	"math"
	"math/rand/v2"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// These tests check the scanner against encoding/json, which serves as the
// reference: a text is valid for the scanner when encoding/json accepts it
// and it is valid UTF-8 (encoding/json lets invalid UTF-8 through in
// strings; the package does not).

func referenceValid(b []byte) bool { return json.Valid(b) && utf8.Valid(b) }

func TestValidJSONTable(t *testing.T) {
	inputs := []string{
		// Literals and numbers.
		`true`, `false`, `null`, `tru`, `nul`, `nulll`, `True`, `NULL`,
		`0`, `-0`, `1`, `-1`, `10`, `01`, `-01`, `1.5`, `1.`, `.5`, `-`, `+1`, `1e5`, `1E+5`, `1e-5`,
		`1e`, `1e+`, `1.5e3`, `1.e3`, `-1.5E-3`, `12345678901234567890`, `0x1`, `1_000`, `Infinity`, `NaN`,
		// Strings.
		`""`, `"a"`, `"\""`, `"\\"`, `"\/"`, `"\b\f\n\r\t"`, `"\u00e9"`, `"\uD83D\uDE00"`, `"\u12"`, `"\u12g4"`,
		`"\x"`, `"\'"`, `"a`, `"\`, `"a\`, `"a\"`, "\"a\tb\"", "\"a\nb\"", "\"\x00\"", "\"\x1f\"", "\"\x7f\"", `"é"`, `"日本語"`,
		"\"\xff\"", "\"\xc3\"", "\"\xc3\xa9\"", "\"\xed\xa0\x80\"", "\"\xf4\x90\x80\x80\"",
		`"0123456789abcdef"`, `"0123456789abcdef\"0123456789"`, `"0123456789abcde` + "\x01" + `"`,
		`"` + strings.Repeat("x", 63) + `\n` + strings.Repeat("y", 17) + `"`,
		`"` + strings.Repeat("é", 20) + `"`,
		// Whitespace.
		` 1 `, "\t\r\n1\n", "\v1", "\f1", "1 2", ` `, ``, "\u00a01",
		// Arrays.
		`[]`, `[ ]`, `[1]`, `[1,2]`, `[1,]`, `[,1]`, `[1 2]`, `[`, `]`, `[[]]`, `[[],[[]]]`, `[1,[2,[3]],4]`, `[}`, `[1}`,
		// Objects.
		`{}`, `{ }`, `{"a":1}`, `{"a":1,"b":[{}]}`, `{"a" : 1 , "b" : 2}`, `{"a"}`, `{"a":}`, `{"a":1,}`, `{,}`,
		`{a:1}`, `{'a':1}`, `{"a":1 "b":2}`, `{"a":1]`, `{1:1}`, `{"a":1}}`, `{"\u0061":1}`, `{"a\"":1}`,
		`{"a":{"b":{"c":[1,{"d":null}]}}}`, `{"a":[}`, `{"a":{]}`,
		// Several values.
		`{}{}`, `[][]`, `1,2`, `"a""b"`,
	}
	for _, in := range inputs {
		t.Run(in, func(t *testing.T) {
			assert.Equal(t, referenceValid([]byte(in)), validJSON([]byte(in)))
		})
	}
}

// TestValidJSONRandom compares the scanner with the reference on texts
// built from JSON tokens and noise, and on mutations of valid documents.
func TestValidJSONRandom(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	tokens := []string{
		"{", "}", "[", "]", ":", ",", `"`, `\`, `\u`, `\n`, "0", "1", "9", "-", ".", "e", "+",
		"true", "false", "null", " ", "\t", "\n", "a", "é", "\x01", "\xff", "\xc3", `"k":`, `"s"`, "12", "0.5",
		"abcdefgh", "        ",
	}
	for i := 0; i < 20000; i++ {
		var b strings.Builder
		for n := rng.IntN(12); n >= 0; n-- {
			b.WriteString(tokens[rng.IntN(len(tokens))])
		}
		in := []byte(b.String())
		if referenceValid(in) != validJSON(in) {
			assert.Failf(t, "scanner and reference disagree", "input %q: reference %v", in, referenceValid(in))
		}
	}

	docs := []string{
		`{"jsonrpc":"2.0","id":1,"method":"subtract","params":[42,23]}`,
		`[{"a":"x\ny\u00e9","b":[1.5e3,-0,true,false,null]},{"c":{}}]`,
		`"` + strings.Repeat("plain ascii text ", 8) + `"`,
	}
	for _, doc := range docs {
		require.True(t, validJSON([]byte(doc)), doc)
		for i := 0; i < 3000; i++ {
			in := []byte(doc)
			for n := rng.IntN(3); n >= 0; n-- {
				pos := rng.IntN(len(in))
				switch rng.IntN(3) {
				case 0: // replace a byte
					in[pos] = byte(rng.IntN(256))
				case 1: // delete a byte
					in = append(in[:pos], in[pos+1:]...)
				case 2: // insert a token
					tok := tokens[rng.IntN(len(tokens))]
					in = append(in[:pos], append([]byte(tok), in[pos:]...)...)
				}
				if len(in) == 0 {
					break
				}
			}
			if referenceValid(in) != validJSON(in) {
				assert.Failf(t, "scanner and reference disagree", "input %q: reference %v", in, referenceValid(in))
			}
		}
	}
}

// TestValidJSONStringLengths runs strings of every length across the
// stretches the scanner skips several bytes at a time, with a special
// byte at every position.
func TestValidJSONStringLengths(t *testing.T) {
	specials := []string{`"`, `\`, `\"`, "\x00", "\x1f", "\x7f", "é", "\xff", `\u0041`, " "}
	for n := 0; n <= 40; n++ {
		for pos := 0; pos <= n; pos++ {
			for _, sp := range specials {
				in := []byte(`"` + strings.Repeat("a", pos) + sp + strings.Repeat("b", n-pos) + `"`)
				if referenceValid(in) != validJSON(in) {
					assert.Failf(t, "scanner and reference disagree", "input %q: reference %v", in, referenceValid(in))
				}
			}
		}
	}
}

// TestPlainBytes checks the eight-at-once test of string bytes against
// one byte at a time: every byte value at every position after plain
// text, and words of bytes drawn mostly from the edges of each class, so
// that a borrow across bytes would show.
func TestPlainBytes(t *testing.T) {
	plain := func(c byte) bool { return c >= 0x20 && c != '"' && c != '\\' && c < utf8.RuneSelf }
	want := func(w []byte) int {
		for k, c := range w {
			if !plain(c) {
				return k
			}
		}
		return len(w)
	}
	check := func(w []byte) {
		t.Helper()
		if got := plainBytes(binary.LittleEndian.Uint64(w)); got != want(w) {
			t.Fatalf("plainBytes(%q) = %d, want %d", w, got, want(w))
		}
	}
	w := make([]byte, 8)
	for pos := range 8 {
		for v := range 256 {
			copy(w, "abcdefgh")
			w[pos] = byte(v)
			check(w)
			for k := pos + 1; k < 8; k++ {
				w[k] = byte(v) // the same byte repeated above it
			}
			check(w)
		}
	}
	edges := []byte{0x00, 0x01, 0x1f, 0x20, 0x21, '"' - 1, '"', '"' + 1, '\\' - 1, '\\', '\\' + 1, 0x7f, 0x80, 0x81, 0xa0, 0xdc, 0xfe, 0xff, 'a'}
	rng := rand.New(rand.NewPCG(3, 4))
	for range 300000 {
		for k := range w {
			w[k] = edges[rng.IntN(len(edges))]
		}
		check(w)
	}
}

func TestValidJSONDeepNesting(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want bool
	}{
		{"deep arrays", strings.Repeat("[", 100000) + strings.Repeat("]", 100000), true},
		{"deep arrays unclosed", strings.Repeat("[", 100000) + strings.Repeat("]", 99999), false},
		{"deep objects", strings.Repeat(`{"a":`, 5000) + "1" + strings.Repeat("}", 5000), true},
		{"deep objects closed as arrays", strings.Repeat(`{"a":`, 5000) + "1" + strings.Repeat("]", 5000), false},
		{"alternating", strings.Repeat(`[{"a":`, 400) + "1" + strings.Repeat("}]", 400), true},
		{"alternating, wrong close past 256", strings.Repeat(`[{"a":`, 400) + "1" + strings.Repeat("}]", 100) + "]}" + strings.Repeat("}]", 299), false},
		{"alternating, wrong close below 256", strings.Repeat(`[{"a":`, 400) + "1" + strings.Repeat("}]", 399) + "]}", false},
		{"wide", "[" + strings.Repeat(`{"a":[1,2]},`, 1000) + "0]", true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, validJSON([]byte(tc.in)))
			if len(tc.in) < 20000 {
				assert.Equal(t, referenceValid([]byte(tc.in)), tc.want, "the reference agrees")
			}
		})
	}
}

func TestScanLineKinds(t *testing.T) {
	tests := []struct {
		in    string
		kind  lineKind
		batch int // elements scanned, for lineBatch
	}{
		{`{"jsonrpc":"2.0","method":"m"}`, lineObject, 0},
		{` {} `, lineObject, 0},
		{`{} x`, lineInvalidJSON, 0},
		{`{`, lineInvalidJSON, 0},
		{`[]`, lineEmptyBatch, 0},
		{` [ ] `, lineEmptyBatch, 0},
		{`[] x`, lineInvalidJSON, 0},
		{`[1]`, lineBatch, 1},
		{`[{},{"a":1}, 2 ,"x",[]]`, lineBatch, 5},
		{`[{},]`, lineInvalidJSON, 0},
		{`[{} {}]`, lineInvalidJSON, 0},
		{`[{}] ]`, lineInvalidJSON, 0},
		{`[{"a":}]`, lineInvalidJSON, 0},
		{`{"a":tru}`, lineInvalidJSON, 0},
		{`{"a":1`, lineInvalidJSON, 0},
		{`{"a":1 `, lineInvalidJSON, 0},
		{`{"a" 1}`, lineInvalidJSON, 0},
		{`{"a\":1}`, lineInvalidJSON, 0},
		{`{1:1}`, lineInvalidJSON, 0},
		{`[1`, lineInvalidJSON, 0},
		{`[`, lineInvalidJSON, 0},
		{`1`, lineOther, 0},
		{`"x"`, lineOther, 0},
		{`null`, lineOther, 0},
		{`nul`, lineInvalidJSON, 0},
		{``, lineInvalidJSON, 0},
		{`   `, lineInvalidJSON, 0},
	}
	for _, tc := range tests {
		t.Run(tc.in, func(t *testing.T) {
			var e envelope
			kind, batch := scanLine([]byte(tc.in), &e, nil, defaultMaxBatch)
			assert.Equal(t, tc.kind, kind)
			if tc.kind == lineBatch {
				assert.Len(t, batch, tc.batch)
			}
		})
	}
}

// TestScanMethodName checks that the scan's note of a method without
// escapes is right, whichever way the member was read: the decoded name
// must be the same as methodName's.
func TestScanMethodName(t *testing.T) {
	for _, tc := range []struct {
		line, name string
		plain      bool
	}{
		{`{"method":"ab"}`, "ab", true},
		{`{"method":""}`, "", true},
		{`{"method":"a\u0062"}`, "ab", false},
		{`{"method":"a\\b"}`, `a\b`, false},
		{`{"method":"a\"b"}`, `a"b`, false},
		{`{"method" : "ab"}`, "ab", false}, // not the usual spelling: not looked at
		{`{"m\u0065thod":"ab"}`, "ab", false},
		{`{"method":"a\u0062","method":"cd"}`, "cd", true},
		{`{"method":"ab","m\u0065thod":"c\u0064"}`, "cd", false},
		{`{"method":"ab","method":"c\u0064"}`, "cd", false},
		{`{"method":"ab","method":1}`, "", false},
		{`[{"method":"ab"}]`, "ab", true},
	} {
		var e envelope
		kind, batch := scanLine([]byte(tc.line), &e, nil, defaultMaxBatch)
		if kind == lineBatch {
			e = batch[0]
		}
		require.NotEqual(t, lineInvalidJSON, kind, tc.line)
		assert.Equal(t, tc.plain, e.plainMethod, tc.line)
		if e.method[0] == '"' {
			assert.Equal(t, string(methodName(e.method)), string(e.methodName()), tc.line)
			assert.Equal(t, tc.name, string(e.methodName()), tc.line)
		}
	}
}

func TestScanLineEnvelope(t *testing.T) {
	line := []byte(`{"x":[1,{"id":9}],"jsonrpc":"2.0","id":"a\"b","method":"m\u0065","params":{"k":[1]},"result":1,"error":{}}`)
	var e envelope
	kind, _ := scanLine(line, &e, nil, defaultMaxBatch)
	require.Equal(t, lineObject, kind)
	assert.True(t, e.object)
	assert.False(t, e.dup)
	assert.Equal(t, `"2.0"`, string(e.version))
	assert.Equal(t, `"a\"b"`, string(e.id), "the id is the outer one, kept as written")
	assert.Equal(t, `"m\u0065"`, string(e.method))
	assert.Equal(t, "me", string(methodName(e.method)))
	assert.Equal(t, `{"k":[1]}`, string(e.params))
	assert.Equal(t, `1`, string(e.result))
	assert.Equal(t, `{}`, string(e.err))

	// A batch reuses the slice it is given.
	batch := make([]envelope, 0, 4)
	kind, batch = scanLine([]byte(`[{"id":1},{"id":2,"id":3},7]`), &e, batch, defaultMaxBatch)
	require.Equal(t, lineBatch, kind)
	require.Len(t, batch, 3)
	assert.Equal(t, "1", string(batch[0].id))
	assert.True(t, batch[1].dup)
	assert.False(t, batch[2].object)
}

func TestAppendStringMatchesEncodingJSON(t *testing.T) {
	inputs := []string{
		"", "plain", `quote " and \ backslash`, "<html> & 'x'", "\x00\x01\x1f\x7f", "\b\f\n\r\t",
		"é日本語😀", "\u2028\u2029", "bad \xff byte", "\xc3", "\xed\xa0\x80", "ü\n\"x",
		strings.Repeat("long ", 100),
	}
	for _, s := range inputs {
		t.Run(s, func(t *testing.T) {
			got := appendString(nil, s)
			require.True(t, validJSON(got), "%q", got)
			want, err := encodingJSON(s, false)
			require.NoError(t, err)
			assert.Equal(t, want, string(got), "as a json.Encoder without HTML escapes writes it")
			assert.NotContains(t, string(got), `\u003c`, "no HTML escaping")
		})
	}
	assert.Equal(t, `x"a"`, string(appendString([]byte("x"), "a")), "appends")

	// Each special byte at each position of strings long enough for the
	// eight-at-a-time path, and at their ends.
	for _, special := range []string{`"`, `\`, "\n", "\x00", "\x1f", "\x7f", "é", "\xff", "\u2028", "😀"} {
		special, _ = strconv.Unquote(`"` + special + `"`)
		for n := 0; n <= 20; n++ {
			for at := 0; at <= n; at++ {
				s := strings.Repeat("a", at) + special + strings.Repeat("b", n-at)
				got := appendString(nil, s)
				want, err := encodingJSON(s, false)
				require.NoError(t, err)
				require.Equal(t, want, string(got), "%q", s)
				require.True(t, validJSON(got), "%q", got)
			}
		}
	}
}

func TestArenaStrings(t *testing.T) {
	var a arena
	var got []string
	var want []string
	for i := range 2000 {
		s := strings.Repeat(string(rune('a'+i%26)), 1+i%40)
		if i%500 == 0 {
			s = strings.Repeat("L", arenaBlock) // too large for a block
		}
		b := []byte(s)
		got = append(got, a.str(b))
		want = append(want, s)
		for j := range b {
			b[j] = '#' // the arena copies
		}
	}
	assert.Equal(t, want, got, "strings handed out never change")
	assert.Equal(t, "", a.str(nil))
}

// TestAppendScalar checks that the results Func encodes itself come out as
// encoding/json writes them, and that it leaves other types to it; and
// that the same scalars boxed in an interface (a HandlerFunc's result)
// come out of the server's encoders the same way.
func TestAppendScalar(t *testing.T) {
	type level int
	check := func(v any, got []byte, ok bool) {
		t.Helper()
		want, err := json.Marshal(v)
		require.NoError(t, err)
		assert.True(t, ok, "%T", v)
		assert.Equal(t, string(want), string(got), "%T %v", v, v)
	}
	for _, v := range []int{0, 1, -1, 255, 256, math.MaxInt, math.MinInt} {
		got, ok := appendScalar([]byte(nil), v)
		check(v, got, ok)
		got, ok = appendScalar([]byte(nil), int64(v))
		check(int64(v), got, ok)
		got, ok = appendScalar([]byte(nil), int32(v))
		check(int32(v), got, ok)
	}
	for _, v := range []uint64{0, 1, 256, math.MaxUint32, math.MaxUint64} {
		got, ok := appendScalar([]byte(nil), v)
		check(v, got, ok)
		got, ok = appendScalar([]byte(nil), uint(v))
		check(uint(v), got, ok)
		got, ok = appendScalar([]byte(nil), uint32(v))
		check(uint32(v), got, ok)
	}
	for _, v := range []bool{false, true} {
		got, ok := appendScalar([]byte(nil), v)
		check(v, got, ok)
	}
	floats := []float64{0, math.Copysign(0, -1), 1, -1, 1.5, 0.1, 1e-6, 1e-7, 9.999999e-7, 123456789e-15,
		1e20, 1e21, 1e22, -1e21, 123456789012345678901, 5e-324, 1e-310, math.MaxFloat64,
		math.SmallestNonzeroFloat32, math.MaxFloat32, 1e-100, 2.5e-8, 1.7976931348623157e308}
	es := new(encoders)
	rnd := rand.New(rand.NewPCG(1, 2))
	for range 2000 {
		// Any bit pattern: every exponent, subnormals, NaNs and infinities
		// (checked below).
		floats = append(floats, math.Float64frombits(rnd.Uint64()))
	}
	for _, v := range floats {
		for _, f := range []any{v, float32(v)} {
			var got []byte
			var ok bool
			if f32, is32 := f.(float32); is32 {
				got, ok = appendScalar([]byte(nil), f32)
			} else {
				got, ok = appendScalar([]byte(nil), v)
			}
			boxed, _, boxedErr := es.encode(f) // as a HandlerFunc's result
			if want, err := json.Marshal(f); err != nil {
				assert.False(t, ok, "%T %v: encoding/json refuses it", f, f)
				if assert.Error(t, boxedErr, "%T %v, boxed", f, f) {
					assert.Equal(t, err.Error(), boxedErr.Error(), "%T %v, boxed", f, f)
				}
			} else {
				assert.True(t, ok, "%T %v", f, f)
				assert.Equal(t, string(want), string(got), "%T %v", f, f)
				assert.Equal(t, string(want), string(boxed), "%T %v, boxed", f, f)
			}
		}
	}
	for _, v := range []any{true, false, 0, -7, int64(math.MinInt64), int32(5), uint(9), uint64(math.MaxUint64), uint32(3)} {
		want, err := json.Marshal(v)
		require.NoError(t, err)
		boxed, _, err := es.encode(v)
		require.NoError(t, err)
		assert.Equal(t, string(want), string(boxed), "%T %v, boxed", v, v)
	}
	var boxed any = 7
	got, ok := appendScalar([]byte("x"), boxed)
	check(7, got[1:], ok)
	for _, v := range []any{level(3), "s", nil, json.RawMessage(`1`), []int{1}} {
		got, ok := appendScalar([]byte(nil), v)
		assert.False(t, ok, "%T", v)
		assert.Nil(t, got)
	}
	_, ok = appendScalar([]byte(nil), level(3))
	assert.False(t, ok)
}

// TestClosedErrorSaysItOnce checks the message of a call that failed on a
// writer closed already: its cause is a closed error itself (the faults
// run saw "jsonrpc: closed: jsonrpc: closed").
func TestClosedErrorSaysItOnce(t *testing.T) {
	for _, err := range []error{
		&closedError{},
		&closedError{cause: &closedError{}},
		&closedError{cause: ErrClosed},
		&closedError{cause: &closedError{cause: io.EOF}},
	} {
		assert.Equal(t, 1, strings.Count(err.Error(), ErrClosed.Error()), "message %q", err.Error())
		assert.ErrorIs(t, err, ErrClosed)
	}
	assert.Equal(t, "jsonrpc: closed: EOF", (&closedError{cause: io.EOF}).Error())
}

// TestOutputBufferDoubles checks that a writer's buffer grows to
// flushThreshold in a few doublings: appended to without a write (a
// reader answering line after line), it grew a quarter at a time before,
// some twenty allocations where five do.
func TestOutputBufferDoubles(t *testing.T) {
	lw := newLineWriter(io.Discard)
	line := bytes.Repeat([]byte("x"), 60)
	add := func(b []byte) []byte { return append(b, line...) }
	allocs := testing.AllocsPerRun(1, func() {
		lw.buf = nil
		for len(lw.buf) < flushThreshold-len(line)-1 {
			lw.addLine(add)
		}
	})
	if allocs > 5 {
		t.Errorf("%v allocations to fill the buffer to %d bytes; want at most 5 (4 KiB doubled to 64 KiB)", allocs, len(lw.buf))
	}
}

// rawMarshaler returns its bytes as its JSON, which encoding/json checks
// for syntax but not for UTF-8.
type rawMarshaler string

func (m rawMarshaler) MarshalJSON() ([]byte, error) { return []byte(m), nil }

// TestEncodeParams checks what a call's params become on the wire: none
// for nil and for anything that encodes as null, an object or an array
// as it is (on one line), and an Invalid params error for anything else,
// invalid JSON and invalid UTF-8 included, whether the params come as a
// json.RawMessage or through encoding/json.
func TestEncodeParams(t *testing.T) {
	type sub struct {
		Minuend    int `json:"minuend"`
		Subtrahend int `json:"subtrahend"`
	}
	// invalid: an Invalid params error, for valid JSON of another kind;
	// bad: an error for what is not JSON (encodeRaw's or encoding/json's).
	none, invalid, bad := "", "invalid", "bad"
	tests := []struct {
		name   string
		params any
		want   string
	}{
		{"nil", nil, none},
		{"nil raw", json.RawMessage(nil), none},
		{"raw null", json.RawMessage(" null\n"), none},
		{"raw array", json.RawMessage(` [1,"x"] `), ` [1,"x"] `},
		{"raw object on lines", json.RawMessage("{\n\"a\": 1\n}"), `{"a":1}`},
		{"raw string", json.RawMessage(`"s"`), invalid},
		{"raw number", json.RawMessage(`12`), invalid},
		{"raw true", json.RawMessage(`true`), invalid},
		{"raw empty", json.RawMessage(``), bad},
		{"raw spaces", json.RawMessage(`  `), bad},
		{"raw invalid", json.RawMessage(`{"a":`), bad},
		{"raw nul", json.RawMessage(`nul`), bad},
		{"raw bad UTF-8", json.RawMessage("[\"\xff\"]"), bad},
		{"string", "s", invalid},
		{"int", 5, invalid},
		{"struct", sub{42, 23}, `{"minuend":42,"subtrahend":23}`},
		{"pointer", &sub{1, 2}, `{"minuend":1,"subtrahend":2}`},
		{"nil pointer", (*sub)(nil), none},
		{"flat NaN", struct{ F float64 }{math.NaN()}, bad},
		{"nil slice", []int(nil), none},
		{"map", map[string]int{"a": 1}, `{"a":1}`},
		{"marshaler null", rawMarshaler(`null`), none},
		{"marshaler array", rawMarshaler(`[1]`), `[1]`},
		{"marshaler string", rawMarshaler(`"s"`), invalid},
		{"marshaler bad UTF-8", rawMarshaler("[\"\xff\"]"), invalid},
		{"field of bad UTF-8", struct{ R rawMarshaler }{"\"\xff\""}, invalid},
	}
	for _, tc := range tests {
		got, err := encodeParams(tc.params)
		switch tc.want {
		case bad:
			assert.Error(t, err, tc.name)
			assert.Nil(t, got, tc.name)
		case invalid:
			var werr *Error
			if assert.ErrorAs(t, err, &werr, tc.name) {
				assert.Equal(t, CodeInvalidParams, werr.Code, tc.name)
			}
		case none:
			assert.NoError(t, err, tc.name)
			assert.Nil(t, got, tc.name)
		default:
			assert.NoError(t, err, tc.name)
			assert.Equal(t, tc.want, string(got), tc.name)
		}
	}
}

// TestResponseErrorObject reads the "error" of responses by the
// envelope's rules: exact member names, none given twice, an integer
// code and a string message; data as it is. encoding/json, which read it
// before, took "Code" or "CODE" for "code" and kept the last of two.
func TestResponseErrorObject(t *testing.T) {
	tests := []struct {
		obj     string
		code    Code
		message string
		data    string // "" for none
		invalid bool
	}{
		{obj: `{"code":-32000,"message":"ran"}`, code: -32000, message: "ran"},
		{obj: `{"code":-32000,"message":"ran","Code":-32091}`, code: -32000, message: "ran"},
		{obj: `{"CODE":-32091,"message":"ran"}`, invalid: true},
		{obj: `{"code":-32000,"code":-32091,"message":"ran"}`, invalid: true},
		{obj: `{"code":1,"message":"a","other":1,"other":2}`, invalid: true},
		{obj: ` { "\u0063ode" : -32001 , "message" : "esc\"aped\u00e9" , "data" : {"a":[1]} } `, code: -32001, message: "esc\"apedé", data: `{"a":[1]}`},
		{obj: `{"code":1,"message":"","data":null}`, code: 1, data: "null"},
		{obj: `{"code":1.0,"message":"x"}`, invalid: true},
		{obj: `{"code":9223372036854775808,"message":"x"}`, invalid: true},
		{obj: `{"code":"1","message":"x"}`, invalid: true},
		{obj: `{"code":1,"message":null}`, invalid: true},
		{obj: `{"message":"x"}`, invalid: true},
		{obj: `{}`, invalid: true},
		{obj: `[1]`, invalid: true},
	}
	for _, tc := range tests {
		var e envelope
		line := []byte(`{"jsonrpc":"2.0","id":1,"error":` + tc.obj + `}`)
		kind, _ := scanLine(line, &e, nil, 10)
		require.Equal(t, lineObject, kind, tc.obj)
		r, why := e.response()
		if tc.invalid {
			assert.NotEmpty(t, why, "%s: taken as %+v", tc.obj, r.Error)
			continue
		}
		require.Empty(t, why, tc.obj)
		require.NotNil(t, r.Error, tc.obj)
		assert.Equal(t, tc.code, r.Error.Code, tc.obj)
		assert.Equal(t, tc.message, r.Error.Message, tc.obj)
		assert.Equal(t, tc.data, string(r.Error.Data), tc.obj)
	}
}

// TestActiveKey: two escapings of the same string have one key, two
// different strings two keys, and a string with an escaped lone surrogate
// keeps its bytes.
func TestActiveKey(t *testing.T) {
	alphabet := []rune{'a', 'Z', '0', '"', '\\', '/', '\n', '\t', 0, 0x1f, '<', 0xe9, 0xfffd, 0x1f600, 0x2028}
	// escape writes s as a JSON string, each rune raw or escaped at
	// random (a rune JSON needs escaped, always escaped).
	escape := func(r *rand.Rand, s []rune) string {
		var b strings.Builder
		b.WriteByte('"')
		for _, c := range s {
			mustEscape := c == '"' || c == '\\' || c < 0x20
			switch {
			case !mustEscape && r.IntN(2) == 0:
				b.WriteRune(c)
			case c == '"' || c == '\\' || c == '/' || c == '\n' || c == '\t':
				if r.IntN(2) == 0 {
					b.WriteString(map[rune]string{'"': `\"`, '\\': `\\`, '/': `\/`, '\n': `\n`, '\t': `\t`}[c])
					break
				}
				fallthrough
			default:
				if c > 0xffff {
					hi, lo := utf16.EncodeRune(c)
					b.WriteString(`\u` + strconv.FormatInt(int64(hi), 16) + `\u` + strconv.FormatInt(int64(lo), 16))
					break
				}
				b.WriteString(`\u` + strings.Repeat("0", 4-len(strconv.FormatInt(int64(c), 16))) + strconv.FormatInt(int64(c), 16))
			}
		}
		b.WriteByte('"')
		return b.String()
	}
	r := rand.New(rand.NewPCG(1, 2))
	keys := make(map[string]string) // key -> the value it stands for
	for range 3000 {
		s := make([]rune, r.IntN(6))
		for i := range s {
			s[i] = alphabet[r.IntN(len(alphabet))]
		}
		a, b := escape(r, s), escape(r, s)
		require.True(t, json.Valid([]byte(a)) && json.Valid([]byte(b)), "%s %s", a, b)
		ka, kb := activeKey(a), activeKey(b)
		require.Equal(t, ka, kb, "%s and %s", a, b)
		if other, ok := keys[ka]; ok {
			require.Equal(t, other, string(s), "two strings share the key %s", ka)
		}
		keys[ka] = string(s)
	}
	for _, lone := range []string{`"\ud800"`, `"\uD800"`, `"\udc00x"`, `"\ud800\u0041"`} {
		assert.Equal(t, lone, activeKey(lone), "a lone surrogate keeps its bytes")
	}
	assert.Equal(t, `"1"`, activeKey(`"1"`))
	assert.Equal(t, `1.0`, activeKey(`1.0`))
}

// TestBackoffLargeBounds checks that a backoff whose bounds come near the
// largest Duration never doubles past it: a bound that overflowed went
// negative, and the next wait panicked (rand.N of nothing).
func TestBackoffLargeBounds(t *testing.T) {
	for _, lo := range []time.Duration{time.Second, math.MaxInt64 / 3, math.MaxInt64} {
		b := newBackoff(lo, math.MaxInt64)
		for range 70 {
			d := b.next()
			if d < 0 || b.bound < lo {
				t.Fatalf("from %v: wait %v, bound %v", lo, d, b.bound)
			}
		}
		if b.bound != math.MaxInt64 {
			t.Fatalf("from %v: the bound stopped at %v", lo, b.bound)
		}
	}
}

// gateFailWriter blocks its first Write until release is closed, then
// takes all of it and fails it; every later Write fails at once, taking
// nothing.
type gateFailWriter struct {
	entered chan struct{}
	release chan struct{}
	mu      sync.Mutex
	took    []byte
	calls   int
}

func (w *gateFailWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	w.calls++
	first := w.calls == 1
	w.mu.Unlock()
	if !first {
		return 0, errors.New("write failed (test)")
	}
	close(w.entered)
	<-w.release
	w.mu.Lock()
	w.took = append(w.took, p...)
	w.mu.Unlock()
	return len(p), errors.New("write failed after it went out (test)")
}

// TestMayHaveRunBehindFailedWrite checks that a call whose request was
// buffered behind another call's write in flight, which then failed, did
// not run (no byte of it reached the writer), whether its ctx can end
// (a goroutine of the connection's writes it) or not (its caller would,
// but leaves it to the write in flight).
func TestMayHaveRunBehindFailedWrite(t *testing.T) {
	for _, cancellable := range []bool{false, true} {
		t.Run(map[bool]string{false: "background", true: "cancellable"}[cancellable], func(t *testing.T) {
			pr, pw := io.Pipe()
			w := &gateFailWriter{entered: make(chan struct{}), release: make(chan struct{})}
			c := NewConn(pr, w, nil)
			defer c.Close()
			defer pw.Close()

			errA := make(chan error, 1)
			go func() { errA <- c.Call(context.Background(), "a", nil, nil) }()
			<-w.entered // a's request is in the writer

			ctx := context.Background()
			if cancellable {
				var cancel context.CancelFunc
				ctx, cancel = context.WithCancel(ctx)
				defer cancel()
			}
			errB := make(chan error, 1)
			go func() { errB <- c.Call(ctx, "b", nil, nil) }()
			// Wait until b's request is buffered behind a's write.
			lw := c.c.out
			for deadline := time.Now().Add(5 * time.Second); ; {
				lw.mu.Lock()
				n := len(lw.buf)
				lw.mu.Unlock()
				if n > 0 {
					break
				}
				if time.Now().After(deadline) {
					t.Fatal("b's request was never buffered")
				}
				time.Sleep(time.Millisecond)
			}
			close(w.release) // a's write fails, after a's bytes went out
			if err := <-errA; !MayHaveRun(err) {
				t.Errorf("a: MayHaveRun false for a request that went out: %v", err)
			}
			_ = pw.Close() // the reader ends: the calls in flight fail
			var err error
			select {
			case err = <-errB:
			case <-time.After(5 * time.Second):
				t.Fatal("b never returned")
			}
			w.mu.Lock()
			took := string(w.took)
			w.mu.Unlock()
			if !errors.Is(err, ErrClosed) {
				t.Fatalf("b: %v", err)
			}
			if MayHaveRun(err) {
				t.Errorf("b: MayHaveRun true, but no byte of b's request reached the writer (it took %q): %v", took, err)
			}
		})
	}
}
