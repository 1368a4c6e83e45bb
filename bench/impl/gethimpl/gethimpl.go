// Package gethimpl is the benchmark server and client built on the rpc
// package of go-ethereum, github.com/ethereum/go-ethereum/rpc, over HTTP.
//
// The package names methods "<namespace>_<method>" and takes positional
// params only, so subtract is registered as "bench_subtract" and its
// params are an array of one object, [{"minuend":a,"subtrahend":b}],
// decoded into the same struct by encoding/json.
package gethimpl

import (
	"context"
	"net/http"

	"github.com/ethereum/go-ethereum/rpc"

	"github.com/ndjsonrpc/jsonrpc/bench/suite"
)

// service holds the methods, registered under the namespace "bench".
type service struct{}

// Subtract decodes its params into a struct.
func (service) Subtract(p suite.SubParams) (int, error) {
	return p.Minuend - p.Subtrahend, nil
}

// Server is an http.Handler serving bench_subtract; Close stops it.
type Server struct{ *rpc.Server }

// NewServer returns a server of the benchmark's method.
func NewServer() (*Server, error) {
	s := rpc.NewServer()
	if err := s.RegisterName("bench", service{}); err != nil {
		return nil, err
	}
	return &Server{s}, nil
}

// Close stops the server.
func (s *Server) Close() error {
	s.Stop()
	return nil
}

// Client is a go-ethereum rpc client over HTTP.
type Client struct{ c *rpc.Client }

// NewHTTPClient returns a client posting to url through hc.
func NewHTTPClient(ctx context.Context, url string, hc *http.Client) (*Client, error) {
	c, err := rpc.DialOptions(ctx, url, rpc.WithHTTPClient(hc))
	if err != nil {
		return nil, err
	}
	return &Client{c: c}, nil
}

// Subtract calls bench_subtract(a, b).
func (c *Client) Subtract(ctx context.Context, a, b int) (int, error) {
	var res int
	err := c.c.CallContext(ctx, &res, "bench_subtract", suite.SubParams{Minuend: a, Subtrahend: b})
	return res, err
}

// Close closes the client.
func (c *Client) Close() error {
	c.c.Close()
	return nil
}
