package jsonrpc

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
)

// Code is a JSON-RPC 2.0 error code.
//
// The specification reserves -32768 to -32000 for predefined errors. Of
// those, -32000 to -32099 are left to implementations for server errors:
// an application may use them for its own failures, as the demo server does
// with -32001. Codes outside the reserved range are free for applications.
type Code int

// The error codes defined by the JSON-RPC 2.0 specification, and the code
// this package uses for a cancelled request.
const (
	// CodeParseError means the message was not valid JSON.
	CodeParseError Code = -32700
	// CodeInvalidRequest means the JSON sent is not a valid Request object.
	CodeInvalidRequest Code = -32600
	// CodeMethodNotFound means the method does not exist or is not available.
	CodeMethodNotFound Code = -32601
	// CodeInvalidParams means the method parameters are invalid.
	CodeInvalidParams Code = -32602
	// CodeInternalError means an internal JSON-RPC error.
	CodeInternalError Code = -32603
	// CodeRequestCancelled means the request was cancelled by the caller
	// (through "$/cancelRequest") before it completed. It is the value the
	// Language Server Protocol uses.
	CodeRequestCancelled Code = -32800
	// CodeOverloaded means the connection refused a request it had no
	// room for, and did not run it: its server's memory budget (see
	// [Server.MaxMemory]) was spent, or its own byte budget (see
	// [Options.MaxPendingBytes]) was, while its own calls to the peer
	// awaited answers, so it could neither stop reading nor hold more.
	// The request may be retried. Notifications that come then are
	// dropped (and logged at Debug) past the server's budget, and past
	// twice the connection's (see [Options.MaxPendingBytes]).
	CodeOverloaded Code = -32090
	// CodeNotRun means the request was not run, and may be sent again,
	// to this server later or to another one now: it arrived after a
	// graceful stop began ([Server.Shutdown], [Conn.Shutdown]). Its data
	// says why, as {"reason":"stopping"}.
	CodeNotRun Code = -32091

	// codeServerErrorMin and codeServerErrorMax bound the range that the
	// specification reserves for implementation-defined server errors.
	codeServerErrorMin Code = -32099
	codeServerErrorMax Code = -32000
)

// String returns the specification's message for a predefined code, or
// "error N" for any other.
func (c Code) String() string {
	switch c {
	case CodeParseError:
		return "Parse error"
	case CodeInvalidRequest:
		return "Invalid Request"
	case CodeMethodNotFound:
		return "Method not found"
	case CodeInvalidParams:
		return "Invalid params"
	case CodeInternalError:
		return "Internal error"
	case CodeRequestCancelled:
		return "Request cancelled"
	case CodeOverloaded:
		return "Overloaded"
	case CodeNotRun:
		return "Not run"
	}
	if c >= codeServerErrorMin && c <= codeServerErrorMax {
		return "Server error " + strconv.Itoa(int(c))
	}
	return "error " + strconv.Itoa(int(c))
}

// Error is a JSON-RPC 2.0 error object. It implements the error interface,
// so a handler can return it as it is, and a client returns it when the
// peer answers a call with an error.
//
// Two errors match under [errors.Is] when their codes are equal, whatever
// their messages say: errors.Is(err, jsonrpc.ErrMethodNotFound) holds for
// any *Error with code -32601, wrapped or not.
type Error struct {
	// Code is the error code.
	Code Code `json:"code"`
	// Message is a short description of the error.
	Message string `json:"message"`
	// Data holds additional information as raw JSON; nil when absent.
	Data json.RawMessage `json:"data,omitempty"`
}

// NewError returns an error with the given code and message.
func NewError(code Code, message string) *Error {
	return &Error{Code: code, Message: message}
}

