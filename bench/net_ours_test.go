//go:build !noours

package bench_test

import (
	"context"
	"errors"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/ndjsonrpc/jsonrpc"

	"github.com/ndjsonrpc/jsonrpc/bench/impl/oursimpl"
)

// Our library in the HTTP and socket benchmarks, from a file of its own so
// that -tags noours leaves it out.
func init() {
	registerHTTP(httpImpl{
		name: "ours",
		server: func() (http.Handler, func() error, error) {
			srv := oursimpl.NewServer()
			return srv, srv.Close, nil
		},
		client: func(_ context.Context, url string, hc *http.Client) (client, error) {
			return oursimpl.NewHTTPClient(url, hc), nil
		},
	})
	socketImpls = append([]socketImpl{
		{name: "ours-pipe", dial: func(b *testing.B) (client, func()) { return dialPipe(b, registered["ours"]) }},
		{name: "ours", dial: dialOursTCP},
		// Server.Serve and NewClient on the two ends of one TCP
		// connection: the listener's and Dial's share is the
		// difference from ours.
		{name: "ours-conn", dial: func(b *testing.B) (client, func()) { return dialStream(b, registered["ours"]) }},
	}, socketImpls...)
}

// dialOursTCP serves our library with Server.ServeListener on loopback and
// returns a client connected with jsonrpc.Dial.
func dialOursTCP(b *testing.B) (client, func()) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	srv := oursimpl.NewServer()
	served := make(chan error, 1)
	go func() { served <- srv.ServeListener(context.Background(), l) }()
	c, err := oursimpl.Dial(context.Background(), "tcp", l.Addr().String())
	if err != nil {
		srv.Close()
		b.Fatal(err)
	}
	return c, func() {
		c.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := srv.Shutdown(ctx); err != nil {
			b.Errorf("shutdown: %v", err)
		}
		if err := <-served; err != nil && !errors.Is(err, jsonrpc.ErrServerClosed) {
			b.Errorf("ServeListener: %v", err)
		}
	}
}
