package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"runtime"
	"runtime/metrics"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/ndjsonrpc/jsonrpc"
)

// waitTimeout bounds every wait, so that a bug fails a test instead of
// hanging it. Nothing passes or fails on time.
const waitTimeout = 10 * time.Second

// server is the example's server on a loopback port.
type server struct {
	rpc *jsonrpc.Server
	url string // ws://host:port/rpc
	hs  *httptest.Server
}

// startServer starts the example's handler on a loopback port, and stops
// it when the test ends. It checks first that every goroutine the test
// starts, the server's included, has ended by then.
func startServer(t *testing.T) *server {
	t.Helper()
	opt := goleak.IgnoreCurrent()
	t.Cleanup(func() { goleak.VerifyNone(t, opt) })
	logger := slog.New(slog.DiscardHandler)
	rpc := newRPCServer(logger)
	hs := httptest.NewServer(newHandler(rpc, logger))
	t.Cleanup(func() {
		hs.Close()
		ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
		defer cancel()
		assert.NoError(t, rpc.Shutdown(ctx))
	})
	return &server{rpc: rpc, url: "ws" + strings.TrimPrefix(hs.URL, "http") + "/rpc", hs: hs}
}

// dial opens a WebSocket connection to s, closed when the test ends.
func (s *server) dial(t *testing.T) *websocket.Conn {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), waitTimeout)
	defer cancel()
	c, _, err := websocket.Dial(ctx, s.url, nil)
	require.NoError(t, err)
	t.Cleanup(func() { c.CloseNow() })
	c.SetReadLimit(4 * maxMessageSize)
	return c
}

// client connects a jsonrpc.Conn to s over the same transport as the
// server uses, answering the server's "whoami" with whoami.
func (s *server) client(t *testing.T, whoami jsonrpc.Handler) *jsonrpc.Conn {
	t.Helper()
	client, _ := s.clientTransport(t, whoami)
	return client
}

// clientTransport is client, and also returns the client's transport.
func (s *server) clientTransport(t *testing.T, whoami jsonrpc.Handler) (*jsonrpc.Conn, *transport) {
	t.Helper()
	tr := newTransport(context.Background(), s.dial(t), maxMessageSize, nil)
	mux := new(jsonrpc.Mux)
	if whoami != nil {
		mux.Handle("whoami", whoami)
	}
	client := jsonrpc.NewTransportConn(tr, &jsonrpc.Options{Handler: mux})
	t.Cleanup(func() { client.Close() })
	return client, tr
}

// exchange sends msg as one text message and returns the next message
// from the server.
func exchange(t *testing.T, c *websocket.Conn, msg string) string {
	t.Helper()
	send(t, c, msg)
	return receive(t, c)
}

func send(t *testing.T, c *websocket.Conn, msg string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), waitTimeout)
	defer cancel()
	require.NoError(t, c.Write(ctx, websocket.MessageText, []byte(msg)))
}

func receive(t *testing.T, c *websocket.Conn) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), waitTimeout)
	defer cancel()
	typ, got, err := c.Read(ctx)
	require.NoError(t, err)
	assert.Equal(t, websocket.MessageText, typ)
	return string(got)
}

