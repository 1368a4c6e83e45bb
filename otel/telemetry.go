package jsonrpcotel

import (
	"context"
	"net"
	"reflect"
	"strconv"
	"sync/atomic"

	"github.com/ndjsonrpc/jsonrpc"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/metric"
	metricnoop "go.opentelemetry.io/otel/metric/noop"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/semconv/v1.43.0/rpcconv"
	"go.opentelemetry.io/otel/trace"
	tracenoop "go.opentelemetry.io/otel/trace/noop"
)

// instrumentationName names the tracer and the meter.
const instrumentationName = "github.com/ndjsonrpc/jsonrpc/otel"

// durationBuckets are the bucket boundaries, in seconds, that the
// semantic conventions recommend for the RPC call durations.
var durationBuckets = []float64{0.005, 0.01, 0.025, 0.05, 0.075, 0.1, 0.25, 0.5, 0.75, 1, 2.5, 5, 7.5, 10}

// A Telemetry traces and measures the calls that pass through its
// middleware and interceptors. It is safe for concurrent use, and one
// Telemetry may serve any number of servers and clients.
type Telemetry struct {
	tracer     trace.Tracer
	tracerOff  bool                 // the tracer provider is a no-op
	unsetTrace trace.TracerProvider // the global provider's stand-in, if none was set when New ran
	metricsOff bool                 // the meter provider is a no-op
	prop       propagation.TextMapPropagator
	serverDur  metric.Float64Histogram
	clientDur  metric.Float64Histogram

	filter      func(ctx context.Context, req *jsonrpc.Request) bool
	trustRemote bool
	meta        bool
	transport   string // network.transport off HTTP, or ""
	address     string // server.address off HTTP, or ""
	port        int    // server.port off HTTP, or 0

	lastTarget atomic.Pointer[target] // the HTTP client's server last seen
}

// An Option configures a Telemetry.
type Option func(*config)

type config struct {
	tp          trace.TracerProvider
	mp          metric.MeterProvider
	prop        propagation.TextMapPropagator
	filter      func(ctx context.Context, req *jsonrpc.Request) bool
	trustRemote bool
	meta        bool
	network     string
	address     string
}

// WithTracerProvider sets the provider of the tracer; without it, New uses
// the global provider (see [otel.SetTracerProvider]).
func WithTracerProvider(tp trace.TracerProvider) Option {
	return func(c *config) { c.tp = tp }
}

// WithMeterProvider sets the provider of the meter; without it, New uses
// the global provider (see [otel.SetMeterProvider]).
func WithMeterProvider(mp metric.MeterProvider) Option {
	return func(c *config) { c.mp = mp }
}

// WithPropagators sets how the trace context is written into and read
// from HTTP headers and params' _meta; without it, New uses the global
// propagator (see [otel.SetTextMapPropagator]), which propagates nothing
// until one is set. propagation.TraceContext{} is W3C Trace Context.
func WithPropagators(p propagation.TextMapPropagator) Option {
	return func(c *config) { c.prop = p }
}

// WithFilter sets a function that says which calls to trace and measure:
// those for which it returns true. The others pass through untouched. It
// sees the request as the handler or the interceptor does, and may be
// called concurrently.
func WithFilter(f func(ctx context.Context, req *jsonrpc.Request) bool) Option {
	return func(c *config) { c.filter = f }
}

// WithTrustRemote makes a server's span the child of the caller's span
// when the request carries one. By default the server starts a new trace
// with a link to the caller's span, so that a caller cannot choose the
// trace (or the sampling decision) of a public server.
func WithTrustRemote() Option {
	return func(c *config) { c.trustRemote = true }
}

// WithMetaPropagation carries the trace context in a "_meta" object in
// the params too, as MCP's SEP-414 proposes, with members such as
// "traceparent" and "tracestate": the interceptor adds them to params that
// are a JSON object (params that are an array, or none, are left alone),
// keeping the other members of a _meta already there, and the middleware
// reads them, preferring them to the HTTP headers. The member is found by
// its exact name, the last of duplicates as encoding/json takes it; the
// other members of the params are neither decoded nor copied, and keep
// their bytes and order. When the context of a
// call holds a local span already (HTTP instrumentation's, say), that
// span stays the parent of the server's span, which is linked to the
// context in _meta.
func WithMetaPropagation() Option {
	return func(c *config) { c.meta = true }
}

