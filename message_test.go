package jsonrpc_test

// This file tests connections over a Transport, the message seam: a Conn
// made by NewTransportConn and a Server's ServeTransport, over an
// in-memory pair of transports whose messages go through channels.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ndjsonrpc/jsonrpc"
)

// errMemClosed is what a memTransport returns once it is closed, and
// errMemPeerGone what its writes return once its peer is.
var (
	errMemClosed   = errors.New("memTransport: closed")
	errMemPeerGone = errors.New("memTransport: the peer closed")
)

// memTransport is one end of an in-memory pair of Transports: each
// message written is copied and sent on a channel, whole, and the other
// end reads it from there. Once one end is closed, or has called
// CloseWrite, the other end's ReadMessage returns io.EOF when it has read
// the messages sent; a closed end's own calls return errMemClosed, and
// the other end's writes errMemPeerGone.
type memTransport struct {
	in      <-chan []byte
	out     chan<- []byte
	done    chan struct{} // closed by Close
	eof     chan struct{} // closed by CloseWrite and Close
	peer    *memTransport
	once    sync.Once
	eofOnce sync.Once
	closes  atomic.Int32 // calls of Close
	writes  atomic.Int32 // calls of WriteMessage
}

var _ jsonrpc.Transport = (*memTransport)(nil)

// memPair returns the two ends of a pair whose channels hold buffer
// messages each way.
func memPair(buffer int) (a, b *memTransport) {
	ab, ba := make(chan []byte, buffer), make(chan []byte, buffer)
	a = &memTransport{in: ba, out: ab, done: make(chan struct{}), eof: make(chan struct{})}
	b = &memTransport{in: ab, out: ba, done: make(chan struct{}), eof: make(chan struct{})}
	a.peer, b.peer = b, a
	return a, b
}

func (t *memTransport) ReadMessage() ([]byte, error) {
	select {
	case m := <-t.in:
		return m, nil
	case <-t.done:
		return nil, errMemClosed
	case <-t.peer.eof:
		select {
		case m := <-t.in:
			return m, nil
		default:
			return nil, io.EOF
		}
	}
}

func (t *memTransport) WriteMessage(msg []byte) error {
	t.writes.Add(1)
	m := append([]byte(nil), msg...) // msg is not ours to keep
	select {
	case <-t.eof:
		return errMemClosed
	default:
	}
	select {
	case t.out <- m:
		return nil
	case <-t.done:
		return errMemClosed
	case <-t.peer.done:
		return errMemPeerGone
	}
}

func (t *memTransport) Close() error {
	t.closes.Add(1)
	t.CloseWrite()
	t.once.Do(func() { close(t.done) })
	return nil
}

// CloseWrite ends what t sends: the peer reads io.EOF after the messages
// sent, and may still write to t.
func (t *memTransport) CloseWrite() {
	t.eofOnce.Do(func() { close(t.eof) })
}

// send writes msg to t, failing the test if it cannot.
func (t *memTransport) send(tb testing.TB, msg string) {
	tb.Helper()
	require.NoError(tb, t.WriteMessage([]byte(msg)))
}

// recv reads the next message from t, failing the test if there is none.
func (t *memTransport) recv(tb testing.TB) string {
	tb.Helper()
	m, err := t.ReadMessage()
	require.NoError(tb, err)
	return string(m)
}

// failingTransport is a memTransport whose WriteMessage fails.
type failingTransport struct{ *memTransport }

var errBroken = errors.New("broken")

func (t failingTransport) WriteMessage([]byte) error {
	t.writes.Add(1)
	return errBroken
}

// stuckTransport is a memTransport whose WriteMessage never returns until
// the transport is closed: a peer that does not read.
type stuckTransport struct{ *memTransport }

func (t stuckTransport) WriteMessage([]byte) error {
	t.writes.Add(1)
	<-t.done
	return errMemClosed
}

