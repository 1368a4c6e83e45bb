package jsonrpcotel_test

import (
	"bytes"
	"context"
	"encoding/json"
	"iter"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"

	"github.com/ndjsonrpc/jsonrpc"
	jsonrpcotel "github.com/ndjsonrpc/jsonrpc/otel"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metricnoop "go.opentelemetry.io/otel/metric/noop"
	"go.opentelemetry.io/otel/trace"
	tracenoop "go.opentelemetry.io/otel/trace/noop"
)

// Without WithTrustRemote, a server starts a trace of its own, linked to
// the caller's span.
func TestUntrustedRemoteIsLinked(t *testing.T) {
	tel := newTelemetry(t)
	mux := newMux()
	mux.Use(tel.with().Middleware())
	ts := httptest.NewServer(&jsonrpc.Server{Options: jsonrpc.Options{Handler: mux}})
	client := &jsonrpc.HTTPClient{URL: ts.URL, Interceptors: []jsonrpc.Interceptor{tel.with().Interceptor()}}
	var sum int
	require.NoError(t, client.Call(t.Context(), "add", []int{2, 3}, &sum))
	ts.Close()

	cs := tel.span(t, trace.SpanKindClient, "add")
	ss := tel.span(t, trace.SpanKindServer, "add")
	assert.False(t, ss.Parent.IsValid(), "the server span has no parent")
	assert.NotEqual(t, cs.SpanContext.TraceID(), ss.SpanContext.TraceID())
	require.Len(t, ss.Links, 1)
	assert.Equal(t, cs.SpanContext.TraceID(), ss.Links[0].SpanContext.TraceID())
	assert.Equal(t, cs.SpanContext.SpanID(), ss.Links[0].SpanContext.SpanID())
}

// The interceptor adds the trace context to the _meta of object params,
// keeping the members there, and leaves array params alone.
func TestMetaPropagation(t *testing.T) {
	tel := newTelemetry(t)
	seen := make(chan json.RawMessage, 2)
	mux := new(jsonrpc.Mux)
	mux.HandleFunc("see", func(_ context.Context, req *jsonrpc.Request) (any, error) {
		seen <- bytes.Clone(req.Params)
		return nil, nil
	})
	cli := tel.with(jsonrpcotel.WithMetaPropagation())
	c, stop := pipeTransport(t, mux, cli.Interceptor())
	ctx := t.Context()
	require.NoError(t, c.Call(ctx, "see", map[string]any{"a": "<b>", "_meta": map[string]any{"progressToken": 7}}, nil))
	require.NoError(t, c.Call(ctx, "see", []int{1, 2}, nil))
	stop()

	var got struct {
		A    string `json:"a"`
		Meta struct {
			ProgressToken int    `json:"progressToken"`
			Traceparent   string `json:"traceparent"`
		} `json:"_meta"`
	}
	first := <-seen
	require.NoError(t, json.Unmarshal(first, &got))
	assert.Equal(t, "<b>", got.A)
	assert.Equal(t, 7, got.Meta.ProgressToken)
	var sc trace.SpanContext
	for _, s := range tel.spans.GetSpans() {
		if s.SpanKind == trace.SpanKindClient && s.Name == "see" {
			sc = s.SpanContext
			break
		}
	}
	assert.Equal(t, "00-"+sc.TraceID().String()+"-"+sc.SpanID().String()+"-01", got.Meta.Traceparent)
	assert.JSONEq(t, `[1,2]`, string(<-seen))
}

