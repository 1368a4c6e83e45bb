package jsonrpc_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ndjsonrpc/jsonrpc"
)

// listen starts srv on a loopback TCP listener and returns its address
// and a channel that receives what ServeListener returned.
func listen(t *testing.T, ctx context.Context, srv *jsonrpc.Server) (string, <-chan error) {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	errc := make(chan error, 1)
	go func() { errc <- srv.ServeListener(ctx, l) }()
	return l.Addr().String(), errc
}

// blockMux has "block", which waits until release is closed or its
// context ends, and "sum".
func blockMux(started chan<- string, release <-chan struct{}) *jsonrpc.Mux {
	mux := specMux()
	mux.HandleFunc("block", func(ctx context.Context, req *jsonrpc.Request) (any, error) {
		started <- string(req.Params)
		select {
		case <-release:
			return "released", nil
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	})
	return mux
}

func TestListenerDial(t *testing.T) {
	checkLeaks(t)
	ctx, cancel := context.WithCancel(t.Context())
	srv := &jsonrpc.Server{Options: jsonrpc.Options{Handler: specMux()}}
	addr, errc := listen(t, ctx, srv)

	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			c, err := jsonrpc.Dial(t.Context(), "tcp", addr, nil)
			if !assert.NoError(t, err) {
				return
			}
			defer c.Close()
			for j := range 50 {
				var n int
				if !assert.NoError(t, c.Call(t.Context(), "sum", []int{i, j}, &n)) || !assert.Equal(t, i+j, n) {
					return
				}
			}
		})
	}
	wg.Wait()

	// Unix sockets, and the two-way endpoint.
	sock := filepath.Join(t.TempDir(), "rpc.sock")
	l, err := net.Listen("unix", sock)
	require.NoError(t, err)
	uerr := make(chan error, 1)
	go func() { uerr <- srv.ServeListener(ctx, l) }()
	conn, err := jsonrpc.Dial(t.Context(), "unix", sock, nil)
	require.NoError(t, err)
	var got []any
	require.NoError(t, conn.Call(t.Context(), "get_data", nil, &got))
	assert.Equal(t, []any{"hello", float64(5)}, got)
	require.NoError(t, conn.Close())

	_, err = jsonrpc.Dial(t.Context(), "tcp", "127.0.0.1:1", nil)
	assert.Error(t, err, "nothing listens there")

	cancel()
	assert.ErrorIs(t, <-errc, context.Canceled)
	assert.ErrorIs(t, <-uerr, context.Canceled)
}

// TestListenerShutdown has Shutdown meet connections idle, busy and
// half-closed: it waits for the busy one's answer, and returns once every
// connection's goroutines are gone.
func TestListenerShutdown(t *testing.T) {
	checkLeaks(t)
	started := make(chan string, 4)
	release := make(chan struct{})
	srv := &jsonrpc.Server{Options: jsonrpc.Options{Handler: blockMux(started, release)}}
	addr, errc := listen(t, t.Context(), srv)

	idle := dialRaw(t, addr)
	busy := dialRaw(t, addr)
	half := dialRaw(t, addr)
	busy.send(`{"jsonrpc":"2.0","id":1,"method":"block","params":["busy"]}`)
	half.send(`{"jsonrpc":"2.0","id":2,"method":"block","params":["half"]}`)
	<-started
	<-started
	require.NoError(t, half.nc.(*net.TCPConn).CloseWrite())
	idle.send(`{"jsonrpc":"2.0","id":3,"method":"sum","params":[1,2]}`)
	assert.JSONEq(t, `{"jsonrpc":"2.0","id":3,"result":3}`, idle.recv())

	shut := make(chan error, 1)
	go func() { shut <- srv.Shutdown(t.Context()) }()
	// The idle connection is closed, the busy ones are not.
	assert.Equal(t, "EOF", idle.recvErr())
	select {
	case err := <-shut:
		t.Fatalf("Shutdown returned %v while handlers ran", err)
	case <-time.After(50 * time.Millisecond):
	}
	close(release)
	assert.JSONEq(t, `{"jsonrpc":"2.0","id":1,"result":"released"}`, busy.recv())
	assert.JSONEq(t, `{"jsonrpc":"2.0","id":2,"result":"released"}`, half.recv())
	require.NoError(t, <-shut)
	assert.ErrorIs(t, <-errc, jsonrpc.ErrServerClosed)
	assert.Equal(t, "EOF", busy.recvErr())

	// Later, no connection is served.
	assert.ErrorIs(t, srv.ServeListener(t.Context(), newNeverListener()), jsonrpc.ErrServerClosed)
}

