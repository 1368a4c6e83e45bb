package jrpc2impl

import (
	"context"
	"io"

	"github.com/creachadair/jrpc2"
	"github.com/creachadair/jrpc2/channel"
	"github.com/creachadair/jrpc2/handler"

	"github.com/ndjsonrpc/jsonrpc/bench/suite"
)

// TwoWayConcurrency is side B's ServerOptions.Concurrency: as many outer
// handlers at once as our library's default (DefaultMaxInFlight). jrpc2's
// default is runtime.NumCPU(), and every outer handler waits for its
// callback, so with the default only that many outer calls would be in
// flight.
const TwoWayConcurrency = 64

// outer serves side B's method of the two-way workload: it calls inner
// back on the client with the server's Callback (server push) and answers
// with a value derived from inner's result.
func outer(ctx context.Context, p suite.TwoWayParams) (int, error) {
	rsp, err := jrpc2.ServerFromContext(ctx).Callback(ctx, suite.TwoWayInner, p)
	if err != nil {
		return 0, err
	}
	var r int
	if err := rsp.UnmarshalResult(&r); err != nil {
		return 0, err
	}
	return suite.TwoWayOuterResult(r), nil
}

// inner serves side A's method of the two-way workload.
func inner(_ context.Context, p suite.TwoWayParams) (int, error) {
	return suite.TwoWayInnerResult(p), nil
}

var outerMethods = handler.Map{suite.TwoWayOuter: handler.New(outer)}

// innerCallback answers the server's callbacks on side A (OnCallback
// takes one handler for every method).
var innerCallback = handler.New(inner)

// ServeTwoWay is side B of the two-way workload: a Server with AllowPush,
// whose outer handler calls back with Callback. It returns when r is
// exhausted (the caller keeps r open until every response has arrived).
func ServeTwoWay(_ context.Context, r io.Reader, w io.WriteCloser) error {
	srv := jrpc2.NewServer(outerMethods, &jrpc2.ServerOptions{
		AllowPush:   true,
		Concurrency: TwoWayConcurrency,
	}).Start(channel.Line(r, w))
	return srv.Wait()
}

// TwoWayClient is side A of the two-way workload: a Client whose
// OnCallback answers inner.
type TwoWayClient struct{ c *jrpc2.Client }

// NewTwoWayClient returns side A, writing to w and reading from r.
func NewTwoWayClient(r io.Reader, w io.WriteCloser) *TwoWayClient {
	return &TwoWayClient{c: jrpc2.NewClient(channel.Line(r, w), &jrpc2.ClientOptions{OnCallback: innerCallback})}
}

// Outer calls outer(a, b).
func (c *TwoWayClient) Outer(ctx context.Context, a, b int) (int, error) {
	var res int
	err := c.c.CallResult(ctx, suite.TwoWayOuter, suite.TwoWayParams{A: a, B: b}, &res)
	return res, err
}

// Close closes side A.
func (c *TwoWayClient) Close() error { return c.c.Close() }
