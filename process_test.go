package jsonrpc_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ndjsonrpc/jsonrpc"
)

// demo is cmd/jsonrpc-demo, built once for all the tests.
var demo struct {
	once sync.Once
	path string
	err  error
}

// demoPath builds cmd/jsonrpc-demo the first time it is called and returns
// the path of the binary.
func demoPath(t *testing.T) string {
	t.Helper()
	demo.once.Do(func() {
		dir, err := binDir()
		if err != nil {
			demo.err = err
			return
		}
		path := filepath.Join(dir, "jsonrpc-demo")
		if runtime.GOOS == "windows" {
			path += ".exe"
		}
		out, err := exec.Command("go", "build", "-o", path, "./cmd/jsonrpc-demo").CombinedOutput()
		if err != nil {
			demo.err = fmt.Errorf("go build ./cmd/jsonrpc-demo: %v\n%s", err, out)
			return
		}
		demo.path = path
	})
	require.NoError(t, demo.err)
	return demo.path
}

// binDir returns where to put the demo binary: beside the test binary when
// that lives in a temporary directory (go test's work directory, which it
// removes afterwards), else in a new temporary directory.
func binDir() (string, error) {
	if exe, err := os.Executable(); err == nil {
		dir := filepath.Dir(exe)
		if strings.HasPrefix(dir, os.TempDir()+string(filepath.Separator)) {
			return dir, nil
		}
	}
	return os.MkdirTemp("", "jsonrpc-demo-")
}

// startDemo starts the demo as a child process; a cleanup closes it.
func startDemo(t *testing.T, ctx context.Context, opts *jsonrpc.Options) *jsonrpc.Process {
	t.Helper()
	p, err := jsonrpc.StartProcess(ctx, exec.Command(demoPath(t)), opts)
	require.NoError(t, err)
	t.Cleanup(func() { _ = p.Close() })
	return p
}

func TestProcessDemo(t *testing.T) {
	checkLeaks(t)
	var log noteLog
	p := startDemo(t, t.Context(), &jsonrpc.Options{OnNotify: log.onNotify})

	t.Run("subtract", func(t *testing.T) {
		tests := []struct {
			name   string
			params any
			want   float64
		}{
			{"array", []int{42, 23}, 19},
			{"array reversed", []int{23, 42}, -19},
			{"object", map[string]float64{"minuend": 42, "subtrahend": 23}, 19},
			{"fractions", []float64{1.5, 0.25}, 1.25},
		}
		for _, tc := range tests {
			t.Run(tc.name, func(t *testing.T) {
				var got float64
				require.NoError(t, p.Call(t.Context(), "subtract", tc.params, &got))
				assert.Equal(t, tc.want, got)
			})
		}
	})

	t.Run("progress", func(t *testing.T) {
		for _, count := range []int{0, 1, 5} {
			t.Run(fmt.Sprint(count), func(t *testing.T) {
				var got string
				require.NoError(t, p.Call(t.Context(), "progress", map[string]int{"count": count}, &got))
				assert.Equal(t, "done", got)
				var want []string
				for i := 1; i <= count; i++ {
					want = append(want, fmt.Sprintf(`progress {"done":%d,"total":%d}`, i, count))
				}
				assert.Equal(t, want, log.take(), "every notification, in order, before Call returns")
			})
		}
	})

	t.Run("count", func(t *testing.T) {
		for _, n := range []int{0, 1, 4} {
			t.Run(fmt.Sprint(n), func(t *testing.T) {
				var got []int
				for item, err := range p.Stream(t.Context(), "count", map[string]int{"n": n}) {
					require.NoError(t, err)
					var v struct {
						Index *int `json:"index"`
					}
					require.NoError(t, json.Unmarshal(item, &v), "item %s", item)
					require.NotNil(t, v.Index, "item %s", item)
					got = append(got, *v.Index)
				}
				want := []int{}
				for i := range n {
					want = append(want, i)
				}
				assert.Equal(t, want, append([]int{}, got...))
			})
		}
	})

	t.Run("Close", func(t *testing.T) {
		require.NoError(t, p.Close(), "the demo exits 0 at the end of its input")
		assert.NoError(t, p.Close(), "Close is idempotent")
		if assert.NotNil(t, p.Cmd.ProcessState) {
			assert.True(t, p.Cmd.ProcessState.Success())
		}
		recv(t, p.Done(), "the client's reader goroutine to end")
		assert.ErrorIs(t, p.Call(t.Context(), "subtract", []int{1, 1}, nil), jsonrpc.ErrClosed)
	})
}

