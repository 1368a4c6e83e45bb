package jsonrpcotel_test

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/ndjsonrpc/jsonrpc"
	jsonrpcotel "github.com/ndjsonrpc/jsonrpc/otel"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
)

// A handler whose result the server cannot encode is answered with an
// Internal error (-32603): the server span and the histogram must say
// so, as for any other error the server answers with.
func TestReviewUnencodableResultIsError(t *testing.T) {
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

// The trace context is read from the params' "_meta" member, the one
// the interceptor writes: JSON member names are case-sensitive, so a
// "_META" or "_Meta" member is not it, and must neither give the server
// span its parent nor override what "_meta" says.
func TestReviewMetaMemberIsCaseSensitive(t *testing.T) {
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

// server.address is a host name or an IP address: an IPv6 literal in a
// Host without a port ("[::1]", as Go's HTTP client sends for
// http://[::1]/) must lose its brackets, as it does with a port and on
// the client's span, which reads the URL.
func TestReviewIPv6HostWithoutPort(t *testing.T) {
	tel := newTelemetry(t)
	mux := newMux()
	mux.Use(tel.with().Middleware())
	ts := httptest.NewServer(&jsonrpc.Server{Options: jsonrpc.Options{Handler: mux}})
	defer ts.Close()
	for _, host := range []string{"[::1]", "[::1]:8080"} {
		req, err := http.NewRequest("POST", ts.URL, strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"add","params":[1,2]}`))
		require.NoError(t, err)
		req.Header.Set("Content-Type", "application/json")
		req.Host = host
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		resp.Body.Close()
		require.Equal(t, http.StatusOK, resp.StatusCode)
	}
	spans := tel.spans.GetSpans()
	require.Len(t, spans, 2)
	for i, want := range []int64{80, 8080} {
		a := attrs(spans[i].Attributes)
		assert.Equal(t, "::1", a["server.address"], "span %d", i)
		assert.Equal(t, want, a["server.port"], "span %d", i)
	}
}
