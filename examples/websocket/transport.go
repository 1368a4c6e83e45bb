package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"

	"github.com/coder/websocket"

	"github.com/ndjsonrpc/jsonrpc"
)

// A transport is one WebSocket connection as a jsonrpc.Transport: each
// message read, text or binary, is one JSON-RPC message, and each message
// written goes out as one text message, byte for byte.
type transport struct {
	c     *websocket.Conn
	limit int    // the longest message read, in bytes
	buf   []byte // the last message read, reused for the next if small

	// ctx bounds every read and write; it ends when reading fails, for
	// whatever reason, and on Close. Handlers serving the connection run
	// under it, so they stop when the peer goes away.
	ctx    context.Context
	cancel context.CancelFunc
}

// maxIdleBuffer is the largest read buffer a transport keeps while it
// waits for a message.
const maxIdleBuffer = 64 << 10

func newTransport(ctx context.Context, c *websocket.Conn, limit int) *transport {
	// ReadMessage enforces limit without closing the connection; the
	// WebSocket library's limit would close it.
	c.SetReadLimit(-1)
	ctx, cancel := context.WithCancel(ctx)
	return &transport{c: c, limit: limit, ctx: ctx, cancel: cancel}
}

// Context returns a context that ends when the connection does.
func (t *transport) Context() context.Context { return t.ctx }

// ReadMessage returns the next message, valid until the next call. It
// returns io.EOF when the peer closes the connection normally (or is going
// away, as a browser tab that closes is), and the WebSocket error
// otherwise. A message over the limit is dropped as it arrives, never
// held whole, and reported with an error wrapping
// jsonrpc.ErrMessageTooLarge: the connection goes on.
func (t *transport) ReadMessage() ([]byte, error) {
	msg, err := t.read()
	if err != nil && !errors.Is(err, jsonrpc.ErrMessageTooLarge) {
		t.cancel()
		switch websocket.CloseStatus(err) {
		case websocket.StatusNormalClosure, websocket.StatusGoingAway:
			return nil, io.EOF
		}
	}
	return msg, err
}

func (t *transport) read() ([]byte, error) {
	if cap(t.buf) > maxIdleBuffer {
		t.buf = nil // let a large message go: the server keeps its own copy
	}
	_, r, err := t.c.Reader(t.ctx)
	if err != nil {
		return nil, err
	}
	b := bytes.NewBuffer(t.buf[:0])
	_, err = b.ReadFrom(io.LimitReader(r, int64(t.limit)+1))
	t.buf = b.Bytes()
	if err != nil {
		return nil, err
	}
	if len(t.buf) > t.limit {
		if _, err := io.Copy(io.Discard, r); err != nil {
			return nil, err
		}
		return nil, fmt.Errorf("websocket message over %d bytes: %w", t.limit, jsonrpc.ErrMessageTooLarge)
	}
	return t.buf, nil
}

// WriteMessage sends msg as one text message.
func (t *transport) WriteMessage(msg []byte) error {
	return t.c.Write(t.ctx, websocket.MessageText, msg)
}

// Close closes the connection with a normal closure, and ends the
// transport's context. The WebSocket library waits up to 5 s for the
// close frame to go out and as long for the peer's answer; then the
// socket is closed, and the calls in progress return.
func (t *transport) Close() error {
	err := t.c.Close(websocket.StatusNormalClosure, "")
	t.cancel()
	if errors.Is(err, net.ErrClosed) {
		return nil // closed already, by us or by the peer
	}
	return err
}
