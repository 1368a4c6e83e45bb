package jsonrpc_test

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ndjsonrpc/jsonrpc"
)

// notRunLine is the answer to a request with id 'id' that arrives after
// Shutdown.
func notRunLine(id string) string {
	return `{"jsonrpc":"2.0","id":` + id + `,"error":{"code":-32091,"message":"Not run","data":{"reason":"stopping"}}}`
}

// pipeLines sends each line read from r on the channel it returns, which
// is closed at the end of r.
func pipeLines(r io.Reader) <-chan string {
	ch := make(chan string, 64)
	go func() {
		defer close(ch)
		sc := bufio.NewScanner(r)
		for sc.Scan() {
			ch <- sc.Text()
		}
	}()
	return ch
}

// TestServeShutdownAnswersNotRun: once Shutdown began on a stream, a
// request that arrives is answered at once with ErrNotRun (each request
// of a batch too; a notification is dropped), while the requests running
// finish with their results; then Serve and Shutdown return, and no
// request is left unanswered. Before, the late requests were never read.
func TestServeShutdownAnswersNotRun(t *testing.T) {
	checkLeaks(t)
	synctest.Test(t, func(t *testing.T) {
		started := make(chan string, 2)
		release := make(chan struct{})
		srv := &jsonrpc.Server{Options: jsonrpc.Options{Handler: blockMux(started, release)}}
		inR, inW := io.Pipe()
		outR, outW := io.Pipe()
		served := make(chan error, 1)
		go func() { served <- srv.Serve(context.Background(), inR, outW); _ = outW.Close() }()
		lines := pipeLines(outR)
		write := func(s string) {
			_, err := io.WriteString(inW, s+"\n")
			require.NoError(t, err)
		}
		write(`{"jsonrpc":"2.0","id":1,"method":"block","params":[1]}`)
		write(`{"jsonrpc":"2.0","id":2,"method":"block","params":[2]}`)
		<-started
		<-started

		shut := make(chan error, 1)
		go func() { shut <- srv.Shutdown(context.Background()) }()
		synctest.Wait()
		write(`{"jsonrpc":"2.0","id":3,"method":"sum","params":[1,2]}`)
		assert.JSONEq(t, notRunLine("3"), <-lines)
		write(`[{"jsonrpc":"2.0","id":4,"method":"sum","params":[1]},{"jsonrpc":"2.0","method":"sum","params":[1]},{"jsonrpc":"2.0","id":"5","method":"block"}]`)
		assert.JSONEq(t, "["+notRunLine("4")+","+notRunLine(`"5"`)+"]", <-lines)
		write(`{"jsonrpc":"2.0","method":"block","params":["note"]}`) // dropped
		synctest.Wait()
		assert.Empty(t, started, "nothing runs after Shutdown")
		assertNone(t, shut, "Shutdown, with handlers running")

		close(release)
		got := map[string]bool{<-lines: true, <-lines: true}
		assert.Equal(t, map[string]bool{
			`{"jsonrpc":"2.0","id":1,"result":"released"}`: true,
			`{"jsonrpc":"2.0","id":2,"result":"released"}`: true,
		}, got)
		assert.NoError(t, <-shut)
		assert.ErrorIs(t, <-served, jsonrpc.ErrServerClosed)
		_, more := <-lines
		assert.False(t, more, "nothing more is written")
		_ = inW.Close()
	})
}

// TestShutdownFloodCannotHoldConnection: a peer that keeps sending
// requests during Shutdown gets each answered ErrNotRun, and cannot keep
// the connection open once the work in flight is done.
func TestShutdownFloodCannotHoldConnection(t *testing.T) {
	checkLeaks(t)
	started := make(chan string, 1)
	release := make(chan struct{})
	srv := &jsonrpc.Server{Options: jsonrpc.Options{Handler: blockMux(started, release)}}
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	served := make(chan error, 1)
	go func() { served <- srv.Serve(context.Background(), inR, outW); _ = outW.Close() }()
	_, err := io.WriteString(inW, `{"jsonrpc":"2.0","id":0,"method":"block"}`+"\n")
	require.NoError(t, err)
	<-started
	shut := make(chan error, 1)
	go func() { shut <- srv.Shutdown(context.Background()) }()

	var flood sync.WaitGroup
	flood.Go(func() {
		for {
			if _, err := io.WriteString(inW, `{"jsonrpc":"2.0","id":1,"method":"sum","params":[1]}`+"\n"); err != nil {
				return // reading has stopped: the reader was closed
			}
		}
	})
	lines := pipeLines(outR)
	notRun, results := 0, 0
	for l := range lines {
		if notRun == 100 && release != nil {
			close(release)
			release = nil
		}
		switch {
		case l == notRunLine("1") || strings.Contains(l, `"code":-32091`):
			notRun++
		case notRun == 0 && l == `{"jsonrpc":"2.0","id":1,"result":1}`:
			// Read before Shutdown, on its goroutine, reached the
			// connection: it ran, as it should have.
		default:
			results++
			assert.JSONEq(t, `{"jsonrpc":"2.0","id":0,"result":"released"}`, l)
		}
	}
	assert.NoError(t, recv(t, shut, "Shutdown, while the peer floods"))
	assert.ErrorIs(t, <-served, jsonrpc.ErrServerClosed)
	flood.Wait()
	assert.Equal(t, 1, results)
	assert.GreaterOrEqual(t, notRun, 100)
}

