package jsonrpc

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"sync/atomic"
	"unsafe"
)

// ID is a request id: a JSON string, a number or null, kept as the exact
// JSON text it arrived with, so that it is written back byte for byte
// (12345678901234567890, 1.5 and "ü\n\"x" all round-trip unchanged).
//
// The zero ID is absent: a [Request] with a zero ID is a notification. It
// differs from the null id, which [NullID] returns and a request with
// "id": null carries. IDs are comparable and may be used as map keys; two
// IDs are equal when their JSON texts are.
type ID struct {
	raw string
}

// StringID returns the id that is the JSON string s.
func StringID(s string) ID { return ID{raw: string(appendString(nil, s))} }

// Int64ID returns the id that is the number n.
func Int64ID(n int64) ID { return ID{raw: strconv.FormatInt(n, 10)} }

// NullID returns the null id. A request with a null id is not a
// notification: it is answered, with "id": null.
func NullID() ID { return ID{raw: "null"} }

// IsZero reports whether id is absent.
func (id ID) IsZero() bool { return id.raw == "" }

// IsNull reports whether id is the JSON null.
func (id ID) IsNull() bool { return id.raw == "null" }

// String returns the JSON text of id, or "" if it is absent.
func (id ID) String() string { return id.raw }

// MarshalJSON returns the JSON text of id; an absent id encodes as null.
func (id ID) MarshalJSON() ([]byte, error) {
	if id.raw == "" {
		return []byte("null"), nil
	}
	return []byte(id.raw), nil
}

// UnmarshalJSON sets id to the JSON text b, which must be a string, a
// number or null. Any other value gives an error that matches
// [ErrInvalidRequest].
func (id *ID) UnmarshalJSON(b []byte) error {
	i := skipSpace(b, 0)
	end, ok := scanValue(b, i)
	if !ok || skipSpace(b, end) != len(b) {
		return Errorf(CodeParseError, "Parse error: invalid JSON in id")
	}
	if !validID(b[i:end]) {
		return Errorf(CodeInvalidRequest, `Invalid Request: "id" must be a string, a number or null`)
	}
	id.raw = string(b[i:end])
	return nil
}

// idSource hands out increasing numeric ids, starting at 1. It is safe for
// concurrent use, and its zero value is ready to use.
type idSource struct {
	n atomic.Int64
}

// Next returns the next id.
func (s *idSource) Next() ID { return Int64ID(s.n.Add(1)) }

// Request is a JSON-RPC 2.0 request, or a notification when ID is zero.
//
// In a handler, Params aliases the connection's read buffer: it is valid
// until the handler returns, and a handler that keeps it longer must copy
// it. The Request itself must not be kept after the handler returns.
type Request struct {
	// ID is the request's id; the zero ID marks a notification.
	ID ID
	// Method is the name of the method to call.
	Method string
	// Params holds the parameters as raw JSON: an object, an array, or nil
	// when the request has none.
	Params json.RawMessage
}

// MarshalJSON encodes r as a JSON-RPC 2.0 request object.
func (r Request) MarshalJSON() ([]byte, error) {
	if err := checkRawParams(r.Params); err != nil {
		return nil, err
	}
	return appendRequest(nil, r.ID.raw, r.Method, oneLine(r.Params)), nil
}

// UnmarshalJSON decodes a JSON-RPC 2.0 request object strictly, as a
// server does: "jsonrpc" must be "2.0", names are case-sensitive and a
// member may not appear twice. It returns an error matching [ErrParse] for
// input that is not JSON and [ErrInvalidRequest] for anything else wrong.
func (r *Request) UnmarshalJSON(b []byte) error {
	var e envelope
	kind, _ := scanLine(b, &e, nil, 0)
	switch kind {
	case lineInvalidJSON:
		return ErrParse
	case lineObject:
	default:
		return Errorf(CodeInvalidRequest, "Invalid Request: request is not an object")
	}
	if why := e.checkRequest(); why != "" {
		return Errorf(CodeInvalidRequest, "Invalid Request: %s", why)
	}
	*r = Request{Method: string(e.methodName())}
	if e.id != nil {
		r.ID = ID{raw: string(e.id)}
	}
	if e.params != nil {
		r.Params = append(json.RawMessage(nil), e.params...)
	}
	return nil
}

