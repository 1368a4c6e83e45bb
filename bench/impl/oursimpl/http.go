package oursimpl

import (
	"context"
	"net/http"

	"github.com/ndjsonrpc/jsonrpc"

	"github.com/ndjsonrpc/jsonrpc/bench/suite"
)

// NewServer returns a server of the benchmark's methods, for
// Server.ServeHTTP and Server.ServeListener.
func NewServer() *jsonrpc.Server {
	return &jsonrpc.Server{Options: jsonrpc.Options{Handler: mux}}
}

// HTTPClient is this library's client over HTTP.
type HTTPClient struct{ c *jsonrpc.HTTPClient }

// NewHTTPClient returns a client posting to url through hc.
func NewHTTPClient(url string, hc *http.Client) *HTTPClient {
	return &HTTPClient{c: &jsonrpc.HTTPClient{URL: url, HTTP: hc}}
}

// Subtract calls subtract(a, b).
func (c *HTTPClient) Subtract(ctx context.Context, a, b int) (int, error) {
	var res int
	err := c.c.Call(ctx, "subtract", suite.SubParams{Minuend: a, Subtrahend: b}, &res)
	return res, err
}

// Close does nothing: the connections belong to the http.Client.
func (c *HTTPClient) Close() error { return nil }

// Dial returns a client of the server listening at addr on network,
// connected with jsonrpc.Dial.
func Dial(ctx context.Context, network, addr string) (*Client, error) {
	c, err := jsonrpc.Dial(ctx, network, addr, nil)
	if err != nil {
		return nil, err
	}
	return &Client{c: c}, nil
}