// serveTransport runs srv.ServeTransport over t on a goroutine and
// returns what it returns on a channel.
func serveTransport(ctx context.Context, srv *jsonrpc.Server, t jsonrpc.Transport) <-chan error {
	served := make(chan error, 1)
	go func() { served <- srv.ServeTransport(ctx, t) }()
	return served
}

// TestTransportTwoWay runs a Conn made by NewTransportConn against the
// other end served by a Server's ServeTransport, and by another such Conn:
// each side calls the other with Call, Notify, Batch and Stream, and
// handlers call back across the connection.
func TestTransportTwoWay(t *testing.T) {
	for _, peer := range []string{"ServeTransport", "NewTransportConn"} {
		t.Run(peer, func(t *testing.T) {
			checkLeaks(t)
			notes := make(chan string, 16)
			ta, tb := memPair(0)
			a := jsonrpc.NewTransportConn(ta, &jsonrpc.Options{Handler: twSideMux("a", notes)})
			var b twCaller
			var bEnded func() error
			switch peer {
			case "ServeTransport":
				srv := &jsonrpc.Server{Options: jsonrpc.Options{Handler: twSideMux("b", notes)}}
				served := serveTransport(context.Background(), srv, tb)
				bEnded = func() error { return <-served }
			default:
				bc := jsonrpc.NewTransportConn(tb, &jsonrpc.Options{Handler: twSideMux("b", notes)})
				b, bEnded = bc, bc.Wait
			}
			ctx := t.Context()

			var sum int
			require.NoError(t, a.Call(ctx, "add", [2]int{1, 2}, &sum))
			assert.Equal(t, 3, sum)

			var who string
			require.NoError(t, a.Call(ctx, "ask", map[string]string{"method": "whoami"}, &who))
			assert.Equal(t, "a", who, "b's handler called a back")
			var chain string
			require.NoError(t, a.Call(ctx, "depth", struct{ N int }{5}, &chain))
			assert.Equal(t, "bababa", chain, "b, then a, then b ...: nested calls back and forth")

			require.NoError(t, a.Notify(ctx, "note", map[string]string{"text": "hi"}))
			assert.Equal(t, "b got hi", <-notes)

			var x, y int
			calls := []*jsonrpc.BatchCall{
				{Method: "add", Params: [2]int{2, 3}, Result: &x},
				{Method: "nope"},
				{Method: "note", Params: map[string]string{"text": "batched"}, Notify: true},
				{Method: "add", Params: [2]int{4, 5}, Result: &y},
			}
			require.NoError(t, a.Batch(ctx, calls...))
			assert.NoError(t, calls[0].Err)
			assert.ErrorIs(t, calls[1].Err, jsonrpc.ErrMethodNotFound)
			assert.Equal(t, []int{5, 9}, []int{x, y})
			assert.Equal(t, "b got batched", <-notes)

			var items []string
			for item, err := range a.Stream(ctx, "count", struct{ N int }{3}) {
				require.NoError(t, err)
				items = append(items, string(item))
			}
			assert.Equal(t, []string{`"b0"`, `"b1"`, `"b2"`}, items)

			if b != nil {
				require.NoError(t, b.Call(ctx, "ask", map[string]any{"method": "add", "params": [2]int{6, 7}}, &sum))
				assert.Equal(t, 13, sum, "a's handler called b back")
				items = items[:0]
				for item, err := range b.Stream(ctx, "count", struct{ N int }{2}) {
					require.NoError(t, err)
					items = append(items, string(item))
				}
				assert.Equal(t, []string{`"a0"`, `"a1"`}, items)
			}

			require.NoError(t, a.Close())
			assert.ErrorIs(t, a.Wait(), jsonrpc.ErrClosed)
			assert.NoError(t, bEnded(), "the other end, at the end of its input")
			// A Conn closes its transport just after it ends.
			twWait(t, ta.done, "a's transport to be closed")
			twWait(t, tb.done, "b's transport to be closed")
			assert.Equal(t, int32(1), ta.closes.Load(), "a's transport closed once")
			assert.Equal(t, int32(1), tb.closes.Load(), "b's transport closed once")
			assertNoneTw(t, notes, "note")
		})
	}
}

