package jsonrpc_test

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ndjsonrpc/jsonrpc"
)

// onePipePeer returns a Conn whose peer reads one line, reports it on
// got, and then either breaks the connection (hangUp) or reads on and
// never answers; its ends go to t.Cleanup.
func onePipePeer(t *testing.T, got chan<- struct{}, hangUp bool) *jsonrpc.Conn {
	inR, inW := io.Pipe()   // peer -> us
	outR, outW := io.Pipe() // us -> peer
	t.Cleanup(func() { _, _ = inW.Close(), outR.Close() })
	go func() {
		br := bufio.NewReader(outR)
		if _, err := br.ReadString('\n'); err == nil {
			got <- struct{}{} // the peer has the request: it may run it
		}
		if hangUp {
			_, _ = inW.Close(), outR.Close()
			return
		}
		_, _ = io.Copy(io.Discard, br)
	}()
	return jsonrpc.NewConn(inR, outW, nil)
}

// A call that Retry lets the Redialer make again after its first attempt
// reached the peer may have run, however the later attempts fail.
func TestRedialerMayHaveRunAcrossAttempts(t *testing.T) {
	t.Run("the next dials fail", func(t *testing.T) {
		checkLeaks(t)
		var dials atomic.Int32
		received := make(chan struct{}, 1)
		r := &jsonrpc.Redialer{
			Dial: func(ctx context.Context) (*jsonrpc.Conn, error) {
				if dials.Add(1) > 1 {
					return nil, errors.New("refused (test)")
				}
				return onePipePeer(t, received, true), nil
			},
			Retry:      func(string) bool { return true },
			MinBackoff: 10 * time.Millisecond,
		}
		defer r.Close()
		ctx, cancel := context.WithTimeout(t.Context(), 300*time.Millisecond)
		defer cancel()
		err := r.Call(ctx, "charge", nil, nil)
		recv(t, received, "the peer to read the request")
		require.Error(t, err)
		assert.ErrorIs(t, err, context.DeadlineExceeded)
		assert.True(t, jsonrpc.MayHaveRun(err), "MayHaveRun(%v) = false, but the first attempt reached the peer", err)
	})
	t.Run("Close", func(t *testing.T) {
		checkLeaks(t)
		received := make(chan struct{}, 1)
		r := &jsonrpc.Redialer{
			Dial: func(ctx context.Context) (*jsonrpc.Conn, error) {
				return onePipePeer(t, received, false), nil
			},
			Retry: func(string) bool { return true },
		}
		errc := make(chan error, 1)
		go func() { errc <- r.Call(context.Background(), "charge", nil, nil) }()
		recv(t, received, "the peer to read the request")
		require.NoError(t, r.Close())
		err := recv(t, errc, "the call to fail")
		assert.ErrorIs(t, err, jsonrpc.ErrClosed)
		assert.True(t, jsonrpc.MayHaveRun(err), "MayHaveRun(%v) = false, but the peer had read the request", err)
	})
}

// A call that breaks every connection it is sent on is made again at most
// MaxRetries times, even when Retry allows its method and ctx never ends.
func TestRedialerMaxRetries(t *testing.T) {
	for _, tc := range []struct {
		name       string
		maxRetries int
		attempts   int
	}{{"zero means 4", 0, 5}, {"one", 1, 2}, {"negative means none", -1, 1}} {
		t.Run(tc.name, func(t *testing.T) {
			checkLeaks(t)
			received := make(chan struct{}, 10)
			r := &jsonrpc.Redialer{
				Dial: func(ctx context.Context) (*jsonrpc.Conn, error) {
					return onePipePeer(t, received, true), nil
				},
				Retry:      func(string) bool { return true },
				MaxRetries: tc.maxRetries,
				MinBackoff: time.Millisecond,
				MaxBackoff: time.Millisecond,
			}
			defer r.Close()
			ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second) // the test's bound, not the call's
			defer cancel()
			err := r.Call(ctx, "crash", nil, nil)
			require.Error(t, err)
			assert.ErrorIs(t, err, jsonrpc.ErrClosed)
			assert.True(t, jsonrpc.MayHaveRun(err), "MayHaveRun(%v)", err)
			assert.Len(t, received, tc.attempts, "attempts that reached a peer")
		})
	}
}

// A Dial that hands back a connection already ended (a peer that accepts
// and hangs up at once, seen a moment late) is backed off from like a
// failed dial, not dialed again in a tight loop.
func TestRedialerBacksOffFromEndedConns(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var dials atomic.Int32
		r := &jsonrpc.Redialer{Dial: func(ctx context.Context) (*jsonrpc.Conn, error) {
			if dials.Add(1) > 100 {
				// Without backoff, no time passes in the bubble: end it.
				return nil, errors.New("too many dials (test)")
			}
			c := jsonrpc.NewConn(strings.NewReader(""), io.Discard, nil)
			<-c.Done()
			return c, nil
		}}
		defer r.Close()
		ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
		defer cancel()
		err := r.Call(ctx, "x", nil, nil)
		assert.ErrorIs(t, err, context.DeadlineExceeded)
		// Waits from 50 ms doubling to 5 s, each between half and all of
		// its bound: 0, 0, then at least 25+50+...+1600 ms over 7 more
		// dials, then 2.5 s and more. Over 10 s that is at most 12.
		assert.LessOrEqual(t, dials.Load(), int32(12), "dials in 10 s")
		assert.GreaterOrEqual(t, dials.Load(), int32(3), "dials in 10 s")
	})
}

