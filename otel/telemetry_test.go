package jsonrpcotel_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"math"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
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
	clientIn, clientOut, wait := servePipe(t, handler)
	client := jsonrpc.NewConn(clientIn, clientOut, &jsonrpc.Options{Interceptors: []jsonrpc.Interceptor{ic}})
	return client, func() {
		wait()
		client.Close()
	}
}

// servePipe serves handler over a pair of pipes, whose client ends it
// returns; wait closes the client's output, so that the server sees EOF,
// and checks that it returned without error once its handlers had.
func servePipe(t *testing.T, handler jsonrpc.Handler) (clientIn io.Reader, clientOut io.WriteCloser, wait func()) {
	serverIn, clientOut := io.Pipe()
	clientIn, serverOut := io.Pipe()
	served := make(chan error, 1)
	go func() {
		served <- jsonrpc.Serve(context.Background(), serverIn, serverOut, handler)
		serverOut.Close()
	}()
	return clientIn, clientOut, func() {
		clientOut.Close()
		require.NoError(t, <-served)
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
		// client's spans and of the server's, and those of the server's
		// histogram, which leaves off the Host of an HTTP request.
		run func(t *testing.T, tel *telemetry) (client, server, serverMetric map[string]any)
		// meta says that the context goes in _meta, so only in object
		// params.
		meta bool
	}
	setups := []setup{
		{"pipe, _meta, Handler", func(t *testing.T, tel *telemetry) (map[string]any, map[string]any, map[string]any) {
			srv := tel.with(jsonrpcotel.WithTrustRemote(), jsonrpcotel.WithMetaPropagation(), jsonrpcotel.WithNetwork("pipe", ""))
			cli := tel.with(jsonrpcotel.WithMetaPropagation(), jsonrpcotel.WithNetwork("pipe", ""))
			c, stop := pipeTransport(t, srv.Handler(newMux()), cli.Interceptor())
			call(t, c)
			stop()
			n := network("pipe", "", 0, "")
			return n, n, n
		}, true},
		{"socket, _meta, Middleware", func(t *testing.T, tel *telemetry) (map[string]any, map[string]any, map[string]any) {
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
			return n, n, n
		}, true},
		{"HTTP, headers, Middleware", func(t *testing.T, tel *telemetry) (map[string]any, map[string]any, map[string]any) {
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
			return network("tcp", h, port, "-"), network("tcp", h, port, "1.1"), network("tcp", "", 0, "1.1")
		}, false},
	}
	for _, s := range setups {
		t.Run(s.name, func(t *testing.T) {
			tel := newTelemetry(t)
			clientNet, serverNet, serverMetricNet := s.run(t, tel)

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
			// attributes but for the id, the method sent, and the
			// server's address and port from an HTTP request's Host.
			wantServer := map[string]uint64{"add": 1, "fail": 1, "boom": 1, "log": 1, "_OTHER": 2}
			for _, side := range []struct {
				name   string
				net    map[string]any
				counts map[string]uint64
			}{
				{"rpc.server.call.duration", serverMetricNet, wantServer},
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

// A handler that panics ends its call as failed, as the server answers
// it (-32603), with error.type "panic": through the middleware around a
// HandlerFunc and around a RawHandlerFunc, and through Handler. The
// server still recovers the panic, and serves the next call.
func TestPanic(t *testing.T) {
	explode := func(context.Context, *jsonrpc.Request) (any, error) { panic("kaboom") }
	explodeRaw := func(context.Context, *jsonrpc.Request) (json.RawMessage, error) { panic("kaboom") }
	for _, tc := range []struct {
		name    string
		handler func(tel *jsonrpcotel.Telemetry) jsonrpc.Handler
	}{
		{"Middleware, HandlerFunc", func(tel *jsonrpcotel.Telemetry) jsonrpc.Handler {
			mux := newMux()
			mux.HandleFunc("explode", explode)
			mux.Use(tel.Middleware())
			return mux
		}},
		{"Middleware, RawHandlerFunc", func(tel *jsonrpcotel.Telemetry) jsonrpc.Handler {
			mux := newMux()
			mux.Handle("explode", jsonrpc.RawHandlerFunc(explodeRaw))
			mux.Use(tel.Middleware())
			return mux
		}},
		{"Handler", func(tel *jsonrpcotel.Telemetry) jsonrpc.Handler {
			mux := newMux()
			mux.HandleFunc("explode", explode)
			return tel.Handler(mux)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tel := newTelemetry(t)
			c, stop := pipeTransport(t, tc.handler(tel.with()), tel.with().Interceptor())
			var e *jsonrpc.Error
			require.ErrorAs(t, c.Call(t.Context(), "explode", nil, nil), &e)
			assert.Equal(t, jsonrpc.CodeInternalError, e.Code)
			require.NoError(t, c.Call(t.Context(), "add", []int{1, 2}, nil))
			stop()

			ss := tel.span(t, trace.SpanKindServer, "explode")
			a := attrs(ss.Attributes)
			assert.Equal(t, "panic", a["error.type"])
			assert.Equal(t, "-32603", a["rpc.response.status_code"])
			assert.Equal(t, codes.Error, ss.Status.Code)
			assert.Equal(t, "kaboom", ss.Status.Description)
			counts := map[string]uint64{}
			for _, dp := range tel.histogram(t, "rpc.server.call.duration") {
				a := attrs(dp.Attributes.ToSlice())
				key := a["rpc.method"].(string)
				if typ, ok := a["error.type"].(string); ok {
					key += " " + typ
				}
				counts[key] += dp.Count
			}
			assert.Equal(t, map[string]uint64{"explode panic": 1, "add": 1}, counts)
		})
	}
}

// The Host of an HTTP request, which the client chooses, gives the
// server span's server.address and server.port, but stays off the
// duration histogram: calls with distinct Hosts make one series. An IPv6
// literal loses its brackets, with a port or without ("[::1]", as Go's
// client sends for http://[::1]/), as on the client's span.
func TestHostOnSpanOnly(t *testing.T) {
	tel := newTelemetry(t)
	mux := newMux()
	mux.Use(tel.with().Middleware())
	ts := httptest.NewServer(&jsonrpc.Server{Options: jsonrpc.Options{Handler: mux}})
	defer ts.Close()
	hosts := []string{"a.example:1001", "b.example:1002", "c.example", "[::1]", "[::1]:8080"}
	for _, host := range hosts {
		req, err := http.NewRequest("POST", ts.URL, strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"add","params":[1,2]}`))
		require.NoError(t, err)
		req.Header.Set("Content-Type", "application/json")
		req.Host = host
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		resp.Body.Close()
		require.Equal(t, http.StatusOK, resp.StatusCode)
	}

	var got []string
	for _, s := range tel.spans.GetSpans() {
		a := attrs(s.Attributes)
		got = append(got, a["server.address"].(string)+" "+strconv.FormatInt(a["server.port"].(int64), 10))
	}
	assert.Equal(t, []string{"a.example 1001", "b.example 1002", "c.example 80", "::1 80", "::1 8080"}, got)
	dps := tel.histogram(t, "rpc.server.call.duration")
	require.Len(t, dps, 1, "series of rpc.server.call.duration")
	assert.Equal(t, uint64(len(hosts)), dps[0].Count)
	assert.Equal(t, merge(map[string]any{"rpc.system.name": "jsonrpc", "jsonrpc.protocol.version": "2.0", "rpc.method": "add"}, network("tcp", "", 0, "1.1")),
		attrs(dps[0].Attributes.ToSlice()))
}

// Calls of methods with no handler are recorded as rpc.method "_OTHER"
// even when a middleware inside the Telemetry's (here one that refuses
// them all) answers them before the Mux's ErrMethodNotFound: made-up
// method names make no series of their own.
func TestUnknownBehindMiddleware(t *testing.T) {
	unauthorized := &jsonrpc.Error{Code: -32001, Message: "Unauthorized"}
	for _, tc := range []struct {
		name string
		deny func(jsonrpc.Handler) jsonrpc.Handler
	}{
		{"HandlerFunc", func(jsonrpc.Handler) jsonrpc.Handler {
			return jsonrpc.HandlerFunc(func(context.Context, *jsonrpc.Request) (any, error) { return nil, unauthorized })
		}},
		{"RawHandlerFunc", func(jsonrpc.Handler) jsonrpc.Handler {
			return jsonrpc.RawHandlerFunc(func(context.Context, *jsonrpc.Request) (json.RawMessage, error) { return nil, unauthorized })
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tel := newTelemetry(t)
			mux := newMux()
			mux.Use(tel.with().Middleware(), tc.deny)
			c, stop := pipeTransport(t, mux, tel.with().Interceptor())
			for _, method := range []string{"made.up.1", "made.up.2", "add"} {
				require.ErrorIs(t, c.Call(t.Context(), method, nil, nil), unauthorized)
			}
			stop()

			ss := tel.span(t, trace.SpanKindServer, "made.up.1")
			assert.Equal(t, "jsonrpc", ss.Name)
			assert.Equal(t, "_OTHER", attrs(ss.Attributes)["rpc.method"])
			counts := map[string]uint64{}
			for _, dp := range tel.histogram(t, "rpc.server.call.duration") {
				counts[attrs(dp.Attributes.ToSlice())["rpc.method"].(string)] += dp.Count
			}
			assert.Equal(t, map[string]uint64{"_OTHER": 2, "add": 1}, counts)
		})
	}
}

// The server span's rpc.response.status_code is the code the server
// answers with: -32800 for an error with no code of its own when the
// peer cancelled the request, a *jsonrpc.Error's code whatever happened,
// and -32603 for a context.Canceled that the peer did not cause.
func TestCancelledStatusCode(t *testing.T) {
	for _, tc := range []struct {
		name     string
		cancel   bool // the peer cancels the call
		err      func(ctx context.Context) error
		wantCode string
		wantType string
	}{
		{"cancelled, ctx.Err()", true, func(ctx context.Context) error { return ctx.Err() }, "-32800", "context.Canceled"},
		{"cancelled, a Go error", true, func(context.Context) error { return errBoom }, "-32800", "*errors.errorString"},
		{"cancelled, a *jsonrpc.Error", true, func(context.Context) error { return &jsonrpc.Error{Code: 42, Message: "no luck"} }, "42", "42"},
		{"not cancelled, context.Canceled", false, func(context.Context) error { return context.Canceled }, "-32603", "context.Canceled"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tel := newTelemetry(t)
			started := make(chan struct{})
			mux := new(jsonrpc.Mux)
			mux.HandleFunc("wait", func(ctx context.Context, _ *jsonrpc.Request) (any, error) {
				if tc.cancel {
					close(started)
					<-ctx.Done()
				}
				return nil, tc.err(ctx)
			})
			mux.Use(tel.with().Middleware())
			clientIn, clientOut, wait := servePipe(t, mux)
			_, err := io.WriteString(clientOut, `{"jsonrpc":"2.0","id":7,"method":"wait","params":{}}`+"\n")
			require.NoError(t, err)
			if tc.cancel {
				<-started
				_, err = io.WriteString(clientOut, `{"jsonrpc":"2.0","method":"$/cancelRequest","params":{"id":7}}`+"\n")
				require.NoError(t, err)
			}
			line, err := bufio.NewReader(clientIn).ReadBytes('\n')
			require.NoError(t, err)
			wait()

			var resp struct{ Error jsonrpc.Error }
			require.NoError(t, json.Unmarshal(line, &resp))
			assert.Equal(t, tc.wantCode, strconv.Itoa(int(resp.Error.Code)), "the code answered")
			a := attrs(tel.span(t, trace.SpanKindServer, "wait").Attributes)
			assert.Equal(t, tc.wantCode, a["rpc.response.status_code"])
			assert.Equal(t, tc.wantType, a["error.type"])
		})
	}
}

// A notification whose handler fails gets no answer: its span and its
// measurement say the error's type, and no status code.
func TestFailedNotificationHasNoStatusCode(t *testing.T) {
	tel := newTelemetry(t)
	mux := new(jsonrpc.Mux)
	mux.HandleFunc("fail", func(context.Context, *jsonrpc.Request) (any, error) { return nil, errBoom })
	mux.Use(tel.with().Middleware())
	in := `{"jsonrpc":"2.0","method":"fail"}` + "\n"
	var out bytes.Buffer
	require.NoError(t, jsonrpc.Serve(t.Context(), strings.NewReader(in), &out, mux))
	assert.Empty(t, out.String(), "a notification is not answered")
	a := attrs(tel.span(t, trace.SpanKindServer, "fail").Attributes)
	assert.Equal(t, "*errors.errorString", a["error.type"])
	assert.NotContains(t, a, "rpc.response.status_code")
}

// A handler whose result the server cannot encode is answered with an
// Internal error (-32603): the server span and the histogram must say
// so, as for any other error the server answers with.
func TestUnencodableResultIsError(t *testing.T) {
	nan := func(context.Context, *jsonrpc.Request) (any, error) { return math.NaN(), nil }
	badRaw := func(context.Context, *jsonrpc.Request) (json.RawMessage, error) { return json.RawMessage(`{"a":`), nil }
	for _, tc := range []struct {
		name    string
		handler func(tel *jsonrpcotel.Telemetry) jsonrpc.Handler
	}{
		{"Middleware, HandlerFunc", func(tel *jsonrpcotel.Telemetry) jsonrpc.Handler {
			mux := new(jsonrpc.Mux)
			mux.HandleFunc("bad", nan)
			mux.Use(tel.Middleware())
			return mux
		}},
		{"Middleware, RawHandlerFunc", func(tel *jsonrpcotel.Telemetry) jsonrpc.Handler {
			mux := new(jsonrpc.Mux)
			mux.Handle("bad", jsonrpc.RawHandlerFunc(badRaw))
			mux.Use(tel.Middleware())
			return mux
		}},
		{"Handler", func(tel *jsonrpcotel.Telemetry) jsonrpc.Handler {
			mux := new(jsonrpc.Mux)
			mux.HandleFunc("bad", nan)
			return tel.Handler(mux)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tel := newTelemetry(t)
			clientIn, clientOut, wait := servePipe(t, tc.handler(tel.with()))
			_, err := io.WriteString(clientOut, `{"jsonrpc":"2.0","id":1,"method":"bad"}`+"\n")
			require.NoError(t, err)
			line, err := bufio.NewReader(clientIn).ReadBytes('\n')
			require.NoError(t, err)
			wait()

			var resp struct{ Error *jsonrpc.Error }
			require.NoError(t, json.Unmarshal(line, &resp))
			require.NotNil(t, resp.Error, "the server answers with an error: %s", line)
			require.Equal(t, jsonrpc.CodeInternalError, resp.Error.Code)

			ss := tel.span(t, trace.SpanKindServer, "bad")
			a := attrs(ss.Attributes)
			assert.Equal(t, codes.Error, ss.Status.Code, "span status")
			assert.Equal(t, "-32603", a["rpc.response.status_code"])
			assert.Contains(t, a, "error.type")
			dps := tel.histogram(t, "rpc.server.call.duration")
			require.Len(t, dps, 1)
			assert.Equal(t, "-32603", attrs(dps[0].Attributes.ToSlice())["rpc.response.status_code"])
		})
	}
}
