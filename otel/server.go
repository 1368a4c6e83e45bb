package jsonrpcotel

// This file holds the server side: the middleware for Mux.Use, and the
// wrapper of a whole handler.

import (
	"context"
	"encoding/json"
	"time"

	"github.com/ndjsonrpc/jsonrpc"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
)

// Middleware returns middleware for [jsonrpc.Mux.Use] that traces and
// measures each call and notification the Mux's handlers serve, as a
// server. A handler made with [jsonrpc.RawHandlerFunc] stays one, so that
// a server still calls it directly.
//
// A Mux passes a call of a method it has no handler for through its
// middleware too, around the answer [jsonrpc.ErrMethodNotFound]: such a
// call (see [jsonrpc.NoHandler]), whatever middleware inside answers it,
// and one whose handler returns an error that is ErrMethodNotFound, are
// recorded as rpc.method "_OTHER", with the method sent in
// rpc.method_original.
//
// A call whose handler panics is recorded as failed, with error.type
// "panic" and rpc.response.status_code "-32603", before the panic goes
// on to the server.
func (t *Telemetry) Middleware() func(jsonrpc.Handler) jsonrpc.Handler {
	if t.off() {
		return func(h jsonrpc.Handler) jsonrpc.Handler { return h }
	}
	return func(h jsonrpc.Handler) jsonrpc.Handler {
		if raw, ok := h.(jsonrpc.RawHandlerFunc); ok {
			return jsonrpc.RawHandlerFunc(func(ctx context.Context, req *jsonrpc.Request) (json.RawMessage, error) {
				tracing, measuring := t.tracing(), t.serverDur.Enabled(ctx)
				if !tracing && !measuring || t.filter != nil && !t.filter(ctx, req) {
					return raw(ctx, req)
				}
				ctx, c := t.serverCall(ctx, req, jsonrpc.NoHandler(ctx), tracing, measuring)
				defer c.endPanic(ctx)
				result, err := raw(ctx, req)
				c.end(ctx, c.rawAnswerError(result, err))
				return result, err
			})
		}
		return t.wrap(h, nil)
	}
}

// Handler returns h wrapped so that every request it serves is traced
// and measured, as a server. When h is a *jsonrpc.Mux, a method it has no
// handler for is recorded as rpc.method "_OTHER", with the method sent in
// rpc.method_original. A call whose handler panics is recorded as
// Middleware records it. Use it in place of [Telemetry.Middleware], not
// with it, which would record each call twice. A server calls a wrapped
// Mux through its ServeJSONRPC method, which boxes each result in an
// interface.
func (t *Telemetry) Handler(h jsonrpc.Handler) jsonrpc.Handler {
	if t.off() {
		return h
	}
	mux, _ := h.(*jsonrpc.Mux)
	return t.wrap(h, mux)
}

// wrap returns h traced and measured; mux, if not nil, tells the methods
// that have a handler.
func (t *Telemetry) wrap(h jsonrpc.Handler, mux *jsonrpc.Mux) jsonrpc.Handler {
	return jsonrpc.HandlerFunc(func(ctx context.Context, req *jsonrpc.Request) (any, error) {
		tracing, measuring := t.tracing(), t.serverDur.Enabled(ctx)
		if !tracing && !measuring || t.filter != nil && !t.filter(ctx, req) {
			return h.ServeJSONRPC(ctx, req)
		}
		unknown := jsonrpc.NoHandler(ctx) || mux != nil && mux.Handler(req.Method) == nil
		ctx, c := t.serverCall(ctx, req, unknown, tracing, measuring)
		defer c.endPanic(ctx)
		result, err := h.ServeJSONRPC(ctx, req)
		c.end(ctx, c.answerError(result, err))
		return result, err
	})
}

// serverCall starts the span of a request served, if tracing, with the
// caller's trace context as its parent or its link, and returns the
// context for the handler.
func (t *Telemetry) serverCall(ctx context.Context, req *jsonrpc.Request, unknown, tracing, measuring bool) (context.Context, *call) {
	hr := jsonrpc.HTTPRequestFromContext(ctx)
	c := &call{start: time.Now(), server: true, notify: req.ID.IsZero(), method: req.Method, unknown: unknown}
	c.attrs = t.attrs(req.Method, unknown, hr, false, "")
	if measuring {
		c.dur = t.serverDur
	}
	if !tracing {
		return ctx, c
	}
	// An HTTP handler wrapped in HTTP instrumentation has its span
	// already, the child of the headers' context.
	if hr != nil && !trace.SpanContextFromContext(ctx).IsValid() {
		ctx = t.prop.Extract(ctx, propagation.HeaderCarrier(hr.Header))
	}
	var meta trace.SpanContext // the _meta's, if only linked
	if t.meta {
		if mc := metaCarrier(req.Params); mc != nil {
			// A local span (HTTP instrumentation's, say) stays the
			// parent: the caller's context in _meta is linked.
			if local := trace.SpanContextFromContext(ctx); local.IsValid() && !local.IsRemote() {
				meta = trace.SpanContextFromContext(t.prop.Extract(ctx, mc))
			} else {
				ctx = t.prop.Extract(ctx, mc)
			}
		}
	}
	opts := []trace.SpanStartOption{
		trace.WithSpanKind(trace.SpanKindServer),
		trace.WithTimestamp(c.start),
		trace.WithAttributes(c.spanAttrs(req, hr)...),
	}
	if meta.IsRemote() {
		opts = append(opts, trace.WithLinks(trace.Link{SpanContext: meta}))
	}
	if remote := trace.SpanContextFromContext(ctx); remote.IsRemote() && !t.trustRemote {
		opts = append(opts, trace.WithNewRoot(), trace.WithLinks(trace.Link{SpanContext: remote}))
	}
	ctx, c.span = t.tracer.Start(ctx, c.name(), opts...)
	return ctx, c
}