// sentThenFailed takes every byte written to it, and reports an error for
// the writes after the first connection's, as a socket whose write went
// out but reported a reset does.
type sentThenFailed struct {
	mu  *sync.Mutex
	got *bytes.Buffer
	bad bool
}

func (w *sentThenFailed) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.got.Write(p)
	if w.bad {
		return len(p), errors.New("connection reset (test)")
	}
	return len(p), nil
}

// A notification that may have been sent is not sent again on a new
// connection, whatever Retry says of its method: Retry is about calls.
func TestRedialerNotifyNotSentTwice(t *testing.T) {
	checkLeaks(t)
	var (
		mu    sync.Mutex
		got   bytes.Buffer
		dials int
	)
	r := &jsonrpc.Redialer{
		Dial: func(ctx context.Context) (*jsonrpc.Conn, error) {
			mu.Lock()
			dials++
			bad := dials == 1
			mu.Unlock()
			pr, pw := io.Pipe()
			t.Cleanup(func() { _ = pw.Close() })
			return jsonrpc.NewConn(pr, &sentThenFailed{&mu, &got, bad}, nil), nil
		},
		Retry: func(string) bool { return true },
	}
	// With a context that never ends, Notify writes on its own goroutine,
	// and sees the write fail.
	err := r.Notify(context.Background(), "tick", nil)
	require.NoError(t, r.Close())
	assert.ErrorIs(t, err, jsonrpc.ErrClosed)
	assert.True(t, jsonrpc.MayHaveRun(err), "MayHaveRun(%v)", err)
	mu.Lock()
	defer mu.Unlock()
	assert.Equal(t, 1, bytes.Count(got.Bytes(), []byte(`"method":"tick"`)), "the notification's copies written")
}

// The end of StartProcess's ctx kills the child at once even after its
// connection has ended, which otherwise gives it 5 s to exit.
func TestProcessContextAfterConnEnds(t *testing.T) {
	checkLeaks(t)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	// The child closes its output and keeps running.
	p, err := jsonrpc.StartProcess(ctx, exec.Command("sh", "-c", "exec >&-; exec sleep 60"), nil)
	require.NoError(t, err)
	recv(t, p.Done(), "the connection to end")
	cancel()
	closed := make(chan error, 1)
	go func() { closed <- p.Close() }()
	select {
	case err = <-closed:
	case <-time.After(3 * time.Second): // against the 5 s the child would get
		t.Fatal("the child was not killed when ctx ended")
	}
	var ee *exec.ExitError
	if assert.ErrorAs(t, err, &ee) {
		assert.Equal(t, syscall.SIGKILL, ee.Sys().(syscall.WaitStatus).Signal())
	}
}

// Redialer.Close returns once the child process that Dial started has
// exited: it gets the end of its input, and exits by itself.
func TestRedialerCloseEndsTheChild(t *testing.T) {
	checkLeaks(t)
	var p *jsonrpc.Process
	r := &jsonrpc.Redialer{Dial: func(ctx context.Context) (*jsonrpc.Conn, error) {
		var err error
		// It reads to the end of its input, then takes 300 ms to exit.
		p, err = jsonrpc.StartProcess(ctx, exec.Command("sh", "-c", "cat >/dev/null; sleep 0.3"), nil)
		if err != nil {
			return nil, err
		}
		return p.Conn, nil
	}}
	require.NoError(t, r.Notify(t.Context(), "hello", nil))
	require.NoError(t, r.Close())
	// Waited for: a signal 0 finds no process, not even a zombie.
	assert.ErrorIs(t, syscall.Kill(p.Cmd.Process.Pid, 0), syscall.ESRCH)
	if assert.NotNil(t, p.Cmd.ProcessState) {
		assert.True(t, p.Cmd.ProcessState.Success(), "exit: %v", p.Cmd.ProcessState)
	}
}

