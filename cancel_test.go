package jsonrpc_test

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ndjsonrpc/jsonrpc"
)

// mcpCancel is the Model Context Protocol's cancel convention.
var mcpCancel = jsonrpc.Cancellation{Method: "notifications/cancelled", IDMember: "requestId", Unanswered: true}

// cancelSeen is what OnCancel was told, once per cancel notification.
type cancelSeen struct {
	id, method, reason string
	running, queued    int
}

// cancelRecorder returns an OnCancel that sends what it is told on a
// channel.
func cancelRecorder() (func(*jsonrpc.CancelError, int, int), <-chan cancelSeen) {
	ch := make(chan cancelSeen, 16)
	return func(ce *jsonrpc.CancelError, running, queued int) {
		ch <- cancelSeen{ce.ID.String(), ce.Method, ce.Reason(), running, queued}
	}, ch
}

// TestCancelVisible checks that a handler learns why it was cancelled
// (context.Cause is a *CancelError with the notification's params, which
// still matches context.Canceled), and that OnCancel learns of every
// cancel: of a running request, of a queued one, and of an id that no
// request in flight has.
func TestCancelVisible(t *testing.T) {
	checkLeaks(t)
	causes := make(chan error, 1)
	started := make(chan struct{}, 1)
	gate := make(chan struct{})
	var once sync.Once
	defer once.Do(func() { close(gate) })
	mux := new(jsonrpc.Mux)
	mux.HandleFunc("wait", func(ctx context.Context, _ *jsonrpc.Request) (any, error) {
		started <- struct{}{}
		<-ctx.Done()
		causes <- context.Cause(ctx)
		return nil, ctx.Err()
	})
	mux.HandleFunc("block", func(context.Context, *jsonrpc.Request) (any, error) {
		started <- struct{}{}
		<-gate
		return "unblocked", nil
	})
	mux.HandleFunc("never", func(context.Context, *jsonrpc.Request) (any, error) {
		t.Error("a request cancelled while queued ran")
		return nil, nil
	})
	onCancel, seen := cancelRecorder()
	var log lockedBuffer
	in, lines := h3Server(t, &jsonrpc.Server{
		Options: jsonrpc.Options{
			Handler:      mux,
			Cancellation: mcpCancel,
			OnCancel:     onCancel,
			MaxInFlight:  1,
			Logger:       slog.New(slog.NewTextHandler(&log, &slog.HandlerOptions{Level: slog.LevelDebug})),
		},
	})
	send := lineSender(t, in)
	next := func(what string) cancelSeen {
		t.Helper()
		select {
		case s := <-seen:
			return s
		case <-time.After(h3Guard):
			t.Fatalf("OnCancel was not called for %s", what)
			return cancelSeen{}
		}
	}

	// A running request: its cause carries the reason.
	send(`{"jsonrpc":"2.0","id":"w","method":"wait"}`)
	<-started
	send(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"w","reason":"user pressed stop"}}`)
	cause := <-causes
	assert.ErrorIs(t, cause, context.Canceled)
	var ce *jsonrpc.CancelError
	require.ErrorAs(t, cause, &ce)
	assert.Equal(t, "user pressed stop", ce.Reason())
	assert.Equal(t, `"w"`, ce.ID.String())
	assert.JSONEq(t, `{"requestId":"w","reason":"user pressed stop"}`, string(ce.Params))
	assert.Equal(t, `jsonrpc: request "w" cancelled by the peer: user pressed stop`, ce.Error())
	assert.Equal(t, cancelSeen{`"w"`, "notifications/cancelled", "user pressed stop", 1, 0}, next("the running request"))

	// A queued request behind a blocked one (MaxInFlight 1): it never
	// runs, and MCP's convention leaves it unanswered.
	send(`{"jsonrpc":"2.0","id":"b","method":"block"}`)
	<-started
	send(`{"jsonrpc":"2.0","id":"q","method":"never"}`)
	send(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"q"}}`)
	assert.Equal(t, cancelSeen{`"q"`, "notifications/cancelled", "", 0, 1}, next("the queued request"))
	// Cancelled again, still queued: the second cancel reaches nothing.
	send(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"q"}}`)
	assert.Equal(t, cancelSeen{`"q"`, "notifications/cancelled", "", 0, 0}, next("the queued request, cancelled again"))

	// An id that nothing in flight has.
	send(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":42,"reason":"late"}}`)
	assert.Equal(t, cancelSeen{"42", "notifications/cancelled", "late", 0, 0}, next("an unknown id"))
	assert.Contains(t, log.String(), "a cancel reached no request")

	once.Do(func() { close(gate) })
	assert.JSONEq(t, `{"jsonrpc":"2.0","id":"b","result":"unblocked"}`, h3Recv(t, lines, "the blocked request"))
	send(`{"jsonrpc":"2.0","id":"last","method":"block"}`)
	<-started
	assert.JSONEq(t, `{"jsonrpc":"2.0","id":"last","result":"unblocked"}`, h3Recv(t, lines, "the last request"), "nothing was written for w and q")
}

