package jsonrpc

// This file holds the encoding of answers: results, errors and the
// writing of responses.

import (
	"bytes"
	"encoding/json"
	"errors"
	"math"
	"strconv"
	"sync"
	"unicode/utf8"
)

// limitError is the Invalid Request error for input over one of the
// server's limits, with the limit in its data.
func limitError(reason string, limit int) *Error {
	return ErrInvalidRequest.WithData(map[string]any{"reason": reason, "limit": limit})
}

// encoders keeps json.Encoders and their buffers for reuse, so that
// encoding a result costs no allocation of its own.
type encoders struct {
	pool sync.Pool // of *encoder
}

type encoder struct {
	buf    bytes.Buffer
	enc    *json.Encoder
	scalar []byte // a bool, integer or float written by appendScalar, or a value by its plan
}

// encode encodes v as encodeValue does. When the bytes come from a pooled
// encoder, it is returned too, to be released once they are written.
func (es *encoders) encode(v any) ([]byte, *encoder, error) {
	scalar := false
	switch v.(type) {
	case nil, json.RawMessage, string:
		raw, err := encodeValue(v, false)
		return raw, nil, err
	case bool, int, int64, int32, uint, uint64, uint32, float64, float32:
		scalar = true
	}
	e := es.get()
	if scalar {
		// Boxed by a HandlerFunc (or by middleware around a Func), it is
		// written as Func writes it, without reflection; NaN and the
		// infinities go on to encoding/json, for its error.
		var ok bool
		if e.scalar, ok = appendScalar(e.scalar[:0], v); ok {
			return e.scalar, e, nil
		}
	} else if b, ok := encodeDirect(e.scalar[:0], v, false); ok {
		// A struct, pointer, slice or array with a plan
		// (encode_direct.go), written as the Encoder would write it.
		e.scalar = b
		return b, e, nil
	}
	out, err := encodeWith(e.enc, &e.buf, v)
	if err != nil {
		es.put(e)
		return nil, nil, err
	}
	return out, e, nil
}

// encodeWith encodes v with enc, which writes to buf, and returns what it
// wrote without its newline; it refuses invalid UTF-8 (see
// errInvalidUTF8).
func encodeWith(enc *json.Encoder, buf *bytes.Buffer, v any) ([]byte, error) {
	buf.Reset()
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	out := bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
	if !utf8.Valid(out) {
		return nil, errInvalidUTF8
	}
	return out, nil
}

// errInvalidUTF8 is the error of a value that encoding/json writes as
// invalid UTF-8: a MarshalJSON method's output, which it does not check,
// and which a peer's JSON parser would refuse (RFC 8259, section 8.1).
var errInvalidUTF8 = errors.New("jsonrpc: the value encodes as invalid UTF-8 (from a MarshalJSON method)")

// get returns a pooled encoder, or a new one.
func (es *encoders) get() *encoder {
	e, _ := es.pool.Get().(*encoder)
	if e == nil {
		e = new(encoder)
		e.enc = json.NewEncoder(&e.buf)
		e.enc.SetEscapeHTML(false)
	}
	return e
}

func (es *encoders) put(e *encoder) {
	if e.buf.Cap() <= 64<<10 && cap(e.scalar) <= 64<<10 {
		es.pool.Put(e)
	}
}

// sameBytes reports whether a and b are the same non-empty slice of memory.
func sameBytes(a, b []byte) bool {
	return len(a) > 0 && len(a) == len(b) && &a[0] == &b[0]
}

