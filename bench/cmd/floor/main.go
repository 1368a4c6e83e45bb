// Command floor is the whole-process benchmark floor: the hand-written loop
// of package floor on stdin and stdout.
package main

import (
	"fmt"
	"os"

	"github.com/ndjsonrpc/jsonrpc/bench/floor"
)

func main() {
	if err := floor.Serve(os.Stdin, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "floor:", err)
		os.Exit(1)
	}
}