// TestAcceptCancel has a server accept both LSP's and MCP's cancels, each
// with its own rule for the answer, while its own calls to the peer are
// cancelled with the convention it sends.
func TestAcceptCancel(t *testing.T) {
	checkLeaks(t)
	started := make(chan string, 2)
	mux := new(jsonrpc.Mux)
	mux.Handle("wait", jsonrpc.Func(func(ctx context.Context, p [1]string) (any, error) {
		started <- p[0]
		<-ctx.Done()
		return nil, ctx.Err()
	}))
	in, lines := h3Server(t, &jsonrpc.Server{
		Options: jsonrpc.Options{
			Handler:      mux,
			Cancellation: mcpCancel,
			AcceptCancel: []jsonrpc.Cancellation{{}, mcpCancel},
		},
	})
	for _, line := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"wait","params":["lsp"]}`,
		`{"jsonrpc":"2.0","id":2,"method":"wait","params":["mcp"]}`,
	} {
		_, err := io.WriteString(in, line+"\n")
		require.NoError(t, err)
		<-started
	}
	_, err := io.WriteString(in, `{"jsonrpc":"2.0","method":"$/cancelRequest","params":{"id":1}}`+"\n"+
		`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":2}}`+"\n"+
		`{"jsonrpc":"2.0","id":3,"method":"wait","params":["last"]}`+"\n")
	require.NoError(t, err)
	assert.JSONEq(t, `{"jsonrpc":"2.0","id":1,"error":{"code":-32800,"message":"Request cancelled"}}`, h3Recv(t, lines, "the LSP-cancelled request"))
	<-started
	_, err = io.WriteString(in, `{"jsonrpc":"2.0","method":"$/cancelRequest","params":{"id":3}}`+"\n")
	require.NoError(t, err)
	assert.JSONEq(t, `{"jsonrpc":"2.0","id":3,"error":{"code":-32800,"message":"Request cancelled"}}`, h3Recv(t, lines, "the last request"), "the MCP-cancelled request got no answer")
}

// TestCancelOutgoingConvention checks that a Conn sends its Cancel when a
// call's context ends, while it accepts others.
func TestCancelOutgoingConvention(t *testing.T) {
	checkLeaks(t)
	onCancel, seen := cancelRecorder()
	started := make(chan struct{})
	mux := new(jsonrpc.Mux)
	mux.HandleFunc("wait", func(ctx context.Context, _ *jsonrpc.Request) (any, error) {
		close(started)
		<-ctx.Done()
		return nil, ctx.Err()
	})
	a, _ := twConnPair(t,
		&jsonrpc.Options{Cancellation: mcpCancel, AcceptCancel: []jsonrpc.Cancellation{{}}},
		&jsonrpc.Options{Handler: mux, AcceptCancel: []jsonrpc.Cancellation{mcpCancel}, OnCancel: onCancel})
	ctx, cancel := context.WithCancel(t.Context())
	errc := make(chan error, 1)
	go func() { errc <- a.Call(ctx, "wait", nil, nil) }()
	<-started
	cancel()
	assert.ErrorIs(t, <-errc, context.Canceled)
	select {
	case s := <-seen:
		assert.Equal(t, "notifications/cancelled", s.method)
		assert.Equal(t, 1, s.running)
	case <-time.After(h3Guard):
		t.Fatal("the peer did not see MCP's cancel")
	}
}

