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
//
// A Process reaps itself when its connection ends, whether the child
// exited or the Conn was closed: it closes the child's standard input,
// gives it up to 5 seconds (less if Close is called meanwhile with a
// shorter WaitDelay) to exit, kills it if it has not, and waits for it, so
// that no zombie is left. A [Redialer] whose Dial starts a process (see
// its example) thus restarts a child that dies, and its Close, which
// closes the Conn, ends the last child. The connection ends when the
// child's output does: a grandchild that inherited it and lives on keeps
// the connection, and the exited child unreaped, until Close or the end
// of StartProcess's ctx.
type Process struct {
	*Conn

	// Cmd is the running command.
	Cmd *exec.Cmd

	// WaitDelay is how long Close waits for the process to exit after
	// closing its standard input; zero means 5 seconds.
	WaitDelay time.Duration

	once    sync.Once
	closing chan time.Duration // Close's WaitDelay, to the reaper
	waited  chan struct{}      // closed once the process has been waited for
	err     error
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
// killed (as with exec.CommandContext). Either way, and when the
// connection ends, the process is waited for (see [Process]).
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
	p := &Process{
		Cmd:     cmd,
		Conn:    NewConn(stdout, stdin, opts),
		closing: make(chan time.Duration, 1),
		waited:  make(chan struct{}),
	}
	p.Conn.reaped = p.waited
	go p.reap(ctx)
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
	p.once.Do(func() { p.closing <- p.waitDelay() })
	<-p.waited
	return p.err
}

// reap waits for a reason to end the process: Close, the end of the
// connection, or the end of ctx (which kills it at once). It then closes
// the process's standard input, waits for it to exit, reading its output
// to the end, and kills it if it has not exited in time: WaitDelay after
// Close, or defaultWaitDelay after the connection ended by itself, or
// Close's WaitDelay from then if Close comes meanwhile and that is sooner,
// or at once if ctx ends meanwhile.
func (p *Process) reap(ctx context.Context) {
	closing := p.closing
	ctxDone := ctx.Done()
	var delay time.Duration
	select {
	case delay = <-closing:
		closing = nil
	case <-p.Conn.Done():
		delay = defaultWaitDelay
	case <-ctxDone:
		ctxDone = nil
		// Killed, the process ends its output, which ends the
		// connection with the calls in flight: let it read that end
		// before closing anything. A grandchild may hold the output
		// open: stop reading it if it does not end soon, or at Close.
		_ = p.Cmd.Process.Kill()
		t := time.NewTimer(defaultWaitDelay)
		select {
		case <-p.Conn.Done():
		case <-t.C:
			p.kill()
		case <-closing:
			closing = nil
			p.kill()
		}
		t.Stop()
	}
	deadline := time.Now().Add(delay)
	t := time.NewTimer(delay)
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
		// A kill stops the reading, if a grandchild holds the output.
		<-p.Conn.Done()
		p.err = p.Cmd.Wait()
		close(exited)
	}()
	for done := false; !done; {
		select {
		case <-exited:
			done = true
		case d := <-closing:
			closing = nil
			if until := time.Now().Add(d); until.Before(deadline) {
				deadline = until
				t.Reset(d)
			}
		case <-t.C:
			p.kill()
			<-exited
			done = true
		case <-ctxDone:
			p.kill()
			<-exited
			done = true
		}
	}
	<-closed
	close(p.waited)
	_ = p.Conn.Close()
}

// kill kills the process, stops reading its output, which a child of its
// own may still hold open, and ends the connection.
func (p *Process) kill() {
	_ = p.Cmd.Process.Kill()
	p.Conn.c.in.Close()
	p.Conn.c.out.closeNow()
	// Nothing the handlers answer can reach the killed process: cancel
	// them now, as Conn.Close does, rather than let the end of its output
	// give them StopGrace first.
	p.Conn.c.abort(ErrClosed)
}

func (p *Process) waitDelay() time.Duration {
	return orDefault(p.WaitDelay, defaultWaitDelay)
}
