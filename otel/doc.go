// Package jsonrpcotel traces and measures JSON-RPC calls made and served
// with package [github.com/ndjsonrpc/jsonrpc], with OpenTelemetry.
//
// A [Telemetry] made by [New] gives a server middleware for
// [jsonrpc.Mux.Use] and a client interceptor for the Interceptors of
// [jsonrpc.Options], [jsonrpc.HTTPClient] and [jsonrpc.InProcess]:
//
//	tel := jsonrpcotel.New(jsonrpcotel.WithTrustRemote())
//	mux.Use(tel.Middleware())
//	client := &jsonrpc.HTTPClient{URL: url, Interceptors: []jsonrpc.Interceptor{tel.Interceptor()}}
//
// # Spans and metrics
//
// Each call and notification gets a span, and a measurement in a
// duration histogram, as the OpenTelemetry semantic conventions for
// JSON-RPC (semconv v1.43.0) describe them:
//
//   - the span is named after the method, and is of kind SERVER or CLIENT;
//   - rpc.system.name is "jsonrpc", jsonrpc.protocol.version "2.0";
//   - rpc.method is the method, or "_OTHER" for a method the server has
//     no handler for, with the method sent in rpc.method_original (the
//     span is then named "jsonrpc");
//   - jsonrpc.request.id is the id, as a string without JSON quotes, and
//     is left out for notifications and null ids;
//   - on an error, the span's status is Error, rpc.response.status_code
//     is the JSON-RPC error code (such as "-32601"; on the server, the
//     code it answers with), and error.type is that code, the Go type of
//     an error that carries none, or "panic" for a handler that panicked;
//     a call whose result the server cannot encode (a NaN, raw JSON that
//     is not valid) is answered with an Internal error, and recorded so:
//     to tell, a traced or measured call's result that is not a scalar
//     nor raw JSON is encoded once more;
//   - network.transport is "tcp" over HTTP (with network.protocol.name
//     "http"), and otherwise what [WithNetwork] says; server.address and
//     server.port come from the HTTP request's Host on the server's span,
//     from the URL of the [jsonrpc.HTTPClient] on its client (the
//     scheme's port if the URL gives none), and from WithNetwork
//     otherwise.
//
// The histograms are rpc.server.call.duration and
// rpc.client.call.duration, in seconds, with the attributes of the span
// but for those that are not bounded: the request id,
// rpc.method_original, and the server.address and server.port of an HTTP
// request's Host, which the client chooses (the server's histogram has
// WithNetwork's, if any, in their place).
//
// # Propagation
//
// The trace context travels in the HTTP request's headers (W3C
// traceparent and tracestate, or whatever [WithPropagators] says) over
// HTTP, and, with [WithMetaPropagation], in a "_meta" member of the
// params, as MCP proposes (SEP-414), on every transport. A server does
// not take the caller's span as its span's parent unless told to trust
// it with [WithTrustRemote]: otherwise it starts a new trace linked to
// the caller's. A span already in the context, such as that of HTTP
// instrumentation, stays the parent: the context in _meta is then only
// linked.
//
// # Cost
//
// With no providers given, New uses OpenTelemetry's global ones. With
// no-op providers, the middleware and the interceptor hand back what they
// wrap, unchanged. While the global ones are unset, they wrap, and pass
// each call straight on after two checks: about 120 instructions a call,
// under 4% of a server's echo (see BENCHMARKS.md), and no allocation for
// handlers made with [jsonrpc.HandlerFunc] or [jsonrpc.RawHandlerFunc]. A
// handler made by [jsonrpc.Func] loses, once wrapped, the server's path
// that writes its result without boxing it in an interface.
//
// The package is called jsonrpcotel, not otel, so that a file can import
// it next to go.opentelemetry.io/otel without renaming either.
package jsonrpcotel
