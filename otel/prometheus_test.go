package jsonrpcotel_test

import (
	"math"
	"net/http"
	"net/http/httptest"
	"testing"

	jsonrpcotel "github.com/ndjsonrpc/jsonrpc/otel"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	otelprom "go.opentelemetry.io/otel/exporters/prometheus"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	tracenoop "go.opentelemetry.io/otel/trace/noop"
)

// The server's duration histogram, exported to Prometheus, scraped from
// /metrics and parsed with Prometheus's text parser, counts the calls
// made, per method and outcome.
func TestPrometheusScrape(t *testing.T) {
	reg := prometheus.NewRegistry()
	exporter, err := otelprom.New(otelprom.WithRegisterer(reg))
	require.NoError(t, err)
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(exporter))
	t.Cleanup(func() { _ = mp.Shutdown(t.Context()) })
	metrics := httptest.NewServer(promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	defer metrics.Close()

	tel := jsonrpcotel.New(jsonrpcotel.WithMeterProvider(mp), jsonrpcotel.WithTracerProvider(tracenoop.NewTracerProvider()),
		jsonrpcotel.WithNetwork("pipe", ""))
	mux := newMux()
	mux.Use(tel.Middleware())
	c, stop := pipeTransport(t, mux, tel.Interceptor())
	for range 3 {
		require.NoError(t, c.Call(t.Context(), "add", []int{1, 2}, nil))
	}
	require.Error(t, c.Call(t.Context(), "fail", nil, nil))
	stop()

	resp, err := http.Get(metrics.URL + "/metrics")
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(resp.Body)
	require.NoError(t, err)

	server, ok := families["rpc_server_call_duration_seconds"]
	require.True(t, ok, "no rpc_server_call_duration_seconds among %d families", len(families))
	counts := map[string]uint64{}
	for _, m := range server.GetMetric() {
		labels := map[string]string{}
		for _, l := range m.GetLabel() {
			labels[l.GetName()] = l.GetValue()
		}
		assert.Equal(t, "jsonrpc", labels["rpc_system_name"])
		assert.Equal(t, "pipe", labels["network_transport"])
		key := labels["rpc_method"]
		if code := labels["rpc_response_status_code"]; code != "" {
			key += " " + code
		}
		counts[key] += m.GetHistogram().GetSampleCount()
		var bounds []float64
		for _, b := range m.GetHistogram().GetBucket() {
			bounds = append(bounds, b.GetUpperBound())
		}
		assert.Equal(t, []float64{0.005, 0.01, 0.025, 0.05, 0.075, 0.1, 0.25, 0.5, 0.75, 1, 2.5, 5, 7.5, 10, math.Inf(1)}, bounds)
	}
	assert.Equal(t, map[string]uint64{"add": 3, "fail 42": 1}, counts)
	_, ok = families["rpc_client_call_duration_seconds"]
	assert.True(t, ok, "the client's histogram")
}