// TestTransportWire sends raw messages to a Server over a Transport, each
// followed by a call, and checks each answer: every message written is
// one answer, never two joined, and a message is read whole, whatever
// newlines it holds.
func TestTransportWire(t *testing.T) {
	const limit = 256
	parseError := `{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Parse error"}}`
	for _, tc := range []struct {
		name string
		send string
		want []string // the answers, in order
	}{
		{"call", req("1", "sum", "[1,2,3]"), []string{`{"jsonrpc":"2.0","id":1,"result":6}`}},
		{"pretty-printed", "{\n  \"jsonrpc\": \"2.0\",\r\n  \"id\": 2,\n  \"method\": \"sum\",\n  \"params\": [\n    1,\n    2\n  ]\n}\n",
			[]string{`{"jsonrpc":"2.0","id":2,"result":3}`}},
		{"echo keeps the newlines of its params", "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"echo\",\"params\":{\n\"a\": [1,\n2]}}",
			[]string{`{"jsonrpc":"2.0","id":3,"result":{"a":[1,2]}}`}},
		{"raw newline in a string", "{\"jsonrpc\":\"2.0\",\"id\":4,\"method\":\"echo\",\"params\":[\"a\nb\"]}", []string{parseError}},
		{"malformed", `{"jsonrpc":"2.0","id":5,"method":"sum"`, []string{parseError}},
		{"two values in one message", req("6", "sum", "[1]") + "\n" + req("7", "sum", "[2]"), []string{parseError}},
		{"empty", "", []string{parseError}},
		{"blank", " \r\n\t", []string{parseError}},
		{"over the limit", req("8", "echo", `["`+strings.Repeat("x", limit)+`"]`),
			[]string{`{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Invalid Request","data":{"limit":256,"reason":"message too large"}}}`}},
		{"notification", req("", "update", "[1]"), nil},
		{"batch", "[" + req("9", "sum", "[1,1]") + ",\n" + req("", "update", "") + ",\n" + req(`"x"`, "nope", "") + "]",
			[]string{`[{"jsonrpc":"2.0","id":9,"result":2},{"jsonrpc":"2.0","id":"x","error":{"code":-32601,"message":"Method not found"}}]`}},
		{"empty batch", "[]", []string{`{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Invalid Request"}}`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			checkLeaks(t)
			synctest.Test(t, func(t *testing.T) {
				server, peer := memPair(4)
				srv := &jsonrpc.Server{Options: jsonrpc.Options{Handler: specMux(), MaxMessageSize: limit}}
				served := serveTransport(t.Context(), srv, server)
				peer.send(t, tc.send)
				next := req(`"next"`, "sum", "[40,2]")
				peer.send(t, next)
				for _, want := range tc.want {
					assert.JSONEq(t, want, peer.recv(t))
				}
				assert.JSONEq(t, `{"jsonrpc":"2.0","id":"next","result":42}`, peer.recv(t), "the message after it is served")
				require.NoError(t, peer.Close())
				assert.NoError(t, <-served)
				assert.Equal(t, int32(1), server.closes.Load(), "ServeTransport closes its transport once")
			})
		})
	}
}

// TestTransportAnswersApart sends many calls at once: each answer is
// written in a WriteMessage of its own, however many are ready together.
func TestTransportAnswersApart(t *testing.T) {
	checkLeaks(t)
	synctest.Test(t, func(t *testing.T) {
		const n = 200
		server, peer := memPair(2 * n)
		served := serveTransport(t.Context(), &jsonrpc.Server{Options: jsonrpc.Options{Handler: specMux()}}, server)
		for i := range n {
			peer.send(t, req(fmt.Sprint(i), "sum", fmt.Sprintf("[%d,1]", i)))
		}
		peer.CloseWrite() // the input ends once it is read
		require.NoError(t, <-served)
		got := make(map[string]bool)
		for {
			m, err := peer.ReadMessage()
			if err != nil {
				break
			}
			var resp struct {
				ID     json.RawMessage `json:"id"`
				Result int             `json:"result"`
			}
			require.NoError(t, json.Unmarshal(m, &resp), "one message, one answer: %q", m)
			got[string(resp.ID)] = true
		}
		assert.Len(t, got, n)
		assert.Equal(t, int32(n), server.writes.Load(), "calls of WriteMessage")
	})
}

