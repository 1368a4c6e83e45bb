package jsonrpc

import (
	"context"
	"io"
	"net"
	"slices"
	"sync"
	"time"
)

// A Server serves JSON-RPC 2.0 connections: streams ([Server.Serve]),
// message transports ([Server.ServeTransport]), the connections of a
// listener ([Server.ServeListener]) and HTTP requests
// ([Server.ServeHTTP]). Its Options configure each connection; its other
// fields, the listener's. Its fields must not change once it serves.
//
// The zero Server is valid: it answers every call with "Method not found".
// One Server may serve many connections at once, each with its own call to
// Serve.
type Server struct {
	// Options configure each connection the server serves; their
	// MaxMessageSize also bounds an HTTP request's body.
	Options

	// MaxConns bounds the connections that ServeListener serves at once;
	// zero means 1,024.
	MaxConns int

	// IdleTimeout, if positive, closes a connection accepted by
	// ServeListener once it has had no request in flight and no whole
	// message read for that long (up to a quarter more). A peer that
	// trickles a message slower than that is closed too, and so is one
	// that stops reading: a connection whose one write has not ended for
	// IdleTimeout is closed at once, its handlers cancelled. Zero means
	// no limit.
	IdleTimeout time.Duration

	// MaxMemory is the server's memory budget, in bytes, across all the
	// connections and HTTP requests it serves: the requests that they
	// hold queued or running (what each connection's MaxPendingBytes
	// counts), their read buffers past their first 64 KiB, and HTTP
	// bodies. Zero means 256 MiB; a negative value means no budget.
	//
	// Past it, new work is shed rather than held: a request that would
	// be queued is answered at once with [ErrOverloaded] (data
	// {"reason":"server memory budget"}), and did not run (see
	// [MayHaveRun]); an HTTP request whose body does not fit gets 503,
	// with Retry-After and an ErrOverloaded answer with a null id.
	// Notifications in a line that would be queued are dropped then
	// (logged at Debug), as nothing can tell their peer: a protocol that
	// cannot lose one (an editor's document changes) should set MaxMemory
	// negative and rely on [Options.MaxPendingBytes], whose reader waits
	// rather than drops, and drops only past twice its budget while this
	// side's own calls await answers. A connection that needs a larger
	// buffer for the line it reads waits for room instead, and while one
	// waits all other new work is shed, so that what is held drains and
	// that connection is served: none is starved for good. A request or
	// line larger than the budget itself is let through once nothing else
	// is held.
	// SECURITY.md gives the worst case in bytes.
	MaxMemory int64

	mu        sync.Mutex
	conns     map[*conn]struct{}
	untracked chan struct{} // closed when a connection leaves conns, made by a Shutdown that waits
	listeners map[net.Listener]struct{}
	closing   chan struct{} // closed by Shutdown and Close, made by trackListener
	closed    bool
	accepted  int           // goroutines serving accepted connections
	drained   chan struct{} // closed when accepted drops to zero
	encoders  encoders      // result encoders, shared by its connections
	memOnce   sync.Once
	mem       *memBudget // MaxMemory's budget; nil for none

	stopped bool              // Close was called
	reads   *httpRequestState // HTTP bodies being read: a list, see trackRead
}

// Serve reads requests from r and writes responses to w until the input
// ends, then lets the handlers in flight finish, flushes w and returns
// nil (or the read error, if the input ended with one other than io.EOF).
// See [Server.Serve].
func Serve(ctx context.Context, r io.Reader, w io.Writer, h Handler) error {
	s := &Server{Options: Options{Handler: h}}
	return s.Serve(ctx, r, w)
}

// Serve reads requests from r and writes the responses to w, one message
// per line (or as [Options.Framing] frames them), until r ends.
//
// Requests run concurrently, up to MaxInFlight at a time, so responses may
// come in any order; every request is answered exactly once and no
// notification is ever answered. A line that is not JSON is answered with
// a Parse error with a null id, and reading goes on at the next line.
//
// At the end of the input (io.EOF, or any other read error) the handlers
// in flight get StopGrace to finish; then their contexts are cancelled
// with a cause (see [context.Cause]) that wraps [ErrPeerClosed] and the
// read error, requests still queued run with theirs cancelled, and all get
// StopGrace again to return. Serve then flushes w and returns nil at
// io.EOF, or the read error (such as io.ErrUnexpectedEOF in the middle of
// a header-framed message), or, if a handler had to be abandoned, an
// error wrapping [ErrClosed] and ErrPeerClosed; so it returns within
// about twice StopGrace of the end of its input. A write error ends it
// with that error. When ctx is cancelled Serve stops reading, cancels the handlers' contexts, waits
// up to StopGrace for them, and returns ctx.Err(); after [Server.Close]
// or [Server.Shutdown] it returns [ErrServerClosed].
//
// A blocked Read cannot always be interrupted. On Close or the end of ctx,
// Serve closes r if it is an io.Closer, and w too if a write is still
// blocked when the grace period ends. On Shutdown, which must still write,
// it uses CloseRead or a read deadline where r has them, and closes r only
// if it is not also w. Otherwise Serve returns all the same once the
// requests already read are done, and the goroutine in Read ends when Read
// returns, without serving what it read. Serve never closes r or w at the
// end of the input.
//
// What a connection holds is bounded in bytes: see MaxMessageSize,
// MaxBatch and MaxPendingBytes, and SECURITY.md for the whole account.
func (s *Server) Serve(ctx context.Context, r io.Reader, w io.Writer) error {
	c := newConn(s.config(), ctx, r, w)
	if !s.track(c) {
		return ErrServerClosed
	}
	defer s.untrack(c)
	return c.serve(ctx)
}

