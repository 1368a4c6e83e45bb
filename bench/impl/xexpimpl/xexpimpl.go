// Package xexpimpl is the benchmark server and client built on
// golang.org/x/exp/jsonrpc2 with its RawFramer: input is read with a
// json.Decoder, so newline-delimited input works, but messages are written
// back to back with nothing between them (see the README).
package xexpimpl

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"golang.org/x/exp/jsonrpc2"

	"github.com/ndjsonrpc/jsonrpc/bench/suite"
)

type readWriteCloser struct {
	io.Reader
	io.WriteCloser
}

// dialer hands an existing stream to jsonrpc2.Dial, which is the library's
// way to run a connection over a stream it did not open.
type dialer struct{ rwc io.ReadWriteCloser }

func (d dialer) Dial(context.Context) (io.ReadWriteCloser, error) { return d.rwc, nil }

func handle(_ context.Context, req *jsonrpc2.Request) (any, error) {
	switch req.Method {
	case "echo":
		if !req.IsCall() {
			// The library reports a result returned for a notification
			// as an error, so a notification gets nil.
			return nil, nil
		}
		return req.Params, nil // json.RawMessage: the params as sent
	case "subtract":
		var p suite.SubParams
		if err := json.Unmarshal(req.Params, &p); err != nil {
			return nil, fmt.Errorf("%w: %v", jsonrpc2.ErrInvalidParams, err)
		}
		return p.Minuend - p.Subtrahend, nil
	}
	return nil, jsonrpc2.ErrNotHandled
}

func closing(err error) bool {
	return err == nil || errors.Is(err, io.EOF) || errors.Is(err, io.ErrClosedPipe)
}

// Serve answers the requests read from r, writing the responses to w, and
// returns once r is exhausted and every queued request has been answered.
func Serve(ctx context.Context, r io.Reader, w io.WriteCloser) error {
	conn, err := jsonrpc2.Dial(ctx, dialer{readWriteCloser{r, w}}, jsonrpc2.ConnectionOptions{
		Framer:  jsonrpc2.RawFramer(),
		Handler: jsonrpc2.HandlerFunc(handle),
	})
	if err != nil {
		return err
	}
	if err := conn.Wait(); !closing(err) {
		return err
	}
	return nil
}

// Client is an x/exp/jsonrpc2 client.
type Client struct{ c *jsonrpc2.Connection }

// NewClient returns a client writing requests to w and reading responses
// from r.
func NewClient(r io.Reader, w io.WriteCloser) *Client {
	c, err := jsonrpc2.Dial(context.Background(), dialer{readWriteCloser{r, w}}, jsonrpc2.ConnectionOptions{
		Framer: jsonrpc2.RawFramer(),
	})
	if err != nil {
		panic(err) // the dialer cannot fail
	}
	return &Client{c: c}
}

// Subtract calls subtract(a, b).
func (c *Client) Subtract(ctx context.Context, a, b int) (int, error) {
	var res int
	err := c.c.Call(ctx, "subtract", suite.SubParams{Minuend: a, Subtrahend: b}).Await(ctx, &res)
	return res, err
}

// Close closes the client and waits for its connection to end.
func (c *Client) Close() error {
	if err := c.c.Close(); !closing(err) {
		return err
	}
	return nil
}
