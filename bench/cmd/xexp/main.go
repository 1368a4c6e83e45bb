// Command xexp is the whole-process benchmark server for xexpimpl: it reads
// newline-delimited JSON-RPC on stdin until stdin ends and writes its
// responses to stdout back to back (x/exp/jsonrpc2's RawFramer adds no
// newline).
package main

import (
	"context"
	"fmt"
	"os"

	"github.com/ndjsonrpc/jsonrpc/bench/impl/xexpimpl"
)

func main() {
	if err := xexpimpl.Serve(context.Background(), os.Stdin, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "xexp:", err)
		os.Exit(1)
	}
}
