package jsonrpcotel_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http/httptest"
	"net/url"
	"strconv"
	"testing"

	"github.com/ndjsonrpc/jsonrpc"
	jsonrpcotel "github.com/ndjsonrpc/jsonrpc/otel"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
)

// telemetry holds an SDK whose spans and metrics a test reads.
type telemetry struct {
	spans  *tracetest.InMemoryExporter
	reader *sdkmetric.ManualReader
	tp     *sdktrace.TracerProvider
	mp     *sdkmetric.MeterProvider
}

func newTelemetry(t testing.TB) *telemetry {
	spans := tracetest.NewInMemoryExporter()
	reader := sdkmetric.NewManualReader()
	tel := &telemetry{
		spans:  spans,
		reader: reader,
		tp:     sdktrace.NewTracerProvider(sdktrace.WithSyncer(spans)),
		mp:     sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader)),
	}
	t.Cleanup(func() {
		_ = tel.tp.Shutdown(context.Background())
		_ = tel.mp.Shutdown(context.Background())
	})
	return tel
}

// with returns a Telemetry on tel's providers, with W3C Trace Context.
func (tel *telemetry) with(opts ...jsonrpcotel.Option) *jsonrpcotel.Telemetry {
	return jsonrpcotel.New(append([]jsonrpcotel.Option{
		jsonrpcotel.WithTracerProvider(tel.tp),
		jsonrpcotel.WithMeterProvider(tel.mp),
		jsonrpcotel.WithPropagators(propagation.TraceContext{}),
	}, opts...)...)
}

// span returns the one span of kind for a call of method (its
// rpc.method or rpc.method_original), failing if there is not exactly
// one.
func (tel *telemetry) span(t *testing.T, kind trace.SpanKind, method string) tracetest.SpanStub {
	t.Helper()
	var found []tracetest.SpanStub
	for _, s := range tel.spans.GetSpans() {
		a := attrs(s.Attributes)
		if s.SpanKind == kind && (a["rpc.method"] == method || a["rpc.method_original"] == method) {
			found = append(found, s)
		}
	}
	require.Len(t, found, 1, "%s spans of %q", kind, method)
	return found[0]
}

// histogram returns the data points of the histogram called name.
func (tel *telemetry) histogram(t *testing.T, name string) []metricdata.HistogramDataPoint[float64] {
	t.Helper()
	var rm metricdata.ResourceMetrics
	require.NoError(t, tel.reader.Collect(context.Background(), &rm))
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			if m.Name == name {
				assert.Equal(t, "s", m.Unit)
				h, ok := m.Data.(metricdata.Histogram[float64])
				require.True(t, ok, "%s is a %T", name, m.Data)
				return h.DataPoints
			}
		}
	}
	t.Fatalf("no histogram %s", name)
	return nil
}

// attrs returns kvs as a map, for comparing them all at once.
func attrs(kvs []attribute.KeyValue) map[string]any {
	m := make(map[string]any, len(kvs))
	for _, kv := range kvs {
		m[string(kv.Key)] = kv.Value.AsInterface()
	}
	return m
}

// merge returns the union of maps, the last winning.
func merge(ms ...map[string]any) map[string]any {
	out := map[string]any{}
	for _, m := range ms {
		for k, v := range m {
			out[k] = v
		}
	}
	return out
}

// newMux returns the methods of the tests: add, fail (a JSON-RPC error),
// boom (a Go error), gone (a handler that answers Method not found) and
// log (for notifications).
func newMux() *jsonrpc.Mux {
	mux := new(jsonrpc.Mux)
	mux.Handle("add", jsonrpc.Func(func(_ context.Context, p [2]int) (int, error) {
		return p[0] + p[1], nil
	}))
	mux.HandleFunc("fail", func(context.Context, *jsonrpc.Request) (any, error) {
		return nil, &jsonrpc.Error{Code: 42, Message: "no luck"}
	})
	mux.HandleFunc("boom", func(context.Context, *jsonrpc.Request) (any, error) {
		return nil, errBoom
	})
	mux.HandleFunc("gone", func(context.Context, *jsonrpc.Request) (any, error) {
		return nil, jsonrpc.ErrMethodNotFound
	})
	mux.HandleFunc("log", func(context.Context, *jsonrpc.Request) (any, error) { return nil, nil })
	return mux
}

var errBoom = errors.New("boom")