// TestCauseOfEnd checks the causes that tell a handler why its context
// ended: its handler returning, the connection closing, and its deadline.
func TestCauseOfEnd(t *testing.T) {
	checkLeaks(t)
	causes := make(chan error, 1)
	kept := make(chan context.Context, 1)
	mux := new(jsonrpc.Mux)
	mux.HandleFunc("keep", func(ctx context.Context, _ *jsonrpc.Request) (any, error) {
		kept <- ctx
		return nil, nil
	})
	mux.HandleFunc("wait", func(ctx context.Context, _ *jsonrpc.Request) (any, error) {
		<-ctx.Done()
		causes <- context.Cause(ctx)
		return nil, nil
	})
	srv := &jsonrpc.Server{Options: jsonrpc.Options{Handler: mux}}
	inR, inW := io.Pipe()
	done := make(chan error, 1)
	go func() { done <- srv.Serve(context.Background(), inR, io.Discard) }()
	_, err := io.WriteString(inW, `{"jsonrpc":"2.0","id":1,"method":"keep"}`+"\n"+`{"jsonrpc":"2.0","id":2,"method":"wait"}`+"\n")
	require.NoError(t, err)
	ctx := <-kept
	<-ctx.Done()
	assert.ErrorIs(t, context.Cause(ctx), context.Canceled, "the cause once the handler has returned")
	time.Sleep(10 * time.Millisecond)
	require.NoError(t, srv.Close())
	cause := <-causes
	assert.True(t, errors.Is(cause, jsonrpc.ErrServerClosed), fmt.Sprint(cause))
	assert.ErrorIs(t, <-done, jsonrpc.ErrServerClosed)
	_ = inW.Close()
}

// TestCancelDuplicateMember: cancel params that give the id's member twice
// name no request, whatever the convention: the library would read one
// id and OnCancel's reader (encoding/json keeps the last) another. Such a
// cancel reaches nothing; the next, well-formed one is what OnCancel sees.
func TestCancelDuplicateMember(t *testing.T) {
	for _, cc := range []jsonrpc.Cancellation{{}, mcpCancel} {
		method, member := cmp.Or(cc.Method, "$/cancelRequest"), cmp.Or(cc.IDMember, "id")
		t.Run(method, func(t *testing.T) {
			checkLeaks(t)
			started := make(chan struct{}, 2)
			mux := waitingMux(started)
			onCancel, seen := cancelRecorder()
			in, lines := h3Server(t, &jsonrpc.Server{Options: jsonrpc.Options{Handler: mux, Cancellation: cc, OnCancel: onCancel}})
			send := lineSender(t, in)
			cancel := func(params string) string {
				return `{"jsonrpc":"2.0","method":"` + method + `","params":` + params + `}`
			}
			send(`{"jsonrpc":"2.0","id":1,"method":"wait"}`)
			send(`{"jsonrpc":"2.0","id":2,"method":"wait"}`)
			recv(t, started, "the first request running")
			recv(t, started, "the second request running")
			send(cancel(`{"` + member + `":1,"` + member + `":2}`))
			send(cancel(`{"` + member + `":2}`))
			got := recv(t, seen, "what OnCancel saw")
			assert.Equal(t, "2", got.id, "the first cancel OnCancel sees is the well-formed one")
			assert.Equal(t, 1, got.running)
			send(cancel(`{"` + member + `":1}`))
			got = recv(t, seen, "what OnCancel saw")
			assert.Equal(t, "1", got.id)
			assert.Equal(t, 1, got.running, "the request with id 1 was still running")
			require.NoError(t, in.Close())
			for range lines {
			}
		})
	}
}

// TestCancelLaterBatchEntry cancels the second entry of a batch while the
// first still runs, after reading has moved on without the batch (its
// handler held the reader up): the second entry must be in reach of the
// cancel although it has not started, and never run.
func TestCancelLaterBatchEntry(t *testing.T) {
	checkLeaks(t)
	started := make(chan struct{}, 2)
	onCancel, seen := cancelRecorder()
	in, lines := h3Server(t, &jsonrpc.Server{Options: jsonrpc.Options{Handler: waitingMux(started), OnCancel: onCancel}})
	send := lineSender(t, in)
	send(`[{"jsonrpc":"2.0","id":5,"method":"wait"},{"jsonrpc":"2.0","id":6,"method":"wait"}]`)
	recv(t, started, "the first entry running")
	// The cancel is read only once reading has been handed off.
	send(`{"jsonrpc":"2.0","method":"$/cancelRequest","params":{"id":6}}`)
	assert.Equal(t, cancelSeen{"6", "$/cancelRequest", "", 0, 1}, recv(t, seen, "the cancel of the waiting entry"))
	send(`{"jsonrpc":"2.0","method":"$/cancelRequest","params":{"id":5}}`)
	assert.Equal(t, cancelSeen{"5", "$/cancelRequest", "", 1, 0}, recv(t, seen, "the cancel of the running entry"))
	assert.JSONEq(t, `[{"jsonrpc":"2.0","id":5,"error":{"code":-32800,"message":"Request cancelled"}},`+
		`{"jsonrpc":"2.0","id":6,"error":{"code":-32800,"message":"Request cancelled"}}]`, h3Recv(t, lines, "the batch's answer"))
	assertNone(t, started, "the cancelled entry starting")
	require.NoError(t, in.Close())
	for range lines {
	}
}

