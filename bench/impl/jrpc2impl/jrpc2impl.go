// Package jrpc2impl is the benchmark server and client built on
// github.com/creachadair/jrpc2 with its newline framing, channel.Line.
package jrpc2impl

import (
	"context"
	"encoding/json"
	"io"

	"github.com/creachadair/jrpc2"
	"github.com/creachadair/jrpc2/channel"
	"github.com/creachadair/jrpc2/handler"

	"github.com/ndjsonrpc/jsonrpc/bench/suite"
)

// echo returns its params exactly as sent.
func echo(_ context.Context, req *jrpc2.Request) (any, error) {
	return json.RawMessage(req.ParamString()), nil
}

// subtract decodes its params into a struct.
func subtract(_ context.Context, p suite.SubParams) (int, error) {
	return p.Minuend - p.Subtrahend, nil
}

var methods = handler.Map{
	"echo":     echo,
	"subtract": handler.New(subtract),
}

// Serve answers the requests read from r, writing the responses to w, and
// returns when r is exhausted. jrpc2 drops requests still queued when its
// input ends, so the caller keeps r open until every response has arrived.
func Serve(_ context.Context, r io.Reader, w io.WriteCloser) error {
	srv := jrpc2.NewServer(methods, nil).Start(channel.Line(r, w))
	return srv.Wait()
}

// Client is a jrpc2 client.
type Client struct{ c *jrpc2.Client }

// NewClient returns a client writing requests to w and reading responses
// from r.
func NewClient(r io.Reader, w io.WriteCloser) *Client {
	return &Client{c: jrpc2.NewClient(channel.Line(r, w), nil)}
}

// Subtract calls subtract(a, b).
func (c *Client) Subtract(ctx context.Context, a, b int) (int, error) {
	var res int
	err := c.c.CallResult(ctx, "subtract", suite.SubParams{Minuend: a, Subtrahend: b}, &res)
	return res, err
}

// Close closes the client.
func (c *Client) Close() error { return c.c.Close() }