// pipeTransport serves handler over a pair of pipes to a Conn with ic;
// stop closes the client's end, and waits for Serve and its handlers.
func pipeTransport(t *testing.T, handler jsonrpc.Handler, ic jsonrpc.Interceptor) (jsonrpc.Caller, func()) {
	serverIn, clientOut := io.Pipe()
	clientIn, serverOut := io.Pipe()
	served := make(chan error, 1)
	go func() {
		served <- jsonrpc.Serve(context.Background(), serverIn, serverOut, handler)
		serverOut.Close()
	}()
	client := jsonrpc.NewConn(clientIn, clientOut, &jsonrpc.Options{Interceptors: []jsonrpc.Interceptor{ic}})
	return client, func() {
		clientOut.Close() // the server sees EOF, and returns once its handlers have
		require.NoError(t, <-served)
		client.Close()
	}
}

func listen(t *testing.T) net.Listener {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	return l
}

// socketTransport serves handler on l to a Conn with ic; stop closes
// the client and shuts the server down, which waits for its handlers.
func socketTransport(t *testing.T, l net.Listener, handler jsonrpc.Handler, ic jsonrpc.Interceptor) (jsonrpc.Caller, func()) {
	srv := &jsonrpc.Server{Options: jsonrpc.Options{Handler: handler}}
	served := make(chan error, 1)
	go func() { served <- srv.ServeListener(context.Background(), l) }()
	client, err := jsonrpc.Dial(t.Context(), "tcp", l.Addr().String(), &jsonrpc.Options{Interceptors: []jsonrpc.Interceptor{ic}})
	require.NoError(t, err)
	return client, func() {
		client.Close()
		require.NoError(t, srv.Shutdown(context.Background())) // waits for the handlers
		require.ErrorIs(t, <-served, jsonrpc.ErrServerClosed)
	}
}

// call makes the calls every transport is tested with, in this order:
// add (id 1), fail (2), boom (3), the notification log, missing (4),
// gone (5). The params of fail, boom and log are objects, which can carry
// _meta (boom's has one already); those of add are an array, and missing
// and gone have none.
func call(t *testing.T, c jsonrpc.Caller) {
	t.Helper()
	ctx := t.Context()
	var sum int
	require.NoError(t, c.Call(ctx, "add", []int{1, 2}, &sum))
	assert.Equal(t, 3, sum)
	var e *jsonrpc.Error
	require.ErrorAs(t, c.Call(ctx, "fail", map[string]any{}, nil), &e)
	assert.Equal(t, jsonrpc.Code(42), e.Code)
	require.ErrorAs(t, c.Call(ctx, "boom", map[string]any{"_meta": map[string]string{"progressToken": "p1"}}, nil), &e)
	assert.Equal(t, jsonrpc.CodeInternalError, e.Code)
	require.NoError(t, c.Notify(ctx, "log", map[string]any{"line": "done"}))
	require.ErrorIs(t, c.Call(ctx, "missing", nil, nil), jsonrpc.ErrMethodNotFound)
	require.ErrorIs(t, c.Call(ctx, "gone", nil, nil), jsonrpc.ErrMethodNotFound)
}

// network returns the attributes of a transport.
func network(transport, address string, port int, http string) map[string]any {
	m := map[string]any{"network.transport": transport}
	if http != "" {
		m["network.protocol.name"] = "http"
		if http != "-" {
			m["network.protocol.version"] = http
		}
	}
	if address != "" {
		m["server.address"] = address
	}
	if port != 0 {
		m["server.port"] = int64(port)
	}
	return m
}