// TestCancelInSameBatch: a cancel reaches the requests of the batch that
// carries it, after or before it there (a batch is a set), as it reaches
// any request in flight: OnCancel counts each as queued, and each is
// answered as cancelled without its handler starting, as OnCancel says.
func TestCancelInSameBatch(t *testing.T) {
	checkLeaks(t)
	started := make(chan struct{}, 2)
	onCancel, seen := cancelRecorder()
	in, lines := h3Server(t, &jsonrpc.Server{Options: jsonrpc.Options{Handler: waitingMux(started), OnCancel: onCancel}})
	_, err := io.WriteString(in, `[{"jsonrpc":"2.0","id":5,"method":"wait"},`+
		`{"jsonrpc":"2.0","method":"$/cancelRequest","params":{"id":5}},`+
		`{"jsonrpc":"2.0","method":"$/cancelRequest","params":{"id":"six"}},`+
		`{"jsonrpc":"2.0","id":"six","method":"wait"}]`+"\n")
	require.NoError(t, err)
	assert.Equal(t, cancelSeen{"5", "$/cancelRequest", "", 0, 1}, recv(t, seen, "the cancel after its request"))
	assert.Equal(t, cancelSeen{`"six"`, "$/cancelRequest", "", 0, 1}, recv(t, seen, "the cancel before its request"))
	assert.JSONEq(t, `[{"jsonrpc":"2.0","id":5,"error":{"code":-32800,"message":"Request cancelled"}},`+
		`{"jsonrpc":"2.0","id":"six","error":{"code":-32800,"message":"Request cancelled"}}]`, h3Recv(t, lines, "the batch's answer"))
	assertNone(t, started, "a cancelled entry starting")
	require.NoError(t, in.Close())
	for range lines {
	}
}

// TestCancelEscapedID: a cancel names a request by its id as a JSON
// value, whatever escapes either wrote in a string id; the answer still
// carries the id byte for byte as the request wrote it.
func TestCancelEscapedID(t *testing.T) {
	for _, tc := range []struct{ request, cancel string }{
		{`"a"`, `"\u0061"`},
		{`"\u0061"`, `"a"`},
		{`"\u003c1\u003e"`, `"<1>"`},
		{`"q\"\/"`, `"q\u0022/"`},
		{`"\ufffd"`, `"` + "\ufffd" + `"`},
		{`"a\ud83d\ude00\n"`, `"a` + "\U0001F600" + `\u000a"`},
		{`"\ud800"`, `"\ud800"`},
	} {
		t.Run(tc.request, func(t *testing.T) {
			checkLeaks(t)
			started := make(chan struct{}, 1)
			in, lines := h3Server(t, &jsonrpc.Server{Options: jsonrpc.Options{Handler: waitingMux(started)}})
			_, err := io.WriteString(in, `{"jsonrpc":"2.0","id":`+tc.request+`,"method":"wait"}`+"\n")
			require.NoError(t, err)
			recv(t, started, "the request running")
			_, err = io.WriteString(in, `{"jsonrpc":"2.0","method":"$/cancelRequest","params":{"id":`+tc.cancel+`}}`+"\n")
			require.NoError(t, err)
			assert.Equal(t, `{"jsonrpc":"2.0","id":`+tc.request+`,"error":{"code":-32800,"message":"Request cancelled"}}`, h3Recv(t, lines, "the cancelled request's answer"))
			require.NoError(t, in.Close())
			for range lines {
			}
		})
	}
}

