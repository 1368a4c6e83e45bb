package jsonrpc_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/ndjsonrpc/jsonrpc"
)

// lineWatch is an io.Writer that counts the lines written to it, so that a
// test can wait until a call is on the wire and so knows its id.
type lineWatch struct {
	mu    sync.Mutex
	cond  sync.Cond
	lines int
}

func newLineWatch() *lineWatch {
	w := new(lineWatch)
	w.cond.L = &w.mu
	return w
}

func (w *lineWatch) Write(p []byte) (int, error) {
	w.mu.Lock()
	w.lines += bytes.Count(p, []byte("\n"))
	w.cond.Broadcast()
	w.mu.Unlock()
	return len(p), nil
}

// waitLines waits until n lines have been written, or d has passed, and
// reports which.
func (w *lineWatch) waitLines(n int, d time.Duration) bool {
	timer := time.AfterFunc(d, func() {
		w.mu.Lock()
		w.cond.Broadcast()
		w.mu.Unlock()
	})
	defer timer.Stop()
	deadline := time.Now().Add(d)
	w.mu.Lock()
	defer w.mu.Unlock()
	for w.lines < n && time.Now().Before(deadline) {
		w.cond.Wait()
	}
	return w.lines >= n
}

// FuzzConnPeer has a Conn, the client end of a two-way connection, make a
// call (id 1), a stream (id 2) and a batch of two calls (ids 3 and 4),
// and then read arbitrary input from its peer: answers, items, cancels,
// requests and notifications for it, or anything else, under a
// MaxMessageSize that limit picks. Each of the calls
// must end, without panicking, within fuzzHang of the input's end, and
// Close too; nothing they give back may be longer than the input, nor may
// more items or notifications be passed on than it has lines.
func FuzzConnPeer(f *testing.F) {
	for _, s := range []string{
		`{"jsonrpc":"2.0","id":1,"result":{"a":[1,"x"]}}`,
		`{"jsonrpc":"2.0","method":"$/stream","params":{"id":2,"item":{"i":0}}}` + "\n" +
			`{"jsonrpc":"2.0","id":2,"result":1}`,
		`[{"jsonrpc":"2.0","id":3,"result":3},{"jsonrpc":"2.0","id":4,"error":{"code":-32601,"message":"Method not found"}}]`,
		`{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Parse error"}}`,
		`{"jsonrpc":"2.0","method":5}` + "\n" + `{"jsonrpc":"2.0","method":7,"params":{"id":2,"item":0}}`,
		`{"jsonrpc":"2.0","method":["\\"],"params":{"id":2}}`,
		`{"jsonrpc":"2.0","method":"$/cancelRequest","params":{"id":9}}`,
		`{"jsonrpc":"2.0","id":9,"method":"echo","params":[1]}` + "\n" + `{"jsonrpc":"2.0","id":10,"method":"echo"}`,
		`{"jsonrpc":"2.0","method":"log","params":["a"]}`,
		`{"jsonrpc":"2.0","id":1,"result":1,"error":{"code":1,"message":"x"}}`,
		`{"jsonrpc":"2.0","id":"1","result":1}` + "\n" + `{"jsonrpc":"2.0","id":01,"result":1}`,
		`{"jsonrpc":"2.0","id":1,"id":1,"result":1}`,
		`[]` + "\n" + `[1]` + "\n" + `{` + "\n" + `"x"`,
		`{"jsonrpc":"2.0","method":"$/stream","params":{"id":2,"id":2,"item":1}}`,
		"\xff\xfe\n{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":\"\xff\"}",
	} {
		f.Add([]byte(s), uint8(0))
		f.Add([]byte(s), uint8(1))
	}
	f.Fuzz(func(t *testing.T, input []byte, limit uint8) {
		mux := new(jsonrpc.Mux)
		mux.Handle("echo", jsonrpc.RawHandlerFunc(func(_ context.Context, req *jsonrpc.Request) (json.RawMessage, error) {
			return req.Params, nil
		}))
		var (
			mu              sync.Mutex
			notes, unknowns int
		)
		pr, pw := io.Pipe()
		out := newLineWatch()
		c := jsonrpc.NewConn(pr, out, &jsonrpc.Options{
			Handler: mux,
			// Zero, or a limit that most messages pass, so that the
			// heads of those too large to read are read for their ids.
			MaxMessageSize: []int{0, 48, 96, 200}[limit%4],
			StopGrace:      100 * time.Millisecond,
			OnNotify: func(r *jsonrpc.Request) {
				mu.Lock()
				notes++
				mu.Unlock()
			},
			OnUnknownResponse: func(*jsonrpc.Response) {
				mu.Lock()
				unknowns++
				mu.Unlock()
			},
		})
		ctx := context.Background()
		var (
			wg                sync.WaitGroup
			result            json.RawMessage
			items             []json.RawMessage
			batch1, batch2    json.RawMessage
			callErr, batchErr error
		)
		wg.Go(func() { callErr = c.Call(ctx, "call", nil, &result) })
		ready := out.waitLines(1, fuzzHang)
		wg.Go(func() {
			for item, err := range c.Stream(ctx, "stream", nil) {
				if err == nil {
					items = append(items, item)
				}
			}
		})
		ready = ready && out.waitLines(2, fuzzHang)
		b1 := &jsonrpc.BatchCall{Method: "one", Result: &batch1}
		b2 := &jsonrpc.BatchCall{Method: "two", Result: &batch2}
		wg.Go(func() { batchErr = c.Batch(ctx, b1, b2) })
		ready = ready && out.waitLines(3, fuzzHang)
		if !ready {
			t.Fatalf("the calls were not written within %v", fuzzHang)
		}
		go func() {
			_, _ = pw.Write(input)
			_ = pw.Close()
		}()
		done := make(chan struct{})
		go func() {
			wg.Wait()
			_ = c.Close()
			close(done)
		}()
		select {
		case <-done:
		case <-time.After(fuzzHang):
			stacks := make([]byte, 1<<20)
			stacks = stacks[:runtime.Stack(stacks, true)]
			t.Fatalf("input %q: the calls and Close did not end within %v; goroutines:\n%s", input, fuzzHang, stacks)
		}
		lines := bytes.Count(input, []byte("\n")) + 1
		for name, v := range map[string]json.RawMessage{"Call's result": result, "a batch result": batch1, "the other batch result": batch2} {
			if len(v) > len(input) {
				t.Fatalf("input %q: %s is %d bytes", input, name, len(v))
			}
		}
		if len(items) > lines {
			t.Fatalf("input %q: %d items from %d lines", input, len(items), lines)
		}
		mu.Lock()
		defer mu.Unlock()
		if notes > lines || unknowns > lines {
			t.Fatalf("input %q: %d notifications and %d unknown responses from %d lines", input, notes, unknowns, lines)
		}
		// An input with no answers at all fails every call: the peer went.
		if !bytes.Contains(input, []byte(`"id"`)) {
			if callErr == nil || batchErr == nil {
				t.Fatalf("input %q: no answer, yet Call gave %v and Batch %v", input, callErr, batchErr)
			}
			if !errors.Is(callErr, jsonrpc.ErrClosed) && !errors.Is(callErr, jsonrpc.ErrPeerClosed) {
				t.Fatalf("input %q: Call gave %v, want the connection's end", input, callErr)
			}
		}
	})
}