// TestTransportLargeAnswer checks that a large result, which a stream
// gets in several writes straight from the handler's memory, goes to a
// Transport whole, in one WriteMessage.
func TestTransportLargeAnswer(t *testing.T) {
	checkLeaks(t)
	synctest.Test(t, func(t *testing.T) {
		server, peer := memPair(1)
		served := serveTransport(t.Context(), &jsonrpc.Server{Options: jsonrpc.Options{Handler: specMux()}}, server)
		text := strings.Repeat("y", 256<<10)
		peer.send(t, req("1", "echo", `["`+text+`"]`))
		assert.Equal(t, `{"jsonrpc":"2.0","id":1,"result":["`+text+`"]}`, peer.recv(t))
		peer.CloseWrite()
		require.NoError(t, <-served)
		assert.Equal(t, int32(1), server.writes.Load(), "calls of WriteMessage")
	})
}

// errTransport is a Transport whose reads come from a list: each entry is
// a message or an error, then io.EOF. Writes go to written.
type errTransport struct {
	reads   []any // []byte or error
	written chan string
	closes  atomic.Int32
}

func (t *errTransport) ReadMessage() ([]byte, error) {
	if len(t.reads) == 0 {
		return nil, io.EOF
	}
	r := t.reads[0]
	t.reads = t.reads[1:]
	if err, ok := r.(error); ok {
		return nil, err
	}
	return r.([]byte), nil
}

func (t *errTransport) WriteMessage(msg []byte) error {
	t.written <- string(msg)
	return nil
}

func (t *errTransport) Close() error {
	t.closes.Add(1)
	return nil
}

// TestTransportReadErrors checks how the errors of ReadMessage are taken:
// a message over the limit, whatever slice the transport returns, and an
// error wrapping ErrMessageTooLarge or ErrBadHeader lose one message and
// are answered; io.EOF is the clean end; any other error ends reading.
func TestTransportReadErrors(t *testing.T) {
	checkLeaks(t)
	tooLarge := `{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Invalid Request","data":{"limit":64,"reason":"message too large"}}}`
	parseError := `{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Parse error"}}`
	call := []byte(req("1", "sum", "[1,2]"))
	answer := `{"jsonrpc":"2.0","id":1,"result":3}`
	broken := errors.New("broken")
	for _, tc := range []struct {
		name    string
		reads   []any
		want    []string
		wantErr error
	}{
		{"a huge slice", []any{bytes.Repeat([]byte(" "), 65), call}, []string{tooLarge, answer}, nil},
		{"ErrMessageTooLarge", []any{fmt.Errorf("frame: %w", jsonrpc.ErrMessageTooLarge), call}, []string{tooLarge, answer}, nil},
		{"ErrBadHeader", []any{fmt.Errorf("frame: %w", jsonrpc.ErrBadHeader), call}, []string{parseError, answer}, nil},
		{"other error", []any{call, broken, call}, []string{answer}, broken},
		{"io.ErrUnexpectedEOF", []any{call, io.ErrUnexpectedEOF}, []string{answer}, io.ErrUnexpectedEOF},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tr := &errTransport{reads: tc.reads, written: make(chan string, 8)}
			srv := &jsonrpc.Server{Options: jsonrpc.Options{Handler: specMux(), MaxMessageSize: 64}}
			err := srv.ServeTransport(t.Context(), tr)
			if tc.wantErr != nil {
				assert.ErrorIs(t, err, tc.wantErr)
			} else {
				assert.NoError(t, err)
			}
			close(tr.written)
			var got []string
			for m := range tr.written {
				got = append(got, m)
			}
			if assert.Len(t, got, len(tc.want)) {
				for i := range got {
					assert.JSONEq(t, tc.want[i], got[i])
				}
			}
			assert.Equal(t, int32(1), tr.closes.Load(), "closes")
		})
	}
}