func TestListenerClose(t *testing.T) {
	checkLeaks(t)
	started := make(chan string, 4)
	srv := &jsonrpc.Server{Options: jsonrpc.Options{Handler: blockMux(started, nil), StopGrace: time.Second}}
	addr, errc := listen(t, t.Context(), srv)
	busy := dialRaw(t, addr)
	busy.send(`{"jsonrpc":"2.0","id":1,"method":"block"}`)
	<-started
	require.NoError(t, srv.Close())
	assert.ErrorIs(t, <-errc, jsonrpc.ErrServerClosed)
	// The handler saw its context end; whatever it answered, the
	// connection then closed.
	for {
		if _, err := busy.r.ReadString('\n'); err != nil {
			break
		}
	}
}

func TestListenerMaxConns(t *testing.T) {
	checkLeaks(t)
	srv := &jsonrpc.Server{Options: jsonrpc.Options{Handler: specMux()}, MaxConns: 2}
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	addr, errc := listen(t, ctx, srv)
	a, b := dialRaw(t, addr), dialRaw(t, addr)
	for _, c := range []*rawConn{a, b} {
		c.send(`{"jsonrpc":"2.0","id":1,"method":"sum","params":[1]}`)
		assert.JSONEq(t, `{"jsonrpc":"2.0","id":1,"result":1}`, c.recv())
	}
	// A third connection is made (the kernel's backlog takes it) but not
	// served until one of the first two goes.
	third := dialRaw(t, addr)
	third.send(`{"jsonrpc":"2.0","id":1,"method":"sum","params":[3]}`)
	_ = third.nc.SetReadDeadline(time.Now().Add(100 * time.Millisecond))
	_, err := third.r.ReadString('\n')
	var ne net.Error
	require.ErrorAs(t, err, &ne, "the third connection is not served")
	require.True(t, ne.Timeout())
	_ = third.nc.SetReadDeadline(time.Time{})
	require.NoError(t, a.nc.Close())
	assert.JSONEq(t, `{"jsonrpc":"2.0","id":1,"result":3}`, third.recv())
	cancel()
	assert.ErrorIs(t, <-errc, context.Canceled)
}

// TestListenerIdleTimeout closes a connection that does nothing, and one
// that trickles a message slower than the timeout, but not one whose
// request runs longer than it.
func TestListenerIdleTimeout(t *testing.T) {
	checkLeaks(t)
	started := make(chan string, 4)
	release := make(chan struct{})
	srv := &jsonrpc.Server{Options: jsonrpc.Options{Handler: blockMux(started, release)}, IdleTimeout: 200 * time.Millisecond}
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	addr, errc := listen(t, ctx, srv)

	quiet := dialRaw(t, addr)
	trickle := dialRaw(t, addr)
	busy := dialRaw(t, addr)
	busy.send(`{"jsonrpc":"2.0","id":1,"method":"block"}`)
	<-started
	stopTrickle := make(chan struct{})
	go func() {
		msg := `{"jsonrpc":"2.0","id":1,"method":"sum","params":[1,2,3,4,5,6,7,8,9]}`
		for i := range len(msg) {
			select {
			case <-stopTrickle:
				return
			case <-time.After(30 * time.Millisecond):
			}
			if _, err := trickle.nc.Write([]byte{msg[i]}); err != nil {
				return
			}
		}
	}()
	assert.Equal(t, "EOF", quiet.recvErr(), "an idle connection is closed")
	// Closed with part of a message unread, the socket may be reset
	// rather than ended: either way it is gone.
	assert.Regexp(t, "^EOF$|connection reset", trickle.recvErr(), "a trickling one too")
	close(stopTrickle)
	time.Sleep(300 * time.Millisecond) // past the timeout again
	close(release)
	assert.JSONEq(t, `{"jsonrpc":"2.0","id":1,"result":"released"}`, busy.recv(), "a busy one is not")
	assert.Equal(t, "EOF", busy.recvErr(), "once done, it idles out too")
	cancel()
	assert.ErrorIs(t, <-errc, context.Canceled)
}