// jsonrpc.request.id is the id without JSON quotes, and is left out for
// notifications and null ids.
func TestRequestID(t *testing.T) {
	tel := newTelemetry(t)
	in := strings.Join([]string{
		`{"jsonrpc":"2.0","id":"req-7","method":"log"}`,
		`{"jsonrpc":"2.0","id":"a\"b","method":"log"}`,
		`{"jsonrpc":"2.0","id":-3,"method":"log"}`,
		`{"jsonrpc":"2.0","id":null,"method":"log"}`,
		`{"jsonrpc":"2.0","method":"log"}`,
	}, "\n") + "\n"
	var out bytes.Buffer
	require.NoError(t, jsonrpc.Serve(t.Context(), strings.NewReader(in), &out, tel.with().Handler(newMux())))

	var ids []any
	for _, s := range tel.spans.GetSpans() {
		ids = append(ids, attrs(s.Attributes)["jsonrpc.request.id"])
	}
	assert.ElementsMatch(t, []any{"req-7", `a"b`, "-3", nil, nil}, ids)
}

// A filter leaves the calls it refuses untraced and unmeasured.
func TestFilter(t *testing.T) {
	tel := newTelemetry(t)
	skipLog := jsonrpcotel.WithFilter(func(_ context.Context, req *jsonrpc.Request) bool { return req.Method != "log" })
	mux := newMux()
	mux.Use(tel.with(skipLog).Middleware())
	c, stop := pipeTransport(t, mux, tel.with(skipLog).Interceptor())
	require.NoError(t, c.Notify(t.Context(), "log", nil))
	require.NoError(t, c.Call(t.Context(), "add", []int{1, 1}, nil))
	stop()

	var names []string
	for _, s := range tel.spans.GetSpans() {
		names = append(names, s.SpanKind.String()+" "+s.Name)
	}
	assert.ElementsMatch(t, []string{"client add", "server add"}, names)
	for _, dp := range tel.histogram(t, "rpc.server.call.duration") {
		assert.Equal(t, "add", attrs(dp.Attributes.ToSlice())["rpc.method"])
	}
}

type plainHandler struct{}

func (*plainHandler) ServeJSONRPC(context.Context, *jsonrpc.Request) (any, error) { return nil, nil }

// With no-op providers, the middleware, Handler and the interceptor hand
// back what they were given.
func TestNoopProvidersAddNothing(t *testing.T) {
	tel := jsonrpcotel.New(
		jsonrpcotel.WithTracerProvider(tracenoop.NewTracerProvider()),
		jsonrpcotel.WithMeterProvider(metricnoop.NewMeterProvider()))
	h := &plainHandler{}
	assert.Same(t, h, tel.Middleware()(h))
	assert.Same(t, h, tel.Handler(h))
	next := jsonrpc.SendFunc(func(context.Context, *jsonrpc.Request) (json.RawMessage, error) { return nil, nil })
	assert.Equal(t, reflect.ValueOf(next).Pointer(), reflect.ValueOf(tel.Interceptor()(next)).Pointer())
}

// A stream's handler, wrapped, still streams, and its call is one span
// on each side.
func TestStream(t *testing.T) {
	tel := newTelemetry(t)
	mux := new(jsonrpc.Mux)
	mux.Use(tel.with(jsonrpcotel.WithTrustRemote(), jsonrpcotel.WithMetaPropagation()).Middleware())
	mux.Handle("count", jsonrpc.Stream(func(_ context.Context, p struct{ N int }) iter.Seq2[int, error] {
		return func(yield func(int, error) bool) {
			for i := range p.N {
				if !yield(i, nil) {
					return
				}
			}
		}
	}))
	c, stop := pipeTransport(t, mux, tel.with(jsonrpcotel.WithMetaPropagation()).Interceptor())
	var got []string
	for item, err := range c.(*jsonrpc.Conn).Stream(t.Context(), "count", map[string]int{"N": 3}) {
		require.NoError(t, err)
		got = append(got, string(item))
	}
	stop()
	assert.Equal(t, []string{"0", "1", "2"}, got)
	cs := tel.span(t, trace.SpanKindClient, "count")
	ss := tel.span(t, trace.SpanKindServer, "count")
	assert.Equal(t, cs.SpanContext.SpanID(), ss.Parent.SpanID())
}