// Response is a JSON-RPC 2.0 response. It carries exactly one of Result
// and Error: when Error is nil, the response is a success and a nil Result
// stands for the JSON null.
type Response struct {
	// ID is the id of the request answered; the zero ID encodes as null.
	ID ID
	// Result is the result as raw JSON, when Error is nil.
	Result json.RawMessage
	// Error is the error, or nil for a success.
	Error *Error
}

// MarshalJSON encodes r as a JSON-RPC 2.0 response object.
func (r Response) MarshalJSON() ([]byte, error) {
	id := r.ID.raw
	if id == "" {
		id = "null"
	}
	if r.Error != nil {
		return appendErrorResponse(nil, id, r.Error), nil
	}
	result := []byte(r.Result)
	if result == nil {
		result = nullID
	} else if !validJSON(result) {
		return nil, Errorf(CodeInternalError, "Internal error: result is not valid JSON")
	} else {
		result = oneLine(result)
	}
	return appendResultResponse(nil, id, result), nil
}

// UnmarshalJSON decodes a JSON-RPC 2.0 response object strictly: "jsonrpc"
// must be "2.0", the id must be present and valid, and exactly one of
// "result" and "error" must be present, the error an object with an
// integer code and a string message.
func (r *Response) UnmarshalJSON(b []byte) error {
	var e envelope
	if kind, _ := scanLine(b, &e, nil, 0); kind != lineObject {
		if kind == lineInvalidJSON {
			return ErrParse
		}
		return Errorf(CodeInvalidRequest, "Invalid Request: response is not an object")
	}
	resp, why := e.response()
	if why != "" {
		return Errorf(CodeInvalidRequest, "Invalid Request: %s", why)
	}
	*r = resp
	r.ID.raw = string(e.id)
	if r.Result != nil {
		r.Result = append(json.RawMessage(nil), r.Result...)
	}
	return nil
}

// response checks e as a Response object and returns it, with Result
// aliasing the input and ID left for the caller to fill, or why it is not
// one.
func (e *envelope) response() (Response, string) {
	switch {
	case !e.object:
		return Response{}, "response is not an object"
	case e.dup:
		return Response{}, "member appears more than once"
	case e.version == nil || !isVersion(e.version):
		return Response{}, `"jsonrpc" must be exactly "2.0"`
	case e.method != nil:
		return Response{}, `a response cannot carry "method"`
	case e.id == nil || !validID(e.id):
		return Response{}, `"id" must be a string, a number or null`
	case (e.result == nil) == (e.err == nil):
		return Response{}, `a response carries exactly one of "result" and "error"`
	case e.result != nil:
		return Response{Result: e.result}, ""
	}
	werr, why := errorObject(e.err)
	if why != "" {
		return Response{}, why
	}
	return Response{Error: werr}, ""
}

// errorObject reads the "error" member of a response, which the scanner
// has validated as JSON, by the rules the envelope is read by: member
// names match exactly ("Code" is not "code", as encoding/json would have
// it), and a name given twice is refused (encoding/json would keep the
// last), so that whatever else reads the response sees the same code. What
// "data" holds is the caller's to read, as it is.
func errorObject(obj []byte) (*Error, string) {
	const malformed = `"error" must be an object with an integer "code" and a string "message"`
	if len(obj) == 0 || obj[0] != '{' {
		return nil, malformed
	}
	// The scan of an envelope notes a name given twice, the one case
	// memberValue, which takes the first, must not meet.
	var names envelope
	if _, ok := scanObject(obj, 0, &names); !ok {
		return nil, malformed
	}
	if names.dup {
		return nil, `"error" gives a member more than once`
	}
	code, message, data := memberValue(obj, "code"), memberValue(obj, "message"), memberValue(obj, "data")
	n, err := strconv.ParseInt(string(code), 10, 64)
	if err != nil || len(message) < 2 || message[0] != '"' {
		return nil, malformed
	}
	werr := &Error{Code: Code(n)}
	if bytes.IndexByte(message, '\\') < 0 {
		werr.Message = string(message[1 : len(message)-1])
	} else if json.Unmarshal(message, &werr.Message) != nil {
		return nil, malformed
	}
	if data != nil {
		werr.Data = append(json.RawMessage(nil), data...)
	}
	return werr, ""
}

