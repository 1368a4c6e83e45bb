//go:build !noours

package bench_test

import (
	"io"

	"github.com/ndjsonrpc/jsonrpc/bench/impl/oursimpl"
)

// Our library's side of the two-way workload, in a file of its own for
// the same reason as ours_test.go.
func init() {
	registerTwoWay("ours", oursimpl.ServeTwoWay,
		func(r io.Reader, w io.WriteCloser) twoWayCaller { return oursimpl.NewTwoWayClient(r, w) })
}
