// Command websocket serves JSON-RPC 2.0 over WebSocket with package
// jsonrpc, which itself has no WebSocket code and no dependency: this
// example brings github.com/coder/websocket, in a module of its own, and a
// browser page that talks to the server.
//
// It serves the page at / and the JSON-RPC endpoint at /rpc, where each
// WebSocket message is one JSON-RPC message: a request, a notification, a
// response or a batch. That is what a browser does naturally
// (ws.send(JSON.stringify(msg)) and JSON.parse(event.data)), and what
// other JSON-RPC servers over WebSocket expect. The mapping is a small
// jsonrpc.Transport, transport in transport.go, which reads and writes
// whole messages, unchanged, and which Server.ServeTransport serves. So
// the library's limits and answers to broken input apply as on any
// stream: a message over MaxMessageSize is dropped as it arrives and
// answered with -32600, and the connection goes on; a message that is not
// JSON gets -32700. A message may span lines, as JSON.stringify(msg, null,
// 2) makes it.
//
// The library could also run on websocket.NetConn, which turns a
// connection into a net.Conn, but a net.Conn is a byte stream: every
// Write becomes a message, whatever it holds, and the messages read run
// together. A browser would have to end each message with "\n", never put
// one inside, and split what it receives at each "\n".
//
// Both sides call: the page calls the server's methods, and "hello" calls
// the page back (its method "whoami") with jsonrpc.Call, on the same
// connection, before answering. The methods are:
//
//	add       [a, b] -> a + b
//	echo      any params -> the same params, byte for byte
//	hello     {} -> "hello, " + what the caller's "whoami" answers
//	count     {"n": n} -> the items 1..n as $/stream notifications, then n
//	note      notification {"text": t}: remembers t for this connection
//	notes     {} -> the texts noted on this connection, oldest first
//
// A connection keeps at most 100 notes and 128 KiB of text, dropping the
// oldest to make room (maxNotes, maxNotesSize), and a note of more than
// 16 KiB (maxNoteSize) is not kept at all: the server logs it at Warn, and
// answers it with -32602 if it came as a call, since a notification gets
// no answer. A message is at most 1 MiB (maxMessageSize), and the answer
// to notes fits in one even if every byte of the notes is written \u00XX.
//
// The server serves at most 256 WebSocket connections at once (maxConns),
// and refuses more with HTTP 503. Each connection reads a message into a
// buffer of its own, which grows to 64 KiB (maxIdleBuffer) freely; past
// that, the connections share 64 MiB (maxReadMemory) for the messages
// they are reading, and a message that finds no room left is dropped as
// it arrives and answered with -32600, as one over maxMessageSize is. So
// the messages being read hold at most 80 MiB, besides what package
// jsonrpc holds within its MaxMemory. A connection runs at most 4
// handlers at once (maxInFlight): an answer waits with its handler for
// room in the output, so a client that stops reading holds at most 4 of
// them (3 MiB of notes written \u00XX), not the library's default 64.
//
// "add" refuses with -32602 a sum that does not fit in an int.
//
// Usage:
//
//	go run . [-addr 127.0.0.1:8080]
//
// then open http://127.0.0.1:8080/ in a browser. The page runs its calls
// and shows each answer; browser-check.sh does the same in headless
// Chromium and checks the answers. The server stops on SIGINT or SIGTERM,
// letting the calls in flight finish.
package main

import (
	"context"
	"embed"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"iter"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"slices"
	"sync"
	"syscall"
	"time"

	"github.com/coder/websocket"

	"github.com/ndjsonrpc/jsonrpc"
)

//go:embed page
var pageFiles embed.FS

// maxMessageSize is the largest message the server reads, in bytes. The
// WebSocket library's own limit is off (see newTransport): the transport
// drops a longer message as it arrives, without holding it whole, and the
// server answers it.
const maxMessageSize = 1 << 20

// maxInFlight is the most handlers a connection runs at once.
const maxInFlight = 4

