package jsonrpc_test

import (
	"context"
	"errors"
	"os/exec"
	"path/filepath"
	"runtime"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ndjsonrpc/jsonrpc"
)

// TestRedialerRestartsProcess runs a child server through a Redialer
// whose Dial starts it: the child crashes in the middle of a call, the
// Redialer starts another, the call (idempotent) is made again there,
// OnConnect runs once per process, and every child is waited for (no
// zombie) once the Redialer is closed, without a Close of the Process.
func TestRedialerRestartsProcess(t *testing.T) {
	checkLeaks(t)
	var (
		mu    sync.Mutex
		procs []*jsonrpc.Process
		pids  []int // as OnConnect got them from each process
	)
	r := &jsonrpc.Redialer{
		Dial: func(ctx context.Context) (*jsonrpc.Conn, error) {
			p, err := jsonrpc.StartProcess(ctx, childCommand(), nil)
			if err != nil {
				return nil, err
			}
			mu.Lock()
			procs = append(procs, p)
			mu.Unlock()
			return p.Conn, nil
		},
		OnConnect: func(ctx context.Context, c *jsonrpc.Conn) error {
			var pid int
			if err := c.Call(ctx, "pid", nil, &pid); err != nil {
				return err
			}
			mu.Lock()
			pids = append(pids, pid)
			mu.Unlock()
			return nil
		},
		Retry:      func(method string) bool { return method == "work" },
		MinBackoff: time.Millisecond,
	}
	marker := filepath.Join(t.TempDir(), "crashed")
	var got string
	require.NoError(t, r.Call(t.Context(), "work", map[string]string{"crashOnce": marker}, &got))
	assert.Equal(t, "done", got, "the call made again on the second process")
	var pid int
	require.NoError(t, r.Call(t.Context(), "pid", nil, &pid))

	mu.Lock()
	require.Len(t, procs, 2, "processes started")
	require.Len(t, pids, 2, "OnConnect ran once per process")
	assert.NotEqual(t, pids[0], pids[1])
	assert.Equal(t, pids[1], pid, "calls go to the new process")
	first := procs[0]
	mu.Unlock()

	// The crashed child is waited for by itself.
	recv(t, first.Done(), "the first process's connection to end")
	waitReaped(t, pids[0])
	require.NoError(t, r.Close())
	waitReaped(t, pids[1])
	// Close keeps its meaning once the process has reaped itself.
	var ee *exec.ExitError
	if assert.ErrorAs(t, first.Close(), &ee) {
		assert.Equal(t, 3, ee.ExitCode())
	}
	assert.NoError(t, procs[1].Close(), "the second child exited 0 at the end of its input")
}

// waitReaped waits until pid is no process at all: not running, nor a
// zombie that nobody waited for (kill(pid, 0) succeeds on a zombie).
func waitReaped(t *testing.T, pid int) {
	t.Helper()
	if runtime.GOOS != "linux" && runtime.GOOS != "darwin" {
		return
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		err := syscall.Kill(pid, 0)
		if errors.Is(err, syscall.ESRCH) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("process %d not waited for within 10s (kill 0: %v)", pid, err)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