func TestProcessWaitDelay(t *testing.T) {
	tests := []struct {
		name string
		args []string
	}{
		// sleep ignores its standard input, so Close must kill it.
		{"ignores stdin", []string{"sleep", "60"}},
		// The shell forks sleep, which keeps the child's standard output
		// open after the shell is killed. Close must still return soon
		// after WaitDelay, as exec.Cmd.WaitDelay does, and not once the
		// grandchild exits (5s later).
		{"grandchild keeps stdout open", []string{"sh", "-c", "sleep 5; exit 0"}},
		// The child closes its output but keeps running: the end of
		// the output must not stop Close from killing it.
		{"closes stdout and keeps running", []string{"sh", "-c", "exec 1>&-; sleep 5"}},
		// The child closes its input and keeps running.
		{"closes stdin and keeps running", []string{"sh", "-c", "exec 0<&-; sleep 5"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			checkLeaks(t)
			const delay = 100 * time.Millisecond
			p, err := jsonrpc.StartProcess(t.Context(), exec.Command(tc.args[0], tc.args[1:]...), nil)
			require.NoError(t, err)
			p.WaitDelay = delay

			start := time.Now()
			closed := make(chan error, 1)
			go func() { closed <- p.Close() }()
			var closeErr error
			select {
			case closeErr = <-closed:
			case <-time.After(3 * time.Second):
				assert.Fail(t, "Close did not return within 3s of a WaitDelay of 100ms")
				closeErr = <-closed // let it finish, so nothing leaks
			}
			elapsed := time.Since(start)
			assert.GreaterOrEqual(t, elapsed, delay, "Close waits WaitDelay before it kills")
			var ee *exec.ExitError
			if assert.ErrorAs(t, closeErr, &ee, "Close returns the exit error of the killed process") {
				assert.False(t, ee.Success())
			}
			assert.ErrorIs(t, p.Call(t.Context(), "x", nil, nil), jsonrpc.ErrClosed)
		})
	}
}

// grandchildCommand returns a command that runs script under sh, with "$1"
// naming a file to which the script writes the pid of the grandchild it
// leaves in the background ($!), and a function that kills that
// grandchild; a cleanup calls it too, so that it does not outlive the test.
// With a non-nil ctx the command is made by exec.CommandContext.
func grandchildCommand(t *testing.T, ctx context.Context, script string) (*exec.Cmd, func()) {
	t.Helper()
	pidFile := filepath.Join(t.TempDir(), "pid")
	args := []string{"-c", script, "sh", pidFile}
	cmd := exec.Command("sh", args...)
	if ctx != nil {
		cmd = exec.CommandContext(ctx, "sh", args...)
	}
	kill := func() {
		b, err := os.ReadFile(pidFile)
		if err != nil {
			return
		}
		pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
		if err != nil {
			return
		}
		if proc, err := os.FindProcess(pid); err == nil {
			_ = proc.Kill()
			_ = proc.Release()
		}
	}
	t.Cleanup(kill)
	return cmd, kill
}

// closeWithin calls p.Close and returns its error. If Close has not
// returned within limit, it fails the test, calls unblock to end what
// holds Close up, and waits for Close, so that nothing leaks.
func closeWithin(t *testing.T, p *jsonrpc.Process, limit time.Duration, unblock func()) error {
	t.Helper()
	closed := make(chan error, 1)
	go func() { closed <- p.Close() }()
	select {
	case err := <-closed:
		return err
	case <-time.After(limit):
		assert.Failf(t, "Close did not return in time", "not within %v of a WaitDelay of %v", limit, p.WaitDelay)
		unblock()
		return <-closed
	}
}

