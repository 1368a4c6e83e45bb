package jsonrpc

// This file holds the message seam under the framing seam: a Transport
// carries whole messages (WebSocket, an in-memory pipe, a test double),
// and a connection reads and writes them without framing.

import (
	"context"
	"encoding/binary"
	"sync"
)

// A Transport carries whole messages, one JSON message or batch each, for a
// connection over a medium that delimits messages itself, such as
// WebSocket, an in-memory pipe or a test double. Nothing frames them: a
// message may hold any bytes, newlines included, and each message read is
// served as it is. [NewTransportConn] and [Server.ServeTransport] run a
// connection over a Transport; [NewConn] and [Server.Serve] run one over
// a byte stream, which a [Framing] cuts into messages.
//
// A connection calls the methods of its Transport as follows.
//
// ReadMessage is called by the connection's reader, never twice at once
// (successive calls may come from different goroutines, since the reading
// role moves when a handler runs long). It follows [MessageReader]'s
// rules: the slice it returns may alias the transport's own memory and
// need only stay valid until the next call, as the connection copies what
// it keeps. An error wrapping [ErrMessageTooLarge] or [ErrBadHeader] loses
// that one message, which is answered as an over-long or damaged message
// on a stream is, and reading goes on; io.EOF is the clean end of the
// input, after which the connection ends as at the end of a stream (see
// [Conn.Wait] and [Server.Serve]); any other error ends reading with that
// error.
//
// WriteMessage is called by one goroutine at a time, never twice at once,
// each time with one complete message: a message is never split over
// calls, nor two joined in one. It may run at the same time as
// ReadMessage. It must not keep msg after it returns. An error from it
// ends the connection, as a failed write on a stream does: nothing more
// is written.
//
// Close may be called at any time, from any goroutine, also while a
// ReadMessage or a WriteMessage is in progress, which it must make return
// (with an error; both may fail from then on). The connection calls it
// exactly once: when the connection ends, or before, to interrupt a call
// in progress when the connection must stop at once ([Server.Close], the
// end of ServeTransport's context, a write still blocked once the
// handlers have been given up on after StopGrace).
//
// The connection's MaxMessageSize still holds: a message longer than that
// is refused, and answered as an over-long line on a stream is, whatever
// ReadMessage returned. A transport that learns the size of a message
// before it holds it whole (from a frame header, say) should not wait
// for that: it should discard the rest as it arrives and return an error
// wrapping ErrMessageTooLarge, so that an over-long message is never held
// in memory.
type Transport interface {
	// ReadMessage returns the next message; see [MessageReader].
	MessageReader

	// WriteMessage sends msg, one complete message. It must not keep msg
	// after it returns.
	WriteMessage(msg []byte) error

	// Close ends the transport, and makes a ReadMessage or WriteMessage
	// in progress return.
	Close() error
}

// NewTransportConn returns a Conn that reads and writes whole messages
// through t, as [NewConn] does through a byte stream, and starts serving
// it. opts may be nil; its Framing is not used, since t delimits the
// messages itself.
//
// When ReadMessage returns io.EOF, calls in flight fail with an error
// wrapping [ErrClosed], the handlers in flight get StopGrace to finish,
// their answers are written, and the connection ends. However it ends,
// t.Close is then called exactly once, on a goroutine of the Conn's, just
// after Done is closed (or before, to interrupt a write that Close gave
// up on). Wait reports how it ended.
func NewTransportConn(t Transport, opts *Options) *Conn {
	c, _ := newTransportConn(opts.config(), context.Background(), t)
	return startConn(c)
}

