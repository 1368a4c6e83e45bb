package jsonrpc_test

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"strings"

	"github.com/ndjsonrpc/jsonrpc"
)

// childEnv, set in its environment, makes the test binary a child server
// (see TestMain).
const childEnv = "JSONRPC_TEST_CHILD"

// childCommand returns a command that runs this test binary as a child
// server on its standard input and output: "pid" answers its process id,
// and "work" with params {"crashOnce": file} exits with status 3, without
// an answer, if file does not exist yet, having made it, and otherwise
// answers "done".
func childCommand() *exec.Cmd {
	cmd := exec.Command(os.Args[0])
	// Under the race detector, a process sleeps a second at exit
	// unless told not to.
	cmd.Env = append(os.Environ(), childEnv+"=1", "GORACE="+strings.TrimSpace(os.Getenv("GORACE")+" atexit_sleep_ms=0"))
	cmd.Stderr = os.Stderr
	return cmd
}

// serveChild serves the child's methods until its input ends, and exits.
func serveChild() {
	mux := new(jsonrpc.Mux)
	mux.Handle("pid", jsonrpc.Func(func(context.Context, struct{}) (int, error) {
		return os.Getpid(), nil
	}))
	mux.Handle("work", jsonrpc.Func(func(_ context.Context, p struct {
		CrashOnce string `json:"crashOnce"`
	}) (string, error) {
		f, err := os.OpenFile(p.CrashOnce, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o644)
		if errors.Is(err, os.ErrExist) {
			return "done", nil
		}
		if err != nil {
			return "", err
		}
		_ = f.Close()
		os.Exit(3) // a crash in the middle of the call
		return "", nil
	}))
	if err := jsonrpc.Serve(context.Background(), os.Stdin, os.Stdout, mux); err != nil {
		os.Exit(1)
	}
	os.Exit(0)
}
