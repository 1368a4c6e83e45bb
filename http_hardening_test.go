package jsonrpc_test

// Regression tests for the HTTP defects of the issue "Hardening III": a
// Content-Length that panics HTTPClient (1), ServeHTTP allocating what a
// body claims before it arrives (2), CancelGrace not honoured over HTTP
// (3), a client that does not read its event stream outliving Close (4),
// HTTPClient reading an over-limit NDJSON line to its end (5), and
// HTTPClient waiting after its answer for the server to close (6).
// Liveness is checked against deadlines far above the cost of the work,
// memory with runtime/metrics against generous bounds.

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ndjsonrpc/jsonrpc"
)

// rawHTTPServer serves each connection it accepts by reading one request
// and passing the connection to respond, which writes the response by
// hand; the connection is closed when respond returns. It returns the
// server's URL; the cleanup stops it and waits for its goroutines.
func rawHTTPServer(t *testing.T, respond func(nc net.Conn)) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	var wg sync.WaitGroup
	wg.Go(func() {
		for {
			nc, err := l.Accept()
			if err != nil {
				return
			}
			wg.Go(func() {
				defer nc.Close()
				req, err := http.ReadRequest(bufio.NewReader(nc))
				if err != nil {
					return
				}
				_, _ = io.Copy(io.Discard, req.Body)
				respond(nc)
			})
		}
	})
	t.Cleanup(func() {
		_ = l.Close()
		wg.Wait()
	})
	return "http://" + l.Addr().String()
}

// newTransportClient returns an http.Client with a Transport of its own,
// whose idle connections the cleanup closes.
func newTransportClient(t *testing.T) *http.Client {
	t.Helper()
	tr := &http.Transport{}
	t.Cleanup(tr.CloseIdleConnections)
	return &http.Client{Transport: tr}
}

// TestHTTPHardeningClientContentLength answers HTTPClient with a
// Content-Length it cannot hold, the largest an HTTP parser accepts among
// them: the call fails with ErrMessageTooLarge, before reading the body,
// rather than panicking.
func TestHTTPHardeningClientContentLength(t *testing.T) {
	checkLeaks(t)
	const limit = 1 << 20
	answer := `{"jsonrpc":"2.0","id":1,"result":1}`
	for _, tc := range []struct{ name, length string }{
		{"largest int64", "9223372036854775807"},
		{"largest int64 less one", "9223372036854775806"},
		{"one over the limit", fmt.Sprint(limit + 1)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			url := rawHTTPServer(t, func(nc net.Conn) {
				_, _ = io.WriteString(nc, "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: "+tc.length+"\r\n\r\n"+answer)
			})
			c := &jsonrpc.HTTPClient{URL: url, Client: newTransportClient(t), MaxMessageSize: limit}
			err := c.Call(t.Context(), "x", nil, nil)
			assert.ErrorIs(t, err, jsonrpc.ErrMessageTooLarge)
		})
	}
}