func TestCalls(t *testing.T) {
	s := startServer(t)
	client := s.client(t, jsonrpc.Func(func(context.Context, struct{}) (string, error) {
		return "a Go client", nil
	}))
	ctx, cancel := context.WithTimeout(t.Context(), waitTimeout)
	defer cancel()

	var sum int
	require.NoError(t, client.Call(ctx, "add", []int{40, 2}, &sum))
	assert.Equal(t, 42, sum)

	var echoed json.RawMessage
	params := json.RawMessage(`{"b": [1, "ü\n"],  "a":null}`)
	require.NoError(t, client.Call(ctx, "echo", params, &echoed))
	assert.Equal(t, string(params), string(echoed), "byte for byte")

	var greeting string
	require.NoError(t, client.Call(ctx, "hello", nil, &greeting), "the server calls whoami back")
	assert.Equal(t, "hello, a Go client", greeting)

	var items []string
	for item, err := range client.Stream(ctx, "count", map[string]int{"n": 3}) {
		require.NoError(t, err)
		items = append(items, string(item))
	}
	assert.Equal(t, []string{"1", "2", "3"}, items)

	require.NoError(t, client.Notify(ctx, "note", map[string]string{"text": "first"}))
	require.NoError(t, client.Notify(ctx, "note", map[string]string{"text": "second"}))
	assert.ElementsMatch(t, []string{"first", "second"}, notesSoon(ctx, t, client, 2))

	var batchSum int
	calls := []*jsonrpc.BatchCall{
		{Method: "add", Params: []int{1, 2}, Result: &batchSum},
		{Method: "nope"},
		{Method: "note", Params: map[string]string{"text": "third"}, Notify: true},
	}
	require.NoError(t, client.Batch(ctx, calls...))
	require.NoError(t, calls[0].Err)
	assert.Equal(t, 3, batchSum)
	assert.ErrorIs(t, calls[1].Err, jsonrpc.ErrMethodNotFound)

	err := client.Call(ctx, "add", []any{"one", 2}, nil)
	assert.ErrorIs(t, err, jsonrpc.ErrInvalidParams)
}