// Redialer.Close waits for the child of a connection that it closed
// itself: one whose OnConnect failed, and one whose dial ended as Close
// ran. Each child takes 500 ms to exit once its input ends, then leaves a
// mark.
func TestRedialerCloseWaitsForEveryChild(t *testing.T) {
	start := func(t *testing.T, mark string) (*jsonrpc.Process, error) {
		return jsonrpc.StartProcess(context.Background(), exec.Command("sh", "-c", "cat >/dev/null; sleep 0.5; touch "+mark), nil)
	}
	t.Run("OnConnect failed", func(t *testing.T) {
		mark := filepath.Join(t.TempDir(), "exited")
		refused := make(chan struct{}, 1)
		r := &jsonrpc.Redialer{
			MinBackoff: time.Hour, MaxBackoff: time.Hour,
			Dial: func(ctx context.Context) (*jsonrpc.Conn, error) {
				p, err := start(t, mark)
				if err != nil {
					return nil, err
				}
				return p.Conn, nil
			},
			OnConnect: func(ctx context.Context, c *jsonrpc.Conn) error {
				refused <- struct{}{}
				return errors.New("handshake refused (test)")
			},
		}
		called := make(chan error, 1)
		go func() { called <- r.Call(context.Background(), "x", nil, nil) }()
		recv(t, refused, "OnConnect")
		require.NoError(t, r.Close())
		assert.FileExists(t, mark, "the child had not exited when Close returned")
		assert.ErrorIs(t, recv(t, called, "the call"), jsonrpc.ErrClosed)
	})
	t.Run("dial ended by Close", func(t *testing.T) {
		mark := filepath.Join(t.TempDir(), "exited")
		dialing := make(chan struct{}, 1)
		r := &jsonrpc.Redialer{
			Dial: func(ctx context.Context) (*jsonrpc.Conn, error) {
				p, err := start(t, mark)
				if err != nil {
					return nil, err
				}
				dialing <- struct{}{}
				<-ctx.Done() // a dial that finishes as Close ends its ctx
				return p.Conn, nil
			},
		}
		called := make(chan error, 1)
		go func() { called <- r.Call(context.Background(), "x", nil, nil) }()
		recv(t, dialing, "the dial")
		require.NoError(t, r.Close())
		assert.FileExists(t, mark, "the child had not exited when Close returned")
		assert.ErrorIs(t, recv(t, called, "the call"), jsonrpc.ErrClosed)
	})
}

// A client that only notifies backs off from a peer that accepts and
// closes each connection at once: a notification written is no answer,
// so it does not make the next connection the first in a row again.
func TestRedialerNotifyOnlyBacksOff(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer l.Close()
	var accepts atomic.Int64
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			accepts.Add(1)
			_ = c.Close()
		}
	}()
	r := &jsonrpc.Redialer{
		MinBackoff: 100 * time.Millisecond, MaxBackoff: time.Second,
		Dial: func(ctx context.Context) (*jsonrpc.Conn, error) {
			return jsonrpc.Dial(ctx, "tcp", l.Addr().String(), nil)
		},
	}
	defer r.Close()
	ctx, cancel := context.WithTimeout(t.Context(), 500*time.Millisecond)
	defer cancel()
	for ctx.Err() == nil {
		_ = r.Notify(ctx, "n", nil)
		time.Sleep(5 * time.Millisecond)
	}
	// With backoff: two at once, then waits of 50-100 ms, 100-200 ms,
	// ...: at most 6 in 500 ms. Without, one per notification.
	assert.LessOrEqual(t, accepts.Load(), int64(10), "connections in 500 ms")
}

// TestRedialerCloseWhileDialIgnoresCtx checks that a call waiting for a
// connection fails at Close, as Close documents ("calls waiting for a
// connection fail at once"), even while a Dial that ignores its ctx is
// still under way.
func TestRedialerCloseWhileDialIgnoresCtx(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := newBackend()
		defer b.close()
		gate := make(chan struct{})
		dial := func(ctx context.Context) (*jsonrpc.Conn, error) {
			<-gate // ignores ctx
			return b.dial(ctx)
		}
		r := &jsonrpc.Redialer{Dial: dial}
		res := make(chan error, 1)
		go func() { res <- r.Call(context.Background(), "add", [2]int{1, 1}, nil) }()
		synctest.Wait()
		closed := make(chan struct{})
		go func() { _ = r.Close(); close(closed) }()
		synctest.Wait()
		var got error
		select {
		case got = <-res:
			assert.ErrorIs(t, got, jsonrpc.ErrClosed)
		default:
			t.Error("a call waiting for a connection still waits after Close, while Dial hangs")
		}
		close(gate) // let the stuck dial return, so that Close can finish
		<-closed
		if got == nil {
			got = <-res
			assert.ErrorIs(t, got, jsonrpc.ErrClosed)
		}
	})
}

// TestRedialerNoConnectionDidNotRun checks that a call that never got a
// connection did not run (MayHaveRun false), whatever the last dial failed
// with: here, OnConnect's own call got an error answer from the peer.
func TestRedialerNoConnectionDidNotRun(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := newBackend()
		defer b.close()
		b.mux.Handle("init", jsonrpc.Func(func(_ context.Context, _ struct{}) (int, error) {
			return 0, errors.New("not ready")
		}))
		r := &jsonrpc.Redialer{
			Dial: b.dial,
			OnConnect: func(ctx context.Context, c *jsonrpc.Conn) error {
				return c.Call(ctx, "init", struct{}{}, nil)
			},
		}
		defer r.Close()
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		err := r.Call(ctx, "add", [2]int{1, 1}, nil)
		require.ErrorIs(t, err, context.DeadlineExceeded)
		assert.False(t, jsonrpc.MayHaveRun(err),
			"a call that never had a connection did not run; got MayHaveRun true for %v", err)
	})
}
