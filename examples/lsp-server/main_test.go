package main

import (
	"context"
	"errors"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/ndjsonrpc/jsonrpc"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestHoverEditorNeverAnswersConfiguration: an editor that takes
// workspace/configuration and never answers it gets its hover, with the
// default greeting, once configTimeout has passed, and the call is
// cancelled with $/cancelRequest.
func TestHoverEditorNeverAnswersConfiguration(t *testing.T) {
	old := configTimeout
	configTimeout = 200 * time.Millisecond
	t.Cleanup(func() { configTimeout = old })

	a, b := net.Pipe()
	s := &server{docs: make(map[string]document)}
	server := jsonrpc.NewConn(a, a, new(s.options(func() {})))
	defer server.Close()

	cancelled := make(chan struct{})
	mux := new(jsonrpc.Mux)
	mux.HandleFunc("workspace/configuration", func(ctx context.Context, req *jsonrpc.Request) (any, error) {
		<-ctx.Done() // never answers; ends when the server cancels
		var ce *jsonrpc.CancelError
		if errors.As(context.Cause(ctx), &ce) { // the server's cancel, not the end of the connection
			close(cancelled)
		}
		return nil, ctx.Err()
	})
	editor := jsonrpc.NewConn(b, b, &jsonrpc.Options{Handler: mux, Framing: jsonrpc.HeaderFraming{}})
	defer editor.Close()

	// Without the timeout the hover would wait for ever: bound it well
	// past configTimeout.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	caps := map[string]any{"capabilities": map[string]any{"workspace": map[string]any{"configuration": true}}}
	require.NoError(t, editor.Call(ctx, "initialize", caps, nil))
	doc := map[string]any{"textDocument": map[string]any{"uri": "file:///a.txt", "version": 1, "text": "first line\nsecond"}}
	require.NoError(t, editor.Notify(ctx, "textDocument/didOpen", doc))

	var hover struct {
		Contents struct {
			Value string `json:"value"`
		} `json:"contents"`
	}
	at := map[string]any{"textDocument": map[string]any{"uri": "file:///a.txt"}, "position": map[string]int{"line": 1, "character": 0}}
	require.NoError(t, editor.Call(ctx, "textDocument/hover", at, &hover))
	assert.Equal(t, "Hello from file:///a.txt:2:1\nsecond", hover.Contents.Value)

	select {
	case <-cancelled:
	case <-time.After(5 * time.Second):
		t.Fatal("workspace/configuration was not cancelled with $/cancelRequest")
	}
}

// newEditor serves a new server over a pipe, as the process does, and
// returns it with an editor's end of the pipe; both close with the test.
func newEditor(t *testing.T) (*server, *jsonrpc.Conn) {
	a, b := net.Pipe()
	s := &server{docs: make(map[string]document)}
	server := jsonrpc.NewConn(a, a, new(s.options(func() {})))
	editor := jsonrpc.NewConn(b, b, &jsonrpc.Options{Framing: jsonrpc.HeaderFraming{}})
	t.Cleanup(func() {
		_ = editor.Close()
		_ = server.Close()
	})
	return s, editor
}

// TestBeforeInitialize: LSP's lifecycle before initialize. A request gets
// ServerNotInitialized (-32002), a notification is dropped (the document
// it opens is not open once initialize has come), and initialize then
// works.
func TestBeforeInitialize(t *testing.T) {
	s, editor := newEditor(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	doc := map[string]any{"textDocument": map[string]any{"uri": "file:///a.txt", "version": 1, "text": "text"}}
	require.NoError(t, editor.Notify(ctx, "textDocument/didOpen", doc))
	at := map[string]any{"textDocument": map[string]any{"uri": "file:///a.txt"}, "position": map[string]int{"line": 0, "character": 0}}
	err := editor.Call(ctx, "textDocument/hover", at, nil)
	var werr *jsonrpc.Error
	require.ErrorAs(t, err, &werr)
	assert.Equal(t, codeServerNotInitialized, werr.Code)

	require.NoError(t, editor.Call(ctx, "initialize", map[string]any{"capabilities": map[string]any{}}, nil))
	s.mu.Lock()
	_, open := s.docs["file:///a.txt"]
	s.mu.Unlock()
	assert.False(t, open, "a didOpen before initialize opened its document")
}

// TestEscapedDocumentFits: a document of maxDocument bytes opens whatever
// its characters, though JSON escapes a control character as six bytes
// (\u001b), so its didOpen is six times its size.
func TestEscapedDocumentFits(t *testing.T) {
	s, editor := newEditor(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	require.NoError(t, editor.Call(ctx, "initialize", map[string]any{"capabilities": map[string]any{}}, nil))
	text := strings.Repeat("\x1b", maxDocument)
	doc := map[string]any{"textDocument": map[string]any{"uri": "file:///a", "version": 1, "text": text}}
	require.NoError(t, editor.Notify(ctx, "textDocument/didOpen", doc))
	at := map[string]any{"textDocument": map[string]any{"uri": "file:///a"}, "position": map[string]int{"line": 0, "character": 0}}
	require.NoError(t, editor.Call(ctx, "textDocument/hover", at, nil)) // the didOpen has been handled
	s.mu.Lock()
	got := s.docs["file:///a"].text
	s.mu.Unlock()
	assert.Equal(t, len(text), len(got), "a document of maxDocument control characters was not opened")
}

// TestProgressAnnounced: executeCommand reports $/progress on its
// workDoneToken, so the server says so in its capabilities, as LSP asks
// ("a server needs to signal general work done progress reporting
// support in the corresponding server capability").
func TestProgressAnnounced(t *testing.T) {
	s := &server{docs: make(map[string]document)}
	res, err := s.initialize(t.Context(), initializeParams{})
	require.NoError(t, err)
	caps := res.(map[string]any)["capabilities"].(map[string]any)
	assert.Equal(t, true, caps["executeCommandProvider"].(map[string]any)["workDoneProgress"])
}
