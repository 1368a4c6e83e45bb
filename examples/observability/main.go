// Command observability serves JSON-RPC over HTTP and a TCP socket with
// OpenTelemetry tracing and metrics on: spans go to an OTLP collector over
// HTTP when OTEL_EXPORTER_OTLP_ENDPOINT or
// OTEL_EXPORTER_OTLP_TRACES_ENDPOINT is set, and to stdout otherwise; the
// duration histograms go to Prometheus at /metrics.
//
//	go run . -http 127.0.0.1:8080 -listen 127.0.0.1:7000
//	curl -s -H 'Content-Type: application/json' -d '{"jsonrpc":"2.0","id":1,"method":"add","params":[1,2]}' localhost:8080/
//	curl -s localhost:8080/metrics | grep rpc_server_call_duration
//	OTEL_EXPORTER_OTLP_ENDPOINT=http://localhost:4318 go run .
//
// The TCP socket serves at most 1,024 connections at once (maxConns) and
// closes one that stays idle for 2 minutes (idleTimeout), so idle clients
// cannot keep the others out for ever. On SIGINT (Ctrl-C) or SIGTERM the
// server stops accepting and lets the calls in flight, on HTTP and on the
// socket, finish, then sends the spans still batched, all within 5
// seconds at most before it exits; a second signal ends it at once.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/ndjsonrpc/jsonrpc"
	jsonrpcotel "github.com/ndjsonrpc/jsonrpc/otel"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	otelprom "go.opentelemetry.io/otel/exporters/prometheus"
	"go.opentelemetry.io/otel/exporters/stdout/stdouttrace"
	"go.opentelemetry.io/otel/propagation"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

// otlpConfigured reports whether the environment names an OTLP
// collector for spans, by the variables every OpenTelemetry SDK reads.
func otlpConfigured() bool {
	return os.Getenv("OTEL_EXPORTER_OTLP_ENDPOINT") != "" || os.Getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") != ""
}

// newTracerProvider returns the provider of the example's spans, and
// where they go: to the OTLP collector that the environment names, over
// HTTP (the exporter reads the OTEL_EXPORTER_OTLP_* variables itself, the
// headers, timeout and compression too), in batches; otherwise, if
// stdout is not nil, printed to it as each span ends; otherwise nowhere.
// Shutting the provider down sends the spans still batched.
func newTracerProvider(ctx context.Context, stdout io.Writer) (*sdktrace.TracerProvider, string, error) {
	switch {
	case otlpConfigured():
		exp, err := otlptracehttp.New(ctx)
		if err != nil {
			return nil, "", err
		}
		return sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp)), "spans to OTLP over HTTP", nil
	case stdout != nil:
		exp, err := stdouttrace.New(stdouttrace.WithWriter(stdout), stdouttrace.WithPrettyPrint())
		if err != nil {
			return nil, "", err
		}
		return sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp)), "spans to stdout", nil
	}
	return sdktrace.NewTracerProvider(), "spans dropped", nil
}

// The bounds of the TCP socket, as SECURITY.md advises for
// ServeListener: the connections served at once (the next waits in the
// kernel's backlog), and how long one may stay idle before it is closed.
const (
	maxConns    = 1024
	idleTimeout = 2 * time.Minute
)

// newMux returns the example's methods, traced and measured by tel.
func newMux(tel *jsonrpcotel.Telemetry) *jsonrpc.Mux {
	mux := new(jsonrpc.Mux)
	mux.Handle("add", jsonrpc.Func(add))
	mux.Handle("echo", jsonrpc.RawHandlerFunc(func(_ context.Context, req *jsonrpc.Request) (json.RawMessage, error) { return req.Params, nil }))
	mux.Use(tel.Middleware()) // unknown methods pass through it too
	return mux
}

// add returns the sum of p's two numbers, or an invalid-params error if
// it does not fit in an int.
func add(_ context.Context, p [2]int) (int, error) {
	sum := p[0] + p[1]
	if p[1] > 0 && sum < p[0] || p[1] < 0 && sum > p[0] {
		return 0, jsonrpc.Errorf(jsonrpc.CodeInvalidParams, "%d + %d overflows", p[0], p[1])
	}
	return sum, nil
}

// newServer returns the server of the example's HTTP endpoint and TCP
// socket, which serves h.
func newServer(h jsonrpc.Handler) *jsonrpc.Server {
	return &jsonrpc.Server{
		Options:     jsonrpc.Options{Handler: h},
		MaxConns:    maxConns,
		IdleTimeout: idleTimeout,
	}
}

func main() {
	httpAddr := flag.String("http", "127.0.0.1:8080", "serve JSON-RPC (POST /) and /metrics on `addr`")
	listen := flag.String("listen", "127.0.0.1:7000", "serve newline-delimited JSON-RPC on the TCP `addr` (empty: none)")
	spans := flag.Bool("spans", true, "print each span to stdout when no OTLP endpoint is set in the environment")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	var stdout io.Writer
	if *spans {
		stdout = os.Stdout
	}
	tp, where, err := newTracerProvider(ctx, stdout)
	if err != nil {
		log.Fatal(err)
	}
	reg := prometheus.NewRegistry()
	exporter, err := otelprom.New(otelprom.WithRegisterer(reg))
	if err != nil {
		log.Fatal(err)
	}
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(exporter))

	tel := jsonrpcotel.New(
		jsonrpcotel.WithTracerProvider(tp),
		jsonrpcotel.WithMeterProvider(mp),
		jsonrpcotel.WithPropagators(propagation.TraceContext{}),
		jsonrpcotel.WithMetaPropagation(),
	)
	srv := newServer(newMux(tel))

	if *listen != "" {
		l, err := net.Listen("tcp", *listen)
		if err != nil {
			log.Fatal(err)
		}
		// Not under ctx, which would cut the connections at once on a
		// signal: srv.Shutdown below ends them, once their calls finish.
		go func() {
			if err := srv.ServeListener(context.Background(), l); err != nil && !errors.Is(err, jsonrpc.ErrServerClosed) {
				log.Print(err)
			}
		}()
	}
	h := http.NewServeMux()
	h.Handle("POST /", srv)
	h.Handle("GET /metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	// The bounds SECURITY.md asks of an HTTP endpoint: a client that
	// sends slowly, or does not read its answer, is cut off.
	hs := &http.Server{
		Addr:              *httpAddr,
		Handler:           h,
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       30 * time.Second,
		WriteTimeout:      30 * time.Second,
		IdleTimeout:       2 * time.Minute,
		MaxHeaderBytes:    64 << 10,
	}
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		<-ctx.Done()
		stop() // a second Ctrl-C ends the process at once
		// Let the work in flight finish for 5 seconds at most, then
		// cancel what still runs.
		wait, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if srv.Shutdown(wait) != nil {
			_ = srv.Close()
		}
		if hs.Shutdown(wait) != nil {
			_ = hs.Close()
		}
		// Send the spans still batched, within the same bound: a
		// collector that does not answer must not keep the process.
		_ = tp.Shutdown(wait)
		_ = mp.Shutdown(wait)
	}()
	log.Printf("JSON-RPC on http://%s/ and tcp %s; metrics on http://%s/metrics; %s", *httpAddr, *listen, *httpAddr, where)
	if err := hs.ListenAndServe(); !errors.Is(err, http.ErrServerClosed) {
		log.Fatal(err)
	}
	<-stopped // ListenAndServe returns as Shutdown begins, not as it ends
}
