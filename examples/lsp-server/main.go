// Command lsp-server is a small Language Server Protocol server on its
// standard input and output, with LSP's Content-Length framing, built on
// package jsonrpc alone.
//
// It keeps the documents the editor opens, with incremental sync: the
// editor sends a document's text with textDocument/didOpen, then only the
// edits with textDocument/didChange, and textDocument/didClose when it is
// done with it. A change with a range replaces that range, one without
// replaces the whole text, and the changes of one didChange apply in
// order. Positions count lines from 0 (a line ends at "\n", "\r\n" or
// "\r") and characters in UTF-16 code units, as LSP does by default. A
// position past the end of its line means the end of the line, and one
// past the last line the end of the text; a change to a document that is
// not open is logged and ignored.
//
// It answers initialize, textDocument/hover and workspace/executeCommand.
// A hover shows, as plain text, a greeting and, on the line after it, the
// whole line of the document under the position. The greeting is the
// "greeting" in the "example" section of the editor's settings, which the
// server asks for with workspace/configuration, a call from the server to
// the editor on the same connection. A hover on a document that is not
// open, or below its last line, gets a null result, as LSP allows. An
// editor that has not answered workspace/configuration within 5 s has
// that call cancelled, and the hover shows the default greeting. The
// command "example.count" counts to n (default 50), 20 ms a step, reports
// work done progress on $/progress when the editor gives a workDoneToken,
// and stops when the editor sends $/cancelRequest, which is answered with
// -32800. Cancelling a hover cancels its call to the editor too.
//
// The server relies on the order in which package jsonrpc handles what
// the editor sends: notifications one at a time, in the order they come,
// and a request only once the notifications before it have been handled.
// So a hover sees exactly the edits sent before it. A hover reads its
// line before it calls the editor, since edits sent after the hover may
// be handled while it waits.
//
// It follows LSP's lifecycle: before initialize, a request gets
// ServerNotInitialized (-32002) and a notification other than exit is
// dropped; after shutdown every request is refused; and
// the exit notification (or the end of the input) ends the server, with
// status 0 if shutdown came first and 1 if not. Logs go to standard error.
//
// Build it, and point an editor's LSP client, one that starts its server
// as a child process, at the binary:
//
//	go build -o lsp-server ./examples/lsp-server
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ndjsonrpc/jsonrpc"
)

var logger = slog.New(slog.NewTextHandler(os.Stderr, nil))

// A server holds the state of the one session on standard input and output.
type server struct {
	configuration atomic.Bool // the editor answers workspace/configuration
	initialized   atomic.Bool // initialize has been answered
	shutdown      atomic.Bool // shutdown has come

	// mu guards docs, the open documents by URI. The order of edits and
	// hovers comes from package jsonrpc; mu is there because hovers run
	// side by side, with each other and with the edits that come after
	// them.
	mu   sync.Mutex
	docs map[string]document
	held int // the bytes of the URIs and texts in docs, at most maxHeld
}

type initializeParams struct {
	Capabilities struct {
		Workspace struct {
			Configuration bool `json:"configuration"`
		} `json:"workspace"`
	} `json:"capabilities"`
}

func (s *server) initialize(ctx context.Context, p initializeParams) (any, error) {
	s.configuration.Store(p.Capabilities.Workspace.Configuration)
	return map[string]any{
		"capabilities": map[string]any{
			"textDocumentSync":       map[string]any{"openClose": true, "change": 2}, // incremental
			"hoverProvider":          true,
			"executeCommandProvider": map[string]any{"commands": []string{"example.count"}, "workDoneProgress": true}, // it reports $/progress
		},
		"serverInfo": map[string]string{"name": "jsonrpc-example", "version": "1.0.0"},
	}, nil
}

// textDocument is what the notifications and the hover say of their
// document: its URI always, its version and text as the method has them.
type textDocument struct {
	URI     string `json:"uri"`
	Version int    `json:"version"`
	Text    string `json:"text"`
}

type documentParams struct {
	TextDocument   textDocument    `json:"textDocument"`
	ContentChanges []contentChange `json:"contentChanges"` // didChange's
}

func (s *server) didOpen(ctx context.Context, p documentParams) (any, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.drop(p.TextDocument.URI) // opened again: the new text replaces it
	if len(p.TextDocument.Text) > maxDocument {
		logger.Warn("didOpen of a document too large to serve", "uri", p.TextDocument.URI, "bytes", len(p.TextDocument.Text))
		return nil, nil
	}
	if s.held+len(p.TextDocument.URI)+len(p.TextDocument.Text) > maxHeld {
		logger.Warn("didOpen past the bytes the server holds: the document is not served", "uri", p.TextDocument.URI, "bytes", len(p.TextDocument.Text))
		return nil, nil
	}
	s.docs[p.TextDocument.URI] = document{text: p.TextDocument.Text, version: p.TextDocument.Version}
	s.held += len(p.TextDocument.URI) + len(p.TextDocument.Text)
	return nil, nil
}

