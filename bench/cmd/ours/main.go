//go:build !noours

// Command ours is the whole-process benchmark server for oursimpl: this
// repository's library with the benchmark's echo and subtract (params
// decoded by encoding/json through jsonrpc.Func), the same code as the
// in-process runs, on stdin and stdout until stdin ends. The library's
// own demo, cmd/jsonrpc-demo, runs the row of the hand-tuned params
// decoding instead.
package main

import (
	"context"
	"fmt"
	"os"

	"github.com/ndjsonrpc/jsonrpc/bench/impl/oursimpl"
)

func main() {
	if err := oursimpl.Serve(context.Background(), os.Stdin, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "ours:", err)
		os.Exit(1)
	}
}
