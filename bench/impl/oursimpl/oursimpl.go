// Package oursimpl is the benchmark server and client built on this
// repository's library, github.com/ndjsonrpc/jsonrpc. The whole-process
// benchmarks run the library's own demo (cmd/jsonrpc-demo) instead; this
// package serves the in-process benchmarks with the same two methods.
package oursimpl

import (
	"context"
	"io"

	"github.com/ndjsonrpc/jsonrpc"

	"github.com/ndjsonrpc/jsonrpc/bench/suite"
)

// echo returns its params exactly as sent (raw in, raw out).
func echo(_ context.Context, req *jsonrpc.Request) (any, error) {
	return req.Params, nil
}

// subtract decodes its params into a struct.
func subtract(_ context.Context, p suite.SubParams) (int, error) {
	return p.Minuend - p.Subtrahend, nil
}

var mux = func() *jsonrpc.Mux {
	m := new(jsonrpc.Mux)
	m.HandleFunc("echo", echo)
	m.Handle("subtract", jsonrpc.Func(subtract))
	return m
}()

// Serve answers the requests read from r, writing the responses to w, and
// returns once r is exhausted and every response has been written.
func Serve(ctx context.Context, r io.Reader, w io.WriteCloser) error {
	srv := &jsonrpc.Server{Handler: mux}
	return srv.Serve(ctx, r, w)
}

// Client is a client of this repository's library.
type Client struct{ c *jsonrpc.Client }

// NewClient returns a client writing requests to w and reading responses
// from r.
func NewClient(r io.Reader, w io.WriteCloser) *Client {
	return &Client{c: jsonrpc.NewClient(r, w, nil)}
}

// Subtract calls subtract(a, b).
func (c *Client) Subtract(ctx context.Context, a, b int) (int, error) {
	var res int
	err := c.c.Call(ctx, "subtract", suite.SubParams{Minuend: a, Subtrahend: b}, &res)
	return res, err
}

// Close closes the client.
func (c *Client) Close() error { return c.c.Close() }
