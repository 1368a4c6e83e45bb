package jsonrpcotel

// This file holds the client side: the interceptor.

import (
	"context"
	"encoding/json"
	"time"

	"github.com/ndjsonrpc/jsonrpc"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
)

// Interceptor returns an interceptor that traces and measures each call
// and notification sent through it, as a client, and passes the trace
// context on to the server: in the HTTP request's headers over HTTP, and
// in the params' _meta with [WithMetaPropagation].
//
// The entries of a batch sent over HTTP share one request, and so one
// set of headers: the server sees the context of one of them there, and
// each entry's own only in _meta.
func (t *Telemetry) Interceptor() jsonrpc.Interceptor {
	return func(next jsonrpc.SendFunc) jsonrpc.SendFunc {
		if t.off() {
			return next
		}
		return func(ctx context.Context, req *jsonrpc.Request) (json.RawMessage, error) {
			tracing, measuring := t.tracing(), t.clientDur.Enabled(ctx)
			if !tracing && !measuring || t.filter != nil && !t.filter(ctx, req) {
				return next(ctx, req)
			}
			ctx, c := t.clientCall(ctx, req, tracing, measuring)
			result, err := next(ctx, req)
			c.end(ctx, err)
			return result, err
		}
	}
}

// clientCall starts the span of a request sent, if tracing, and writes
// its context where the server will find it.
func (t *Telemetry) clientCall(ctx context.Context, req *jsonrpc.Request, tracing, measuring bool) (context.Context, *call) {
	header := jsonrpc.HTTPHeader(ctx)
	c := &call{start: time.Now(), method: req.Method}
	c.attrs = t.attrs(req.Method, false, nil, header != nil, jsonrpc.HTTPURL(ctx))
	if measuring {
		c.dur = t.clientDur
	}
	if !tracing {
		return ctx, c
	}
	ctx, c.span = t.tracer.Start(ctx, c.name(),
		trace.WithSpanKind(trace.SpanKindClient),
		trace.WithTimestamp(c.start),
		trace.WithAttributes(c.spanAttrs(req, nil)...))
	if header != nil {
		t.prop.Inject(ctx, propagation.HeaderCarrier(header))
	}
	if t.meta {
		mc := propagation.MapCarrier{}
		t.prop.Inject(ctx, mc)
		if params, ok := withMeta(req.Params, mc); ok {
			req.Params = params
		}
	}
	return ctx, c
}
