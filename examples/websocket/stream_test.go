package main

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/coder/websocket"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

// pair returns the two ends of a WebSocket connection on a loopback port:
// the server's end as a stream, and the client's.
func pair(t *testing.T) (*stream, *websocket.Conn) {
	t.Helper()
	opt := goleak.IgnoreCurrent()
	t.Cleanup(func() { goleak.VerifyNone(t, opt) })
	accepted := make(chan *stream, 1)
	release := make(chan struct{})
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, err := websocket.Accept(w, r, nil)
		if err != nil {
			return
		}
		accepted <- newStream(context.Background(), c)
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
	case s := <-accepted:
		t.Cleanup(func() {
			c.CloseNow() // first, or s.Close waits for the client's reply to its close
			s.Close()
		})
		return s, c
	case <-ctx.Done():
		t.Fatal("no connection accepted")
		return nil, nil
	}
}

// TestStreamRead reads messages through a one-byte buffer: each comes out
// as one line, its own newlines turned to "\r".
func TestStreamRead(t *testing.T) {
	s, c := pair(t)
	for _, msg := range []string{"{\n}", "", "[1,\r\n2]"} {
		send(t, c, msg)
	}
	closed := make(chan error, 1)
	go func() { closed <- c.Close(websocket.StatusNormalClosure, "") }() // waits for the server's reply
	got, err := io.ReadAll(iotest.OneByteReader(s))
	require.NoError(t, err, "a normal closure reads as io.EOF")
	require.NoError(t, <-closed)
	assert.Equal(t, "{\r}\n\n[1,\r\r2]\n", string(got))
	assert.Error(t, s.Context().Err(), "the stream's context ends with reading")
}

// TestStreamWrite writes lines cut anywhere: each line is one message.
func TestStreamWrite(t *testing.T) {
	s, c := pair(t)
	for _, p := range []string{"a\nb", "c", "\n\n", "d\ne\n"} {
		n, err := s.Write([]byte(p))
		require.NoError(t, err)
		assert.Equal(t, len(p), n)
	}
	for _, want := range []string{"a", "bc", "d", "e"} {
		assert.Equal(t, want, receive(t, c))
	}
}