// config returns what the options of s set up for a connection.
func (s *Server) config() *config {
	cfg := new(config)
	s.configInto(cfg)
	return cfg
}

// configInto sets cfg to what the options of s set up for a connection.
func (s *Server) configInto(cfg *config) {
	s.Options.configInto(cfg)
	cfg.encoders = &s.encoders
	cfg.mem = s.memory()
}

// memory returns the server's memory budget, nil if it has none.
func (s *Server) memory() *memBudget {
	s.memOnce.Do(func() {
		switch {
		case s.MaxMemory == 0:
			s.mem = newMemBudget(defaultMaxMemory)
		case s.MaxMemory > 0:
			s.mem = newMemBudget(s.MaxMemory)
		}
	})
	return s.mem
}

func (s *Server) track(c *conn) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.addConn(c)
}

// addConn is track, with s.mu held.
func (s *Server) addConn(c *conn) bool {
	if s.closed {
		return false
	}
	if s.conns == nil {
		s.conns = make(map[*conn]struct{})
	}
	s.conns[c] = struct{}{}
	return true
}

func (s *Server) untrack(c *conn) {
	s.mu.Lock()
	delete(s.conns, c)
	if s.untracked != nil {
		close(s.untracked)
		s.untracked = nil
	}
	s.mu.Unlock()
	c.mem.close() // what it still holds goes back to the budget
}

// closeAll marks the server closed, closes its listeners, and returns the
// connections being served.
func (s *Server) closeAll() []*conn {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.closed && s.closing != nil {
		close(s.closing)
	}
	s.closed = true
	for l := range s.listeners {
		_ = l.Close()
	}
	cs := make([]*conn, 0, len(s.conns))
	for c := range s.conns {
		cs = append(cs, c)
	}
	return cs
}

// Close stops every connection at once: reading stops, the contexts of the
// handlers in flight are cancelled, and each Serve returns
// [ErrServerClosed] once its handlers have returned or its StopGrace has
// passed. Later calls to Serve return ErrServerClosed at once. Close is
// idempotent and safe to call from any goroutine.
//
// Connections accepted by ServeListener are closed too, and Close returns
// once their goroutines have ended, at most about StopGrace later.
func (s *Server) Close() error {
	for _, c := range s.closeAll() {
		c.abort(ErrServerClosed)
	}
	s.endReads()
	<-s.acceptedDone()
	return nil
}

// Shutdown stops every connection gracefully: it closes the listeners of
// ServeListener, lets the requests already read finish and their
// responses be written (over HTTP: to the ResponseWriter, status
// included, which net/http sends as ServeHTTP returns), and returns when
// all of that is done (also when a reader sits in a Read that cannot be
// interrupted), or returns ctx.Err()
// if ctx ends first. Unlike Close, it waits for handlers without limit
// (StopGrace does not apply): give it a ctx with a deadline, and call
// Close when that passes. Each Serve returns [ErrServerClosed], and so do
// later calls to Serve. Calling Shutdown from inside a handler deadlocks.
//
// Nothing that arrives meanwhile is dropped without a word: a connection
// goes on reading while its work in flight finishes, and answers each
// request that arrives (each request of a batch) at once with
// [ErrNotRun], which means it did not run and may be sent elsewhere (see
// [MayHaveRun]). The answers go through the connection's writer, with its
// backpressure. Notifications for the handler are dropped (and logged at
// Debug); responses to the calls that handlers make through [Peer] still
// reach them. Once its work in flight is done, a connection goes on so
// for 100 ms more, so that a request its peer sent as the last answer
// reached it is answered too; then it stops reading and ends, whatever
// the peer still sends. Over HTTP, a request that comes after Shutdown
// gets 503 (see [Server.ServeHTTP]).
func (s *Server) Shutdown(ctx context.Context) error {
	cs := s.closeAll()
	for _, c := range cs {
		c.drain(ErrServerClosed)
	}
	for _, c := range cs {
		select {
		case <-c.finished:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	// What serves a connection still writes after it has finished: the
	// status of an HTTP response (202 for notifications), the last
	// flush of Serve.
	for {
		s.mu.Lock()
		left := slices.ContainsFunc(cs, func(c *conn) bool { _, ok := s.conns[c]; return ok })
		if !left {
			s.mu.Unlock()
			break
		}
		if s.untracked == nil {
			s.untracked = make(chan struct{})
		}
		untracked := s.untracked
		s.mu.Unlock()
		select {
		case <-untracked:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	select {
	case <-s.acceptedDone():
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// acceptedDone returns a channel closed once no goroutine serves a
// connection that ServeListener accepted.
func (s *Server) acceptedDone() <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.accepted == 0 {
		ch := make(chan struct{})
		close(ch)
		return ch
	}
	if s.drained == nil {
		s.drained = make(chan struct{})
	}
	return s.drained
}

// acceptedEnd counts out a goroutine serving an accepted connection.
func (s *Server) acceptedEnd() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.accepted--
	if s.accepted == 0 && s.drained != nil {
		close(s.drained)
		s.drained = nil
	}
}
