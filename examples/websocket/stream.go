package main

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net"

	"github.com/coder/websocket"
)

// A stream is one WebSocket connection seen as the newline-delimited byte
// stream that package jsonrpc reads and writes, so that the library's
// default framing, its limits and its strictness apply unchanged: each
// message read comes out as one line, and each line written goes out as
// one text message.
//
// Reading, a message's own "\n" bytes become "\r", which JSON reads the
// same way: whitespace between tokens, and a raw control character (an
// error) inside a string. So a message that spans lines is still one
// message, and is valid exactly when it was. A message is never held
// whole: it is handed on as it arrives, and the jsonrpc reader drops one
// over its MaxMessageSize as it reads it. Text and binary messages are
// read alike.
//
// Writing, jsonrpc hands over whole lines, often several in one Write and
// sometimes one line over several Writes (a large result is written from
// the handler's memory): a whole line goes out as one message in one
// frame, and a line cut between Writes goes out as one message in several
// frames.
//
// A stream is for one reader and one writer at a time, which is how
// jsonrpc uses it.
type stream struct {
	c *websocket.Conn

	// ctx bounds every read and write; it ends when reading ends, for
	// whatever reason, or on Close. Handlers serving the connection run
	// under it, so they stop when the peer goes away.
	ctx    context.Context
	cancel context.CancelFunc

	r       io.Reader // the message being read; nil between messages
	newline bool      // the "\n" that ends the last message is still to be read

	w io.WriteCloser // the message being written when a Write ended inside a line
}

func newStream(ctx context.Context, c *websocket.Conn) *stream {
	// The jsonrpc reader enforces its own limit without holding a message
	// whole; the WebSocket library's limit would close the connection.
	c.SetReadLimit(-1)
	ctx, cancel := context.WithCancel(ctx)
	return &stream{c: c, ctx: ctx, cancel: cancel}
}

// Context returns a context that ends when the connection does.
func (s *stream) Context() context.Context { return s.ctx }

// Read reads the messages, each followed by "\n". It returns io.EOF when
// the peer closes the connection normally (or is going away, as a browser
// tab that closes is), and the WebSocket error otherwise.
func (s *stream) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	for {
		if s.newline {
			s.newline = false
			p[0] = '\n'
			return 1, nil
		}
		if s.r == nil {
			_, r, err := s.c.Reader(s.ctx)
			if err != nil {
				s.cancel()
				switch websocket.CloseStatus(err) {
				case websocket.StatusNormalClosure, websocket.StatusGoingAway:
					return 0, io.EOF
				}
				return 0, err
			}
			s.r = r
		}
		n, err := s.r.Read(p)
		if err != nil && err != io.EOF {
			s.cancel() // the connection broke inside a message
		}
		for i, b := range p[:n] {
			if b == '\n' {
				p[i] = '\r'
			}
		}
		if err == io.EOF {
			s.r = nil
			if n < len(p) {
				p[n] = '\n'
				n++
			} else {
				s.newline = true
			}
			err = nil
		}
		if n > 0 || err != nil {
			return n, err
		}
	}
}

// Write sends each line of p as one text message. A line that p does not
// finish stays open as a message until a later Write ends it.
func (s *stream) Write(p []byte) (int, error) {
	written := 0
	for len(p) > 0 {
		line, rest, whole := bytes.Cut(p, []byte{'\n'})
		var err error
		switch {
		case s.w == nil && whole:
			if len(line) > 0 {
				err = s.c.Write(s.ctx, websocket.MessageText, line)
			}
		default:
			if s.w == nil {
				if s.w, err = s.c.Writer(s.ctx, websocket.MessageText); err != nil {
					break
				}
			}
			if _, err = s.w.Write(line); err == nil && whole {
				err = s.w.Close()
				s.w = nil
			}
		}
		if err != nil {
			return written, err
		}
		if !whole {
			return written + len(p), nil
		}
		written += len(line) + 1
		p = rest
	}
	return written, nil
}

// Close closes the connection with a normal closure, and ends the
// stream's context. It is safe to call more than once.
func (s *stream) Close() error {
	err := s.c.Close(websocket.StatusNormalClosure, "")
	s.cancel()
	if errors.Is(err, net.ErrClosed) {
		return nil // closed already, by us or by the peer
	}
	return err
}
