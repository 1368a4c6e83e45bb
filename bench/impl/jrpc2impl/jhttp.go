package jrpc2impl

import (
	"context"
	"net/http"

	"github.com/creachadair/jrpc2"
	"github.com/creachadair/jrpc2/jhttp"

	"github.com/ndjsonrpc/jsonrpc/bench/suite"
)

// NewBridge returns jrpc2's HTTP bridge (jhttp.Bridge) to a jrpc2 server of
// the benchmark's methods; the caller closes it.
func NewBridge() jhttp.Bridge {
	return jhttp.NewBridge(methods, nil)
}

// HTTPClient is a jrpc2 client over jrpc2's HTTP channel (jhttp.Channel),
// which posts each message it sends.
type HTTPClient struct{ c *jrpc2.Client }

// NewHTTPClient returns a client posting to url through hc.
func NewHTTPClient(url string, hc *http.Client) *HTTPClient {
	ch := jhttp.NewChannel(url, &jhttp.ChannelOptions{Client: hc})
	return &HTTPClient{c: jrpc2.NewClient(ch, nil)}
}

// Subtract calls subtract(a, b).
func (c *HTTPClient) Subtract(ctx context.Context, a, b int) (int, error) {
	var res int
	err := c.c.CallResult(ctx, "subtract", suite.SubParams{Minuend: a, Subtrahend: b}, &res)
	return res, err
}

// Close closes the client.
func (c *HTTPClient) Close() error { return c.c.Close() }