// TestListenerChurn opens and drops 1,000 connections without a request:
// each is served and let go, and nothing is left behind.
func TestListenerChurn(t *testing.T) {
	checkLeaks(t)
	srv := &jsonrpc.Server{Options: jsonrpc.Options{Handler: specMux()}}
	ctx, cancel := context.WithCancel(t.Context())
	addr, errc := listen(t, ctx, srv)
	for i := range 1000 {
		nc, err := net.Dial("tcp", addr)
		require.NoError(t, err)
		if i%2 == 0 {
			_, _ = nc.Write([]byte(`{"jsonrpc":"2.0",`)) // half a message
		}
		require.NoError(t, nc.Close())
	}
	c := dialRaw(t, addr)
	c.send(`{"jsonrpc":"2.0","id":1,"method":"sum","params":[1,2]}`)
	assert.JSONEq(t, `{"jsonrpc":"2.0","id":1,"result":3}`, c.recv(), "still serving")
	require.NoError(t, srv.Shutdown(t.Context()))
	cancel()
	assert.ErrorIs(t, <-errc, jsonrpc.ErrServerClosed)
}

// TestListenerAcceptRetry feeds ServeListener errors that may pass, then
// a connection, then one that may not.
func TestListenerAcceptRetry(t *testing.T) {
	checkLeaks(t)
	server, client := net.Pipe()
	fatal := errors.New("listener broken")
	l := &scriptedListener{steps: []any{
		&net.OpError{Op: "accept", Err: syscall.EMFILE},
		&net.OpError{Op: "accept", Err: syscall.ECONNABORTED},
		timeoutError{},
		server,
		fatal,
	}}
	srv := &jsonrpc.Server{Options: jsonrpc.Options{Handler: specMux()}}
	errc := make(chan error, 1)
	go func() { errc <- srv.ServeListener(t.Context(), l) }()
	c := jsonrpc.NewConn(client, client, nil)
	var n int
	require.NoError(t, c.Call(t.Context(), "sum", []int{2, 2}, &n))
	assert.Equal(t, 4, n)
	require.NoError(t, c.Close())
	assert.ErrorIs(t, <-errc, fatal)
	assert.True(t, l.closed.Load(), "ServeListener closes its listener")
}

type timeoutError struct{}

func (timeoutError) Error() string   { return "i/o timeout" }
func (timeoutError) Timeout() bool   { return true }
func (timeoutError) Temporary() bool { return true }

// scriptedListener returns its steps from Accept in turn: a net.Conn or
// an error; past the last, it fails with net.ErrClosed.
type scriptedListener struct {
	mu     sync.Mutex
	steps  []any
	closed atomic.Bool
}

func (l *scriptedListener) Accept() (net.Conn, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.steps) == 0 || l.closed.Load() {
		return nil, net.ErrClosed
	}
	step := l.steps[0]
	l.steps = l.steps[1:]
	if nc, ok := step.(net.Conn); ok {
		return nc, nil
	}
	return nil, step.(error)
}

func (l *scriptedListener) Close() error   { l.closed.Store(true); return nil }
func (l *scriptedListener) Addr() net.Addr { return &net.TCPAddr{} }

// neverListener blocks in Accept until closed.
type neverListener struct {
	once sync.Once
	done chan struct{}
}

func newNeverListener() *neverListener { return &neverListener{done: make(chan struct{})} }

func (l *neverListener) Accept() (net.Conn, error) {
	<-l.done
	return nil, net.ErrClosed
}

func (l *neverListener) Close() error {
	l.once.Do(func() { close(l.done) })
	return nil
}

func (l *neverListener) Addr() net.Addr { return &net.TCPAddr{} }

// rawConn is a client connection that sends and reads lines itself.
type rawConn struct {
	t  *testing.T
	nc net.Conn
	r  *bufio.Reader
}

func dialRaw(t *testing.T, addr string) *rawConn {
	t.Helper()
	nc, err := net.Dial("tcp", addr)
	require.NoError(t, err)
	t.Cleanup(func() { _ = nc.Close() })
	return &rawConn{t: t, nc: nc, r: bufio.NewReader(nc)}
}

func (c *rawConn) send(line string) {
	c.t.Helper()
	_, err := io.WriteString(c.nc, line+"\n")
	require.NoError(c.t, err)
}

