package interop

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestMCPOverHTTP builds examples/mcp-server and serves it with -http on a
// loopback port. First it checks, with plain HTTP requests, the rules of
// MCP's Streamable HTTP transport that a well-behaved client never
// provokes: 405 for GET and DELETE, 403 for a foreign Origin, 400 for an
// unknown MCP-Protocol-Version. Then the MCP TypeScript SDK's
// StreamableHTTPClientTransport drives it (node/mcp_http_client.mjs, which
// exits non-zero if any of its checks fails). Last, the server must have
// cancelled the call that the client dropped by closing, and exit 0 on
// SIGTERM. The server's standard error is in every failure message.
func TestMCPOverHTTP(t *testing.T) {
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("node is not on PATH")
	}
	installNodeModules(t)
	srv := startHTTPExample(t, buildExample(t, t.TempDir(), "mcp-server"), "/mcp")

	t.Run("headers", func(t *testing.T) {
		for _, tc := range []struct {
			name    string
			method  string
			path    string
			header  map[string]string
			body    string
			status  int
			check   func(t *testing.T, h http.Header, body []byte)
			comment string
		}{{
			name: "GET", method: http.MethodGet, status: http.StatusMethodNotAllowed,
			comment: "no standalone event stream",
			check: func(t *testing.T, h http.Header, _ []byte) {
				assert.Equal(t, "POST", h.Get("Allow"))
			},
		}, {
			name: "DELETE", method: http.MethodDelete, status: http.StatusMethodNotAllowed,
			comment: "no session to end",
		}, {
			name: "foreign Origin", header: map[string]string{"Origin": "http://rebound.example:8080"},
			body: `{"jsonrpc":"2.0","id":1,"method":"ping"}`, status: http.StatusForbidden,
			check: func(t *testing.T, h http.Header, body []byte) {
				assert.Equal(t, "application/json", h.Get("Content-Type"))
				var msg struct {
					ID    *json.RawMessage `json:"id"`
					Error struct{ Code int }
				}
				require.NoError(t, json.Unmarshal(body, &msg), "%s", body)
				assert.Nil(t, msg.ID, "the error response has no id")
				assert.Equal(t, -32600, msg.Error.Code)
			},
		}, {
			name: "null Origin", header: map[string]string{"Origin": "null"},
			body: `{"jsonrpc":"2.0","id":1,"method":"ping"}`, status: http.StatusForbidden,
		}, {
			name: "loopback Origin", header: map[string]string{"Origin": "http://localhost:6274"},
			body: `{"jsonrpc":"2.0","id":1,"method":"ping"}`, status: http.StatusOK,
		}, {
			name: "unknown protocol version", header: map[string]string{"MCP-Protocol-Version": "1900-01-01"},
			body: `{"jsonrpc":"2.0","id":1,"method":"ping"}`, status: http.StatusBadRequest,
		}, {
			name: "older protocol version", header: map[string]string{"MCP-Protocol-Version": "2025-03-26"},
			body: `{"jsonrpc":"2.0","id":1,"method":"ping"}`, status: http.StatusOK,
		}, {
			name: "notification", body: `{"jsonrpc":"2.0","method":"notifications/initialized"}`,
			status: http.StatusAccepted,
			check: func(t *testing.T, _ http.Header, body []byte) {
				assert.Empty(t, body)
			},
		}, {
			name: "JSON only: no progress", header: map[string]string{"Accept": "application/json"},
			body:   `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"count","arguments":{"n":2},"_meta":{"progressToken":1}}}`,
			status: http.StatusOK,
			check: func(t *testing.T, h http.Header, body []byte) {
				assert.Equal(t, "application/json", h.Get("Content-Type"))
				assert.JSONEq(t, `{"jsonrpc":"2.0","id":7,"result":{"content":[{"type":"text","text":"counted to 2"}]}}`, string(body))
			},
		}, {
			name: "another path", path: "/", body: `{"jsonrpc":"2.0","id":1,"method":"ping"}`,
			status: http.StatusNotFound,
		}} {
			t.Run(tc.name, func(t *testing.T) {
				method := tc.method
				if method == "" {
					method = http.MethodPost
				}
				u := srv.url
				if tc.path != "" {
					u = strings.TrimSuffix(u, "/mcp") + tc.path
				}
				req, err := http.NewRequestWithContext(t.Context(), method, u, strings.NewReader(tc.body))
				require.NoError(t, err)
				req.Header.Set("Content-Type", "application/json")
				req.Header.Set("Accept", "application/json, text/event-stream")
				for k, v := range tc.header {
					req.Header.Set(k, v)
				}
				resp, err := http.DefaultClient.Do(req)
				require.NoError(t, err)
				defer resp.Body.Close()
				body, err := io.ReadAll(resp.Body)
				require.NoError(t, err)
				require.Equalf(t, tc.status, resp.StatusCode, "%s %s: %s", method, tc.comment, body)
				if tc.check != nil {
					tc.check(t, resp.Header, body)
				}
			})
		}
	})

	t.Run("sdk", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, node, "mcp_http_client.mjs", srv.url)
		cmd.Dir = nodeDir
		cmd.WaitDelay = 5 * time.Second
		out, err := cmd.CombinedOutput()
		require.NoErrorf(t, err, "node mcp_http_client.mjs:\n%s\nserver:\n%s", out, srv.stderr)
		require.Containsf(t, string(out), "\n# fail 0\n", "%s", out)
	})

	t.Run("close", func(t *testing.T) {
		// The SDK's last check closes the client with count n=1000 running.
		require.Eventuallyf(t, func() bool {
			return strings.Contains(srv.stderr.String(), `msg="count cancelled" step=`)
		}, 5*time.Second, 10*time.Millisecond, "the dropped call was not cancelled:\n%s", srv.stderr)
		require.NoError(t, srv.cmd.Process.Signal(syscall.SIGTERM))
		select {
		case <-srv.exited:
		case <-time.After(10 * time.Second):
			t.Fatalf("the server did not exit on SIGTERM:\n%s", srv.stderr)
		}
		require.NoErrorf(t, srv.err, "the server's exit:\n%s", srv.stderr)
		assert.NotContains(t, srv.stderr.String(), "level=ERROR")
	})
}