// maxConns is the most WebSocket connections served at once, and
// maxReadMemory the bytes their read buffers share past maxIdleBuffer.
const (
	maxConns      = 256
	maxReadMemory = 64 << 20
)

// What a connection keeps of its notes is bounded in bytes and in count,
// however many the peer sends: at most maxNotes notes and maxNotesSize
// bytes of text, the oldest dropped first, and no note of more than
// maxNoteSize bytes. The answer to notes then fits in one message of
// maxMessageSize even if each byte is escaped as \u00XX, six bytes.
const (
	maxNotes     = 100
	maxNoteSize  = 16 << 10
	maxNotesSize = 128 << 10
)

// session is what the server keeps for one connection.
type session struct {
	remote string // the peer's address, for the log

	mu    sync.Mutex
	notes []string // the most recent notes, oldest first
	size  int      // the bytes of text in notes
}

// note keeps text, dropping the oldest notes to stay within maxNotes and
// maxNotesSize. text is at most maxNoteSize bytes.
func (s *session) note(text string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.notes = append(s.notes, text)
	s.size += len(text)
	drop := 0
	for len(s.notes)-drop > maxNotes || s.size > maxNotesSize {
		s.size -= len(s.notes[drop])
		drop++
	}
	// Delete clears the slots it frees, so the dropped texts can be
	// collected.
	s.notes = slices.Delete(s.notes, 0, drop)
}

type sessionKey struct{}

// sessionFrom returns the session of the connection that ctx serves.
func sessionFrom(ctx context.Context) *session {
	return ctx.Value(sessionKey{}).(*session)
}

// newMux returns the methods the example serves, which log to logger.
func newMux(logger *slog.Logger) *jsonrpc.Mux {
	mux := new(jsonrpc.Mux)
	mux.Handle("add", jsonrpc.Func(func(ctx context.Context, p [2]int) (int, error) {
		sum := p[0] + p[1]
		if p[1] > 0 && sum < p[0] || p[1] < 0 && sum > p[0] {
			return 0, jsonrpc.Errorf(jsonrpc.CodeInvalidParams, "%d + %d overflows", p[0], p[1])
		}
		return sum, nil
	}))
	mux.HandleFunc("echo", func(ctx context.Context, req *jsonrpc.Request) (any, error) {
		return req.Params, nil
	})
	mux.Handle("hello", jsonrpc.Func(func(ctx context.Context, _ struct{}) (string, error) {
		// A page that never answers must not keep the handler: its
		// goroutine counts against the connection's budget until then.
		ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		var name string
		if err := jsonrpc.Peer(ctx).Call(ctx, "whoami", nil, &name); err != nil {
			return "", fmt.Errorf("asking the caller who it is: %w", err)
		}
		return "hello, " + name, nil
	}))
	mux.Handle("count", jsonrpc.Stream(func(ctx context.Context, p struct {
		N int `json:"n"`
	}) iter.Seq2[int, error] {
		return func(yield func(int, error) bool) {
			if p.N < 0 || p.N > 1000 {
				yield(0, jsonrpc.Errorf(jsonrpc.CodeInvalidParams, "n is %d, not between 0 and 1000", p.N))
				return
			}
			for i := 1; i <= p.N; i++ {
				if !yield(i, nil) {
					return
				}
			}
		}
	}))
	mux.Handle("note", jsonrpc.Func(func(ctx context.Context, p struct {
		Text string `json:"text"`
	}) (any, error) {
		s := sessionFrom(ctx)
		if len(p.Text) > maxNoteSize {
			logger.Warn("note not kept", "remote", s.remote, "bytes", len(p.Text), "limit", maxNoteSize)
			return nil, jsonrpc.Errorf(jsonrpc.CodeInvalidParams, "note is %d bytes, over %d", len(p.Text), maxNoteSize)
		}
		s.note(p.Text)
		return nil, nil
	}))
	mux.Handle("notes", jsonrpc.Func(func(ctx context.Context, _ struct{}) ([]string, error) {
		s := sessionFrom(ctx)
		s.mu.Lock()
		defer s.mu.Unlock()
		return append([]string{}, s.notes...), nil
	}))
	return mux
}