// TestListenerShutdownAnswersNotRun: the same over sockets, with the
// calls made by Conns.
func TestListenerShutdownAnswersNotRun(t *testing.T) {
	checkLeaks(t)
	started := make(chan string, 4)
	release := make(chan struct{})
	srv := &jsonrpc.Server{Options: jsonrpc.Options{Handler: blockMux(started, release)}}
	addr, errc := listen(t, t.Context(), srv)
	var blocked []<-chan callResult
	var conns []*jsonrpc.Conn
	for range 2 {
		c, err := jsonrpc.Dial(t.Context(), "tcp", addr, nil)
		require.NoError(t, err)
		defer c.Close()
		conns = append(conns, c)
		blocked = append(blocked, goCall(t.Context(), c, "block", nil))
		recv(t, started, "a blocked call")
	}
	shut := make(chan error, 1)
	go func() { shut <- srv.Shutdown(t.Context()) }()
	// Shutdown runs on its own goroutine: until it reaches a connection,
	// a call there still runs. Once one is refused, each later one is.
	for _, c := range conns {
		require.Eventually(t, func() bool {
			return c.Call(t.Context(), "sum", []int{1, 2}, nil) != nil
		}, waitTimeout, time.Millisecond, "Shutdown has reached the connection")
	}
	// Until the blocked calls end, each new one is answered at once.
	for i := range 5 {
		c := conns[i%2]
		err := c.Call(t.Context(), "sum", []int{1, 2}, nil)
		require.ErrorIs(t, err, jsonrpc.ErrNotRun)
		assert.False(t, jsonrpc.MayHaveRun(err))
		calls := []*jsonrpc.BatchCall{{Method: "sum", Params: []int{1}}, {Method: "sum", Params: []int{2}}}
		require.NoError(t, c.Batch(t.Context(), calls...))
		for _, bc := range calls {
			assert.ErrorIs(t, bc.Err, jsonrpc.ErrNotRun)
		}
	}
	assertNone(t, shut, "Shutdown, with calls running")
	close(release)
	for _, ch := range blocked {
		r := recv(t, ch, "a blocked call's answer")
		require.NoError(t, r.err)
		assert.JSONEq(t, `"released"`, string(r.result))
	}
	require.NoError(t, recv(t, shut, "Shutdown"))
	assert.ErrorIs(t, recv(t, errc, "ServeListener"), jsonrpc.ErrServerClosed)
	for _, c := range conns {
		err := c.Call(t.Context(), "sum", []int{1}, nil)
		assert.ErrorIs(t, err, jsonrpc.ErrClosed, "the connection has ended")
		assert.False(t, jsonrpc.MayHaveRun(err), "nothing was sent")
	}
}

