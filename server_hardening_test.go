package jsonrpc_test

import (
	"bufio"
	"context"
	"errors"
	"io"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ndjsonrpc/jsonrpc"
)

// TestServerHardeningStalledPeerBudget guards the byte budget of a
// connection: a peer that sends large requests and stops reading the
// answers makes the server stop reading once MaxPendingBytes of requests
// are held, rather than hold about 2 x MaxInFlight + 1 lines (here 129
// MiB). Then the peer reads again, and every request is answered.
func TestServerHardeningStalledPeerBudget(t *testing.T) {
	checkLeaks(t)
	const (
		size   = 1 << 20
		sent   = 80
		budget = 4 << 20
	)
	srv := &jsonrpc.Server{Options: jsonrpc.Options{Handler: specMux(), MaxPendingBytes: budget}}
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	served := make(chan error, 1)
	go func() {
		err := srv.Serve(t.Context(), inR, outW)
		_ = outW.Close()
		served <- err
	}()

	payload := strings.Repeat("x", size)
	var written atomic.Int32
	wrote := make(chan error, 1)
	go func() {
		for i := range sent {
			line := req(strconv.Itoa(i), "echo", `["`+payload+`"]`) + "\n"
			if _, err := io.WriteString(inW, line); err != nil {
				wrote <- err
				return
			}
			written.Add(1)
		}
		wrote <- inW.Close()
	}()

	// Nobody reads the output: wait until the server stops reading too.
	last, still := int32(-1), 0
	for still < 10 {
		time.Sleep(20 * time.Millisecond)
		if n := written.Load(); n == last {
			still++
		} else {
			last, still = n, 0
		}
		require.Less(t, last, int32(sent), "the server read every request while nobody read its answers")
	}
	held := liveHeapBytes(t)
	t.Logf("the server stopped reading after %d requests of %d KiB; live heap %d MiB", last, size>>10, held>>20)
	// The budget, one line over it, the read buffer (half again a line),
	// the line being queued, and a line in the output: well under 16 MiB.
	assert.Less(t, last, int32(24), "requests read while the answers were not read")
	assert.Less(t, held, uint64(24<<20), "live heap while the peer does not read")

	// The peer reads again: every request is answered, once.
	seen := make(map[string]bool)
	sc := bufio.NewScanner(outR)
	sc.Buffer(nil, 4<<20)
	for sc.Scan() {
		resp := decodeResponse(t, sc.Text())
		require.Nil(t, resp.Error)
		id := resp.ID.String()
		assert.False(t, seen[id], "id %s answered twice", id)
		seen[id] = true
	}
	require.NoError(t, <-wrote)
	require.NoError(t, <-served)
	assert.Len(t, seen, sent)
}

// stuckReader is a reader whose Read cannot be interrupted: it returns
// only what is sent on lines, and has no Close, as with
// bufio.NewReader(os.Stdin).
type stuckReader struct {
	lines  chan string
	inRead chan struct{} // receives each time Read starts to wait
	rest   []byte
}

func newStuckReader() *stuckReader {
	return &stuckReader{lines: make(chan string), inRead: make(chan struct{}, 16)}
}

func (r *stuckReader) Read(p []byte) (int, error) {
	if len(r.rest) == 0 {
		select {
		case r.inRead <- struct{}{}:
		default:
		}
		line, ok := <-r.lines
		if !ok {
			return 0, io.EOF
		}
		r.rest = []byte(line)
	}
	n := copy(p, r.rest)
	r.rest = r.rest[n:]
	return n, nil
}

// TestServerHardeningShutdownStuckReader guards Shutdown and Close on a
// reader they cannot interrupt: with nothing in flight, Shutdown returns
// at once and Serve returns ErrServerClosed, rather than both waiting for
// a Read that never ends; Close does not cost the whole StopGrace. A line
// read after that is not served, and the reading goroutine ends when its
// Read returns.
func TestServerHardeningShutdownStuckReader(t *testing.T) {
	for _, how := range []string{"Shutdown", "Close"} {
		t.Run(how, func(t *testing.T) {
			checkLeaks(t)
			r := newStuckReader()
			out := new(lockedBuffer)
			srv := &jsonrpc.Server{Options: jsonrpc.Options{Handler: specMux(), StopGrace: time.Minute}}
			served := make(chan error, 1)
			go func() { served <- srv.Serve(context.Background(), r, out) }()
			defer close(r.lines) // lets the goroutine left in Read end

			r.lines <- req("1", "echo", `["a"]`) + "\n"
			<-r.inRead // the first call, before the line
			<-r.inRead // the line is served; the reader waits again
			require.Eventually(t, func() bool { return strings.Contains(out.String(), `"id":1`) }, guard, time.Millisecond)

			done := make(chan error, 1)
			go func() {
				if how == "Shutdown" {
					ctx, cancel := context.WithTimeout(context.Background(), guard)
					defer cancel()
					done <- srv.Shutdown(ctx)
					return
				}
				done <- srv.Close()
			}()
			select {
			case err := <-done:
				require.NoError(t, err)
			case <-time.After(guard):
				require.FailNow(t, how+" did not return with nothing in flight")
			}
			select {
			case err := <-served:
				require.ErrorIs(t, err, jsonrpc.ErrServerClosed)
			case <-time.After(guard):
				require.FailNow(t, "Serve did not return after "+how)
			}
			before := out.String()
			r.lines <- req("2", "echo", `["b"]`) + "\n"
			// The goroutine left in Read ends without serving the line
			// (checkLeaks would catch it otherwise).
			require.Eventually(t, func() bool { return len(r.lines) == 0 }, guard, time.Millisecond)
			assert.Equal(t, before, out.String(), "a line read after "+how+" was served")
		})
	}
}

// TestServerHardeningShutdownWaitsForHandlers checks that Shutdown with a
// stuck reader still waits for the handlers in flight and their answers.
func TestServerHardeningShutdownWaitsForHandlers(t *testing.T) {
	checkLeaks(t)
	r := newStuckReader()
	defer close(r.lines)
	out := new(lockedBuffer)
	release := make(chan struct{})
	started := make(chan struct{})
	mux := new(jsonrpc.Mux)
	mux.HandleFunc("wait", func(context.Context, *jsonrpc.Request) (any, error) {
		close(started)
		<-release
		return "done", nil
	})
	srv := &jsonrpc.Server{Options: jsonrpc.Options{Handler: mux}}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(context.Background(), r, out) }()
	r.lines <- req("1", "wait", `[]`) + "\n"
	<-started

	shut := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), guard)
		defer cancel()
		shut <- srv.Shutdown(ctx)
	}()
	select {
	case err := <-shut:
		require.FailNow(t, "Shutdown returned before the handler", "err %v", err)
	case <-time.After(50 * time.Millisecond):
	}
	close(release)
	select {
	case err := <-shut:
		require.NoError(t, err)
	case <-time.After(guard):
		require.FailNow(t, "Shutdown did not return once the handler did")
	}
	err := <-served
	require.True(t, errors.Is(err, jsonrpc.ErrServerClosed), "Serve returned %v", err)
	assert.Contains(t, out.String(), `"result":"done"`)
}