// TestEndToEnd makes the same calls over a pipe, a TCP socket and HTTP,
// and checks every span's attributes, the link between client and server
// spans, and the duration histograms.
func TestEndToEnd(t *testing.T) {
	base := func(method string) map[string]any {
		return map[string]any{
			"rpc.system.name":          "jsonrpc",
			"jsonrpc.protocol.version": "2.0",
			"rpc.method":               method,
		}
	}
	id := func(s string) map[string]any { return map[string]any{"jsonrpc.request.id": s} }
	rpcErr := func(code string) map[string]any {
		return map[string]any{"rpc.response.status_code": code, "error.type": code}
	}

	type setup struct {
		name string
		// run makes the calls; it returns the network attributes of the
		// client's spans and of the server's, and whether the server
		// wraps the whole Mux (and so sees unknown methods).
		run func(t *testing.T, tel *telemetry) (client, server map[string]any, whole bool)
		// meta says that the context goes in _meta, so only in object
		// params.
		meta bool
	}
	setups := []setup{
		{"pipe, _meta, Handler", func(t *testing.T, tel *telemetry) (map[string]any, map[string]any, bool) {
			srv := tel.with(jsonrpcotel.WithTrustRemote(), jsonrpcotel.WithMetaPropagation(), jsonrpcotel.WithNetwork("pipe", ""))
			cli := tel.with(jsonrpcotel.WithMetaPropagation(), jsonrpcotel.WithNetwork("pipe", ""))
			c, stop := pipeTransport(t, srv.Handler(newMux()), cli.Interceptor())
			call(t, c)
			stop()
			n := network("pipe", "", 0, "")
			return n, n, true
		}, true},
		{"socket, _meta, Middleware", func(t *testing.T, tel *telemetry) (map[string]any, map[string]any, bool) {
			l := listen(t)
			addr := l.Addr().(*net.TCPAddr)
			srv := tel.with(jsonrpcotel.WithTrustRemote(), jsonrpcotel.WithMetaPropagation(), jsonrpcotel.WithNetwork("tcp", l.Addr().String()))
			cli := tel.with(jsonrpcotel.WithMetaPropagation(), jsonrpcotel.WithNetwork("tcp", l.Addr().String()))
			mux := newMux()
			mux.Use(srv.Middleware())
			c, stop := socketTransport(t, l, mux, cli.Interceptor())
			call(t, c)
			stop()
			n := network("tcp", "127.0.0.1", addr.Port, "")
			return n, n, false
		}, true},
		{"HTTP, headers, Middleware", func(t *testing.T, tel *telemetry) (map[string]any, map[string]any, bool) {
			srv := tel.with(jsonrpcotel.WithTrustRemote())
			mux := newMux()
			mux.Use(srv.Middleware())
			ts := httptest.NewServer(&jsonrpc.Server{Options: jsonrpc.Options{Handler: mux}})
			u, err := url.Parse(ts.URL)
			require.NoError(t, err)
			cli := tel.with() // server.address and server.port from the HTTPClient's URL
			call(t, &jsonrpc.HTTPClient{URL: ts.URL, Interceptors: []jsonrpc.Interceptor{cli.Interceptor()}})
			ts.Close() // waits for the handlers
			h, p, err := net.SplitHostPort(u.Host)
			require.NoError(t, err)
			port, err := strconv.Atoi(p)
			require.NoError(t, err)
			return network("tcp", h, port, "-"), network("tcp", h, port, "1.1"), false
		}, false},
	}
	for _, s := range setups {
		t.Run(s.name, func(t *testing.T) {
			tel := newTelemetry(t)
			clientNet, serverNet, _ := s.run(t, tel)

			type want struct {
				method   string // the call's
				name     string // the server span's
				attrs    map[string]any
				srvAttrs map[string]any // the server's, when they differ
				code     codes.Code
				object   bool // the params are an object
			}
			wants := []want{
				{method: "add", name: "add", attrs: merge(base("add"), id("1"))},
				{method: "fail", name: "fail", attrs: merge(base("fail"), id("2"), rpcErr("42")), code: codes.Error, object: true},
				{method: "boom", name: "boom", attrs: merge(base("boom"), id("3"), rpcErr("-32603")),
					srvAttrs: merge(base("boom"), id("3"), map[string]any{"rpc.response.status_code": "-32603", "error.type": "*errors.errorString"}), code: codes.Error, object: true},
				{method: "log", name: "log", attrs: base("log"), object: true}, // a notification: no id
				{method: "missing", name: "jsonrpc", attrs: merge(base("missing"), id("4"), rpcErr("-32601")),
					srvAttrs: merge(base("_OTHER"), id("4"), rpcErr("-32601"), map[string]any{"rpc.method_original": "missing"}), code: codes.Error},
				{method: "gone", name: "jsonrpc", attrs: merge(base("gone"), id("5"), rpcErr("-32601")),
					srvAttrs: merge(base("_OTHER"), id("5"), rpcErr("-32601"), map[string]any{"rpc.method_original": "gone"}), code: codes.Error},
			}
			for _, w := range wants {
				cs := tel.span(t, trace.SpanKindClient, w.method)
				assert.Equal(t, merge(w.attrs, clientNet), attrs(cs.Attributes), "client span of %s", w.method)
				assert.Equal(t, w.code, cs.Status.Code, "client span of %s", w.method)
				ss := tel.span(t, trace.SpanKindServer, w.method)
				assert.Equal(t, w.name, ss.Name)
				assert.Equal(t, w.method, cs.Name)
				srvAttrs := w.attrs
				if w.srvAttrs != nil {
					srvAttrs = w.srvAttrs
				}
				assert.Equal(t, merge(srvAttrs, serverNet), attrs(ss.Attributes), "server span of %s", w.method)
				assert.Equal(t, w.code, ss.Status.Code, "server span of %s", w.method)
				if s.meta && !w.object {
					// No _meta: the server's span starts a trace.
					assert.False(t, ss.Parent.IsValid(), "parent of %s", w.method)
					assert.NotEqual(t, cs.SpanContext.TraceID(), ss.SpanContext.TraceID(), "trace of %s", w.method)
					continue
				}
				// One trace: the server's span is the child of the
				// client's.
				assert.Equal(t, cs.SpanContext.TraceID(), ss.SpanContext.TraceID(), "trace of %s", w.method)
				assert.Equal(t, cs.SpanContext.SpanID(), ss.Parent.SpanID(), "parent of %s", w.method)
				assert.True(t, ss.Parent.IsRemote())
			}

			// The histograms: one measurement per call, with the span's
			// attributes but for the id and the method sent.
			wantServer := map[string]uint64{"add": 1, "fail": 1, "boom": 1, "log": 1, "_OTHER": 2}
			for _, side := range []struct {
				name   string
				net    map[string]any
				counts map[string]uint64
			}{
				{"rpc.server.call.duration", serverNet, wantServer},
				{"rpc.client.call.duration", clientNet, map[string]uint64{"add": 1, "fail": 1, "boom": 1, "log": 1, "missing": 1, "gone": 1}},
			} {
				counts := map[string]uint64{}
				for _, dp := range tel.histogram(t, side.name) {
					a := attrs(dp.Attributes.ToSlice())
					method, _ := a["rpc.method"].(string)
					counts[method] += dp.Count
					assert.Equal(t, []float64{0.005, 0.01, 0.025, 0.05, 0.075, 0.1, 0.25, 0.5, 0.75, 1, 2.5, 5, 7.5, 10}, dp.Bounds)
					switch method {
					case "add", "log":
						assert.Equal(t, merge(base(method), side.net), a, "%s of %s", side.name, method)
					case "fail":
						assert.Equal(t, merge(base(method), rpcErr("42"), side.net), a, "%s of %s", side.name, method)
					}
				}
				assert.Equal(t, side.counts, counts, side.name)
			}
		})
	}
}