// recv reads one line, failing the test after 10 s.
func (c *rawConn) recv() string {
	c.t.Helper()
	_ = c.nc.SetReadDeadline(time.Now().Add(10 * time.Second))
	line, err := c.r.ReadString('\n')
	require.NoError(c.t, err)
	return line
}

// recvErr reads until the connection fails and returns the error's text
// ("EOF" for a clean close), failing the test if a line comes instead.
func (c *rawConn) recvErr() string {
	c.t.Helper()
	_ = c.nc.SetReadDeadline(time.Now().Add(10 * time.Second))
	line, err := c.r.ReadString('\n')
	if err == nil {
		c.t.Fatalf("got %q, want the connection to end", line)
	}
	return fmt.Sprint(err)
}

// TestListenerStalledPeer sends requests for large answers and never
// reads them: once the server's write has been stuck for IdleTimeout, the
// connection is dropped, handlers and all, and Shutdown finds nothing
// left to wait for.
func TestListenerStalledPeer(t *testing.T) {
	checkLeaks(t)
	mux := new(jsonrpc.Mux)
	big := strings.Repeat("x", 256<<10)
	mux.HandleFunc("big", func(context.Context, *jsonrpc.Request) (any, error) { return big, nil })
	srv := &jsonrpc.Server{Options: jsonrpc.Options{Handler: mux}, IdleTimeout: 200 * time.Millisecond}
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	addr, errc := listen(t, ctx, srv)
	nc, err := net.Dial("tcp", addr)
	require.NoError(t, err)
	defer nc.Close()
	require.NoError(t, nc.(*net.TCPConn).SetReadBuffer(4096))
	go func() {
		for i := 0; ; i++ {
			if _, err := fmt.Fprintf(nc, `{"jsonrpc":"2.0","id":%d,"method":"big"}`+"\n", i); err != nil {
				return // the server dropped us
			}
		}
	}()
	shut, stop := context.WithTimeout(t.Context(), 10*time.Second)
	defer stop()
	time.Sleep(time.Second) // the server's writes fill the socket and stall
	require.NoError(t, srv.Shutdown(shut), "the stalled connection was dropped")
	assert.ErrorIs(t, <-errc, jsonrpc.ErrServerClosed)
}

// TestListenerShutdownKeepsAnswers: a request that arrives after Shutdown
// stopped reading must not cost the answers already written: a socket
// closed with unread input is reset, and a reset destroys what the peer
// has not read yet.
func TestListenerShutdownKeepsAnswers(t *testing.T) {
	checkLeaks(t)
	big := strings.Repeat("x", 4<<20)
	started := make(chan struct{})
	mux := new(jsonrpc.Mux)
	mux.HandleFunc("slowbig", func(context.Context, *jsonrpc.Request) (any, error) {
		close(started)
		time.Sleep(200 * time.Millisecond)
		return big, nil
	})
	mux.HandleFunc("fast", func(context.Context, *jsonrpc.Request) (any, error) { return "ok", nil })
	srv := &jsonrpc.Server{Options: jsonrpc.Options{Handler: mux}}
	addr, errc := listen(t, t.Context(), srv)
	c, err := jsonrpc.Dial(t.Context(), "tcp", addr, nil)
	require.NoError(t, err)
	defer c.Close()
	slow := make(chan error, 1)
	var got string
	go func() { slow <- c.Call(t.Context(), "slowbig", nil, &got) }()
	<-started
	shut := make(chan error, 1)
	go func() { shut <- srv.Shutdown(t.Context()) }()
	// Shutdown runs on its own goroutine: until it reaches the
	// connection, a call there still runs. A late one is answered, not
	// served, while the slow answer is still being made.
	var late error
	require.Eventually(t, func() bool {
		late = c.Call(t.Context(), "fast", nil, nil)
		return late != nil
	}, waitTimeout, time.Millisecond, "Shutdown has reached the connection")
	assert.ErrorIs(t, late, jsonrpc.ErrNotRun, "the late request is answered, not served")
	require.NoError(t, <-slow, "the answer written before the close arrives whole")
	assert.Len(t, got, len(big))
	require.NoError(t, <-shut)
	assert.ErrorIs(t, <-errc, jsonrpc.ErrServerClosed)
}