// TestHTTPShutdownAnswersNotRun: over HTTP, a request after Shutdown gets
// 503 with Retry-After and Connection: close, and a JSON body that
// answers each call with ErrNotRun; HTTPClient reports it as not run.
func TestHTTPShutdownAnswersNotRun(t *testing.T) {
	checkLeaks(t)
	started := make(chan string, 1)
	release := make(chan struct{})
	srv := &jsonrpc.Server{Options: jsonrpc.Options{Handler: blockMux(started, release)}}
	ts := httptest.NewServer(srv)
	defer ts.Close()
	hc := &jsonrpc.HTTPClient{URL: ts.URL, HTTP: ts.Client()}
	blocked := make(chan error, 1)
	var got string
	go func() { blocked <- hc.Call(t.Context(), "block", nil, &got) }()
	recv(t, started, "the blocked call")
	shut := make(chan error, 1)
	go func() { shut <- srv.Shutdown(t.Context()) }()
	require.Eventually(t, func() bool {
		return hc.Call(t.Context(), "sum", []int{1}, nil) != nil
	}, waitTimeout, time.Millisecond, "Shutdown has begun")

	err := hc.Call(t.Context(), "sum", []int{1}, nil)
	assert.ErrorIs(t, err, jsonrpc.ErrNotRun)
	var herr *jsonrpc.HTTPError
	if assert.ErrorAs(t, err, &herr) {
		assert.Equal(t, http.StatusServiceUnavailable, herr.StatusCode)
	}
	assert.False(t, jsonrpc.MayHaveRun(err))

	tests := []struct {
		name, body, accept, want string
	}{
		{"call", `{"jsonrpc":"2.0","id":7,"method":"sum","params":[1]}`, "", notRunLine("7")},
		{"batch", `[{"jsonrpc":"2.0","id":1,"method":"sum"},{"jsonrpc":"2.0","method":"sum"},{"jsonrpc":"2.0","id":"b","method":"sum"}]`,
			"application/json", "[" + notRunLine("1") + "," + notRunLine(`"b"`) + "]"},
		{"notification", `{"jsonrpc":"2.0","method":"sum"}`, "", ""},
		{"no JSON accepted", `{"jsonrpc":"2.0","id":7,"method":"sum"}`, "text/event-stream", ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, ts.URL, strings.NewReader(tc.body))
			require.NoError(t, err)
			req.Header.Set("Content-Type", "application/json")
			if tc.accept != "" {
				req.Header.Set("Accept", tc.accept)
			}
			resp, err := ts.Client().Do(req)
			require.NoError(t, err)
			body, err := io.ReadAll(resp.Body)
			_ = resp.Body.Close()
			require.NoError(t, err)
			assert.Equal(t, http.StatusServiceUnavailable, resp.StatusCode)
			assert.Equal(t, "1", resp.Header.Get("Retry-After"))
			assert.True(t, resp.Close, "Connection: close")
			if tc.want != "" {
				assert.Equal(t, "application/json", resp.Header.Get("Content-Type"))
				assert.JSONEq(t, tc.want, string(body))
			} else {
				assert.False(t, json.Valid(body) && strings.HasPrefix(string(body), "{"), "no JSON-RPC body: %s", body)
			}
		})
	}

	assertNone(t, shut, "Shutdown, with a request running")
	close(release)
	require.NoError(t, recv(t, blocked, "the blocked call"))
	assert.Equal(t, "released", got)
	require.NoError(t, recv(t, shut, "Shutdown"))
}

// TestConnShutdownAnswersNotRun: a two-way Conn's Shutdown answers the
// peer's new requests ErrNotRun while its handler and its own call finish.
func TestConnShutdownAnswersNotRun(t *testing.T) {
	checkLeaks(t)
	synctest.Test(t, func(t *testing.T) {
		started := make(chan string, 1)
		release := make(chan struct{})
		aR, bW := io.Pipe()
		bR, aW := io.Pipe()
		peerRelease := make(chan struct{})
		peerMux := new(jsonrpc.Mux)
		peerMux.HandleFunc("slow", func(context.Context, *jsonrpc.Request) (any, error) {
			<-peerRelease
			return "peer done", nil
		})
		a := jsonrpc.NewConn(aR, aW, &jsonrpc.Options{Handler: blockMux(started, release)})
		b := jsonrpc.NewConn(bR, bW, &jsonrpc.Options{Handler: peerMux})
		defer b.Close()
		defer a.Close()

		running := goCall(t.Context(), b, "block", nil) // b's call runs on a
		<-started
		own := goCall(t.Context(), a, "slow", nil) // a's own call, on b
		synctest.Wait()
		shut := make(chan error, 1)
		go func() { shut <- a.Shutdown(context.Background()) }()
		synctest.Wait()

		err := b.Call(t.Context(), "sum", []int{1}, nil)
		assert.ErrorIs(t, err, jsonrpc.ErrNotRun)
		assert.False(t, jsonrpc.MayHaveRun(err))
		close(release)
		r := <-running
		require.NoError(t, r.err)
		assert.JSONEq(t, `"released"`, string(r.result))
		synctest.Wait()
		assertNone(t, shut, "Shutdown, with a call of its own awaiting its answer")
		close(peerRelease)
		o := <-own
		require.NoError(t, o.err)
		assert.JSONEq(t, `"peer done"`, string(o.result))
		assert.NoError(t, <-shut)
		assert.ErrorIs(t, a.Wait(), jsonrpc.ErrClosed)
		synctest.Wait() // b has seen the end
		err = b.Call(t.Context(), "sum", []int{1}, nil)
		assert.ErrorIs(t, err, jsonrpc.ErrClosed)
		assert.False(t, jsonrpc.MayHaveRun(err))
	})
}