// notesSoon returns the notes of client's connection once there are n of
// them, or what there is when ctx ends. A notification gets no answer,
// and the server may start the requests read after it before it runs (a
// handler that takes over a millisecond lets reading go on), so its
// effect can only be waited for.
func notesSoon(ctx context.Context, t *testing.T, client *jsonrpc.Conn, n int) []string {
	t.Helper()
	for {
		var notes []string
		require.NoError(t, client.Call(ctx, "notes", nil, &notes))
		if len(notes) >= n {
			return notes
		}
		select {
		case <-ctx.Done():
			return notes
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// TestConnectionsAreSeparate checks that each connection has its own
// session and its own peer for the server's calls back.
func TestConnectionsAreSeparate(t *testing.T) {
	s := startServer(t)
	ctx, cancel := context.WithTimeout(t.Context(), waitTimeout)
	defer cancel()
	for _, name := range []string{"one", "two"} {
		client := s.client(t, jsonrpc.Func(func(context.Context, struct{}) (string, error) { return name, nil }))
		require.NoError(t, client.Notify(ctx, "note", map[string]string{"text": name}))
		assert.Equal(t, []string{name}, notesSoon(ctx, t, client, 1))
		var greeting string
		require.NoError(t, client.Call(ctx, "hello", nil, &greeting))
		assert.Equal(t, "hello, "+name, greeting)
	}
}

// TestWire checks the messages on the wire: one JSON-RPC message per
// WebSocket message, whatever the message holds.
func TestWire(t *testing.T) {
	s := startServer(t)
	c := s.dial(t)

	for _, tc := range []struct{ name, send, want string }{
		{"call", `{"jsonrpc":"2.0","id":1,"method":"add","params":[1,2]}`,
			`{"jsonrpc":"2.0","id":1,"result":3}`},
		{"batch", `[{"jsonrpc":"2.0","id":"a","method":"add","params":[1,2]},{"jsonrpc":"2.0","method":"note","params":{"text":"x"}},{"jsonrpc":"2.0","id":"b","method":"nope"}]`,
			`[{"jsonrpc":"2.0","id":"a","result":3},{"jsonrpc":"2.0","id":"b","error":{"code":-32601,"message":"Method not found"}}]`},
		{"parse error", `{"jsonrpc":"2.0","id":1,"method":"add","params":[1,2]`,
			`{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Parse error"}}`},
		{"two values in one message", `{"jsonrpc":"2.0","id":1,"method":"add","params":[1,2]} {"jsonrpc":"2.0","id":2,"method":"add","params":[1,2]}`,
			`{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Parse error"}}`},
		{"message over lines", "{\n  \"jsonrpc\": \"2.0\",\r\n  \"id\": 2,\n  \"method\": \"add\",\n  \"params\": [2, 2]\n}\n",
			`{"jsonrpc":"2.0","id":2,"result":4}`},
		{"raw newline in a string", "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"echo\",\"params\":[\"a\nb\"]}",
			`{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Parse error"}}`},
		{"empty batch", `[]`,
			`{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Invalid Request"}}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.JSONEq(t, tc.want, exchange(t, c, tc.send))
		})
	}

	t.Run("notification", func(t *testing.T) {
		// A notification gets no answer: the next message is the answer
		// to the call after it.
		send(t, c, `{"jsonrpc":"2.0","method":"note","params":{"text":"y"}}`)
		send(t, c, `{"jsonrpc":"2.0","method":"nope"}`)
		// Each message that comes is the answer to a call; see notesSoon.
		deadline := time.Now().Add(waitTimeout)
		for {
			got := exchange(t, c, `{"jsonrpc":"2.0","id":"n","method":"notes"}`)
			if got != `{"jsonrpc":"2.0","id":"n","result":["x"]}` || time.Now().After(deadline) {
				assert.JSONEq(t, `{"jsonrpc":"2.0","id":"n","result":["x","y"]}`, got)
				break
			}
			time.Sleep(10 * time.Millisecond)
		}
	})

	t.Run("over the limit", func(t *testing.T) {
		big := `{"jsonrpc":"2.0","id":5,"method":"echo","params":["` + strings.Repeat("x", maxMessageSize) + `"]}`
		got := exchange(t, c, big)
		assert.JSONEq(t, `{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Invalid Request","data":{"limit":1048576,"reason":"message too large"}}}`, got)
		// The connection goes on.
		got = exchange(t, c, `{"jsonrpc":"2.0","id":6,"method":"add","params":[3,3]}`)
		assert.JSONEq(t, `{"jsonrpc":"2.0","id":6,"result":6}`, got)
	})

	t.Run("a large answer", func(t *testing.T) {
		// Large results are written straight from the handler's memory,
		// over several writes: still one message.
		text := strings.Repeat("y", maxMessageSize/2)
		got := exchange(t, c, `{"jsonrpc":"2.0","id":7,"method":"echo","params":["`+text+`"]}`)
		assert.Equal(t, `{"jsonrpc":"2.0","id":7,"result":["`+text+`"]}`, got)
	})

	t.Run("binary message", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(t.Context(), waitTimeout)
		defer cancel()
		require.NoError(t, c.Write(ctx, websocket.MessageBinary, []byte(`{"jsonrpc":"2.0","id":8,"method":"add","params":[4,4]}`)))
		assert.JSONEq(t, `{"jsonrpc":"2.0","id":8,"result":8}`, receive(t, c))
	})
}

// TestServerCallsBack checks the exact messages of a call from the server
// to the peer, made by a handler before it answers.
func TestServerCallsBack(t *testing.T) {
	s := startServer(t)
	c := s.dial(t)
	send(t, c, `{"jsonrpc":"2.0","id":"h","method":"hello"}`)
	var call struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
	}
	require.NoError(t, json.Unmarshal([]byte(receive(t, c)), &call))
	assert.Equal(t, "whoami", call.Method)
	require.NotNil(t, call.ID)
	got := exchange(t, c, `{"jsonrpc":"2.0","id":`+string(call.ID)+`,"result":"raw"}`)
	assert.JSONEq(t, `{"jsonrpc":"2.0","id":"h","result":"hello, raw"}`, got)
}

// TestCloseMidCall closes the connection while a handler waits for the
// peer: the client's handler's context ends, the server's handler gets
// the answer it waited for (an error), and every goroutine of the
// connection, on both sides, ends (startServer checks).
func TestCloseMidCall(t *testing.T) {
	s := startServer(t)
	asked := make(chan struct{})
	client, tr := s.clientTransport(t, jsonrpc.HandlerFunc(func(ctx context.Context, req *jsonrpc.Request) (any, error) {
		close(asked)
		<-ctx.Done() // never answers
		return nil, ctx.Err()
	}))
	done := make(chan error, 1)
	go func() { done <- client.Call(context.Background(), "hello", nil, nil) }()
	select {
	case <-asked:
	case <-time.After(waitTimeout):
		t.Fatal("the server did not call whoami")
	}
	require.NoError(t, client.Close())
	select {
	case err := <-done:
		assert.ErrorIs(t, err, jsonrpc.ErrClosed)
	case <-time.After(waitTimeout):
		t.Fatal("the call did not end with the connection")
	}
	// Close writes the cancelled whoami's answer, then closes the
	// transport, just after it returns. Once the closing handshake is
	// done, the server has read what came before it, so that its hello
	// is answered before the test's cleanup shuts the server down: a
	// server that is shut down reads nothing more.
	select {
	case <-tr.Context().Done():
	case <-time.After(waitTimeout):
		t.Fatal("the client's transport was not closed")
	}
}

// TestShutdown stops the server with a connection open and idle: the
// connection is closed normally and the client sees the end.
func TestShutdown(t *testing.T) {
	s := startServer(t)
	client := s.client(t, nil)
	ctx, cancel := context.WithTimeout(t.Context(), waitTimeout)
	defer cancel()
	require.NoError(t, client.Call(ctx, "add", []int{1, 1}, nil))
	require.NoError(t, s.rpc.Shutdown(ctx))
	select {
	case <-client.Done():
	case <-ctx.Done():
		t.Fatal("the client did not see the connection end")
	}
	assert.ErrorIs(t, client.Call(ctx, "add", []int{1, 1}, nil), jsonrpc.ErrClosed)
}

func TestPage(t *testing.T) {
	s := startServer(t)
	for path, want := range map[string]string{"/": `<script src="app.js">`, "/app.js": "class RPC"} {
		resp, err := http.Get(s.hs.URL + path)
		require.NoError(t, err)
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		require.NoError(t, err)
		assert.Equal(t, http.StatusOK, resp.StatusCode, path)
		assert.Contains(t, string(body), want, path)
	}
	s.hs.CloseClientConnections()
}

// TestOrigin checks that a page of another origin cannot connect.
func TestOrigin(t *testing.T) {
	s := startServer(t)
	ctx, cancel := context.WithTimeout(t.Context(), waitTimeout)
	defer cancel()
	c, resp, err := websocket.Dial(ctx, s.url, &websocket.DialOptions{
		HTTPHeader: http.Header{"Origin": {"https://elsewhere.example"}},
	})
	if c != nil {
		c.CloseNow()
	}
	require.Error(t, err)
	assert.Equal(t, http.StatusForbidden, resp.StatusCode)
}

// TestPeerGoneEndsHandlers closes the connection, without a closing
// handshake, while a handler waits on its context alone: the handler's
// context ends, since Serve runs under the stream's (left to itself,
// Serve would wait for the handler without limit at the end of its
// input).
func TestPeerGoneEndsHandlers(t *testing.T) {
	opt := goleak.IgnoreCurrent()
	t.Cleanup(func() { goleak.VerifyNone(t, opt) })
	started, ended := make(chan struct{}), make(chan struct{})
	rpc := &jsonrpc.Server{
		Options: jsonrpc.Options{
			Handler: jsonrpc.HandlerFunc(func(ctx context.Context, req *jsonrpc.Request) (any, error) {
				close(started)
				<-ctx.Done()
				close(ended)
				return nil, ctx.Err()
			}),
		},
	}
	hs := httptest.NewServer(newHandler(rpc, slog.New(slog.DiscardHandler)))
	t.Cleanup(hs.Close)
	s := &server{rpc: rpc, url: "ws" + strings.TrimPrefix(hs.URL, "http") + "/rpc", hs: hs}

	c := s.dial(t)
	send(t, c, `{"jsonrpc":"2.0","id":1,"method":"wait"}`)
	for _, ch := range []chan struct{}{started, ended} {
		if ch == ended {
			require.NoError(t, c.CloseNow())
		}
		select {
		case <-ch:
		case <-time.After(waitTimeout):
			t.Fatal("the handler did not start, or did not end with the connection")
		}
	}
}

// TestNotesBounded sends more notes, and larger ones, than a connection
// keeps: the server's live heap stays small while the connection is open,
// and notes answers with the most recent notes within the bounds, in one
// message of at most maxMessageSize.
func TestNotesBounded(t *testing.T) {
	s := startServer(t)

	t.Run("heap", func(t *testing.T) {
		c := s.dial(t)
		before := liveHeap()
		// 64 notes of a megabyte (a message of maxMessageSize carries
		// one), sent as a browser sends them: twice the heap bound below.
		pad := strings.Repeat("x", 1_000_000-4)
		for i := range 64 {
			send(t, c, fmt.Sprintf(`{"jsonrpc":"2.0","method":"note","params":{"text":"%03d %s"}}`, i, pad))
		}
		// Then 300 small notes, sent as calls (each is answered once it is
		// kept), and only then is the heap measured: right after the large
		// notes it also holds the lines of the last requests read, which
		// package jsonrpc keeps for a while (up to 256 of them), and which
		// are the library's to bound, not the example's.
		var sent []string
		for i := range 300 {
			sent = append(sent, fmt.Sprintf("s%03d", i))
			assert.JSONEq(t, `{"jsonrpc":"2.0","id":1,"result":null}`, note(t, c, sent[i]))
		}
		grown := int64(liveHeap()) - int64(before)
		t.Logf("live heap grew by %.1f MiB", float64(grown)/(1<<20))
		assert.Less(t, grown, int64(32<<20), "live heap growth in bytes, the connection still open")
		assert.Equal(t, sent[len(sent)-maxNotes:], notes(t, c), "at most maxNotes notes, and none over maxNoteSize")
	})

	t.Run("bytes", func(t *testing.T) {
		c := s.dial(t)
		// Notes of maxNoteSize bytes, each of which JSON writes in six
		// (\u0001): the answer to notes still fits in one message.
		pad := strings.Repeat("\x01", maxNoteSize-4)
		var sent []string
		for i := range 3 * maxNotesSize / maxNoteSize {
			sent = append(sent, fmt.Sprintf("%03d", i))
			assert.JSONEq(t, `{"jsonrpc":"2.0","id":1,"result":null}`, note(t, c, sent[i]+" "+pad))
		}
		kept := sent[len(sent)-maxNotesSize/maxNoteSize:]
		assert.Equal(t, kept, notes(t, c), "at most maxNotesSize bytes of notes")

		// A note over maxNoteSize is refused, and the notes stay.
		var refused struct{ Error *jsonrpc.Error }
		require.NoError(t, json.Unmarshal([]byte(note(t, c, strings.Repeat("y", maxNoteSize+1))), &refused))
		require.NotNil(t, refused.Error)
		assert.Equal(t, jsonrpc.CodeInvalidParams, refused.Error.Code)
		assert.Equal(t, kept, notes(t, c))
	})
}

// note sends text to c's connection as a note in a call, which is
// answered once the note is kept, so that notes are kept in the order
// sent. It returns the answer.
func note(t *testing.T, c *websocket.Conn, text string) string {
	t.Helper()
	msg, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": "note", "params": map[string]string{"text": text}})
	require.NoError(t, err)
	return exchange(t, c, string(msg))
}

// notes returns the heads of the notes that c's connection keeps, and
// checks that the answer fits in one message of maxMessageSize.
func notes(t *testing.T, c *websocket.Conn) []string {
	t.Helper()
	answer := exchange(t, c, `{"jsonrpc":"2.0","id":2,"method":"notes"}`)
	assert.LessOrEqual(t, len(answer), maxMessageSize, "the answer to notes, in bytes")
	var resp struct{ Result []string }
	require.NoError(t, json.Unmarshal([]byte(answer), &resp))
	return heads(resp.Result)
}

// heads returns what comes before the first space of each note, which
// tells the notes of TestNotesBounded apart, so that a failure does not
// print megabytes.
func heads(notes []string) []string {
	var hs []string
	for _, n := range notes {
		h, _, _ := strings.Cut(n, " ")
		hs = append(hs, h)
	}
	return hs
}

// liveHeap runs a garbage collection and returns the bytes of heap it
// found live.
func liveHeap() uint64 {
	runtime.GC()
	sample := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	metrics.Read(sample)
	return sample[0].Value.Uint64()
}

// TestAddOverflow checks that add refuses a sum that does not fit in an
// int, rather than answering a wrapped one.
func TestAddOverflow(t *testing.T) {
	s := startServer(t)
	c := s.dial(t)
	for _, tc := range []struct {
		name, params, want string
	}{
		{"fits", `[9223372036854775806,1]`, `{"jsonrpc":"2.0","id":1,"result":9223372036854775807}`},
		{"over", `[9223372036854775807,1]`, `{"jsonrpc":"2.0","id":1,"error":{"code":-32602,"message":"9223372036854775807 + 1 overflows"}}`},
		{"under", `[-9223372036854775808,-1]`, `{"jsonrpc":"2.0","id":1,"error":{"code":-32602,"message":"-9223372036854775808 + -1 overflows"}}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := exchange(t, c, `{"jsonrpc":"2.0","id":1,"method":"add","params":`+tc.params+`}`)
			assert.JSONEq(t, tc.want, got)
		})
	}
}

// TestConnectionsBounded opens maxConns connections: the next one is
// refused with 503, and one is accepted again once a connection ends.
func TestConnectionsBounded(t *testing.T) {
	s := startServer(t)
	var conns []*websocket.Conn
	for range maxConns {
		conns = append(conns, s.dial(t))
	}
	ctx, cancel := context.WithTimeout(t.Context(), waitTimeout)
	defer cancel()
	_, resp, err := websocket.Dial(ctx, s.url, nil)
	require.Error(t, err)
	require.NotNil(t, resp)
	assert.Equal(t, http.StatusServiceUnavailable, resp.StatusCode)

	require.NoError(t, conns[0].Close(websocket.StatusNormalClosure, ""))
	for {
		c, _, err := websocket.Dial(ctx, s.url, nil)
		if err == nil {
			c.CloseNow()
			break
		}
		select {
		case <-ctx.Done():
			t.Fatalf("no connection accepted after one ended: %v", err)
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// TestReadMemoryBounded opens 120 connections, each in the middle of a
// message of maxMessageSize that it never finishes: the server's live heap
// grows by no more than the read buffers' bounds, maxReadMemory and
// maxIdleBuffer a connection, and some slack.
func TestReadMemoryBounded(t *testing.T) {
	s := startServer(t)
	const n = 120
	chunk := []byte(strings.Repeat("x", 32<<10))
	before := liveHeap()
	for range n {
		c := s.dial(t)
		go func() { // read and drop the answers, so that writing goes on
			for {
				if _, _, err := c.Read(context.Background()); err != nil {
					return
				}
			}
		}()
		ctx, cancel := context.WithTimeout(t.Context(), waitTimeout)
		w, err := c.Writer(ctx, websocket.MessageText)
		require.NoError(t, err)
		for sent := 0; sent+len(chunk) <= maxMessageSize; sent += len(chunk) {
			_, err := w.Write(chunk)
			require.NoError(t, err)
		}
		cancel()
	}
	time.Sleep(time.Second) // let the server read what was sent
	grown := int64(liveHeap()) - int64(before)
	t.Logf("%d connections in the middle of a message: live heap grew by %d MiB", n, grown>>20)
	bound := int64(maxReadMemory + n*maxIdleBuffer + 16<<20)
	assert.Less(t, grown, bound, "live heap growth in bytes")
}

// A client that notes the largest notes, then asks for them again and
// again and never reads, makes the connection hold only a few answers:
// each waits with its handler for room in the output, and a connection
// runs maxInFlight handlers, not the library's default 64 (which held
// some 50 MiB here).
func TestUnreadAnswersBounded(t *testing.T) {
	s := startServer(t)
	before := liveHeap()
	c := s.dial(t)
	var sent atomic.Int64
	go func() {
		for i := range 100_000 {
			msg := fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"notes"}`, i)
			if i < maxNotes {
				msg = `{"jsonrpc":"2.0","method":"note","params":{"text":"` + strings.Repeat(`\u0001`, 1300) + `"}}`
			}
			if c.Write(t.Context(), websocket.MessageText, []byte(msg)) != nil {
				return
			}
			sent.Add(1)
		}
	}()
	for last := int64(-1); sent.Load() != last; { // until the writes block
		last = sent.Load()
		time.Sleep(time.Second)
	}
	grown := int64(liveHeap()) - int64(before)
	t.Logf("%d messages sent; live heap grew by %d KiB", sent.Load(), grown>>10)
	assert.Less(t, grown, int64(16<<20), "held for a client that never reads")
}