// TestTransportLifecycle checks how a connection over a Transport ends, in
// synctest bubbles: the clock is exact and a goroutine left blocked fails
// the test.
func TestTransportLifecycle(t *testing.T) {
	const grace = time.Second

	t.Run("EOF, Conn: handler finishes, Wait is nil", func(t *testing.T) {
		checkLeaks(t)
		synctest.Test(t, func(t *testing.T) {
			started, release := make(chan struct{}), make(chan struct{})
			tc, peer := memPair(0)
			c := jsonrpc.NewTransportConn(tc, &jsonrpc.Options{StopGrace: grace,
				Handler: jsonrpc.HandlerFunc(func(ctx context.Context, _ *jsonrpc.Request) (any, error) {
					close(started)
					<-release
					return "finished", ctx.Err()
				})})
			peer.send(t, req("1", "work", ""))
			<-started
			pending := make(chan error, 1)
			go func() { pending <- c.Call(context.Background(), "never", nil, nil) }()
			assert.Equal(t, "never", twDecode(t, peer.recv(t)).Method)
			peer.CloseWrite() // the end of c's input
			assert.ErrorIs(t, <-pending, jsonrpc.ErrClosed, "a call in flight at the end of the input")
			synctest.Wait()
			select {
			case <-c.Done():
				t.Fatal("the Conn ended while a handler was in flight")
			default:
			}
			time.Sleep(grace / 2)
			close(release)
			assert.JSONEq(t, `{"jsonrpc":"2.0","id":1,"result":"finished"}`, peer.recv(t))
			assert.NoError(t, c.Wait())
			synctest.Wait() // a Conn closes its transport just after it ends
			assert.Equal(t, int32(1), tc.closes.Load(), "closes")
			_, err := peer.ReadMessage()
			assert.ErrorIs(t, err, io.EOF, "the peer sees the end")
			require.NoError(t, peer.Close())
		})
	})

	t.Run("EOF, ServeTransport: handler ignores its context", func(t *testing.T) {
		checkLeaks(t)
		synctest.Test(t, func(t *testing.T) {
			release := make(chan struct{})
			ts, peer := memPair(0)
			srv := &jsonrpc.Server{
				Options: jsonrpc.Options{
					StopGrace: grace,
					Handler: jsonrpc.HandlerFunc(func(ctx context.Context, _ *jsonrpc.Request) (any, error) {
						<-ctx.Done()
						<-release
						return nil, nil
					}),
				},
			}
			served := serveTransport(t.Context(), srv, ts)
			peer.send(t, req("1", "stuck", ""))
			synctest.Wait()
			start := time.Now()
			require.NoError(t, peer.Close())
			err := <-served
			waited := time.Since(start)
			assert.GreaterOrEqual(t, waited, 2*grace, "ServeTransport returned before twice StopGrace")
			assert.Less(t, waited, 3*grace, "ServeTransport returned after more than twice StopGrace")
			assert.ErrorIs(t, err, jsonrpc.ErrClosed)
			assert.ErrorIs(t, err, jsonrpc.ErrPeerClosed)
			assert.Equal(t, int32(1), ts.closes.Load(), "closes")
			close(release)
		})
	})

	t.Run("Close closes the transport once", func(t *testing.T) {
		checkLeaks(t)
		synctest.Test(t, func(t *testing.T) {
			tc, peer := memPair(0)
			c := jsonrpc.NewTransportConn(tc, &jsonrpc.Options{StopGrace: grace, Handler: specMux()})
			peer.send(t, req("1", "sum", "[1,2]"))
			assert.JSONEq(t, `{"jsonrpc":"2.0","id":1,"result":3}`, peer.recv(t))
			require.NoError(t, c.Close())
			require.NoError(t, c.Close())
			assert.ErrorIs(t, c.Wait(), jsonrpc.ErrClosed)
			synctest.Wait() // a Conn closes its transport just after it ends
			assert.Equal(t, int32(1), tc.closes.Load(), "closes")
			_, err := peer.ReadMessage()
			assert.ErrorIs(t, err, io.EOF, "the peer sees the end")
		})
	})

	t.Run("a WriteMessage that never returns does not hold up Close", func(t *testing.T) {
		checkLeaks(t)
		synctest.Test(t, func(t *testing.T) {
			mt, peer := memPair(0)
			tc := stuckTransport{mt}
			c := jsonrpc.NewTransportConn(tc, &jsonrpc.Options{StopGrace: grace, Handler: specMux()})
			peer.send(t, req("1", "sum", "[1,2]"))
			synctest.Wait() // the answer is stuck in WriteMessage
			assert.Equal(t, int32(1), mt.writes.Load())
			start := time.Now()
			synctest.Wait() // a Conn closes its transport just after it ends
			require.NoError(t, c.Close())
			assert.LessOrEqual(t, time.Since(start), grace, "Close returned after StopGrace")
			assert.Error(t, c.Wait())
			assert.Equal(t, int32(1), mt.closes.Load(), "closes")
			require.NoError(t, peer.Close())
		})
	})

	t.Run("a WriteMessage that never returns does not hold up Server.Close", func(t *testing.T) {
		checkLeaks(t)
		synctest.Test(t, func(t *testing.T) {
			mt, peer := memPair(0)
			srv := &jsonrpc.Server{Options: jsonrpc.Options{StopGrace: grace, Handler: specMux()}}
			served := serveTransport(t.Context(), srv, stuckTransport{mt})
			peer.send(t, req("1", "sum", "[1,2]"))
			synctest.Wait()
			start := time.Now()
			require.NoError(t, srv.Close())
			assert.ErrorIs(t, <-served, jsonrpc.ErrServerClosed)
			assert.LessOrEqual(t, time.Since(start), grace)
			assert.Equal(t, int32(1), mt.closes.Load(), "closes")
			require.NoError(t, peer.Close())
		})
	})

	t.Run("a WriteMessage error ends the connection", func(t *testing.T) {
		checkLeaks(t)
		synctest.Test(t, func(t *testing.T) {
			mt, peer := memPair(0)
			c := jsonrpc.NewTransportConn(failingTransport{mt}, &jsonrpc.Options{StopGrace: grace})
			// A Call with a context that can end is written by a
			// goroutine of the Conn's, whose write error ends the
			// connection. (One with context.Background() is written by
			// the caller, which gets the error; the connection then
			// goes on reading, on streams too.)
			err := c.Call(t.Context(), "hello", nil, nil)
			assert.ErrorIs(t, err, jsonrpc.ErrClosed)
			synctest.Wait() // a Conn closes its transport just after it ends
			assert.ErrorIs(t, err, errBroken)
			assert.ErrorIs(t, c.Wait(), errBroken)
			assert.Equal(t, int32(1), mt.writes.Load(), "writes")
			assert.Equal(t, int32(1), mt.closes.Load(), "closes")
			require.NoError(t, peer.Close())
		})
	})

	t.Run("Shutdown lets a handler answer", func(t *testing.T) {
		checkLeaks(t)
		synctest.Test(t, func(t *testing.T) {
			started, release := make(chan struct{}), make(chan struct{})
			ts, peer := memPair(0)
			srv := &jsonrpc.Server{
				Options: jsonrpc.Options{
					StopGrace: grace,
					Handler: jsonrpc.HandlerFunc(func(ctx context.Context, _ *jsonrpc.Request) (any, error) {
						close(started)
						<-release
						return "answered", nil
					}),
				},
			}
			served := serveTransport(t.Context(), srv, ts)
			peer.send(t, req("1", "work", ""))
			<-started
			shut := make(chan error, 1)
			go func() { shut <- srv.Shutdown(t.Context()) }()
			synctest.Wait()
			assert.Equal(t, int32(0), ts.closes.Load(), "closed before the handler answered")
			close(release)
			assert.JSONEq(t, `{"jsonrpc":"2.0","id":1,"result":"answered"}`, peer.recv(t))
			assert.NoError(t, <-shut)
			assert.ErrorIs(t, <-served, jsonrpc.ErrServerClosed)
			assert.Equal(t, int32(1), ts.closes.Load(), "closes")
			_, err := peer.ReadMessage()
			assert.ErrorIs(t, err, io.EOF)
		})
	})

	t.Run("the end of ctx", func(t *testing.T) {
		checkLeaks(t)
		synctest.Test(t, func(t *testing.T) {
			ts, peer := memPair(0)
			ctx, cancel := context.WithCancel(t.Context())
			served := serveTransport(ctx, &jsonrpc.Server{Options: jsonrpc.Options{Handler: specMux()}}, ts)
			peer.send(t, req("1", "sum", "[1,2]"))
			assert.JSONEq(t, `{"jsonrpc":"2.0","id":1,"result":3}`, peer.recv(t))
			cancel()
			assert.ErrorIs(t, <-served, context.Canceled)
			assert.Equal(t, int32(1), ts.closes.Load(), "closes")
			require.NoError(t, peer.Close())
		})
	})

	t.Run("a closed Server", func(t *testing.T) {
		checkLeaks(t)
		srv := new(jsonrpc.Server)
		require.NoError(t, srv.Close())
		ts, _ := memPair(0)
		assert.ErrorIs(t, srv.ServeTransport(t.Context(), ts), jsonrpc.ErrServerClosed)
		assert.Equal(t, int32(1), ts.closes.Load(), "closes")
	})
}

