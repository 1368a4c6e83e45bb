package jsonrpc_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"iter"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/ndjsonrpc/jsonrpc"
)

// TestMain checks, after all the tests, that none of them left a goroutine
// behind; checkLeaks does the same test by test.
func TestMain(m *testing.M) {
	if os.Getenv(childEnv) != "" {
		serveChild() // the test binary as a child server (see childCommand)
		return
	}
	goleak.VerifyTestMain(m)
}

// checkLeaks fails t if a goroutine started during the test is still
// running once the test and its other cleanups are done. Call it first, so
// that its cleanup runs last.
func checkLeaks(t *testing.T) {
	t.Helper()
	opt := goleak.IgnoreCurrent()
	t.Cleanup(func() { goleak.VerifyNone(t, opt) })
}

// serveString runs srv over input until EOF and returns the output lines.
func serveString(t *testing.T, srv *jsonrpc.Server, input string) []string {
	t.Helper()
	checkLeaks(t)
	var out bytes.Buffer
	err := srv.Serve(t.Context(), strings.NewReader(input), &out)
	require.NoError(t, err)
	return splitLines(out.String())
}

// splitLines splits output into its lines, dropping the final newline.
func splitLines(s string) []string {
	var lines []string
	sc := bufio.NewScanner(strings.NewReader(s))
	sc.Buffer(nil, 1<<30)
	for sc.Scan() {
		lines = append(lines, sc.Text())
	}
	return lines
}

// countParams are the params {"n": N} of the test methods that produce N
// of something.
type countParams struct {
	N int `json:"n"`
}

// specMux registers the methods that the examples of the JSON-RPC 2.0
// specification call.
func specMux() *jsonrpc.Mux {
	mux := new(jsonrpc.Mux)
	mux.Handle("subtract", jsonrpc.Func(func(_ context.Context, p json.RawMessage) (int, error) {
		var a [2]int
		if err := json.Unmarshal(p, &a); err == nil {
			return a[0] - a[1], nil
		}
		var o struct{ Minuend, Subtrahend int }
		if err := json.Unmarshal(p, &o); err != nil {
			return 0, jsonrpc.ErrInvalidParams
		}
		return o.Minuend - o.Subtrahend, nil
	}))
	mux.Handle("sum", jsonrpc.Func(func(_ context.Context, nums []int) (int, error) {
		s := 0
		for _, n := range nums {
			s += n
		}
		return s, nil
	}))
	mux.HandleFunc("get_data", func(context.Context, *jsonrpc.Request) (any, error) {
		return []any{"hello", 5}, nil
	})
	for _, m := range []string{"update", "notify_hello", "notify_sum"} {
		mux.HandleFunc(m, func(context.Context, *jsonrpc.Request) (any, error) { return nil, nil })
	}
	mux.HandleFunc("echo", func(_ context.Context, req *jsonrpc.Request) (any, error) {
		return req.Params, nil
	})
	return mux
}

// lockedBuffer is a bytes.Buffer safe for concurrent use, for logs and for
// output read while a server writes it.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// isDone reports whether c has ended.
func isDone(c *jsonrpc.Conn) bool {
	select {
	case <-c.Done():
		return true
	default:
		return false
	}
}

// itemsOf calls req's method on h in process and returns the stream's
// items.
func itemsOf(ctx context.Context, h jsonrpc.Handler, req *jsonrpc.Request) iter.Seq2[json.RawMessage, error] {
	return (&jsonrpc.InProcess{Handler: h}).Stream(ctx, req.Method, req.Params)
}

// waitingMux serves "wait", whose handler tells started that it runs and
// returns once its context ends.
func waitingMux(started chan<- struct{}) *jsonrpc.Mux {
	mux := new(jsonrpc.Mux)
	mux.HandleFunc("wait", func(ctx context.Context, _ *jsonrpc.Request) (any, error) {
		started <- struct{}{}
		<-ctx.Done()
		return nil, ctx.Err()
	})
	return mux
}

// holdReader returns once reading has moved on from the handler of ctx
// (at once for one that runs off the reader), which marks its method
// slow: whatever the watchdog's delay, its next requests are queued. If
// reading has not moved on within 10 s, it fails t and returns.
func holdReader(t testing.TB, ctx context.Context) {
	deadline := time.Now().Add(10 * time.Second)
	for jsonrpc.HoldsReader(ctx) {
		if time.Now().After(deadline) {
			t.Errorf("reading did not move on from the handler in 10 s")
			return
		}
		time.Sleep(time.Millisecond)
	}
}