// With WithMetaPropagation, a local span already in the context (that of
// HTTP instrumentation) stays the parent of the server's span, trusted
// or not: the caller's context in _meta is linked, not made the parent.
func TestMetaUnderLocalSpan(t *testing.T) {
	for _, tc := range []struct {
		name string
		opts []jsonrpcotel.Option
	}{
		{"untrusted", []jsonrpcotel.Option{jsonrpcotel.WithMetaPropagation()}},
		{"trusted", []jsonrpcotel.Option{jsonrpcotel.WithMetaPropagation(), jsonrpcotel.WithTrustRemote()}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tel := newTelemetry(t)
			mux := newMux()
			mux.Use(tel.with(tc.opts...).Middleware())
			var local trace.SpanContext
			srv := &jsonrpc.Server{Options: jsonrpc.Options{Handler: mux}}
			ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				ctx, span := tel.tp.Tracer("http").Start(r.Context(), "POST", trace.WithSpanKind(trace.SpanKindServer))
				defer span.End()
				local = span.SpanContext()
				srv.ServeHTTP(w, r.WithContext(ctx))
			}))
			body := `{"jsonrpc":"2.0","id":1,"method":"log","params":{"_meta":{"traceparent":"00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"}}}`
			resp, err := http.Post(ts.URL, "application/json", strings.NewReader(body))
			require.NoError(t, err)
			resp.Body.Close()
			ts.Close()

			ss := tel.span(t, trace.SpanKindServer, "log")
			assert.Equal(t, local.TraceID(), ss.Parent.TraceID())
			assert.Equal(t, local.SpanID(), ss.Parent.SpanID())
			require.Len(t, ss.Links, 1)
			assert.Equal(t, "0af7651916cd43dd8448eb211c80319c", ss.Links[0].SpanContext.TraceID().String())
			assert.Equal(t, "b7ad6b7169203331", ss.Links[0].SpanContext.SpanID().String())
		})
	}
}

// The trace context is read from the params' "_meta" member, the one
// the interceptor writes: JSON member names are case-sensitive, so a
// "_META" or "_Meta" member is not it, and must neither give the server
// span its parent nor override what "_meta" says.
func TestMetaMemberIsCaseSensitive(t *testing.T) {
	const (
		metaTrace  = "0af7651916cd43dd8448eb211c80319c"
		otherTrace = "1af7651916cd43dd8448eb211c80319c"
		tp         = "00-%s-b7ad6b7169203331-01"
	)
	tel := newTelemetry(t)
	mux := new(jsonrpc.Mux)
	mux.HandleFunc("only_upper", func(context.Context, *jsonrpc.Request) (any, error) { return nil, nil })
	mux.HandleFunc("both", func(context.Context, *jsonrpc.Request) (any, error) { return nil, nil })
	mux.Use(tel.with(jsonrpcotel.WithMetaPropagation(), jsonrpcotel.WithTrustRemote()).Middleware())
	in := `{"jsonrpc":"2.0","id":1,"method":"only_upper","params":{"_META":{"traceparent":"` + strings.Replace(tp, "%s", otherTrace, 1) + `"}}}` + "\n" +
		`{"jsonrpc":"2.0","id":2,"method":"both","params":{"_meta":{"traceparent":"` + strings.Replace(tp, "%s", metaTrace, 1) + `"},"_Meta":{"traceparent":"` + strings.Replace(tp, "%s", otherTrace, 1) + `"}}}` + "\n"
	var out strings.Builder
	require.NoError(t, jsonrpc.Serve(t.Context(), strings.NewReader(in), &out, mux))

	upper := tel.span(t, trace.SpanKindServer, "only_upper")
	assert.False(t, upper.Parent.IsValid(), "a _META member gave the span a parent: %s", upper.Parent.TraceID())
	both := tel.span(t, trace.SpanKindServer, "both")
	assert.Equal(t, metaTrace, both.Parent.TraceID().String(), "the parent comes from _meta")
}