// ServeTransport serves one connection over t, as [Server.Serve] serves a
// byte stream: it reads the messages with t.ReadMessage and writes each
// answer, notification or call with t.WriteMessage, with the same limits,
// the same answers to malformed and over-long messages, and the same end
// (at io.EOF the handlers in flight get StopGrace to finish, then their
// contexts are cancelled and they get as long again to return). It
// returns what Serve returns: nil at the end of the input, ctx.Err(),
// [ErrServerClosed], or the error that ended the connection. The server's
// Framing is not used: t delimits the messages itself.
//
// Unlike a stream given to Serve, a Transport is one connection, which
// ends with ServeTransport: t.Close is called exactly once, before
// ServeTransport returns. It is called earlier where Serve would close a
// stream, to interrupt a call in progress: on [Server.Close], at the end
// of ctx, and for a write still blocked once the handlers have been given
// up on. [Server.Shutdown], which lets the answers be written, leaves t
// open until then; its ReadMessage in progress returns when t is closed.
func (s *Server) ServeTransport(ctx context.Context, t Transport) error {
	cfg := s.config()
	cfg.drainGrace = true
	c, end := newTransportConn(cfg, ctx, t)
	// Nothing more is written (an abandoned handler's answer is
	// dropped), and t is closed.
	defer c.out.closeNow()
	if !s.track(c) {
		_ = end.Close()
		return ErrServerClosed
	}
	defer s.untrack(c)
	return c.serve(ctx)
}

// newTransportConn makes a connection over t: its reader, in modeCustom,
// reads t's messages through the end it returns, and its writer, in
// modeMessage, hands each message to t.WriteMessage on its own.
func newTransportConn(cfg *config, ctx context.Context, t Transport) (*conn, *transportEnd) {
	end := &transportEnd{t: t}
	lr := newLineReader(nil, cfg.maxMessage)
	lr.mode = modeCustom
	lr.inner = end
	end.lr = lr
	cfg.in = lr
	cfg.framing = nil
	c := newConn(cfg, ctx, nil, end)
	c.r = end // also the writer: reading is interrupted only by closing it
	c.out.mode = modeMessage
	return c, end
}

// recordHead is the size of the length before each message in the
// buffer of a lineWriter in modeMessage.
const recordHead = 8

// appendRecord appends one message, built by add, to buf, after its
// length: what transportEnd.Write takes apart again.
func appendRecord(buf []byte, add func([]byte) []byte) []byte {
	start := len(buf)
	var head [recordHead]byte
	buf = add(append(buf, head[:]...))
	binary.LittleEndian.PutUint64(buf[start:], uint64(len(buf)-start-recordHead))
	return buf
}

// transportEnd is a connection's end of a Transport. The connection's
// reader reads through it; its writer writes to it, as to an io.Writer,
// the records it gathered, which Write hands on one message at a time;
// and Close closes the transport once, whoever calls it and however
// often.
type transportEnd struct {
	t    Transport
	lr   *lineReader // the reader that reads through it
	once sync.Once
	err  error
}

// ReadMessage reads the next message of the transport. The call may
// block, so the reader's hooks run around it, as hookReader runs them
// around each Read under a Framing.
func (e *transportEnd) ReadMessage() ([]byte, error) {
	lr := e.lr
	if lr.hooks != nil && !lr.hooks.beforeRead() {
		lr.stopped = true
		return nil, errReadStopped
	}
	msg, err := e.t.ReadMessage()
	if lr.hooks != nil {
		lr.hooks.afterRead()
	}
	return msg, err
}

// Write hands each message of p, a run of whole records made by
// appendRecord, to WriteMessage in turn, and stops at the first error.
func (e *transportEnd) Write(p []byte) (int, error) {
	for n := 0; n < len(p); {
		end := n + recordHead + int(binary.LittleEndian.Uint64(p[n:]))
		if err := e.t.WriteMessage(p[n+recordHead : end : end]); err != nil {
			// The message may have gone out before the failure: it
			// counts as written (see MayHaveRun).
			return end, err
		}
		n = end
	}
	return len(p), nil
}

// Close closes the transport the first time it is called, and returns
// what that returned.
func (e *transportEnd) Close() error {
	e.once.Do(func() { e.err = e.t.Close() })
	return e.err
}