// httpExample is an example (mcp-server, openrpc) serving HTTP: the
// endpoint it printed, its standard error so far, and once exited is
// closed, how it ended.
type httpExample struct {
	cmd    *exec.Cmd
	url    string
	stderr *syncBuffer
	exited chan struct{}
	err    error
}

// startHTTPExample starts exe -http on a free loopback port and waits for
// the URL it prints, which must end with path. The process is killed at
// the end of the test if it still runs.
func startHTTPExample(t *testing.T, exe, path string) *httpExample {
	t.Helper()
	srv := &httpExample{stderr: new(syncBuffer), exited: make(chan struct{})}
	srv.cmd = exec.Command(exe, "-http", "127.0.0.1:0")
	srv.cmd.Stderr = srv.stderr
	stdout, err := srv.cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, srv.cmd.Start())
	line := make(chan string, 1)
	go func() {
		s := bufio.NewScanner(stdout)
		s.Scan()
		line <- s.Text()
		_, _ = io.Copy(io.Discard, stdout)
		srv.err = srv.cmd.Wait()
		close(srv.exited)
	}()
	t.Cleanup(func() {
		_ = srv.cmd.Process.Kill()
		<-srv.exited
	})
	select {
	case srv.url = <-line:
	case <-time.After(10 * time.Second):
		t.Fatalf("no URL from %s -http:\n%s", exe, srv.stderr)
	}
	require.Truef(t, strings.HasPrefix(srv.url, "http://127.0.0.1:") && strings.HasSuffix(srv.url, path),
		"%s printed %q, not its endpoint:\n%s", exe, srv.url, srv.stderr)
	return srv
}

// syncBuffer is a bytes.Buffer that a process may write while the test
// reads it.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