// FuzzTransport sends one arbitrary message, newlines and all, twice over
// a Transport: each copy is answered as a line holding it would be (a
// blank one too, which is not skipped), every answer in a message of its
// own.
func FuzzTransport(f *testing.F) {
	for _, s := range append(specSeeds, edgeSeeds...) {
		f.Add([]byte(s))
	}
	f.Add([]byte("{\n\"jsonrpc\": \"2.0\",\n\"id\": 1,\n\"method\": \"sum\",\n\"params\": [1,\n2]\n}"))
	f.Add([]byte("\n"))
	mux := specMux()
	f.Fuzz(func(t *testing.T, msg []byte) {
		want := judgeLine(msg)
		if len(bytes.TrimLeft(msg, " \t\r\n")) == 0 {
			want = lineVerdict{code: int(jsonrpc.CodeParseError)}
		}
		tr := &errTransport{reads: []any{msg, msg}, written: make(chan string, 4)}
		if err := (&jsonrpc.Server{Options: jsonrpc.Options{Handler: mux}}).ServeTransport(t.Context(), tr); err != nil {
			t.Fatalf("ServeTransport(%q) = %v", msg, err)
		}
		close(tr.written)
		var got []string
		for m := range tr.written {
			got = append(got, m)
		}
		wantN := 2
		if want.none {
			wantN = 0
		}
		if len(got) != wantN {
			t.Fatalf("message %q: got %d answers %q, want %d", msg, len(got), got, wantN)
		}
		for _, out := range got {
			switch {
			case want.code != 0:
				if r := checkResponse(t, []byte(out)); r.id != "null" || r.code != want.code {
					t.Fatalf("message %q: got %q, want error %d with a null id", msg, out, want.code)
				}
			case want.isBatch:
				var elems []json.RawMessage
				if out[0] != '[' || json.Unmarshal([]byte(out), &elems) != nil || len(elems) != len(want.batch) {
					t.Fatalf("message %q: got %q, want an array of %d", msg, out, len(want.batch))
				}
			default:
				if r := checkResponse(t, []byte(out)); r.id != want.single.id {
					t.Fatalf("message %q: got %q, want id %s", msg, out, want.single.id)
				}
			}
		}
	})
}