// TestProcessCloseGrandchildStderr checks that Close returns soon after
// WaitDelay when the process's standard error goes to a writer that is not
// an *os.File, which exec.Cmd copies on a goroutine that Wait waits for,
// and a grandchild holds it open.
func TestProcessCloseGrandchildStderr(t *testing.T) {
	const delay = 300 * time.Millisecond
	tests := []struct {
		name   string
		script string // see grandchildCommand
		stderr io.Writer
		// withContext makes the command with exec.CommandContext, whose
		// Cmd.WaitDelay exec reads after Start.
		withContext bool
		// cmdDelay is the caller's own Cmd.WaitDelay, which Close leaves
		// alone and which adds to how long it may take.
		cmdDelay time.Duration
	}{
		// The grandchild holds stdout and stderr: the child exits at
		// once, Close stops reading stdout at WaitDelay, and Wait then
		// waited for stderr until the grandchild exited (20s).
		{name: "sleep holds stdout and stderr", script: `sleep 20 & echo $! >"$1"; exec cat >/dev/null`, stderr: new(bytes.Buffer)},
		// Only stderr is held: Wait waited for it from the start.
		{name: "sleep holds stderr", script: `sleep 20 >/dev/null & echo $! >"$1"; exec cat >/dev/null`, stderr: new(bytes.Buffer)},
		// The grandchild writes to stderr (its stdout too, by >&2) for
		// ever: Wait never returned.
		{name: "yes writes to stderr", script: `yes >&2 & echo $! >"$1"; exec cat >/dev/null`, stderr: io.Discard},
		{name: "CommandContext", script: `sleep 20 & echo $! >"$1"; exec cat >/dev/null`, stderr: new(bytes.Buffer), withContext: true},
		{name: "own Cmd.WaitDelay", script: `sleep 20 & echo $! >"$1"; exec cat >/dev/null`, stderr: new(bytes.Buffer), cmdDelay: 200 * time.Millisecond},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			checkLeaks(t)
			var ctx context.Context
			if tc.withContext {
				ctx = t.Context()
			}
			cmd, kill := grandchildCommand(t, ctx, tc.script)
			cmd.Stderr = tc.stderr
			cmd.WaitDelay = tc.cmdDelay
			p, err := jsonrpc.StartProcess(t.Context(), cmd, nil)
			require.NoError(t, err)
			p.WaitDelay = delay // set after StartProcess, as a caller may

			err = closeWithin(t, p, delay+tc.cmdDelay+3*time.Second, kill)
			var ee *exec.ExitError
			assert.True(t, errors.Is(err, exec.ErrWaitDelay) || errors.As(err, &ee),
				"Close returns exec.ErrWaitDelay, or the exit error if it had to kill the child; got %v", err)
			if tc.cmdDelay != 0 {
				assert.Equal(t, tc.cmdDelay, cmd.WaitDelay, "Close leaves the caller's Cmd.WaitDelay alone")
			}
			assert.ErrorIs(t, p.Call(t.Context(), "x", nil, nil), jsonrpc.ErrClosed)
		})
	}
}

func TestProcessContext(t *testing.T) {
	checkLeaks(t)
	ctx, cancel := context.WithCancel(t.Context())
	p := startDemo(t, ctx, nil)
	var got float64
	require.NoError(t, p.Call(t.Context(), "subtract", []int{3, 1}, &got))
	assert.Equal(t, 2.0, got)

	res := make(chan error, 1)
	go func() { res <- p.Call(t.Context(), "sleep", map[string]int{"ms": 60_000}, nil) }()
	cancel() // kills the process
	err := recv(t, res, "the call to the killed process")
	assert.ErrorIs(t, err, jsonrpc.ErrClosed)
	// The cause is the end of the pipes: EOF from the reader, or EPIPE
	// when the call's request was written after the child had died.
	assert.True(t, errors.Is(err, io.EOF) || errors.Is(err, syscall.EPIPE), "want EOF or EPIPE in %v", err)
	var ee *exec.ExitError
	assert.ErrorAs(t, p.Close(), &ee)
}

