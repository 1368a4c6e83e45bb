package jsonrpc

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"strings"
	"testing"
)

// TestCancelOfHandedOffRequestCountsWhatRuns holds OnCancel to what
// happens to the request that runs inline on a reader whose role is handed
// off: a cancel that reaches it before its handler has started counts it
// as running, and its handler must then run, with its context cancelled,
// rather than be skipped (which would make OnCancel's count a lie).
func TestCancelOfHandedOffRequestCountsWhatRuns(t *testing.T) {
	for _, conv := range []Cancellation{
		{}, // LSP's: answered with CodeRequestCancelled
		{Method: "notifications/cancelled", IDMember: "requestId", Unanswered: true},
	} {
		t.Run(conv.method(), func(t *testing.T) {
			var called bool
			var cause error
			h := RawHandlerFunc(func(ctx context.Context, req *Request) (json.RawMessage, error) {
				called, cause = true, context.Cause(ctx)
				return nil, ctx.Err()
			})
			running, queued := -1, -1
			s := &Server{Options: Options{
				Handler:      h,
				Cancellation: conv,
				OnCancel:     func(_ *CancelError, r, q int) { running, queued = r, q },
			}}
			c := newConn(s.config(), context.Background(), strings.NewReader(""), io.Discard)
			rs := newReadState()
			rc := rs.newCtx(c, "7", false)
			tk := task{req: Request{Method: "m", ID: ID{raw: "7"}}, ctx: rc}

			// The handoff happens after the reader chose the request and
			// before the handler is called; then the cancel is read.
			c.mu.Lock()
			c.registerInlineLocked(rc)
			c.mu.Unlock()
			c.cancelFrom(rs, &c.cancelIns[0], []byte(`{"`+conv.idMember()+`":7}`), nil, false)
			if running != 1 || queued != 0 {
				t.Fatalf("OnCancel got running=%d queued=%d, want 1 and 0", running, queued)
			}

			_, werr, ok := c.invoke(&tk, true)
			if !called {
				t.Fatal("the handler of a request counted as running was not called")
			}
			var ce *CancelError
			if !errors.As(cause, &ce) || ce.ID.String() != "7" {
				t.Errorf("the handler's context has cause %v, want the *CancelError for id 7", cause)
			}
			if conv.Unanswered {
				if ok {
					t.Errorf("invoke answers (%v) a request its convention leaves unanswered", werr)
				}
			} else if !ok || werr == nil || werr.Code != CodeRequestCancelled {
				t.Errorf("invoke returned %v, %v; want CodeRequestCancelled", werr, ok)
			}
			if rc.Err() == nil {
				t.Error("the context has not ended after its handler returned")
			}
		})
	}
}