// encodeValue encodes a result, a stream item or params. Raw JSON passes
// through as it is, once checked. escapeHTML says to write "<", ">" and
// "&" escaped, as json.Marshal does for params; results and items are
// written as a json.Encoder with SetEscapeHTML(false) writes them, as a
// server writes results.
func encodeValue(v any, escapeHTML bool) ([]byte, error) {
	switch v := v.(type) {
	case nil:
		return nullID, nil
	case json.RawMessage:
		return encodeRaw(v)
	case string:
		return appendString(make([]byte, 0, len(v)+2), v), nil
	}
	if escapeHTML {
		return json.Marshal(v) // params, which validParams checks
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	return encodeWith(enc, &buf, v)
}

// encodeRaw encodes a raw result or stream item: nil is null, and
// anything else passes through as it is, once checked.
func encodeRaw(v json.RawMessage) ([]byte, error) {
	if v == nil {
		return nullID, nil
	}
	if !validJSON(v) {
		return nil, errors.New("json.RawMessage is not valid JSON")
	}
	return oneLine(v), nil
}

// appendScalar appends r as encoding/json encodes it when r is a bool, an
// integer or a finite float, and reports whether it did. Only these types
// themselves are taken, not types defined on them, which may encode
// themselves otherwise; NaN and the infinities, which encoding/json
// refuses, are left to it for its error.
func appendScalar[R any](b []byte, r R) ([]byte, bool) {
	switch v := any(r).(type) {
	case bool:
		return strconv.AppendBool(b, v), true
	case float64:
		return appendFloat(b, v, 64)
	case float32:
		return appendFloat(b, float64(v), 32)
	case int:
		return strconv.AppendInt(b, int64(v), 10), true
	case int64:
		return strconv.AppendInt(b, v, 10), true
	case int32:
		return strconv.AppendInt(b, int64(v), 10), true
	case uint:
		return strconv.AppendUint(b, uint64(v), 10), true
	case uint64:
		return strconv.AppendUint(b, v, 10), true
	case uint32:
		return strconv.AppendUint(b, uint64(v), 10), true
	}
	return b, false
}

// appendFloat appends f, of the given bit size, as encoding/json writes a
// float: the shortest decimal that reads back as f, in plain notation
// unless its magnitude is below 1e-6 or at least 1e21, where it is written
// with an exponent that has no leading zeros ("1e-7", not "1e-07"), as
// ECMAScript turns numbers into strings. It reports false, appending
// nothing, for NaN and the infinities.
func appendFloat(b []byte, f float64, bits int) ([]byte, bool) {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return b, false
	}
	format := byte('f')
	if abs := math.Abs(f); abs != 0 {
		small, large := abs < 1e-6, abs >= 1e21
		if bits == 32 {
			small, large = float32(abs) < 1e-6, float32(abs) >= 1e21
		}
		if small || large {
			format = 'e'
		}
	}
	start := len(b)
	b = strconv.AppendFloat(b, f, format, -1, bits)
	if format == 'e' {
		// strconv writes at least two digits of exponent: e-07 -> e-7.
		if e := bytes.LastIndexByte(b[start:], 'e'); e >= 0 {
			e += start
			if e+3 < len(b) && b[e+2] == '0' {
				b = append(b[:e+2], b[e+3:]...)
			}
		}
	}
	return b, true
}

// encodeParams encodes the params of a notification or request, which must
// be an object or an array; nil, or a value that encodes as null (a nil
// pointer, map or slice), means none.
//
// A json.RawMessage is scanned once, by encodeRaw; a value with a plan
// (encode_direct.go) is written by it, and needs no scan; what
// encoding/json writes is scanned by validParams, for the UTF-8 of what a
// Marshaler returned, which encoding/json does not check.
func encodeParams(params any) ([]byte, error) {
	raw, bp, err := encodeParamsBuf(params)
	return ownParams(raw, bp), err
}

// ownParams returns raw, from encodeParamsBuf, in a slice of its own:
// copied out of the pooled buffer bp, which it gives back, or as it is
// when bp is nil.
func ownParams(raw []byte, bp *[]byte) []byte {
	if bp == nil {
		return raw
	}
	owned := bytes.Clone(raw)
	releaseParams(bp, raw)
	return owned
}

// encodeParamsBuf is encodeParams, but for params that the direct
// encoder writes, which it leaves in a pooled buffer: bp is non-nil then,
// and the caller gives it back with releaseParams(bp, raw) once raw has
// been copied into the message, or lets the collector have it.
func encodeParamsBuf(params any) (raw []byte, bp *[]byte, err error) {
	raw, isRaw := params.(json.RawMessage)
	if params == nil || isRaw && raw == nil {
		return nil, nil, nil
	}
	if isRaw {
		raw, err = encodeRaw(raw)
	} else if direct, bp, ok := encodeParamsPooled(params); ok {
		return direct, bp, nil // nil for null
	} else {
		raw, err = encodeValue(params, true)
	}
	if err != nil {
		return nil, nil, err
	}
	i := skipSpace(raw, 0) // a json.RawMessage may hold spaces
	switch {
	case i < len(raw) && raw[i] == 'n':
		return nil, nil, nil // null: the only valid JSON that starts so
	case isRaw && i < len(raw) && (raw[i] == '{' || raw[i] == '['):
		return raw, nil, nil // valid JSON, checked by encodeRaw
	case !isRaw && validParams(raw):
		return raw, nil, nil
	}
	return nil, nil, &refusedError{Errorf(CodeInvalidParams, "Invalid params: params must encode as a JSON object or array")}
}

// checkRawParams returns an Invalid params error if raw, params given as
// JSON already, is neither absent nor a JSON object or array.
func checkRawParams(raw []byte) error {
	if raw != nil && !validParams(raw) {
		return &refusedError{Errorf(CodeInvalidParams, "Invalid params: params must be a JSON object or array")}
	}
	return nil
}

func appendAnswer(b []byte, id string, result []byte, werr *Error) []byte {
	if werr != nil {
		return appendErrorResponse(b, id, werr)
	}
	return appendResultResponse(b, id, result)
}

// largeResult is the size from which a result is written from where it
// lies rather than copied into the output buffer.
const largeResult = 64 << 10
