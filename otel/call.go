package jsonrpcotel

// This file holds what servers and clients share: one call's span and
// measurement, its attributes, and how an error is told.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
	"net/url"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/ndjsonrpc/jsonrpc"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/metric"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
	"go.opentelemetry.io/otel/trace"
)

const (
	// otherMethod is rpc.method for a method the server has no handler
	// for.
	otherMethod = "_OTHER"
	// systemName names the span of such a method.
	systemName = "jsonrpc"
	// methodAttr is the place of rpc.method in call.attrs.
	methodAttr = 2
)

// A call is one call or notification being traced or measured.
type call struct {
	span    trace.Span              // nil when not traced
	dur     metric.Float64Histogram // nil when not measured
	start   time.Time
	server  bool
	notify  bool   // a notification, which gets no answer
	method  string // as sent
	unknown bool   // the server has no handler for method
	// attrs are the attributes of both span and measurement, rpc.method
	// at methodAttr.
	attrs []attribute.KeyValue
}

// name returns the span's name.
func (c *call) name() string {
	if c.unknown {
		return systemName
	}
	return c.method
}

// spanAttrs returns the attributes of the span at its start: those of
// c, with server.address and server.port from the Host of hr (the HTTP
// request a server serves the call from) if not nil, the request's id
// and the method sent if unknown.
func (c *call) spanAttrs(req *jsonrpc.Request, hr *http.Request) []attribute.KeyValue {
	a := make([]attribute.KeyValue, 0, len(c.attrs)+4)
	if hr == nil {
		a = append(a, c.attrs...)
	} else {
		for _, kv := range c.attrs {
			if kv.Key != semconv.ServerAddressKey && kv.Key != semconv.ServerPortKey {
				a = append(a, kv)
			}
		}
		a = appendHost(a, hr)
	}
	if id, ok := idString(req.ID); ok {
		a = append(a, semconv.JSONRPCRequestID(id))
	}
	if c.unknown {
		a = append(a, semconv.RPCMethodOriginal(c.method))
	}
	return a
}

// answerError returns the error that a server answers c with when its
// handler returns result and err: err, or, for a call (a notification's
// result is dropped), the error of encoding a result that cannot be
// encoded, which the server answers with an Internal error.
func (c *call) answerError(result any, err error) error {
	if err != nil || c.notify {
		return err
	}
	return resultError(result)
}

// rawAnswerError is answerError for a RawHandlerFunc's result, which
// it checks without boxing it in an interface.
func (c *call) rawAnswerError(result json.RawMessage, err error) error {
	if err != nil || c.notify {
		return err
	}
	return rawResultError(result)
}

// rawResultError returns the error the server meets writing result, or
// nil.
func rawResultError(result json.RawMessage) error {
	if result == nil || json.Valid(result) && utf8.Valid(result) {
		return nil
	}
	return errInvalidResult
}

// errInvalidResult is the error of a json.RawMessage result that is not
// valid JSON.
var errInvalidResult = errors.New("jsonrpc: result: json.RawMessage is not valid JSON")

// resultError returns the error the server meets encoding result, or nil.
func resultError(result any) error {
	switch r := result.(type) {
	case nil, string, bool, int, int8, int16, int32, int64, uint, uint8, uint16, uint32, uint64, uintptr:
		return nil
	case float64:
		if math.IsNaN(r) || math.IsInf(r, 0) {
			return &json.UnsupportedValueError{Str: strconv.FormatFloat(r, 'g', -1, 64)}
		}
		return nil
	case float32:
		if f := float64(r); math.IsNaN(f) || math.IsInf(f, 0) {
			return &json.UnsupportedValueError{Str: strconv.FormatFloat(f, 'g', -1, 32)}
		}
		return nil
	case json.RawMessage:
		return rawResultError(r)
	}
	b, err := marshal(result)
	if err != nil {
		return err
	}
	if !utf8.Valid(b) {
		return errInvalidResult
	}
	return nil
}

// endPanic ends c as failed if its handler panics, and panics again
// with the same value, for the server to recover. It is deferred.
func (c *call) endPanic(ctx context.Context) {
	if v := recover(); v != nil {
		c.end(ctx, panicError{v})
		panic(v)
	}
}

// A panicError is what a call whose handler panicked ends with.
type panicError struct{ value any }

// Error returns the value the handler panicked with, as text.
func (e panicError) Error() string { return fmt.Sprint(e.value) }

// end ends the span and records the duration; err is what the handler
// or the call returned.
func (c *call) end(ctx context.Context, err error) {
	now := time.Now()
	if err != nil {
		if c.server && !c.unknown && errors.Is(err, jsonrpc.ErrMethodNotFound) {
			// A handler that answers "Method not found" has no such
			// method either.
			c.unknown = true
			c.attrs[methodAttr] = semconv.RPCMethod(otherMethod)
			if c.span != nil {
				c.span.SetName(systemName)
				c.span.SetAttributes(c.attrs[methodAttr], semconv.RPCMethodOriginal(c.method))
			}
		}
		code, typ, desc := classify(ctx, err, c.server)
		if c.notify {
			code = "" // nothing is answered: no status code
		}
		if code != "" {
			c.attrs = append(c.attrs, semconv.RPCResponseStatusCode(code))
		}
		c.attrs = append(c.attrs, semconv.ErrorTypeKey.String(typ))
		if c.span != nil {
			n := 1 // error.type, and the status code if any
			if code != "" {
				n = 2
			}
			c.span.SetAttributes(c.attrs[len(c.attrs)-n:]...)
			c.span.SetStatus(codes.Error, desc)
		}
	}
	if c.span != nil {
		c.span.End(trace.WithTimestamp(now))
	}
	if c.dur != nil {
		c.dur.Record(ctx, now.Sub(c.start).Seconds(), metric.WithAttributeSet(attribute.NewSet(c.attrs...)))
	}
}

