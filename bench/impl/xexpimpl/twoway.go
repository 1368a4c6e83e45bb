package xexpimpl

import (
	"context"
	"encoding/json"
	"fmt"
	"io"

	"golang.org/x/exp/jsonrpc2"

	"github.com/ndjsonrpc/jsonrpc/bench/suite"
)

// twoWayParams decodes the params of either two-way method.
func twoWayParams(req *jsonrpc2.Request) (suite.TwoWayParams, error) {
	var p suite.TwoWayParams
	if err := json.Unmarshal(req.Params, &p); err != nil {
		return p, fmt.Errorf("%w: %v", jsonrpc2.ErrInvalidParams, err)
	}
	return p, nil
}

// outerBinder binds side B of the two-way workload: its handler gets the
// *jsonrpc2.Connection it serves from Bind, to call the peer on it.
type outerBinder struct{}

func (outerBinder) Bind(_ context.Context, conn *jsonrpc2.Connection) (jsonrpc2.ConnectionOptions, error) {
	return jsonrpc2.ConnectionOptions{
		Framer:  jsonrpc2.RawFramer(),
		Handler: outerHandler{conn},
	}, nil
}

// outerHandler serves outer: it calls inner back on the peer and answers
// with a value derived from inner's result, waiting in Handle.
//
// The library calls Handle for one request at a time, in arrival order,
// so outer calls are served one after another however many callers wait.
// Its way to serve requests concurrently (Handle starts the work in a
// goroutine and returns ErrAsyncResponse; the goroutine answers with
// Respond) deadlocks on this workload over io.Pipe: both Respond and the
// reply to a request hold the connection's table of incoming requests
// while they write, and the read loop needs that table for every request
// it reads. With many callers, A's reply to inner waits for A's writer,
// held by a caller writing outer to B; B's read loop, reading that outer,
// waits for B's table, held by a Respond writing to A; A's read loop,
// which that write waits on, waits for A's table, held by A's reply.
// (Over a socket, the kernel's buffers hide the cycle until they fill.)
type outerHandler struct{ conn *jsonrpc2.Connection }

func (h outerHandler) Handle(ctx context.Context, req *jsonrpc2.Request) (any, error) {
	if req.Method != suite.TwoWayOuter {
		return nil, jsonrpc2.ErrNotHandled
	}
	if !req.IsCall() {
		return nil, nil
	}
	p, err := twoWayParams(req)
	if err != nil {
		return nil, err
	}
	var r int
	if err := h.conn.Call(ctx, suite.TwoWayInner, p).Await(ctx, &r); err != nil {
		return nil, err
	}
	return suite.TwoWayOuterResult(r), nil
}

// handleInner serves side A of the two-way workload (synchronously: inner
// does not wait).
func handleInner(_ context.Context, req *jsonrpc2.Request) (any, error) {
	if req.Method != suite.TwoWayInner {
		return nil, jsonrpc2.ErrNotHandled
	}
	p, err := twoWayParams(req)
	if err != nil {
		return nil, err
	}
	return suite.TwoWayInnerResult(p), nil
}

// ServeTwoWay is side B of the two-way workload. It returns once r is
// exhausted and the connection has shut down.
func ServeTwoWay(ctx context.Context, r io.Reader, w io.WriteCloser) error {
	conn, err := jsonrpc2.Dial(ctx, dialer{readWriteCloser{r, w}}, outerBinder{})
	if err != nil {
		return err
	}
	if err := conn.Wait(); !closing(err) {
		return err
	}
	return nil
}

// TwoWayClient is side A of the two-way workload: a Connection whose
// handler answers inner.
type TwoWayClient struct{ c *jsonrpc2.Connection }

// NewTwoWayClient returns side A, writing to w and reading from r.
func NewTwoWayClient(r io.Reader, w io.WriteCloser) *TwoWayClient {
	c, err := jsonrpc2.Dial(context.Background(), dialer{readWriteCloser{r, w}}, jsonrpc2.ConnectionOptions{
		Framer:  jsonrpc2.RawFramer(),
		Handler: jsonrpc2.HandlerFunc(handleInner),
	})
	if err != nil {
		panic(err) // the dialer cannot fail
	}
	return &TwoWayClient{c: c}
}

// Outer calls outer(a, b).
func (c *TwoWayClient) Outer(ctx context.Context, a, b int) (int, error) {
	var res int
	err := c.c.Call(ctx, suite.TwoWayOuter, suite.TwoWayParams{A: a, B: b}).Await(ctx, &res)
	return res, err
}

// Close closes side A and waits for its connection to end.
func (c *TwoWayClient) Close() error {
	if err := c.c.Close(); !closing(err) {
		return err
	}
	return nil
}