// drop forgets the document at uri, if open; s.mu must be held.
func (s *server) drop(uri string) {
	if doc, ok := s.docs[uri]; ok {
		s.held -= len(uri) + len(doc.text)
		delete(s.docs, uri)
	}
}

func (s *server) didChange(ctx context.Context, p documentParams) (any, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	doc, ok := s.docs[p.TextDocument.URI]
	if !ok {
		logger.Warn("didChange to a document that is not open", "uri", p.TextDocument.URI)
		return nil, nil
	}
	text, ok := applyAll(doc.text, p.ContentChanges)
	if ok && s.held-len(doc.text)+len(text) > maxHeld {
		ok = false
	}
	if !ok {
		logger.Warn("didChange too costly to apply: the document is dropped until it is opened again",
			"uri", p.TextDocument.URI, "changes", len(p.ContentChanges))
		s.drop(p.TextDocument.URI)
		return nil, nil
	}
	s.held += len(text) - len(doc.text)
	doc.text, doc.version = text, p.TextDocument.Version
	s.docs[p.TextDocument.URI] = doc
	return nil, nil
}

func (s *server) didClose(ctx context.Context, p documentParams) (any, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.drop(p.TextDocument.URI)
	return nil, nil
}

// maxQuote bounds the bytes of the line under the cursor that a hover
// quotes, so that its answer is bounded whatever the line.
const maxQuote = 16 << 10

type hoverParams struct {
	TextDocument textDocument `json:"textDocument"`
	Position     position     `json:"position"`
}

// configTimeout bounds a hover's wait for the editor's answer to
// workspace/configuration: an editor that never answers gets its hover,
// with the default greeting, rather than a handler held for ever.
var configTimeout = 5 * time.Second

type settings struct {
	Greeting string `json:"greeting"`
}

func (s *server) hover(ctx context.Context, p hoverParams) (any, error) {
	// The line, first: edits sent after the hover may come while the
	// editor answers workspace/configuration below.
	s.mu.Lock()
	doc, ok := s.docs[p.TextDocument.URI]
	s.mu.Unlock()
	if !ok {
		return nil, nil // not open
	}
	start, end, ok := line(doc.text, p.Position.Line)
	if !ok {
		return nil, nil // below the last line
	}
	under := quote(doc.text[start:end], maxQuote)

	greeting := "Hello"
	if s.configuration.Load() {
		var cfg []settings // one per item asked for
		items := []map[string]string{{"scopeUri": p.TextDocument.URI, "section": "example"}}
		callCtx, cancel := context.WithTimeout(ctx, configTimeout)
		err := jsonrpc.Peer(ctx).Call(callCtx, "workspace/configuration", map[string]any{"items": items}, &cfg)
		cancel()
		switch {
		case ctx.Err() != nil:
			return nil, ctx.Err() // the hover was cancelled, and so was the call
		case err != nil:
			// Not the editor's error as the hover's: keep the default.
			logger.Warn("workspace/configuration", "err", err)
		case len(cfg) == 1 && cfg[0].Greeting != "":
			greeting = cfg[0].Greeting
		}
	}
	text := fmt.Sprintf("%s from %s:%d:%d\n%s", greeting, p.TextDocument.URI, p.Position.Line+1, p.Position.Character+1, under)
	return map[string]any{"contents": map[string]string{"kind": "plaintext", "value": text}}, nil
}

type commandParams struct {
	Command       string          `json:"command"`
	Arguments     []int           `json:"arguments"`
	WorkDoneToken json.RawMessage `json:"workDoneToken"` // a string or a number
}