// Errorf returns an error with the given code and a message formatted as
// with fmt.Sprintf.
func Errorf(code Code, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// WithData returns a copy of e whose Data is the JSON encoding of data.
// It panics if data cannot be encoded, which is a programming error.
func (e *Error) WithData(data any) *Error {
	b, err := json.Marshal(data)
	if err != nil {
		panic("jsonrpc: Error.WithData: " + err.Error())
	}
	c := *e
	c.Data = b
	return &c
}

// Error returns "jsonrpc: code N: message".
func (e *Error) Error() string {
	return "jsonrpc: code " + strconv.Itoa(int(e.Code)) + ": " + e.Message
}

// Is reports whether target is an *Error with the same code as e.
func (e *Error) Is(target error) bool {
	t, ok := target.(*Error)
	return ok && t != nil && t.Code == e.Code
}

// Sentinel errors for the predefined codes, for use with [errors.Is].
// Handlers may also return them as they are.
var (
	ErrParse            = &Error{Code: CodeParseError, Message: "Parse error"}
	ErrInvalidRequest   = &Error{Code: CodeInvalidRequest, Message: "Invalid Request"}
	ErrMethodNotFound   = &Error{Code: CodeMethodNotFound, Message: "Method not found"}
	ErrInvalidParams    = &Error{Code: CodeInvalidParams, Message: "Invalid params"}
	ErrInternal         = &Error{Code: CodeInternalError, Message: "Internal error"}
	ErrRequestCancelled = &Error{Code: CodeRequestCancelled, Message: "Request cancelled"}
	ErrOverloaded       = &Error{Code: CodeOverloaded, Message: "Overloaded"}
	ErrNotRun           = &Error{Code: CodeNotRun, Message: "Not run"}
)

// errStopping is the answer to a request that arrives once a graceful stop
// has begun.
var errStopping = ErrNotRun.WithData(map[string]string{"reason": "stopping"})

// ErrClosed is returned by the operations of a [Conn] or [Server] that
// has been closed, or whose connection has ended. Errors that wrap it also
// wrap the cause where there is one, such as io.EOF or a read error.
var ErrClosed = errors.New("jsonrpc: closed")

// ErrServerClosed is returned by [Server.Serve] after a call to
// [Server.Close] or [Server.Shutdown].
var ErrServerClosed = errors.New("jsonrpc: server closed")

// ErrNoConnection is returned by the methods of [Peer] when their context does not come
// from a handler that serves a connection, and wrapped by the error of a
// Call from a handler serving an HTTP request (see [Server.ServeHTTP]),
// which has no way back to the client.
var ErrNoConnection = errors.New("jsonrpc: context has no connection")

// ErrStreamOverflow is wrapped by the error that ends a [Conn.Stream]
// whose items arrive faster than the range over it takes them, once more
// than [Options.MaxStreamBuffer] bytes of them wait.
var ErrStreamOverflow = errors.New("jsonrpc: stream buffer full")

// streamOverflowError reports a stream that overflowed its buffer.
type streamOverflowError struct{ limit int }

func (e *streamOverflowError) Error() string {
	return ErrStreamOverflow.Error() + " (limit " + strconv.Itoa(e.limit) + " bytes): the range fell behind"
}

func (e *streamOverflowError) Unwrap() error { return ErrStreamOverflow }

// ErrPeerClosed is the cause (see [context.Cause]) with which a
// connection cancels the contexts of its handlers still running when its
// input has ended: the peer closed its end, or reading failed. The cause
// wraps the read error too, io.EOF for a clean end. Handlers get the
// connection's StopGrace to finish before that, and as long again to
// return after it.
var ErrPeerClosed = errors.New("jsonrpc: the peer closed the connection")

// peerClosedError is ErrPeerClosed together with the read error that
// ended the input.
type peerClosedError struct{ cause error }

func (e *peerClosedError) Error() string {
	return ErrPeerClosed.Error() + ": " + e.cause.Error()
}

func (e *peerClosedError) Unwrap() []error { return []error{ErrPeerClosed, e.cause} }

// closedError wraps ErrClosed together with the reason the connection ended.
type closedError struct{ cause error }

func (e *closedError) Error() string {
	if e.cause == nil {
		return ErrClosed.Error()
	}
	if errors.Is(e.cause, ErrClosed) {
		return e.cause.Error() // not "jsonrpc: closed: jsonrpc: closed"
	}
	return ErrClosed.Error() + ": " + e.cause.Error()
}

func (e *closedError) Unwrap() []error {
	if e.cause == nil {
		return []error{ErrClosed}
	}
	return []error{ErrClosed, e.cause}
}

// MayHaveRun reports whether the call that failed with err may have run
// on the peer, so that sending it again could run it twice. It reports
// false only when the call surely did not run:
//   - its request was never sent: its params could not be encoded, its
//     ctx had ended or the connection was closed (an error wrapping
//     [ErrClosed]) before the request was handed to the connection, the
//     write that failed took none of its bytes, or, over HTTP, net/http's
//     Transport had not written the whole request when it failed (with
//     an http.Client whose Transport is another RoundTripper, which may
//     not say what it wrote: when no connection could be made);
//   - the peer answered that it did not run it: [ErrNotRun] (an HTTP 503
//     too), [ErrOverloaded], [ErrParse], [ErrInvalidRequest] or
//     [ErrMethodNotFound], or an [HTTPError] with a status under 500,
//     which refuses the request (405, 413, 415).
//
// It reports true for any other failure: the request was sent and the
// connection ended (an error wrapping ErrClosed) or ctx ended (an error
// wrapping ctx.Err()) before the answer came, or the peer answered with
// another error, which its handler may have returned; and for a nil err,
// a call that ran. It classifies the errors of every [Caller] alike. Of a
// call that an [HTTPClient] made more than once, it reports true if any
// attempt may have run.
func MayHaveRun(err error) bool {
	if err == nil {
		return true
	}
	var r *retriedError
	if errors.As(err, &r) {
		return r.ran || MayHaveRun(r.err)
	}
	var refused *refusedError
	if errors.As(err, &refused) {
		return false
	}
	var e *Error
	if errors.As(err, &e) && e != nil {
		switch e.Code {
		case CodeNotRun, CodeOverloaded, CodeParseError, CodeInvalidRequest, CodeMethodNotFound:
			return false
		}
		return true
	}
	var h *HTTPError
	if errors.As(err, &h) {
		return h.StatusCode >= 500 // a proxy's 502, say, after the server took it
	}
	var s *sentError
	return errors.As(err, &s)
}

// sentError marks the failure of a call whose request had been handed to
// the connection, or sent over HTTP, before the failure: the peer may have
// run it (see MayHaveRun). It wraps the failure: an error wrapping
// ErrClosed, or ctx's error.
type sentError struct{ err error }

func (e *sentError) Error() string { return e.err.Error() }

func (e *sentError) Unwrap() error { return e.err }

// Is reports whether target marks the same failure as sent: the error
// Batch returns and those of its calls are marked apart.
func (e *sentError) Is(target error) bool {
	t, ok := target.(*sentError)
	return ok && errors.Is(e.err, t.err)
}

// sent marks err, the failure of a call whose request was sent.
func sent(err error) error {
	if err == nil {
		return nil
	}
	if _, ok := err.(*sentError); ok {
		return err
	}
	return &sentError{err: err}
}

// refusedError marks the failure of a call that this side refused before
// it sent anything (params that do not encode as a JSON object or array,
// a Redialer's call whose ctx ended before it had a connection), so that
// MayHaveRun does not take what it wraps (an *Error, a failed dial's sent
// call) for a sign that the call may have run.
type refusedError struct{ err error }

func (e *refusedError) Error() string { return e.err.Error() }

func (e *refusedError) Unwrap() error { return e.err }

// unsent strips the mark of sent from err, the failure of a call whose
// request was not sent after all.
func unsent(err error) error {
	if s, ok := err.(*sentError); ok {
		return s.err
	}
	return err
}

// toWireError turns an error returned by a handler into the error object
// sent on the wire. An *Error anywhere in the chain keeps its code; a
// context cancellation becomes CodeRequestCancelled when cancelled is set;
// anything else becomes CodeInternalError with the Go type and, unless
// hideDetail is set, the text of the error in its data.
func toWireError(err error, cancelled, hideDetail bool) *Error {
	var e *Error
	if errors.As(err, &e) && e != nil {
		return e
	}
	if cancelled {
		return ErrRequestCancelled
	}
	return internalError(fmt.Sprintf("%T", err), err.Error(), hideDetail)
}

// internalError builds a CodeInternalError whose data names the exception
// and, unless hideDetail is set, its detail.
func internalError(exception, detail string, hideDetail bool) *Error {
	data := struct {
		Exception string `json:"exception"`
		Detail    string `json:"detail,omitempty"`
	}{Exception: exception}
	if !hideDetail {
		data.Detail = detail
	}
	b, _ := json.Marshal(data) // two strings always encode
	return &Error{Code: CodeInternalError, Message: "Internal error", Data: b}
}
