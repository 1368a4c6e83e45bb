// Command jrpc2 is the whole-process benchmark server for jrpc2impl: it serves
// newline-delimited JSON-RPC on stdin and stdout until stdin ends.
package main

import (
	"context"
	"fmt"
	"os"

	"github.com/ndjsonrpc/jsonrpc/bench/impl/jrpc2impl"
)

func main() {
	if err := jrpc2impl.Serve(context.Background(), os.Stdin, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "jrpc2:", err)
		os.Exit(1)
	}
}