// classify returns the rpc.response.status_code, error.type and status
// description of err, for a call with context ctx. A server answers an
// error that carries no code with CodeRequestCancelled if the peer
// cancelled the request (the cause of ctx is a *jsonrpc.CancelError)
// and the handler did not panic, and with CodeInternalError otherwise.
func classify(ctx context.Context, err error, server bool) (code, typ, desc string) {
	var e *jsonrpc.Error
	if errors.As(err, &e) && e != nil {
		code = strconv.Itoa(int(e.Code))
		return code, code, e.Message
	}
	_, panicked := err.(panicError)
	switch {
	case panicked:
		typ = "panic"
	case errors.Is(err, context.Canceled):
		typ = "context.Canceled"
	case errors.Is(err, context.DeadlineExceeded):
		typ = "context.DeadlineExceeded"
	default:
		typ = fmt.Sprintf("%T", err)
	}
	if server {
		code = strconv.Itoa(int(jsonrpc.CodeInternalError))
		var ce *jsonrpc.CancelError
		if !panicked && ctx.Err() != nil && errors.As(context.Cause(ctx), &ce) {
			code = strconv.Itoa(int(jsonrpc.CodeRequestCancelled))
		}
	}
	return code, typ, err.Error()
}

// idString returns jsonrpc.request.id for id: a string without its JSON
// quotes, a number as written; none for a notification or a null id.
func idString(id jsonrpc.ID) (string, bool) {
	if id.IsZero() || id.IsNull() {
		return "", false
	}
	s := id.String()
	if len(s) > 0 && s[0] == '"' {
		var u string
		if json.Unmarshal([]byte(s), &u) == nil {
			return u, true
		}
	}
	return s, true
}

// attrs returns the attributes common to the span and the measurement of
// a call for method: hr is the HTTP request a server serves it from, and
// overHTTP says that a client sends it over HTTP, to target, the
// HTTPClient's URL. On a server, server.address and server.port are
// WithNetwork's: those from hr's Host, which the client chooses, go on
// the span alone (see appendHost).
func (t *Telemetry) attrs(method string, unknown bool, hr *http.Request, overHTTP bool, target string) []attribute.KeyValue {
	if unknown {
		method = otherMethod
	}
	a := make([]attribute.KeyValue, 3, 12)
	a[0], a[1], a[methodAttr] = semconv.RPCSystemNameJSONRPC, semconv.JSONRPCProtocolVersion(jsonrpc.Version), semconv.RPCMethod(method)
	address, port := t.address, t.port
	switch {
	case hr != nil:
		transport, version := semconv.NetworkTransportTCP, strconv.Itoa(hr.ProtoMajor)
		switch hr.ProtoMajor {
		case 1:
			version += "." + strconv.Itoa(hr.ProtoMinor)
		case 3:
			transport = semconv.NetworkTransportQUIC
		}
		a = append(a, transport, semconv.NetworkProtocolName("http"), semconv.NetworkProtocolVersion(version))
	case overHTTP:
		a = append(a, semconv.NetworkTransportTCP, semconv.NetworkProtocolName("http"))
		if tg := t.target(target); tg.host != "" {
			address, port = tg.host, tg.port
		}
	case t.transport != "":
		a = append(a, semconv.NetworkTransportKey.String(t.transport))
	}
	if address != "" {
		a = append(a, semconv.ServerAddress(address))
		if port > 0 {
			a = append(a, semconv.ServerPort(port))
		}
	}
	return a
}

// appendHost appends to a server.address and server.port as the Host of
// hr, the HTTP request a server serves a call from, names them (the
// scheme's port if the Host gives none).
func appendHost(a []attribute.KeyValue, hr *http.Request) []attribute.KeyValue {
	address, port := splitHostPort(hr.Host)
	if n := len(address); n > 1 && address[0] == '[' && address[n-1] == ']' {
		address = address[1 : n-1] // an IPv6 literal with no port: "[::1]"
	}
	if address == "" {
		return a
	}
	if port == 0 {
		port = 80
		if hr.TLS != nil {
			port = 443
		}
	}
	return append(a, semconv.ServerAddress(address), semconv.ServerPort(port))
}

// A target is the server an HTTPClient's URL names.
type target struct {
	url  string // as given
	host string // server.address, or "" if the URL names none
	port int    // server.port: the URL's, or its scheme's default
}

// target returns the server that the URL u names, remembering the last
// one: an HTTPClient posts every call to one URL.
func (t *Telemetry) target(u string) *target {
	if tg := t.lastTarget.Load(); tg != nil && tg.url == u {
		return tg
	}
	tg := &target{url: u}
	if pu, err := url.Parse(u); err == nil {
		tg.host = pu.Hostname()
		tg.port, _ = strconv.Atoi(pu.Port())
		if tg.port == 0 {
			switch pu.Scheme {
			case "http":
				tg.port = 80
			case "https":
				tg.port = 443
			}
		}
	}
	t.lastTarget.Store(tg)
	return tg
}
