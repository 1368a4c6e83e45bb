package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"

	"github.com/coder/websocket"

	"github.com/ndjsonrpc/jsonrpc"
)

// A transport is one WebSocket connection as a jsonrpc.Transport: each
// message read, text or binary, is one JSON-RPC message, and each message
// written goes out as one text message, byte for byte.
type transport struct {
	c     *websocket.Conn
	limit int     // the longest message read, in bytes
	mem   *budget // shared room for buf past maxIdleBuffer; nil for no bound
	buf   []byte  // the last message read, reused for the next if small

	mu     sync.Mutex
	held   int  // the bytes of buf's capacity taken from mem
	closed bool // Close has given held back: take no more

	// ctx bounds every read and write; it ends when reading fails, for
	// whatever reason, and on Close. Handlers serving the connection run
	// under it, so they stop when the peer goes away.
	ctx    context.Context
	cancel context.CancelFunc
}

// maxIdleBuffer is the largest read buffer a transport keeps while it
// waits for a message, and the most it reads into without taking room
// from its budget.
const maxIdleBuffer = 64 << 10

// newTransport returns c as a transport that reads messages of at most
// limit bytes, and takes the room its read buffer needs past
// maxIdleBuffer from mem, if mem is not nil.
func newTransport(ctx context.Context, c *websocket.Conn, limit int, mem *budget) *transport {
	// ReadMessage enforces limit without closing the connection; the
	// WebSocket library's limit would close it.
	c.SetReadLimit(-1)
	ctx, cancel := context.WithCancel(ctx)
	return &transport{c: c, limit: limit, mem: mem, ctx: ctx, cancel: cancel}
}

// A budget is a number of bytes that transports share for their read
// buffers. It is safe for concurrent use; a nil budget has no bound.
type budget struct {
	mu   sync.Mutex
	free int
}

func newBudget(n int) *budget { return &budget{free: n} }

// take takes n bytes, and reports whether there were that many free.
func (b *budget) take(n int) bool {
	if b == nil {
		return true
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if n > b.free {
		return false
	}
	b.free -= n
	return true
}

// give gives back n bytes taken.
func (b *budget) give(n int) {
	if b == nil {
		return
	}
	b.mu.Lock()
	b.free += n
	b.mu.Unlock()
}

// hold makes the room that t holds in its budget n bytes, and reports
// whether the budget had that much.
func (t *transport) hold(n int) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed {
		return false
	}
	if n > t.held && !t.mem.take(n-t.held) {
		return false
	}
	t.mem.give(max(t.held-n, 0))
	t.held = n
	return true
}

// Context returns a context that ends when the connection does.
func (t *transport) Context() context.Context { return t.ctx }

// ReadMessage returns the next message, valid until the next call. It
// returns io.EOF when the peer closes the connection normally (or is going
// away, as a browser tab that closes is), and the WebSocket error
// otherwise. A message over the limit is dropped as it arrives, never
// held whole, and reported with an error wrapping
// jsonrpc.ErrMessageTooLarge: the connection goes on. So is a message
// whose buffer would grow past maxIdleBuffer when the budget has no room
// left for it.
func (t *transport) ReadMessage() ([]byte, error) {
	msg, err := t.read()
	if err != nil && !errors.Is(err, jsonrpc.ErrMessageTooLarge) {
		t.buf = nil
		t.hold(0)
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
		t.hold(0)
	}
	_, r, err := t.c.Reader(t.ctx)
	if err != nil {
		return nil, err
	}
	// Read up to limit and one byte, to tell a message over the limit.
	t.buf = t.buf[:0]
	for len(t.buf) <= t.limit {
		if len(t.buf) == cap(t.buf) && !t.grow() {
			if _, err := io.Copy(io.Discard, r); err != nil {
				return nil, err
			}
			return nil, fmt.Errorf("websocket message over %d bytes, with no room left to read it: %w", len(t.buf), jsonrpc.ErrMessageTooLarge)
		}
		n, err := r.Read(t.buf[len(t.buf):cap(t.buf)])
		t.buf = t.buf[:len(t.buf)+n]
		if err == io.EOF {
			if len(t.buf) > t.limit {
				break
			}
			return t.buf, nil
		}
		if err != nil {
			return nil, err
		}
	}
	if _, err := io.Copy(io.Discard, r); err != nil {
		return nil, err
	}
	return nil, fmt.Errorf("websocket message over %d bytes: %w", t.limit, jsonrpc.ErrMessageTooLarge)
}

// grow doubles the capacity of t.buf, up to the limit and one byte, and
// reports whether the budget had room for what it then holds past
// maxIdleBuffer.
func (t *transport) grow() bool {
	size := min(max(2*cap(t.buf), 512), t.limit+1)
	if !t.hold(max(size-maxIdleBuffer, 0)) {
		return false
	}
	t.buf = append(make([]byte, 0, size), t.buf...)
	return true
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
	t.mu.Lock()
	t.closed = true
	t.mem.give(t.held)
	t.held = 0
	t.mu.Unlock()
	if errors.Is(err, net.ErrClosed) {
		return nil // closed already, by us or by the peer
	}
	return err
}