// newRPCServer returns the server that serves every WebSocket connection.
func newRPCServer(logger *slog.Logger) *jsonrpc.Server {
	return &jsonrpc.Server{
		Options: jsonrpc.Options{
			Handler:         newMux(logger),
			Logger:          logger,
			MaxMessageSize:  maxMessageSize,
			MaxInFlight:     maxInFlight,
			HideErrorDetail: true,
		},
	}
}

// newHandler returns the HTTP handler of the example: the page at / and
// JSON-RPC over WebSocket at /rpc, served by rpc, on at most maxConns
// connections at once, whose read buffers share maxReadMemory.
func newHandler(rpc *jsonrpc.Server, logger *slog.Logger) http.Handler {
	page, err := fs.Sub(pageFiles, "page")
	if err != nil {
		panic(err)
	}
	conns := make(chan struct{}, maxConns)
	mem := newBudget(maxReadMemory)
	mux := http.NewServeMux()
	mux.Handle("GET /", http.FileServerFS(page))
	mux.HandleFunc("GET /rpc", func(w http.ResponseWriter, r *http.Request) {
		select {
		case conns <- struct{}{}:
			defer func() { <-conns }()
		default:
			http.Error(w, "too many connections", http.StatusServiceUnavailable)
			return
		}
		// Accept refuses a request whose Origin is not the page's own
		// host, so that another site's page cannot call the server with
		// its visitors' browsers; AcceptOptions.OriginPatterns lets more
		// origins in.
		c, err := websocket.Accept(w, r, nil)
		if err != nil {
			logger.Debug("websocket accept", "remote", r.RemoteAddr, "err", err)
			return
		}
		t := newTransport(context.WithValue(r.Context(), sessionKey{}, &session{remote: r.RemoteAddr}), c, maxMessageSize, mem)
		// At the end of its input ServeTransport waits for the handlers
		// in flight, however long they take. Here the end of the input
		// means that the peer has gone, so it runs under the
		// transport's context, which ends with reading, and the
		// handlers' contexts end too. It closes the connection when it
		// returns.
		err = rpc.ServeTransport(t.Context(), t)
		if err != nil && !errors.Is(err, context.Canceled) && !errors.Is(err, jsonrpc.ErrServerClosed) {
			logger.Debug("connection ended", "remote", r.RemoteAddr, "err", err)
		}
	})
	return mux
}

func main() {
	addr := flag.String("addr", "127.0.0.1:8080", "`address` to listen on")
	flag.Parse()
	logger := slog.New(slog.NewTextHandler(os.Stderr, nil))

	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		logger.Error("listen", "err", err)
		os.Exit(1)
	}
	rpc := newRPCServer(logger)
	hs := &http.Server{Handler: newHandler(rpc, logger), ReadHeaderTimeout: 10 * time.Second}
	logger.Info("serving", "url", "http://"+ln.Addr().String()+"/")

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	served := make(chan error, 1)
	go func() { served <- hs.Serve(ln) }()
	select {
	case err := <-served:
		logger.Error("serve", "err", err)
		os.Exit(1)
	case <-ctx.Done():
	}

	// http.Server.Shutdown stops accepting and waits for plain requests,
	// but not for the WebSocket connections, which it no longer tracks:
	// the jsonrpc server stops those, letting their calls finish.
	shutdownCtx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := hs.Shutdown(shutdownCtx); err != nil {
		logger.Error("http shutdown", "err", err)
	}
	if err := rpc.Shutdown(shutdownCtx); err != nil {
		logger.Error("jsonrpc shutdown", "err", err)
		rpc.Close()
	}
	logger.Info("stopped")
}