// TestCancelInQueuedBatch: a cancel reaches the requests of its own batch
// when the batch is queued rather than run on the reader, here because a
// method in it is known to be slow. The request never runs; it is
// answered as cancelled, or not at all under MCP's convention, and
// OnCancel is told once.
func TestCancelInQueuedBatch(t *testing.T) {
	for _, tc := range []struct {
		name   string
		conv   jsonrpc.Cancellation
		cancel string // a cancel notification, %s standing for the id
		answer string // the batch's answer
	}{
		{
			name:   "lsp",
			cancel: `{"jsonrpc":"2.0","method":"$/cancelRequest","params":{"id":%s}}`,
			answer: `[{"jsonrpc":"2.0","id":2,"error":{"code":-32800,"message":"Request cancelled"}},{"jsonrpc":"2.0","id":3,"result":"quick"}]`,
		},
		{
			name:   "mcp",
			conv:   mcpCancel,
			cancel: `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":%s}}`,
			answer: `[{"jsonrpc":"2.0","id":3,"result":"quick"}]`,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			checkLeaks(t)
			started := make(chan string, 2)
			gate := make(chan struct{})
			defer close(gate)
			mux := new(jsonrpc.Mux)
			mux.HandleFunc("wait", func(ctx context.Context, req *jsonrpc.Request) (any, error) {
				started <- req.ID.String()
				select {
				case <-ctx.Done():
					return nil, ctx.Err()
				case <-gate:
					return "not cancelled", nil
				}
			})
			mux.HandleFunc("quick", func(context.Context, *jsonrpc.Request) (any, error) {
				return "quick", nil
			})
			onCancel, seen := cancelRecorder()
			in, lines := h3Server(t, &jsonrpc.Server{Options: jsonrpc.Options{Handler: mux, Cancellation: tc.conv, OnCancel: onCancel}})
			send := lineSender(t, in)

			// The cancel is read only once reading has been handed off,
			// which marks "wait" slow.
			send(`{"jsonrpc":"2.0","id":1,"method":"wait"}`)
			assert.Equal(t, "1", recv(t, started, "the request that holds the reader up"))
			send(fmt.Sprintf(tc.cancel, "1"))
			assert.Equal(t, 1, recv(t, seen, "the cancel of the running request").running)
			if !tc.conv.Unanswered {
				assert.JSONEq(t, `{"jsonrpc":"2.0","id":1,"error":{"code":-32800,"message":"Request cancelled"}}`, h3Recv(t, lines, "the running request's answer"))
			}

			send(`[{"jsonrpc":"2.0","id":2,"method":"wait"},` + fmt.Sprintf(tc.cancel, "2") + `,{"jsonrpc":"2.0","id":3,"method":"quick"}]`)
			assert.Equal(t, 1, recv(t, seen, "the cancel in the batch").queued)
			assert.JSONEq(t, tc.answer, h3Recv(t, lines, "the batch's answer"))
			assertNone(t, started, "the cancelled request starting")
			assertNone(t, seen, "a second report of the cancel in the batch")
		})
	}
}

// TestCancelInBatchInOrder: a cancel reaches the requests of its own batch
// when the batch is queued to wait, in order, for a request outside the
// order that runs off the reader.
func TestCancelInBatchInOrder(t *testing.T) {
	checkLeaks(t)
	started := make(chan string, 2)
	gate := make(chan struct{})
	mux := new(jsonrpc.Mux)
	mux.HandleFunc("block", func(ctx context.Context, req *jsonrpc.Request) (any, error) {
		started <- req.ID.String()
		<-gate
		return "unblocked", nil
	})
	mux.HandleFunc("wait", func(ctx context.Context, req *jsonrpc.Request) (any, error) {
		started <- req.ID.String()
		<-ctx.Done()
		return nil, ctx.Err()
	})
	onCancel, seen := cancelRecorder()
	in, lines := h3Server(t, &jsonrpc.Server{Options: jsonrpc.Options{Handler: mux, Order: jsonrpc.Order{Requests: []string{"wait"}}, OnCancel: onCancel}})
	send := lineSender(t, in)
	send(`{"jsonrpc":"2.0","id":1,"method":"block"}`)
	assert.Equal(t, "1", recv(t, started, "the request that holds the reader up"))
	// The batch is read once reading has been handed off, and waits for
	// the request before it.
	send(`[{"jsonrpc":"2.0","id":2,"method":"wait"},{"jsonrpc":"2.0","method":"$/cancelRequest","params":{"id":2}}]`)
	assert.Equal(t, cancelSeen{"2", "$/cancelRequest", "", 0, 1}, recv(t, seen, "the cancel in the batch"))
	close(gate)
	assert.JSONEq(t, `{"jsonrpc":"2.0","id":1,"result":"unblocked"}`, h3Recv(t, lines, "the blocked request"))
	assert.JSONEq(t, `[{"jsonrpc":"2.0","id":2,"error":{"code":-32800,"message":"Request cancelled"}}]`, h3Recv(t, lines, "the batch's answer"))
	assertNone(t, started, "the cancelled request starting")
	assertNone(t, seen, "a second report of the cancel")
}

// lineSender returns a function that writes a line, with its newline, to
// in, the input of a server under test.
func lineSender(t *testing.T, in io.Writer) func(line string) {
	return func(line string) {
		t.Helper()
		_, err := io.WriteString(in, line+"\n")
		require.NoError(t, err)
	}
}
