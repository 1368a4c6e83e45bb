package jsonrpc

// This file serves the connections accepted from a net.Listener, and
// dials one for a Conn.

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"sync"
	"syscall"
	"time"
)

// defaultMaxConns is the number of connections that [Server.ServeListener]
// serves at once when [Server.MaxConns] is zero.
const defaultMaxConns = 1024

// ServeListener accepts connections on l and serves each one, as Serve
// serves a stream, on goroutines of its own, until l fails, ctx ends, or
// the server is shut down or closed. It returns only once every
// connection it accepted has ended, and it closes l.
//
// At most MaxConns connections are served at once: while that many are
// open, the next one waits in the listener's backlog. A connection with no
// request in flight and no whole message read for IdleTimeout is closed.
// An error from Accept that may pass (too many open files, a connection
// aborted before it was accepted, a timeout) is retried after a pause
// that doubles from 5 ms up to 1 s, as net/http does; any other ends
// ServeListener with that error, once its connections have ended.
//
// When ctx ends, each connection stops as Serve does when its context
// ends, and ServeListener returns ctx.Err(). After [Server.Shutdown] or
// [Server.Close] it returns [ErrServerClosed].
func (s *Server) ServeListener(ctx context.Context, l net.Listener) error {
	closing, ok := s.trackListener(l)
	if !ok {
		_ = l.Close()
		return ErrServerClosed
	}
	defer s.untrackListener(l)
	stop := context.AfterFunc(ctx, func() { _ = l.Close() })
	defer stop()

	slots := make(chan struct{}, orDefault(s.MaxConns, defaultMaxConns))
	var wg sync.WaitGroup
	defer wg.Wait()
	var pause time.Duration
	for {
		select {
		case slots <- struct{}{}:
		case <-ctx.Done():
			return ctx.Err()
		case <-closing:
			return ErrServerClosed
		}
		nc, err := l.Accept()
		if err != nil {
			<-slots
			select {
			case <-closing:
				return ErrServerClosed
			default:
			}
			if ctx.Err() != nil {
				return ctx.Err()
			}
			if !retryAccept(err) {
				_ = l.Close()
				return err
			}
			pause = min(max(2*pause, 5*time.Millisecond), time.Second)
			s.logger().Debug("jsonrpc: accept failed; retrying", slog.Any("error", err), slog.Duration("pause", pause))
			t := time.NewTimer(pause)
			select {
			case <-t.C:
			case <-ctx.Done():
			case <-closing:
			}
			t.Stop()
			continue
		}
		pause = 0
		s.mu.Lock()
		closed := s.closed
		if !closed {
			s.accepted++
		}
		s.mu.Unlock()
		if closed {
			_ = nc.Close()
			<-slots
			return ErrServerClosed
		}
		wg.Add(1)
		go func() {
			defer s.acceptedEnd()
			defer wg.Done()
			defer func() { <-slots }()
			defer closeGently(nc)
			if err := s.serveConn(ctx, nc); err != nil && !errors.Is(err, ErrServerClosed) {
				s.logger().Debug("jsonrpc: connection ended", slog.String("remote", nc.RemoteAddr().String()), slog.Any("error", err))
			}
		}()
	}
}

// serveConn serves one accepted connection.
func (s *Server) serveConn(ctx context.Context, nc net.Conn) error {
	cfg := s.config()
	cfg.idle = s.IdleTimeout
	// Reading is stopped with a read deadline rather than CloseRead, so
	// that closeGently can still read what the peer sent meanwhile.
	rw := struct{ net.Conn }{nc}
	c := newConn(cfg, ctx, rw, rw)
	if !s.track(c) {
		return ErrServerClosed
	}
	defer s.untrack(c)
	return c.serve(ctx)
}

// lingerTime bounds how long closeGently waits for the peer to close.
const lingerTime = 500 * time.Millisecond

// closeGently closes an accepted connection so that the answers written
// reach the peer: it ends the sending side, then reads and drops what
// the peer still sends until it closes too (or lingerTime passes), and
// only then closes. A socket closed with unread input is reset, and a
// reset destroys the answers the peer has not read yet: that happens when
// the server stops reading (Shutdown, IdleTimeout) while the peer still
// sends.
func closeGently(nc net.Conn) {
	defer nc.Close()
	cw, ok := nc.(interface{ CloseWrite() error })
	if !ok || cw.CloseWrite() != nil {
		return
	}
	if nc.SetReadDeadline(time.Now().Add(lingerTime)) != nil {
		return
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(nc, 1<<20))
}

// retryAccept reports whether an error from Accept may pass.
func retryAccept(err error) bool {
	if errors.Is(err, net.ErrClosed) {
		return false
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return true
	}
	for _, e := range []error{syscall.EMFILE, syscall.ENFILE, syscall.ECONNABORTED, syscall.ENOBUFS, syscall.ENOMEM, syscall.EINTR} {
		if errors.Is(err, e) {
			return true
		}
	}
	return false
}

func (s *Server) logger() *slog.Logger {
	if s.Logger == nil {
		return discardLogger
	}
	return s.Logger
}

// trackListener adds l to the listeners that Shutdown and Close close, and
// returns a channel closed by them.
func (s *Server) trackListener(l net.Listener) (<-chan struct{}, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, false
	}
	if s.listeners == nil {
		s.listeners = make(map[net.Listener]struct{})
	}
	if s.closing == nil {
		s.closing = make(chan struct{})
	}
	s.listeners[l] = struct{}{}
	return s.closing, true
}

func (s *Server) untrackListener(l net.Listener) {
	s.mu.Lock()
	delete(s.listeners, l)
	s.mu.Unlock()
}

// Dial connects to address on the named network, as [net.Dialer]
// DialContext does ("tcp", "unix", ...), and returns a [Conn] on the
// connection, set up by opts (which may be nil). ctx bounds the dial only.
// The network connection is closed when the Conn ends.
func Dial(ctx context.Context, network, address string, opts *Options) (*Conn, error) {
	nc, err := new(net.Dialer).DialContext(ctx, network, address)
	if err != nil {
		return nil, err
	}
	return NewConn(nc, nc, opts), nil
}
