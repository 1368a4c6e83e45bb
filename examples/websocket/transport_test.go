package main

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/coder/websocket"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/ndjsonrpc/jsonrpc"
)

// pair returns the two ends of a WebSocket connection on a loopback port:
// the server's end as a transport that reads messages of at most limit
// bytes, and the client's.
func pair(t *testing.T, limit int) (*transport, *websocket.Conn) {
	t.Helper()
	opt := goleak.IgnoreCurrent()
	t.Cleanup(func() { goleak.VerifyNone(t, opt) })
	accepted := make(chan *transport, 1)
	release := make(chan struct{})
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, err := websocket.Accept(w, r, nil)
		if err != nil {
			return
		}
		accepted <- newTransport(context.Background(), c, limit, nil)
		<-release
	}))
	t.Cleanup(hs.Close)
	t.Cleanup(func() { close(release) })
	ctx, cancel := context.WithTimeout(t.Context(), waitTimeout)
	defer cancel()
	c, _, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(hs.URL, "http"), nil)
	require.NoError(t, err)
	t.Cleanup(func() { c.CloseNow() })
	select {
	case tr := <-accepted:
		t.Cleanup(func() {
			c.CloseNow() // first, or tr.Close waits for the client's reply to its close
			tr.Close()
		})
		return tr, c
	case <-ctx.Done():
		t.Fatal("no connection accepted")
		return nil, nil
	}
}

// tooLarge, among the messages readMessages wants, is one reported as
// over the limit.
const tooLarge = "too large"

// readMessages reads a message from tr for each of wants, and checks it.
func readMessages(t *testing.T, tr *transport, wants ...string) {
	t.Helper()
	for _, want := range wants {
		got, err := tr.ReadMessage()
		if want == tooLarge {
			assert.ErrorIs(t, err, jsonrpc.ErrMessageTooLarge)
			continue
		}
		require.NoError(t, err)
		assert.Equal(t, want, string(got))
	}
}

// TestTransportRead reads messages as they were sent, newlines and all; one
// over the limit is reported, and the next is read.
func TestTransportRead(t *testing.T) {
	tr, c := pair(t, 16)
	for _, msg := range []string{"{\n}", "", "[1,\r\n2]", strings.Repeat("x", 17), strings.Repeat("y", 16)} {
		send(t, c, msg)
	}
	closed := make(chan error, 1)
	go func() { closed <- c.Close(websocket.StatusNormalClosure, "") }() // waits for the server's reply
	readMessages(t, tr, "{\n}", "", "[1,\r\n2]", tooLarge, strings.Repeat("y", 16))
	_, err := tr.ReadMessage()
	assert.ErrorIs(t, err, io.EOF, "a normal closure reads as io.EOF")
	require.NoError(t, <-closed)
	assert.Error(t, tr.Context().Err(), "the transport's context ends with reading")
}

// TestTransportWrite writes messages: each is one text message, as it is.
func TestTransportWrite(t *testing.T) {
	tr, c := pair(t, 16)
	msgs := []string{"a\nb", "", "{\r\n}"}
	for _, m := range msgs {
		require.NoError(t, tr.WriteMessage([]byte(m)))
	}
	for _, want := range msgs {
		assert.Equal(t, want, receive(t, c))
	}
}

// TestTransportReadBudget reads messages whose buffer grows past
// maxIdleBuffer with a budget of 128 KiB: one that fits is read, one
// that does not is dropped and reported as too large, and the next is
// read; the budget is whole again once the transport is closed.
func TestTransportReadBudget(t *testing.T) {
	tr, c := pair(t, 1<<20)
	mem := newBudget(128 << 10)
	tr.mem = mem
	large := strings.Repeat("a", 150<<10) // a buffer of 256 KiB, 192 KiB past maxIdleBuffer: over the budget
	small := strings.Repeat("b", 100<<10) // a buffer of 128 KiB, 64 KiB past maxIdleBuffer
	for _, msg := range []string{small, large, small, "c"} {
		send(t, c, msg)
	}
	readMessages(t, tr, small, tooLarge, small, "c")
	assert.Equal(t, 128<<10, mem.free, "a small message holds nothing of the budget")
	send(t, c, small)
	_, err := tr.ReadMessage()
	require.NoError(t, err)
	assert.Equal(t, 64<<10, mem.free, "the last message read holds its buffer")
	c.CloseNow()
	_ = tr.Close() // the peer has gone: its error says so
	assert.Equal(t, 128<<10, mem.free, "all given back")
}
