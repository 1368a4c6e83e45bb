//go:build !noours

package bench_test

import (
	"io"

	"github.com/ndjsonrpc/jsonrpc/bench/impl/oursimpl"
)

// Our library is registered from a file of its own so that the peers and
// the floor can still be measured with -tags noours while the library does
// not build.
func init() {
	register("ours", oursimpl.Serve,
		func(r io.Reader, w io.WriteCloser) client { return oursimpl.NewClient(r, w) })
	registered["ours"].serveHand = oursimpl.ServeHand
}
