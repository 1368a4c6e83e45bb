package jsonrpc_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/ndjsonrpc/jsonrpc"
)

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
		c, peer := newRawPeer(t, &jsonrpc.Options{
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
		// Each is started once the one before is on the wire, so that
		// the ids are 1, 2, and 3 and 4.
		wg.Go(func() { callErr = c.Call(ctx, "call", nil, &result) })
		peer.next(t)
		wg.Go(func() {
			for item, err := range c.Stream(ctx, "stream", nil) {
				if err == nil {
					items = append(items, item)
				}
			}
		})
		peer.next(t)
		b1 := &jsonrpc.BatchCall{Method: "one", Result: &batch1}
		b2 := &jsonrpc.BatchCall{Method: "two", Result: &batch2}
		wg.Go(func() { batchErr = c.Batch(ctx, b1, b2) })
		peer.next(t)
		// The answers to the input are not looked at, however many.
		drained := make(chan struct{})
		defer close(drained)
		go func() {
			for {
				select {
				case <-peer.lines:
				case <-drained:
					return
				}
			}
		}()
		go func() {
			_, _ = peer.w.Write(input)
			_ = peer.w.Close()
		}()
		fuzzWithin(t, "the calls and Close", input, func() {
			wg.Wait()
			_ = c.Close()
		})
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