func TestProcessExits(t *testing.T) {
	checkLeaks(t)
	// The child reads one line, then exits with status 3 without
	// answering.
	p, err := jsonrpc.StartProcess(t.Context(), exec.Command("sh", "-c", "read line; exit 3"), nil)
	require.NoError(t, err)
	err = p.Call(t.Context(), "anything", nil, nil)
	assert.ErrorIs(t, err, jsonrpc.ErrClosed)
	assert.ErrorIs(t, err, io.EOF)
	recv(t, p.Done(), "the client's reader goroutine to end")
	var ee *exec.ExitError
	if assert.ErrorAs(t, p.Close(), &ee) {
		assert.Equal(t, 3, ee.ExitCode())
	}
}

func TestStartProcessErrors(t *testing.T) {
	tests := []struct {
		name string
		cmd  func() *exec.Cmd
	}{
		{"Stdin set", func() *exec.Cmd {
			cmd := exec.Command("cat")
			cmd.Stdin = strings.NewReader("")
			return cmd
		}},
		{"Stdout set", func() *exec.Cmd {
			cmd := exec.Command("cat")
			cmd.Stdout = io.Discard
			return cmd
		}},
		{"no such program", func() *exec.Cmd {
			return exec.Command(filepath.Join(t.TempDir(), "no-such-program"))
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			checkLeaks(t)
			p, err := jsonrpc.StartProcess(t.Context(), tc.cmd(), nil)
			assert.Error(t, err)
			assert.Nil(t, p)
		})
	}
	t.Run("not found error", func(t *testing.T) {
		_, err := jsonrpc.StartProcess(t.Context(), exec.Command(filepath.Join(t.TempDir(), "nope")), nil)
		assert.True(t, errors.Is(err, os.ErrNotExist), "got %v", err)
	})
}

// TestProcessCloseWithHandlerInFlight: a handler of ours answering a call
// of the child's, which returns once its context is cancelled, does not
// hold Close past its bound, however the child's output ends: the killed
// process can be answered no more, so its handlers are cancelled then,
// not given StopGrace as at the end of an input (here 30 s).
func TestProcessCloseWithHandlerInFlight(t *testing.T) {
	const request = `printf '%s\n' '{"jsonrpc":"2.0","id":1,"method":"block"}'; `
	for _, tc := range []struct {
		name, script string
		cancelCtx    bool // end StartProcess's ctx before Close
	}{
		{"child exits at end of input", request + `exec cat >/dev/null`, false},
		{"child ignores end of input", request + `exec sleep 60`, false},
		{"child exited before Close", request + `exit 0`, false},
		{"ctx ended, child", request + `exec sleep 60`, true},
		{"ctx ended, grandchild holds stdout", request + `sleep 3; exit 0`, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			checkLeaks(t)
			started, release := make(chan struct{}, 1), make(chan struct{})
			mux := new(jsonrpc.Mux)
			mux.HandleFunc("block", func(ctx context.Context, _ *jsonrpc.Request) (any, error) {
				started <- struct{}{}
				select {
				case <-ctx.Done():
				case <-release:
				}
				return nil, ctx.Err()
			})
			ctx, cancel := context.WithCancel(t.Context())
			defer cancel()
			p, err := jsonrpc.StartProcess(ctx, exec.Command("sh", "-c", tc.script),
				&jsonrpc.Options{Handler: mux, StopGrace: 30 * time.Second})
			require.NoError(t, err)
			p.WaitDelay = 100 * time.Millisecond
			recv(t, started, "the handler to start")
			if tc.cancelCtx {
				cancel()
			}
			time.Sleep(50 * time.Millisecond) // the child's output may end first
			_ = closeWithin(t, p, 3*time.Second, func() { close(release) })
		})
	}
}
