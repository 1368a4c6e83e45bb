package jsonrpcotel_test

import (
	"context"
	"fmt"
	"io"

	"github.com/ndjsonrpc/jsonrpc"
	jsonrpcotel "github.com/ndjsonrpc/jsonrpc/otel"
	"go.opentelemetry.io/otel/propagation"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
)

// A server and a client on a pair of pipes, both traced; the trace
// context goes in the params' _meta, so the server's span is the child
// of the client's.
func Example() {
	spans := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(spans))
	tel := jsonrpcotel.New(
		jsonrpcotel.WithTracerProvider(tp),
		jsonrpcotel.WithPropagators(propagation.TraceContext{}),
		jsonrpcotel.WithMetaPropagation(),
		jsonrpcotel.WithTrustRemote(),
	)

	mux := new(jsonrpc.Mux)
	mux.Use(tel.Middleware())
	mux.Handle("greet", jsonrpc.Func(func(_ context.Context, p struct{ Name string }) (string, error) {
		return "hello, " + p.Name, nil
	}))
	serverIn, clientOut := io.Pipe()
	clientIn, serverOut := io.Pipe()
	served := make(chan error, 1)
	go func() {
		served <- jsonrpc.Serve(context.Background(), serverIn, serverOut, mux)
		serverOut.Close()
	}()
	client := jsonrpc.NewConn(clientIn, clientOut, &jsonrpc.Options{
		Interceptors: []jsonrpc.Interceptor{tel.Interceptor()},
	})

	var greeting string
	if err := client.Call(context.Background(), "greet", map[string]string{"Name": "otel"}, &greeting); err != nil {
		fmt.Println(err)
	}
	fmt.Println(greeting)
	clientOut.Close()
	<-served
	client.Close()

	got := spans.GetSpans()
	server, caller := got[0], got[1] // the server's span ends first
	fmt.Println(server.SpanKind, server.Name, "child of", caller.SpanKind, caller.Name+":",
		server.Parent.SpanID() == caller.SpanContext.SpanID())
	// Output:
	// hello, otel
	// server greet child of client greet: true
}