// WithNetwork describes the connection that calls travel on when they do
// not go over HTTP, as the arguments of net.Dial or net.Listen do:
// network is "tcp" (or "tcp4", "tcp6"), "unix", or "pipe" (for stdio and
// other pipes), and address is "host:port", a socket's path, or "". It
// sets network.transport, server.address and server.port. Calls over HTTP
// need none of it: a server's span reads the request's Host, and a
// client the URL of its [jsonrpc.HTTPClient] (see [jsonrpc.HTTPURL]),
// which take the place of address there. The server's duration histogram
// leaves the Host off, which the client chooses, and has address, if
// given, instead.
func WithNetwork(network, address string) Option {
	return func(c *config) { c.network, c.address = network, address }
}

// New returns a Telemetry configured by opts.
//
// Without WithTracerProvider and WithMeterProvider it uses the global
// providers, as they are at each call: calls are traced and measured once
// the global providers are set, even after New. Until then, and with
// no-op providers, calls pass through at the cost of two checks.
func New(opts ...Option) *Telemetry {
	var c config
	for _, o := range opts {
		o(&c)
	}
	t := &Telemetry{filter: c.filter, trustRemote: c.trustRemote, meta: c.meta, prop: c.prop}
	if c.tp == nil {
		c.tp = otel.GetTracerProvider()
		if isGlobalStandIn(c.tp) {
			t.unsetTrace = c.tp
		}
	}
	if _, ok := c.tp.(tracenoop.TracerProvider); ok {
		t.tracerOff = true
	}
	if c.mp == nil {
		c.mp = otel.GetMeterProvider()
	}
	if _, ok := c.mp.(metricnoop.MeterProvider); ok {
		t.metricsOff = true
	}
	if t.prop == nil {
		t.prop = otel.GetTextMapPropagator()
	}
	t.tracer = c.tp.Tracer(instrumentationName)
	meter := c.mp.Meter(instrumentationName)
	server, err := rpcconv.NewServerCallDuration(meter, metric.WithExplicitBucketBoundaries(durationBuckets...))
	if err != nil {
		otel.Handle(err)
	}
	client, err := rpcconv.NewClientCallDuration(meter, metric.WithExplicitBucketBoundaries(durationBuckets...))
	if err != nil {
		otel.Handle(err)
	}
	t.serverDur, t.clientDur = server.Inst(), client.Inst()
	if t.serverDur == nil {
		t.serverDur = metricnoop.Float64Histogram{}
	}
	if t.clientDur == nil {
		t.clientDur = metricnoop.Float64Histogram{}
	}

	switch c.network {
	case "tcp", "tcp4", "tcp6":
		t.transport = "tcp"
	case "unix", "unixgram", "unixpacket":
		t.transport = "unix"
	case "udp", "udp4", "udp6":
		t.transport = "udp"
	default:
		t.transport = c.network
	}
	if t.transport == "unix" {
		t.address = c.address
	} else {
		t.address, t.port = splitHostPort(c.address)
	}
	return t
}

// isGlobalStandIn reports whether tp is what otel.GetTracerProvider
// returns before a provider has been set: a stand-in of OpenTelemetry's
// internal package, which forwards to the provider set later. Its spans
// cost allocations and record nothing, so calls skip them while it stays
// the global provider. (Should that package move, the check fails safe:
// calls are traced through the stand-in.)
func isGlobalStandIn(tp trace.TracerProvider) bool {
	t := reflect.TypeOf(tp)
	return t != nil && t.Kind() == reflect.Pointer && t.Elem().PkgPath() == "go.opentelemetry.io/otel/internal/global"
}

// tracing reports whether calls are traced now.
func (t *Telemetry) tracing() bool {
	return !t.tracerOff && (t.unsetTrace == nil || otel.GetTracerProvider() != t.unsetTrace)
}

// off reports whether the Telemetry can never trace or measure, whatever
// is set later.
func (t *Telemetry) off() bool { return t.tracerOff && t.metricsOff }

// splitHostPort splits "host:port", or returns address alone.
func splitHostPort(address string) (string, int) {
	host, port, err := net.SplitHostPort(address)
	if err != nil {
		return address, 0
	}
	p, err := strconv.Atoi(port)
	if err != nil || p < 0 {
		return host, 0
	}
	return host, p
}
