package jsonrpcotel_test

import (
	"bytes"
	"context"
	"encoding/json"
	"runtime"
	"strconv"
	"testing"

	"github.com/ndjsonrpc/jsonrpc"
	jsonrpcotel "github.com/ndjsonrpc/jsonrpc/otel"
	metricnoop "go.opentelemetry.io/otel/metric/noop"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	tracenoop "go.opentelemetry.io/otel/trace/noop"
)

// BenchmarkServe serves W1-like echo requests (the library's benchmark
// workload: 10,000 lines of one call each, from memory through Serve into
// a buffer) with and without the middleware, and reports the time and the
// allocations per request. echo is a HandlerFunc, echoraw a
// RawHandlerFunc (bench/'s W1 serves echo so). otel=bare has no
// middleware; "global" uses the global providers, which this process
// never sets (the no-op path a program gets until it sets them), "noop"
// no-op providers given to New, "sdk" the SDK's, sampling every span and
// exporting none, with a manual metric reader. Compare them with
// benchstat -col /otel. BENCHMARKS.md has the figures.
func BenchmarkServe(b *testing.B) {
	sdk := func() []jsonrpcotel.Option {
		tp := sdktrace.NewTracerProvider()
		mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewManualReader()))
		b.Cleanup(func() {
			_ = tp.Shutdown(context.Background())
			_ = mp.Shutdown(context.Background())
		})
		return []jsonrpcotel.Option{jsonrpcotel.WithTracerProvider(tp), jsonrpcotel.WithMeterProvider(mp)}
	}
	setups := []struct {
		name string
		opts func() []jsonrpcotel.Option // nil for no middleware
	}{
		{"bare", nil},
		{"global", func() []jsonrpcotel.Option { return nil }},
		{"noop", func() []jsonrpcotel.Option {
			return []jsonrpcotel.Option{
				jsonrpcotel.WithTracerProvider(tracenoop.NewTracerProvider()),
				jsonrpcotel.WithMeterProvider(metricnoop.NewMeterProvider()),
			}
		}},
		{"sdk", sdk},
	}
	for _, method := range []string{"echo", "echoraw"} {
		var input []byte
		for i := range 10000 {
			input = append(input, `{"jsonrpc":"2.0","id":`+strconv.Itoa(i+1)+`,"method":"`+method+`","params":[`+strconv.Itoa(i)+`,"hello"]}`+"\n"...)
		}
		for _, s := range setups {
			b.Run("method="+method+"/otel="+s.name, func(b *testing.B) {
				mux := new(jsonrpc.Mux)
				if s.opts != nil {
					mux.Use(jsonrpcotel.New(s.opts()...).Middleware())
				}
				mux.HandleFunc("echo", func(_ context.Context, req *jsonrpc.Request) (any, error) {
					return req.Params, nil
				})
				mux.Handle("echoraw", jsonrpc.RawHandlerFunc(func(_ context.Context, req *jsonrpc.Request) (json.RawMessage, error) {
					return req.Params, nil
				}))
				srv := &jsonrpc.Server{Options: jsonrpc.Options{Handler: mux}}
				var out bytes.Buffer
				var before, after runtime.MemStats
				rounds := 0
				b.ReportAllocs()
				runtime.ReadMemStats(&before)
				for b.Loop() {
					out.Reset()
					if err := srv.Serve(b.Context(), bytes.NewReader(input), &out); err != nil {
						b.Fatal(err)
					}
					rounds++
				}
				runtime.ReadMemStats(&after)
				requests := float64(rounds * 10000)
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/requests, "ns/req")
				b.ReportMetric(float64(after.Mallocs-before.Mallocs)/requests, "allocs/req")
			})
		}
	}
}