// TestHTTPClientTarget checks the server.address and server.port of an
// HTTPClient's calls, from its URL alone, where the URL gives no port
// and where WithNetwork says otherwise. An interceptor after the
// Telemetry's answers the calls, so that none is sent.
func TestHTTPClientTarget(t *testing.T) {
	local := func(jsonrpc.SendFunc) jsonrpc.SendFunc {
		return func(context.Context, *jsonrpc.Request) (json.RawMessage, error) {
			return json.RawMessage(`1`), nil
		}
	}
	for _, tc := range []struct {
		name, url string
		opts      []jsonrpcotel.Option
		address   string
		port      int64
	}{
		{"https without a port", "https://rpc.example.com/v1", nil, "rpc.example.com", 443},
		{"http without a port", "http://rpc.example.com", nil, "rpc.example.com", 80},
		{"IPv6 with a port", "http://[::1]:8545/", nil, "::1", 8545},
		{"the URL over WithNetwork", "http://a.example:81/", []jsonrpcotel.Option{jsonrpcotel.WithNetwork("tcp", "b.example:82")}, "a.example", 81},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tel := newTelemetry(t)
			c := &jsonrpc.HTTPClient{URL: tc.url, Interceptors: []jsonrpc.Interceptor{tel.with(tc.opts...).Interceptor(), local}}
			for range 2 { // the second through the remembered URL
				require.NoError(t, c.Call(t.Context(), "add", nil, nil))
			}
			require.NoError(t, c.Notify(t.Context(), "log", nil))
			spans := tel.spans.GetSpans()
			require.Len(t, spans, 3)
			for _, s := range spans {
				a := attrs(s.Attributes)
				assert.Equal(t, tc.address, a["server.address"], s.Name)
				assert.Equal(t, tc.port, a["server.port"], s.Name)
				assert.Equal(t, "tcp", a["network.transport"], s.Name)
			}
		})
	}
}
