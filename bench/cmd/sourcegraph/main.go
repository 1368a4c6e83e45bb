// Command sourcegraph is the whole-process benchmark server for sourcegraphimpl: it serves
// newline-delimited JSON-RPC on stdin and stdout until stdin ends.
package main

import (
	"context"
	"fmt"
	"os"

	"github.com/ndjsonrpc/jsonrpc/bench/impl/sourcegraphimpl"
)

func main() {
	if err := sourcegraphimpl.Serve(context.Background(), os.Stdin, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "sourcegraph:", err)
		os.Exit(1)
	}
}