// answer returns e, read as the answer to a call, as a Response, or why
// it is not one as an error; unlike a connection, which drops a response
// it cannot read, an HTTPClient fails the call it awaited.
func (e *envelope) answer() (Response, error) {
	r, why := e.response()
	if why != "" {
		return Response{}, fmt.Errorf("jsonrpc: invalid response: %s", why)
	}
	return r, nil
}

func validParams(p []byte) bool {
	i := skipSpace(p, 0)
	return i < len(p) && (p[i] == '{' || p[i] == '[') && validJSON(p)
}

// oneLine returns valid JSON raw as it is if it holds no newline, and
// compacted otherwise, so that it never breaks the line framing.
func oneLine(raw []byte) []byte {
	if bytes.IndexByte(raw, '\n') < 0 {
		return raw
	}
	var b bytes.Buffer
	if json.Compact(&b, raw) != nil {
		return raw
	}
	return b.Bytes()
}

// Wire encoding. Every function appends exactly one JSON object and no
// newline.

func appendRequest(buf []byte, id, method string, params []byte) []byte {
	buf = append(buf, `{"jsonrpc":"2.0",`...)
	if id != "" {
		buf = append(buf, `"id":`...)
		buf = append(buf, id...)
		buf = append(buf, ',')
	}
	buf = append(buf, `"method":`...)
	buf = appendString(buf, method)
	if params != nil {
		buf = append(buf, `,"params":`...)
		buf = append(buf, params...)
	}
	return append(buf, '}')
}

func appendResultResponse[S string | []byte](buf []byte, id S, result []byte) []byte {
	buf = append(buf, `{"jsonrpc":"2.0","id":`...)
	buf = append(buf, id...)
	buf = append(buf, `,"result":`...)
	buf = append(buf, result...)
	return append(buf, '}')
}

func appendErrorResponse[S string | []byte](buf []byte, id S, e *Error) []byte {
	buf = append(buf, `{"jsonrpc":"2.0","id":`...)
	buf = append(buf, id...)
	buf = append(buf, `,"error":{"code":`...)
	buf = strconv.AppendInt(buf, int64(e.Code), 10)
	buf = append(buf, `,"message":`...)
	buf = appendString(buf, e.Message)
	if e.Data != nil && validJSON(e.Data) {
		buf = append(buf, `,"data":`...)
		buf = append(buf, oneLine(e.Data)...)
	}
	return append(buf, "}}"...)
}

const hexDigits = "0123456789abcdef"

// appendString appends s as a JSON string, as a json.Encoder told
// SetEscapeHTML(false) writes it: invalid UTF-8 becomes U+FFFD, control
// characters, U+2028 and U+2029 are escaped, and <, > and & stay as they
// are.
func appendString(buf []byte, s string) []byte {
	return appendMarshaledString(buf, s, false)
}

// arena hands out immutable strings copied into shared blocks, so that the
// ids of many requests cost one allocation between them. A block is never
// written again where a string has been handed out.
type arena struct {
	block []byte
}

const arenaBlock = 16 << 10

func (a *arena) str(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	if len(b) > arenaBlock/8 {
		return string(b)
	}
	if cap(a.block)-len(a.block) < len(b) {
		// Blocks start small, for short connections (one HTTP request),
		// and double up to arenaBlock.
		a.block = make([]byte, 0, min(max(2*cap(a.block), 256, len(b)), arenaBlock))
	}
	start := len(a.block)
	a.block = append(a.block, b...)
	return unsafe.String(&a.block[start], len(b))
}
