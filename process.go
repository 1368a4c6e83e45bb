package jsonrpc

import (
	"context"
	"errors"
	"os/exec"
	"sync"
	"time"
)

// defaultWaitDelay is how long [Process.Close] waits for a child process
// to exit once its standard input is closed, before it kills it.
const defaultWaitDelay = 5 * time.Second

// stderrWaitDelay is the exec.Cmd.WaitDelay that StartProcess gives a
// command that has none: how long Wait waits, once the process has exited,
// for the copying of its standard error to end (see [Process.Close]).
const stderrWaitDelay = 100 * time.Millisecond

// A Process is a child process that serves JSON-RPC on its standard input
// and output, with a [Conn] connected to it.
type Process struct {
	*Conn

	// Cmd is the running command.
	Cmd *exec.Cmd

	// WaitDelay is how long Close waits for the process to exit after
	// closing its standard input; zero means 5 seconds.
	WaitDelay time.Duration

	once   sync.Once
	waited chan struct{}
	err    error
}

// StartProcess starts cmd, which must not have its Stdin or Stdout set,
// and returns a connection that talks to it over its standard input and
// output. Its standard error is left as cmd has it. opts may be nil.
//
// If cmd.WaitDelay is zero, StartProcess sets it to 100ms, so that a
// grandchild that holds the process's standard error open cannot hold up
// Close (see [Process.Close]); a nonzero cmd.WaitDelay is left alone.
//
// Call Close to shut the process down. If ctx ends first, the process is
// killed (as with exec.CommandContext).
func StartProcess(ctx context.Context, cmd *exec.Cmd, opts *Options) (*Process, error) {
	if cmd.Stdin != nil || cmd.Stdout != nil {
		return nil, errors.New("jsonrpc: StartProcess: Stdin and Stdout must be unset")
	}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	// When cmd.Stderr is not an *os.File, Wait waits for a goroutine that
	// copies the process's standard error, which a grandchild can hold
	// open for ever; cmd.WaitDelay bounds that wait, from when the process
	// exits. Set it now: exec.CommandContext's watcher may read it at any
	// time after Start.
	if cmd.WaitDelay == 0 {
		cmd.WaitDelay = stderrWaitDelay
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	p := &Process{Cmd: cmd, Conn: NewConn(stdout, stdin, opts), waited: make(chan struct{})}
	go func() {
		select {
		case <-ctx.Done():
			_ = cmd.Process.Kill()
			// A grandchild may hold the output open: stop reading it
			// if it does not end soon.
			t := time.NewTimer(p.waitDelay())
			select {
			case <-p.Conn.Done():
			case <-t.C:
				_ = p.Conn.Close()
			}
			t.Stop()
		case <-p.waited:
		}
	}()
	return p, nil
}

// Close shuts the process down cleanly: it closes the process's standard
// input, waits up to WaitDelay for it to exit (reading what it still
// writes), kills it if it has not, and closes the connection. It returns the
// process's exit error, as exec.Cmd.Wait does. Close is idempotent.
//
// Close returns within WaitDelay plus Cmd.WaitDelay (100ms unless the
// caller set it; see [StartProcess]) and a few milliseconds, even if a
// grandchild holds the process's output open, provided the connection's
// handlers return once their context is cancelled. Once the process has
// exited, Close waits at most Cmd.WaitDelay for the copying of its standard
// error to a writer that is not an *os.File to end, and then returns
// [exec.ErrWaitDelay] if the process had exited 0.
func (p *Process) Close() error {
	p.once.Do(p.shutdown)
	<-p.waited
	return p.err
}

func (p *Process) shutdown() {
	t := time.NewTimer(p.waitDelay())
	defer t.Stop()
	// Write what is buffered and close the process's input; a process
	// that does not read holds this up, so it runs alongside the timer.
	closed := make(chan struct{})
	go func() {
		_ = p.Conn.c.out.Close()
		close(closed)
	}()
	exited := make(chan struct{})
	go func() {
		// Read to the end of the output first: Wait closes the pipe.
		select {
		case <-p.Conn.Done():
		case <-t.C:
			p.kill()
			<-p.Conn.Done()
		}
		p.err = p.Cmd.Wait()
		close(exited)
	}()
	select {
	case <-exited:
	case <-t.C:
		p.kill()
		<-exited
	}
	<-closed
	close(p.waited)
	_ = p.Conn.Close()
}

// kill kills the process, and stops reading its output, which a child of
// its own may still hold open.
func (p *Process) kill() {
	_ = p.Cmd.Process.Kill()
	p.Conn.c.in.Close()
	p.Conn.c.out.closeNow()
}

func (p *Process) waitDelay() time.Duration {
	if p.WaitDelay <= 0 {
		return defaultWaitDelay
	}
	return p.WaitDelay
}
