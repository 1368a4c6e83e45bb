// Package oursimpl is the benchmark server and client built on this
// repository's library, github.com/ndjsonrpc/jsonrpc. Its server is the
// whole-process benchmarks' "ours" binary too (bench/cmd/ours); the row
// of the hand-tuned params decoding runs the library's demo,
// cmd/jsonrpc-demo, as a process, and ServeHand in process.
package oursimpl

import (
	"bytes"
	"context"
	"encoding/json"
	"io"

	"github.com/ndjsonrpc/jsonrpc"

	"github.com/ndjsonrpc/jsonrpc/bench/suite"
)

// echo returns its params exactly as sent (raw in, raw out), as a
// RawHandlerFunc, which the server writes without boxing the result.
func echo(_ context.Context, req *jsonrpc.Request) (json.RawMessage, error) {
	return req.Params, nil
}

// subtract decodes its params into a struct.
func subtract(_ context.Context, p suite.SubParams) (int, error) {
	return p.Minuend - p.Subtrahend, nil
}

var mux = newMux(jsonrpc.Func(subtract))

// newMux returns the benchmark's methods: echo, and subtract served by
// subtract.
func newMux(subtract jsonrpc.Handler) *jsonrpc.Mux {
	m := new(jsonrpc.Mux)
	m.Handle("echo", jsonrpc.RawHandlerFunc(echo))
	m.Handle("subtract", subtract)
	return m
}

// Serve answers the requests read from r, writing the responses to w, and
// returns once r is exhausted and every response has been written.
func Serve(ctx context.Context, r io.Reader, w io.WriteCloser) error {
	srv := &jsonrpc.Server{Options: jsonrpc.Options{Handler: mux}}
	return srv.Serve(ctx, r, w)
}

// HandParams are subtract's params with a hand-written UnmarshalJSON, the
// way a user who tunes a hot method may write it (cmd/jsonrpc-demo does the
// same): the usual form, {"minuend":a,"subtrahend":b} in either order with
// plain integers, is decoded without allocating, and anything else goes to
// encoding/json, so that the result and the errors are encoding/json's.
type HandParams suite.SubParams

// UnmarshalJSON implements json.Unmarshaler.
func (p *HandParams) UnmarshalJSON(b []byte) error {
	if p.simple(b) {
		return nil
	}
	return json.Unmarshal(b, (*suite.SubParams)(p))
}

// simple decodes b if it is an object of the two members, each once, with
// names written exactly and integer values that fit, and reports whether
// it did.
func (p *HandParams) simple(b []byte) bool {
	var m, s int
	seen := 0 // 1: minuend, 2: subtrahend
	b, ok := bytes.CutPrefix(trimSpace(b), []byte("{"))
	for ok {
		var name []byte
		if b, ok = bytes.CutPrefix(trimSpace(b), []byte(`"`)); !ok {
			return false
		}
		i := bytes.IndexByte(b, '"')
		if i < 0 {
			return false
		}
		name, b = b[:i], b[i+1:]
		if b, ok = bytes.CutPrefix(trimSpace(b), []byte(":")); !ok {
			return false
		}
		var v int
		if v, b, ok = plainInt(trimSpace(b)); !ok {
			return false
		}
		switch {
		case string(name) == "minuend" && seen&1 == 0:
			m, seen = v, seen|1
		case string(name) == "subtrahend" && seen&2 == 0:
			s, seen = v, seen|2
		default:
			return false
		}
		b = trimSpace(b)
		if b, ok = bytes.CutPrefix(b, []byte(",")); !ok {
			if b, ok = bytes.CutPrefix(b, []byte("}")); !ok || seen != 3 || len(trimSpace(b)) > 0 {
				return false
			}
			p.Minuend, p.Subtrahend = m, s
			return true
		}
	}
	return false
}

// plainInt reads an integer of at most 18 digits without a leading zero
// (so that it fits and encoding/json would read the same) from the start
// of b.
func plainInt(b []byte) (int, []byte, bool) {
	neg := len(b) > 0 && b[0] == '-'
	if neg {
		b = b[1:]
	}
	n, i := 0, 0
	for ; i < len(b) && b[i] >= '0' && b[i] <= '9'; i++ {
		n = n*10 + int(b[i]-'0')
	}
	if i == 0 || i > 18 || i > 1 && b[0] == '0' || i < len(b) && (b[i] == '.' || b[i] == 'e' || b[i] == 'E') {
		return 0, nil, false
	}
	if neg {
		n = -n
	}
	return n, b[i:], true
}

func trimSpace(b []byte) []byte { return bytes.TrimLeft(b, " \t\r\n") }

// subtractHand is subtract over HandParams.
func subtractHand(_ context.Context, p HandParams) (int, error) {
	return p.Minuend - p.Subtrahend, nil
}

var handMux = newMux(jsonrpc.Func(subtractHand))

// ServeHand is Serve with subtract's params decoded by HandParams'
// UnmarshalJSON, the in-process twin of cmd/jsonrpc-demo's subtract.
func ServeHand(ctx context.Context, r io.Reader, w io.WriteCloser) error {
	srv := &jsonrpc.Server{Options: jsonrpc.Options{Handler: handMux}}
	return srv.Serve(ctx, r, w)
}

// Client is a client of this repository's library.
type Client struct{ c *jsonrpc.Conn }

// NewClient returns a client writing requests to w and reading responses
// from r.
func NewClient(r io.Reader, w io.WriteCloser) *Client {
	return &Client{c: jsonrpc.NewConn(r, w, nil)}
}

// Subtract calls subtract(a, b).
func (c *Client) Subtract(ctx context.Context, a, b int) (int, error) {
	var res int
	err := c.c.Call(ctx, "subtract", suite.SubParams{Minuend: a, Subtrahend: b}, &res)
	return res, err
}

// Close closes the client.
func (c *Client) Close() error { return c.c.Close() }
