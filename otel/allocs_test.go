//go:build !race

// The race detector allocates on its own account, so allocations are
// counted only without it.

package jsonrpcotel_test

import (
	"bytes"
	"context"
	"encoding/json"
	"strconv"
	"testing"

	"github.com/ndjsonrpc/jsonrpc"
	jsonrpcotel "github.com/ndjsonrpc/jsonrpc/otel"
	"github.com/stretchr/testify/assert"
	metricnoop "go.opentelemetry.io/otel/metric/noop"
	tracenoop "go.opentelemetry.io/otel/trace/noop"
)

// TestNoAllocationWhenOff serves W1's requests (bench/'s echo, a
// RawHandlerFunc; and echo as a HandlerFunc) through a Mux without the
// middleware, and through one with it while tracing is off: with the
// global providers unset (this process never sets them) and with no-op
// providers. The middleware must add no allocation.
func TestNoAllocationWhenOff(t *testing.T) {
	const lines = 100
	serve := func(method string, mw func(jsonrpc.Handler) jsonrpc.Handler) float64 {
		var input []byte
		for i := range lines {
			input = append(input, `{"jsonrpc":"2.0","id":`+strconv.Itoa(i+1)+`,"method":"`+method+`","params":[`+strconv.Itoa(i+1000)+`,"hello"]}`+"\n"...)
		}
		mux := new(jsonrpc.Mux)
		if mw != nil {
			mux.Use(mw)
		}
		mux.HandleFunc("echo", func(_ context.Context, req *jsonrpc.Request) (any, error) {
			return req.Params, nil
		})
		mux.Handle("echoraw", jsonrpc.RawHandlerFunc(func(_ context.Context, req *jsonrpc.Request) (json.RawMessage, error) {
			return req.Params, nil
		}))
		srv := &jsonrpc.Server{Options: jsonrpc.Options{Handler: mux}}
		var out bytes.Buffer
		return testing.AllocsPerRun(20, func() {
			out.Reset()
			if err := srv.Serve(context.Background(), bytes.NewReader(input), &out); err != nil {
				t.Fatal(err)
			}
		})
	}
	noop := jsonrpcotel.New(
		jsonrpcotel.WithTracerProvider(tracenoop.NewTracerProvider()),
		jsonrpcotel.WithMeterProvider(metricnoop.NewMeterProvider()))
	for _, method := range []string{"echoraw", "echo"} {
		bare := serve(method, nil)
		assert.LessOrEqual(t, serve(method, jsonrpcotel.New().Middleware()), bare, "%s, global providers unset", method)
		assert.LessOrEqual(t, serve(method, noop.Middleware()), bare, "%s, no-op providers", method)
	}
}
