package sourcegraphimpl

import (
	"context"
	"encoding/json"
	"io"

	"github.com/sourcegraph/jsonrpc2"

	"github.com/ndjsonrpc/jsonrpc/bench/suite"
)

// twoWayParams decodes the params of either two-way method.
func twoWayParams(req *jsonrpc2.Request) (suite.TwoWayParams, error) {
	var p suite.TwoWayParams
	if req.Params == nil {
		return p, &jsonrpc2.Error{Code: jsonrpc2.CodeInvalidParams, Message: "missing params"}
	}
	if err := json.Unmarshal(*req.Params, &p); err != nil {
		return p, &jsonrpc2.Error{Code: jsonrpc2.CodeInvalidParams, Message: err.Error()}
	}
	return p, nil
}

// handleOuter serves side B of the two-way workload: outer calls inner
// back on the peer through the *jsonrpc2.Conn it is given (a Conn calls
// and serves alike) and answers with a value derived from inner's result.
func handleOuter(ctx context.Context, conn *jsonrpc2.Conn, req *jsonrpc2.Request) (any, error) {
	if req.Method != suite.TwoWayOuter {
		return nil, &jsonrpc2.Error{Code: jsonrpc2.CodeMethodNotFound, Message: "method not found: " + req.Method}
	}
	p, err := twoWayParams(req)
	if err != nil {
		return nil, err
	}
	var r int
	if err := conn.Call(ctx, suite.TwoWayInner, p, &r); err != nil {
		return nil, err
	}
	return suite.TwoWayOuterResult(r), nil
}

// handleInner serves side A of the two-way workload.
func handleInner(_ context.Context, _ *jsonrpc2.Conn, req *jsonrpc2.Request) (any, error) {
	if req.Method != suite.TwoWayInner {
		return nil, &jsonrpc2.Error{Code: jsonrpc2.CodeMethodNotFound, Message: "method not found: " + req.Method}
	}
	p, err := twoWayParams(req)
	if err != nil {
		return nil, err
	}
	return suite.TwoWayInnerResult(p), nil
}

// ServeTwoWay is side B of the two-way workload. Its handler must be
// wrapped in AsyncHandler: the library's default handler runs in the read
// loop, so a handler that waits for the peer's answer would wait forever
// (the answer is read by the loop it blocks). It returns when r is
// exhausted.
func ServeTwoWay(ctx context.Context, r io.Reader, w io.WriteCloser) error {
	conn := jsonrpc2.NewConn(ctx, jsonrpc2.NewPlainObjectStream(readWriteCloser{r, w}),
		jsonrpc2.AsyncHandler(jsonrpc2.HandlerWithError(handleOuter)))
	<-conn.DisconnectNotify()
	return nil
}

// TwoWayClient is side A of the two-way workload: a Conn whose handler
// (the default, synchronous one: inner does not wait) answers inner.
type TwoWayClient struct{ c *jsonrpc2.Conn }

// NewTwoWayClient returns side A, writing to w and reading from r.
func NewTwoWayClient(r io.Reader, w io.WriteCloser) *TwoWayClient {
	return &TwoWayClient{c: jsonrpc2.NewConn(context.Background(), jsonrpc2.NewPlainObjectStream(readWriteCloser{r, w}),
		jsonrpc2.HandlerWithError(handleInner))}
}

// Outer calls outer(a, b).
func (c *TwoWayClient) Outer(ctx context.Context, a, b int) (int, error) {
	var res int
	err := c.c.Call(ctx, suite.TwoWayOuter, suite.TwoWayParams{A: a, B: b}, &res)
	return res, err
}

// Close closes side A.
func (c *TwoWayClient) Close() error { return c.c.Close() }