func (s *server) executeCommand(ctx context.Context, p commandParams) (int, error) {
	if p.Command != "example.count" {
		return 0, jsonrpc.Errorf(jsonrpc.CodeInvalidParams, "unknown command %q", p.Command)
	}
	n := 50
	if len(p.Arguments) > 0 {
		n = p.Arguments[0]
	}
	if n < 0 || n > 1000 {
		return 0, jsonrpc.Errorf(jsonrpc.CodeInvalidParams, "example.count: n is %d, not between 0 and 1000", n)
	}
	progress := func(value map[string]any) error {
		if p.WorkDoneToken == nil {
			return nil
		}
		return jsonrpc.Peer(ctx).Notify(ctx, "$/progress", map[string]any{"token": p.WorkDoneToken, "value": value})
	}
	if err := progress(map[string]any{"kind": "begin", "title": "Counting", "cancellable": true}); err != nil {
		return 0, err
	}
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for i := 1; i <= n; i++ {
		select {
		case <-ctx.Done():
			logger.Info("count cancelled", "step", i, "of", n)
			return 0, ctx.Err() // answered with -32800
		case <-tick.C:
		}
		if err := progress(map[string]any{"kind": "report", "message": fmt.Sprintf("%d/%d", i, n), "percentage": 100 * i / n}); err != nil {
			return 0, err
		}
	}
	return n, progress(map[string]any{"kind": "end"})
}

// codeServerNotInitialized is LSP's ServerNotInitialized.
const codeServerNotInitialized jsonrpc.Code = -32002

// gate keeps LSP's lifecycle: before initialize has been answered, a
// request gets ServerNotInitialized and a notification is dropped (but
// exit); after shutdown, every request is refused.
func (s *server) gate(h jsonrpc.Handler) jsonrpc.Handler {
	return jsonrpc.HandlerFunc(func(ctx context.Context, req *jsonrpc.Request) (any, error) {
		switch {
		case req.Method == "exit":
		case s.shutdown.Load():
			return nil, jsonrpc.Errorf(jsonrpc.CodeInvalidRequest, "%s after shutdown", req.Method)
		case req.Method == "initialize":
			result, err := h.ServeJSONRPC(ctx, req)
			if err == nil {
				s.initialized.Store(true)
			}
			return result, err
		case !s.initialized.Load():
			if req.ID.IsZero() {
				return nil, nil // a notification: dropped
			}
			return nil, jsonrpc.Errorf(codeServerNotInitialized, "%s before initialize", req.Method)
		}
		return h.ServeJSONRPC(ctx, req)
	})
}

// The LSP methods this server serves, each with its types.
var (
	initializeMethod     = jsonrpc.NewMethod[initializeParams, any]("initialize")
	didOpenMethod        = jsonrpc.NewMethod[documentParams, any]("textDocument/didOpen")
	didChangeMethod      = jsonrpc.NewMethod[documentParams, any]("textDocument/didChange")
	didCloseMethod       = jsonrpc.NewMethod[documentParams, any]("textDocument/didClose")
	hoverMethod          = jsonrpc.NewMethod[hoverParams, any]("textDocument/hover")
	executeCommandMethod = jsonrpc.NewMethod[commandParams, int]("workspace/executeCommand")
)

func main() {
	ctx, exit := context.WithCancel(context.Background())
	s := &server{docs: make(map[string]document)}
	srv := &jsonrpc.Server{Options: s.options(exit)}
	if err := srv.Serve(ctx, os.Stdin, os.Stdout); err != nil && ctx.Err() == nil {
		logger.Error("serve", "err", err) // not stopped by exit
		os.Exit(1)
	}
	if !s.shutdown.Load() {
		os.Exit(1)
	}
}

// options are the server's: its methods, behind gate, and LSP's framing;
// exit is called for the exit notification.
func (s *server) options(exit func()) jsonrpc.Options {
	mux := new(jsonrpc.Mux)
	initializeMethod.Register(mux, s.initialize)
	mux.HandleFunc("initialized", func(context.Context, *jsonrpc.Request) (any, error) { return nil, nil })
	didOpenMethod.Register(mux, s.didOpen)
	didChangeMethod.Register(mux, s.didChange)
	didCloseMethod.Register(mux, s.didClose)
	hoverMethod.Register(mux, s.hover)
	executeCommandMethod.Register(mux, s.executeCommand)
	mux.HandleFunc("shutdown", func(context.Context, *jsonrpc.Request) (any, error) {
		s.shutdown.Store(true)
		return nil, nil
	})
	mux.HandleFunc("exit", func(context.Context, *jsonrpc.Request) (any, error) {
		exit() // Serve stops reading and returns
		return nil, nil
	})

	return jsonrpc.Options{
		Handler: s.gate(mux),
		Logger:  logger,
		Framing: jsonrpc.HeaderFraming{},
		// A message holds a document of maxDocument bytes, escaped as
		// JSON (a control character takes six bytes, \u001b), with
		// room to spare.
		MaxMessageSize: 6*maxDocument + 1<<20,
		// LSP sends no batches; the answer to one is built whole in
		// memory, so a peer's batch of hovers is kept small.
		MaxBatch: 16,
	}
}
