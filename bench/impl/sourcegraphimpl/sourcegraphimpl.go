// Package sourcegraphimpl is the benchmark server and client built on
// github.com/sourcegraph/jsonrpc2 with NewPlainObjectStream, whose
// json.Encoder ends every message with a newline.
package sourcegraphimpl

import (
	"context"
	"encoding/json"
	"io"

	"github.com/sourcegraph/jsonrpc2"

	"github.com/ndjsonrpc/jsonrpc/bench/suite"
)

type readWriteCloser struct {
	io.Reader
	io.WriteCloser
}

func handle(_ context.Context, _ *jsonrpc2.Conn, req *jsonrpc2.Request) (any, error) {
	switch req.Method {
	case "echo":
		if req.Params == nil {
			return nil, nil
		}
		return req.Params, nil // *json.RawMessage: the params as sent
	case "subtract":
		var p suite.SubParams
		if req.Params == nil {
			return nil, &jsonrpc2.Error{Code: jsonrpc2.CodeInvalidParams, Message: "missing params"}
		}
		if err := json.Unmarshal(*req.Params, &p); err != nil {
			return nil, &jsonrpc2.Error{Code: jsonrpc2.CodeInvalidParams, Message: err.Error()}
		}
		return p.Minuend - p.Subtrahend, nil
	}
	return nil, &jsonrpc2.Error{Code: jsonrpc2.CodeMethodNotFound, Message: "method not found: " + req.Method}
}

// Serve answers the requests read from r, writing the responses to w, and
// returns when r is exhausted. Requests are handled in the read loop (the
// library's default, synchronous handler), so every response has been
// written by then.
func Serve(ctx context.Context, r io.Reader, w io.WriteCloser) error {
	conn := jsonrpc2.NewConn(ctx, jsonrpc2.NewPlainObjectStream(readWriteCloser{r, w}), jsonrpc2.HandlerWithError(handle))
	<-conn.DisconnectNotify()
	return nil
}

type noHandler struct{}

func (noHandler) Handle(context.Context, *jsonrpc2.Conn, *jsonrpc2.Request) {}

// Client is a sourcegraph/jsonrpc2 client.
type Client struct{ c *jsonrpc2.Conn }

// NewClient returns a client writing requests to w and reading responses
// from r.
func NewClient(r io.Reader, w io.WriteCloser) *Client {
	return &Client{c: jsonrpc2.NewConn(context.Background(), jsonrpc2.NewPlainObjectStream(readWriteCloser{r, w}), noHandler{})}
}

// Subtract calls subtract(a, b).
func (c *Client) Subtract(ctx context.Context, a, b int) (int, error) {
	var res int
	err := c.c.Call(ctx, "subtract", suite.SubParams{Minuend: a, Subtrahend: b}, &res)
	return res, err
}

// Close closes the client.
func (c *Client) Close() error { return c.c.Close() }
