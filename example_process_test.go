package jsonrpc_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/ndjsonrpc/jsonrpc"
)

// A Redialer whose Dial starts a child process restarts the child when it
// dies: here the child (this test binary, serving "work") crashes in the
// middle of the first call, which is idempotent, so the Redialer makes it
// again on a new child. Each Process waits for its child once its
// connection ends, so no zombie is left, and Close ends the last child.
func ExampleRedialer_process() {
	ctx := context.Background()
	starts := 0
	r := &jsonrpc.Redialer{
		Dial: func(ctx context.Context) (*jsonrpc.Conn, error) {
			// In a program: exec.Command("my-server", "--stdio").
			p, err := jsonrpc.StartProcess(ctx, childCommand(), nil)
			if err != nil {
				return nil, err
			}
			starts++
			return p.Conn, nil
		},
		Retry: func(method string) bool { return method == "work" },
	}
	defer r.Close()

	dir, err := os.MkdirTemp("", "example")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer os.RemoveAll(dir)
	var result string
	err = r.Call(ctx, "work", map[string]string{"crashOnce": filepath.Join(dir, "crashed")}, &result)
	fmt.Println(result, err)
	fmt.Println("children started:", starts)
	// Output:
	// done <nil>
	// children started: 2
}
