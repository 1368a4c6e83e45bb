// Command observability serves JSON-RPC over HTTP and a TCP socket with
// OpenTelemetry tracing and metrics on: spans go to stdout (with -spans),
// and the duration histograms to Prometheus at /metrics.
//
//	go run . -http 127.0.0.1:8080 -listen 127.0.0.1:7000 -spans
//	curl -s -H 'Content-Type: application/json' -d '{"jsonrpc":"2.0","id":1,"method":"add","params":[1,2]}' localhost:8080/
//	curl -s localhost:8080/metrics | grep rpc_server_call_duration
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"log"
	"net"
	"net/http"
	"os"
	"os/signal"

	"github.com/ndjsonrpc/jsonrpc"
	jsonrpcotel "github.com/ndjsonrpc/jsonrpc/otel"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	otelprom "go.opentelemetry.io/otel/exporters/prometheus"
	"go.opentelemetry.io/otel/exporters/stdout/stdouttrace"
	"go.opentelemetry.io/otel/propagation"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

func main() {
	httpAddr := flag.String("http", "127.0.0.1:8080", "serve JSON-RPC (POST /) and /metrics on `addr`")
	listen := flag.String("listen", "127.0.0.1:7000", "serve newline-delimited JSON-RPC on the TCP `addr` (empty: none)")
	spans := flag.Bool("spans", false, "print each span to stdout")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()

	var topts []sdktrace.TracerProviderOption
	if *spans {
		exp, err := stdouttrace.New(stdouttrace.WithPrettyPrint())
		if err != nil {
			log.Fatal(err)
		}
		topts = append(topts, sdktrace.WithSyncer(exp))
	}
	tp := sdktrace.NewTracerProvider(topts...)
	defer tp.Shutdown(context.Background())
	reg := prometheus.NewRegistry()
	exporter, err := otelprom.New(otelprom.WithRegisterer(reg))
	if err != nil {
		log.Fatal(err)
	}
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(exporter))
	defer mp.Shutdown(context.Background())

	tel := jsonrpcotel.New(
		jsonrpcotel.WithTracerProvider(tp),
		jsonrpcotel.WithMeterProvider(mp),
		jsonrpcotel.WithPropagators(propagation.TraceContext{}),
		jsonrpcotel.WithMetaPropagation(),
	)
	mux := new(jsonrpc.Mux)
	mux.Handle("add", jsonrpc.Func(func(_ context.Context, p [2]int) (int, error) { return p[0] + p[1], nil }))
	mux.Handle("echo", jsonrpc.RawHandlerFunc(func(_ context.Context, req *jsonrpc.Request) (json.RawMessage, error) { return req.Params, nil }))
	mux.Use(tel.Middleware()) // unknown methods pass through it too
	srv := &jsonrpc.Server{Options: jsonrpc.Options{Handler: mux}}

	if *listen != "" {
		l, err := net.Listen("tcp", *listen)
		if err != nil {
			log.Fatal(err)
		}
		go func() {
			if err := srv.ServeListener(ctx, l); err != nil && !errors.Is(err, jsonrpc.ErrServerClosed) && ctx.Err() == nil {
				log.Print(err)
			}
		}()
	}
	h := http.NewServeMux()
	h.Handle("POST /", srv)
	h.Handle("GET /metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	hs := &http.Server{Addr: *httpAddr, Handler: h}
	go func() {
		<-ctx.Done()
		_ = srv.Shutdown(context.Background())
		_ = hs.Shutdown(context.Background())
	}()
	log.Printf("JSON-RPC on http://%s/ and tcp %s; metrics on http://%s/metrics", *httpAddr, *listen, *httpAddr)
	if err := hs.ListenAndServe(); !errors.Is(err, http.ErrServerClosed) {
		log.Fatal(err)
	}
}
