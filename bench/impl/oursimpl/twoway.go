package oursimpl

import (
	"context"
	"io"

	"github.com/ndjsonrpc/jsonrpc"

	"github.com/ndjsonrpc/jsonrpc/bench/suite"
)

// outer serves side B's method of the two-way workload: it calls inner
// back on the peer with jsonrpc.Call and answers with a value derived
// from inner's result.
func outer(ctx context.Context, p suite.TwoWayParams) (int, error) {
	var r int
	if err := jsonrpc.Peer(ctx).Call(ctx, suite.TwoWayInner, p, &r); err != nil {
		return 0, err
	}
	return suite.TwoWayOuterResult(r), nil
}

// inner serves side A's method of the two-way workload.
func inner(_ context.Context, p suite.TwoWayParams) (int, error) {
	return suite.TwoWayInnerResult(p), nil
}

var outerMux = func() *jsonrpc.Mux {
	m := new(jsonrpc.Mux)
	m.Handle(suite.TwoWayOuter, jsonrpc.Func(outer))
	return m
}()

var innerMux = func() *jsonrpc.Mux {
	m := new(jsonrpc.Mux)
	m.Handle(suite.TwoWayInner, jsonrpc.Func(inner))
	return m
}()

// ServeTwoWay is side B of the two-way workload: a Server whose outer
// handler calls the peer. It returns once r is exhausted and every
// response has been written.
func ServeTwoWay(ctx context.Context, r io.Reader, w io.WriteCloser) error {
	srv := &jsonrpc.Server{Options: jsonrpc.Options{Handler: outerMux}}
	return srv.Serve(ctx, r, w)
}

// TwoWayClient is side A of the two-way workload: a Client whose
// ClientOptions.Handler answers inner.
type TwoWayClient struct{ c *jsonrpc.Conn }

// NewTwoWayClient returns side A, writing to w and reading from r.
func NewTwoWayClient(r io.Reader, w io.WriteCloser) *TwoWayClient {
	return &TwoWayClient{c: jsonrpc.NewConn(r, w, &jsonrpc.Options{Handler: innerMux})}
}

// Outer calls outer(a, b).
func (c *TwoWayClient) Outer(ctx context.Context, a, b int) (int, error) {
	var res int
	err := c.c.Call(ctx, suite.TwoWayOuter, suite.TwoWayParams{A: a, B: b}, &res)
	return res, err
}

// Close closes side A.
func (c *TwoWayClient) Close() error { return c.c.Close() }
