package jsonrpc_test

// Regression tests for the HTTP defects of the issue "Hardening III": a
// Content-Length that panics HTTPClient (1), ServeHTTP allocating what a
// body claims before it arrives (2), StopGrace not honoured over HTTP
// (3), a client that does not read its event stream outliving Close (4),
// HTTPClient reading an over-limit NDJSON line to its end (5), and
// HTTPClient waiting after its answer for the server to close (6); and
// of two found since: Close not ending the read of a body that never
// comes, and HTTPClient.Call taking a null-id error for no answer.
// Liveness is checked against deadlines far above the cost of the work,
// memory with runtime/metrics against generous bounds.

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httptrace"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ndjsonrpc/jsonrpc"
)

// rawHTTPServer serves each connection it accepts by reading one request
// and passing the connection to respond, which writes the response by
// hand; the connection is closed when respond returns. It returns the
// server's URL; the cleanup stops it and waits for its goroutines.
func rawHTTPServer(t *testing.T, respond func(nc net.Conn)) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	var wg sync.WaitGroup
	wg.Go(func() {
		for {
			nc, err := l.Accept()
			if err != nil {
				return
			}
			wg.Go(func() {
				defer nc.Close()
				req, err := http.ReadRequest(bufio.NewReader(nc))
				if err != nil {
					return
				}
				_, _ = io.Copy(io.Discard, req.Body)
				respond(nc)
			})
		}
	})
	t.Cleanup(func() {
		_ = l.Close()
		wg.Wait()
	})
	return "http://" + l.Addr().String()
}

// newTransportClient returns an http.Client with a Transport of its own,
// whose idle connections the cleanup closes.
func newTransportClient(t *testing.T) *http.Client {
	t.Helper()
	tr := &http.Transport{}
	t.Cleanup(tr.CloseIdleConnections)
	return &http.Client{Transport: tr}
}

// TestHTTPHardeningClientContentLength answers HTTPClient with a
// Content-Length it cannot hold, the largest an HTTP parser accepts among
// them: the call fails with ErrMessageTooLarge, before reading the body,
// rather than panicking.
func TestHTTPHardeningClientContentLength(t *testing.T) {
	checkLeaks(t)
	const limit = 1 << 20
	answer := `{"jsonrpc":"2.0","id":1,"result":1}`
	for _, tc := range []struct{ name, length string }{
		{"largest int64", "9223372036854775807"},
		{"largest int64 less one", "9223372036854775806"},
		{"one over the limit", fmt.Sprint(limit + 1)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			url := rawHTTPServer(t, func(nc net.Conn) {
				_, _ = io.WriteString(nc, "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: "+tc.length+"\r\n\r\n"+answer)
			})
			c := &jsonrpc.HTTPClient{URL: url, HTTP: newTransportClient(t), MaxMessageSize: limit}
			err := c.Call(t.Context(), "x", nil, nil)
			assert.ErrorIs(t, err, jsonrpc.ErrMessageTooLarge)
		})
	}
}

// firstRead signals, on the first Read of a request body, that the server
// has allocated for it and waits for its bytes.
type firstRead struct {
	io.ReadCloser
	once    sync.Once
	reading chan<- struct{}
}

func (r *firstRead) Read(p []byte) (int, error) {
	r.once.Do(func() { r.reading <- struct{}{} })
	return r.ReadCloser.Read(p)
}

// TestHTTPHardeningBodyMemory sends POSTs that claim a body just under the
// default limit (67,108,863 bytes) and send one byte. What the server
// holds must follow the bytes that arrived, not the claim: under 1 MiB a
// request, where the claim would be 64 MiB.
func TestHTTPHardeningBodyMemory(t *testing.T) {
	checkLeaks(t)
	const (
		requests = 8
		claimed  = jsonrpc.DefaultMaxMessageSize - 1
	)
	reading := make(chan struct{}, requests)
	srv := &jsonrpc.Server{Options: jsonrpc.Options{Handler: specMux()}}
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r.Body = &firstRead{ReadCloser: r.Body, reading: reading}
		srv.ServeHTTP(w, r)
	}))
	defer ts.Close()

	before := heapObjects()
	for range requests {
		nc, err := net.Dial("tcp", ts.Listener.Addr().String())
		require.NoError(t, err)
		defer nc.Close()
		_, err = fmt.Fprintf(nc, "POST / HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n{", claimed)
		require.NoError(t, err)
	}
	for range requests {
		recv(t, reading, "a server reading a body")
	}
	grown := int64(heapObjects()) - int64(before)
	t.Logf("heap grew by %d KiB for %d bodies of one byte", grown>>10, requests)
	assert.Less(t, grown, int64(requests<<20), "the server allocates what the bodies claim, not what arrived")
}

// TestHTTPHardeningCancelGrace checks that ServeHTTP returns about
// StopGrace after its client goes away or Server.Close, while its
// handler ignores its context, and that what the abandoned handler sends
// later goes nowhere.
func TestHTTPHardeningCancelGrace(t *testing.T) {
	for _, tc := range []struct {
		name string
		stop func(srv *jsonrpc.Server, hangUp context.CancelFunc)
	}{
		{"client goes away", func(_ *jsonrpc.Server, hangUp context.CancelFunc) { hangUp() }},
		{"Server.Close", func(srv *jsonrpc.Server, _ context.CancelFunc) { _ = srv.Close() }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			checkLeaks(t)
			started := make(chan struct{}, 1)
			release := make(chan struct{})
			late := make(chan error, 1)
			mux := new(jsonrpc.Mux)
			mux.HandleFunc("stubborn", func(ctx context.Context, _ *jsonrpc.Request) (any, error) {
				started <- struct{}{}
				<-release // and not ctx
				late <- jsonrpc.Peer(ctx).Notify(ctx, "late", nil)
				return "late", nil
			})
			srv := &jsonrpc.Server{Options: jsonrpc.Options{Handler: mux, StopGrace: 300 * time.Millisecond}}
			served := make(chan struct{}, 1)
			ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				srv.ServeHTTP(w, r)
				served <- struct{}{}
			}))
			defer ts.Close()
			c := &jsonrpc.HTTPClient{URL: ts.URL, HTTP: ts.Client(), OnNotify: func(*jsonrpc.Request) {}}

			ctx, hangUp := context.WithCancel(t.Context())
			defer hangUp()
			called := make(chan error, 1)
			go func() { called <- c.Call(ctx, "stubborn", nil, nil) }()
			recv(t, started, "the handler to start")
			tc.stop(srv, hangUp)
			select {
			case <-served:
			case <-time.After(2 * time.Second):
				t.Error("ServeHTTP did not return within 2 s, with a StopGrace of 300 ms")
			}
			close(release)
			assert.Error(t, recv(t, late, "the abandoned handler's notification"), "the abandoned handler's notification goes nowhere")
			assert.Error(t, recv(t, called, "the call"))
		})
	}
}

// TestHTTPHardeningCloseEndsBodyRead checks that Close ends the read of
// a body that its client announced and never sends, whether the read
// began before Close or after it: ServeHTTP returns within about
// StopGrace, and the request, which did not run, gets 503.
func TestHTTPHardeningCloseEndsBodyRead(t *testing.T) {
	for _, after := range []bool{false, true} {
		t.Run(fmt.Sprintf("read begins after Close: %v", after), func(t *testing.T) {
			checkLeaks(t)
			srv := &jsonrpc.Server{Options: jsonrpc.Options{Handler: new(jsonrpc.Mux), StopGrace: 300 * time.Millisecond}}
			entered := make(chan struct{}, 1)
			served := make(chan struct{}, 1)
			ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				entered <- struct{}{}
				srv.ServeHTTP(w, r)
				served <- struct{}{}
			}))
			defer ts.Close()
			if after {
				_ = srv.Close()
			}
			nc, err := net.Dial("tcp", ts.Listener.Addr().String())
			require.NoError(t, err)
			defer func() { _ = nc.Close() }()
			_, err = io.WriteString(nc, "POST / HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{\"jsonrpc\"")
			require.NoError(t, err)
			recv(t, entered, "ServeHTTP to begin")
			if !after {
				time.Sleep(50 * time.Millisecond) // let it block in the read
				_ = srv.Close()
			}
			select {
			case <-served:
			case <-time.After(3 * time.Second):
				t.Fatal("ServeHTTP did not return within 3 s after Close, with a StopGrace of 300 ms")
			}
			resp, err := http.ReadResponse(bufio.NewReader(nc), nil)
			require.NoError(t, err)
			_ = resp.Body.Close()
			assert.Equal(t, http.StatusServiceUnavailable, resp.StatusCode)
		})
	}
}

// bigWriteListener accepts connections with small send buffers, and
// signals once one of them is asked to write at least big bytes at once.
type bigWriteListener struct {
	net.Listener
	big  int
	once sync.Once
	seen chan struct{}
}

func (l *bigWriteListener) Accept() (net.Conn, error) {
	nc, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	_ = nc.(*net.TCPConn).SetWriteBuffer(16 << 10)
	return &bigWriteConn{Conn: nc, l: l}, nil
}

type bigWriteConn struct {
	net.Conn
	l *bigWriteListener
}

func (c *bigWriteConn) Write(p []byte) (int, error) {
	if len(p) >= c.l.big {
		c.l.once.Do(func() { close(c.l.seen) })
	}
	return c.Conn.Write(p)
}

// TestHTTPHardeningCloseUnreadStream has a handler stream notifications
// of 2 MiB to a client that never reads them. The sockets' buffers are
// small, so a Write of 1 MiB or more to the connection never ends; once
// one has started, Server.Close must end ServeHTTP within its bound all
// the same.
func TestHTTPHardeningCloseUnreadStream(t *testing.T) {
	checkLeaks(t)
	pad := strings.Repeat("x", 2<<20)
	mux := new(jsonrpc.Mux)
	mux.HandleFunc("flood", func(ctx context.Context, _ *jsonrpc.Request) (any, error) {
		for {
			if err := jsonrpc.Peer(ctx).Notify(ctx, "pad", []string{pad}); err != nil {
				return nil, err
			}
		}
	})
	srv := &jsonrpc.Server{Options: jsonrpc.Options{Handler: mux, StopGrace: 500 * time.Millisecond}}
	served := make(chan struct{}, 1)
	ts := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		srv.ServeHTTP(w, r)
		served <- struct{}{}
	}))
	l := &bigWriteListener{Listener: ts.Listener, big: 1 << 20, seen: make(chan struct{})}
	ts.Listener = l
	ts.Start()
	defer ts.Close()

	nc, err := net.Dial("tcp", ts.Listener.Addr().String())
	require.NoError(t, err)
	defer nc.Close()
	require.NoError(t, nc.(*net.TCPConn).SetReadBuffer(16<<10))
	body := `{"jsonrpc":"2.0","id":1,"method":"flood"}`
	_, err = fmt.Fprintf(nc, "POST / HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nAccept: text/event-stream\r\nContent-Length: %d\r\n\r\n%s", len(body), body)
	require.NoError(t, err)
	recv(t, l.seen, "a write larger than the sockets hold")

	require.NoError(t, srv.Close())
	select {
	case <-served:
	case <-time.After(3 * time.Second):
		t.Error("ServeHTTP did not return within 3 s of Close, with a StopGrace of 500 ms")
	}
}

// TestHTTPHardeningClientMessageLimit answers HTTPClient with one endless
// message in each framing: the call must fail with ErrMessageTooLarge as
// soon as the message passes the limit, not read on to the ctx deadline.
func TestHTTPHardeningClientMessageLimit(t *testing.T) {
	checkLeaks(t)
	const limit = 1 << 20
	for _, tc := range []struct{ name, ctype, prefix string }{
		{"ndjson", "application/x-ndjson", `{"jsonrpc":"2.0","method":"log","params":["a"]}` + "\n" + `{"jsonrpc":"2.0","id":1,"result":"`},
		{"sse", "text/event-stream", "data: " + `{"jsonrpc":"2.0","id":1,"result":"`},
		{"sse comment", "text/event-stream", ":"},
		{"json", "application/json", `{"jsonrpc":"2.0","id":1,"result":"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var written atomic.Int64
			ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", tc.ctype)
				_, _ = io.WriteString(w, tc.prefix)
				chunk := bytes.Repeat([]byte("x"), 64<<10)
				for r.Context().Err() == nil {
					n, err := w.Write(chunk)
					written.Add(int64(n))
					if err != nil {
						return
					}
				}
			}))
			defer ts.Close()
			c := &jsonrpc.HTTPClient{URL: ts.URL, HTTP: ts.Client(), MaxMessageSize: limit, OnNotify: func(*jsonrpc.Request) {}}
			ctx, cancel := context.WithTimeout(t.Context(), waitTimeout)
			defer cancel()
			var err error
			if returnsWithin(t, promptly, "the call", func() { err = c.Call(ctx, "x", nil, nil) }) {
				assert.ErrorIs(t, err, jsonrpc.ErrMessageTooLarge)
				assert.Less(t, written.Load(), int64(32<<20), "the client read far past its limit")
			}
			cancel()
			ts.CloseClientConnections()
		})
	}
}

// firstID returns the id of the request, or of the batch's first request,
// that r carries.
func firstID(r *http.Request) int64 {
	body, _ := io.ReadAll(r.Body)
	var one struct{ ID int64 }
	if json.Unmarshal(body, &one) == nil {
		return one.ID
	}
	var batch []struct{ ID int64 }
	if json.Unmarshal(body, &batch) == nil && len(batch) > 0 {
		return batch[0].ID
	}
	return 0
}

// TestHTTPHardeningClientDrain answers HTTPClient in a stream, then holds
// the response open: each method returns once it has its answer. A
// response read to its end still leaves its connection to be reused.
func TestHTTPHardeningClientDrain(t *testing.T) {
	checkLeaks(t)
	answer := `{"jsonrpc":"2.0","id":%d,"result":2}`
	type caller func(c *jsonrpc.HTTPClient) error
	call := func(c *jsonrpc.HTTPClient) error { return c.Call(context.Background(), "x", nil, nil) }
	for _, tc := range []struct {
		name, ctype, frame string
		notes              bool // the client takes notifications
		run                caller
	}{
		{"Call, sse", "text/event-stream", "data: %s\n\n", false, call},
		{"Call with OnNotify, sse", "text/event-stream", "data: %s\n\n", true, call},
		{"Call with OnNotify, ndjson", "application/x-ndjson", "%s\n", true, call},
		{"Batch, sse", "text/event-stream", "data: [%s]\n\n", true, func(c *jsonrpc.HTTPClient) error {
			bc := &jsonrpc.BatchCall{Method: "x"}
			if err := c.Batch(context.Background(), bc); err != nil {
				return err
			}
			return bc.Err
		}},
		{"Stream, sse", "text/event-stream", "data: %s\n\n", false, func(c *jsonrpc.HTTPClient) error {
			for _, err := range c.Stream(context.Background(), "x", nil) {
				return err
			}
			return nil
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			release := make(chan struct{})
			ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", tc.ctype)
				_, _ = fmt.Fprintf(w, tc.frame, fmt.Sprintf(answer, firstID(r)))
				_ = http.NewResponseController(w).Flush()
				select {
				case <-release:
				case <-r.Context().Done():
				}
			}))
			defer ts.Close()
			defer close(release)
			c := &jsonrpc.HTTPClient{URL: ts.URL, HTTP: ts.Client()}
			if tc.notes {
				c.OnNotify = func(*jsonrpc.Request) {}
			}
			var err error
			if returnsWithin(t, promptly, "the call, answered,", func() { err = tc.run(c) }) {
				assert.NoError(t, err)
			}
		})
	}

	t.Run("read to its end", func(t *testing.T) {
		var conns atomic.Int32
		ts := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			body := fmt.Sprintf("data: "+answer+"\n\n", firstID(r))
			w.Header().Set("Content-Type", "text/event-stream")
			w.Header().Set("Content-Length", fmt.Sprint(len(body)))
			_, _ = io.WriteString(w, body)
		}))
		ts.Config.ConnState = func(_ net.Conn, s http.ConnState) {
			if s == http.StateNew {
				conns.Add(1)
			}
		}
		ts.Start()
		defer ts.Close()
		for _, notes := range []bool{false, true} {
			c := &jsonrpc.HTTPClient{URL: ts.URL, HTTP: ts.Client()}
			if notes {
				c.OnNotify = func(*jsonrpc.Request) {}
			}
			for range 10 {
				require.NoError(t, c.Call(t.Context(), "x", nil, nil))
			}
		}
		assert.Equal(t, int32(1), conns.Load(), "calls reuse one kept-alive connection")
	})

	t.Run("ServeHTTP's stream", func(t *testing.T) {
		var conns atomic.Int32
		ts := httptest.NewUnstartedServer(&jsonrpc.Server{Options: jsonrpc.Options{Handler: progressMux()}})
		ts.Config.ConnState = func(_ net.Conn, s http.ConnState) {
			if s == http.StateNew {
				conns.Add(1)
			}
		}
		ts.Start()
		defer ts.Close()
		notes := 0
		c := &jsonrpc.HTTPClient{URL: ts.URL, HTTP: ts.Client(), OnNotify: func(*jsonrpc.Request) { notes++ }}
		for range 20 {
			var done string
			require.NoError(t, c.Call(t.Context(), "progress", map[string]int{"N": 1}, &done))
			assert.Equal(t, "done", done)
		}
		assert.Equal(t, 20, notes, "every answer came in a stream")
		assert.Less(t, conns.Load(), int32(10), "most calls reuse their connection: the drain waits for the end that follows the answer")
	})
}

// TestHTTPHardeningInvalidAnswerMayHaveRun: an answer the client cannot
// read (an error without a message, a response with both result and
// error) came from a server that had the request: MayHaveRun must say the
// call may have run, for a call and for a batch entry alike.
func TestHTTPHardeningInvalidAnswerMayHaveRun(t *testing.T) {
	var runs atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req struct{ ID json.RawMessage }
		body, _ := io.ReadAll(r.Body)
		runs.Add(1)
		w.Header().Set("Content-Type", "application/json")
		if bytes.HasPrefix(body, []byte("[")) {
			var reqs []struct{ ID json.RawMessage }
			_ = json.Unmarshal(body, &reqs)
			fmt.Fprintf(w, `[{"jsonrpc":"2.0","id":%s,"result":1,"error":{"code":1,"message":"m"}}]`, reqs[0].ID)
			return
		}
		_ = json.Unmarshal(body, &req)
		fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"error":{"code":-32000}}`, req.ID)
	}))
	defer srv.Close()
	c := &jsonrpc.HTTPClient{URL: srv.URL}
	err := c.Call(t.Context(), "charge", nil, nil)
	require.ErrorContains(t, err, "invalid response")
	assert.True(t, jsonrpc.MayHaveRun(err), "a call the server answered, badly")
	bc := &jsonrpc.BatchCall{Method: "charge"}
	_ = c.Batch(t.Context(), bc)
	require.ErrorContains(t, bc.Err, "invalid response")
	assert.True(t, jsonrpc.MayHaveRun(bc.Err), "a batch entry the server answered, badly")
	assert.Equal(t, int32(2), runs.Load())
}

// TestHTTPHardeningNullIDError checks that a call whose server could not
// read its id gets the server's error, with a null id, as its answer
// (MayHaveRun says it did not run), as a batch does, whether the answer
// comes alone or in a stream after a notification.
func TestHTTPHardeningNullIDError(t *testing.T) {
	const answer = `{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Invalid Request"}}`
	for _, ctype := range []string{"application/json", "text/event-stream"} {
		t.Run(ctype, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", ctype)
				if ctype == "application/json" {
					_, _ = io.WriteString(w, answer)
					return
				}
				_, _ = io.WriteString(w, "data: {\"jsonrpc\":\"2.0\",\"method\":\"log\"}\n\ndata: "+answer+"\n\n")
			}))
			defer srv.Close()
			c := &jsonrpc.HTTPClient{URL: srv.URL, OnNotify: func(*jsonrpc.Request) {}}
			err := c.Call(t.Context(), "x", nil, nil)
			var e *jsonrpc.Error
			require.ErrorAs(t, err, &e)
			assert.Equal(t, jsonrpc.CodeInvalidRequest, e.Code)
			assert.False(t, jsonrpc.MayHaveRun(err), "a call the server could not read did not run")
		})
	}
}

// A streamed HTTP answer (SSE, NDJSON) is one line whatever line breaks
// its JSON holds as whitespace: a raw result with a bare CR (an SSE data
// line ends at CR too), or a request's params, spread over lines in the
// body, given back as they are.
func TestHTTPHardeningStreamedAnswerIsOneLine(t *testing.T) {
	mux := new(jsonrpc.Mux)
	mux.HandleFunc("raw", func(context.Context, *jsonrpc.Request) (any, error) {
		return json.RawMessage("[1,\r2,\r3]"), nil
	})
	mux.Handle("echo", jsonrpc.RawHandlerFunc(func(_ context.Context, r *jsonrpc.Request) (json.RawMessage, error) {
		return r.Params, nil
	}))
	srv := &jsonrpc.Server{Options: jsonrpc.Options{Handler: mux}}
	for _, tc := range []struct{ body, result string }{
		{`{"jsonrpc":"2.0","id":1,"method":"raw"}`, `[1,2,3]`},
		{"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"echo\",\"params\":{\n\"a\":\r\n1}}", `{"a":1}`},
	} {
		for _, accept := range []string{"text/event-stream", "application/x-ndjson"} {
			req := httptest.NewRequest(http.MethodPost, "/", strings.NewReader(tc.body))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Accept", accept)
			rec := httptest.NewRecorder()
			srv.ServeHTTP(rec, req)
			require.Equal(t, http.StatusOK, rec.Code)
			body := rec.Body.String()
			// Lines as a WHATWG event-stream parser, or an NDJSON one
			// that takes CR as a line end too, splits them.
			lines := strings.FieldsFunc(body, func(r rune) bool { return r == '\n' || r == '\r' })
			msg := lines[len(lines)-1]
			if accept == "text/event-stream" {
				require.Equal(t, []string{"event: message"}, lines[:len(lines)-1], "%q", body)
				msg = strings.TrimPrefix(msg, "data: ")
			} else {
				require.Len(t, lines, 1, "%q", body)
			}
			var got struct{ Result json.RawMessage }
			require.NoError(t, json.Unmarshal([]byte(msg), &got), "%q", body)
			var compact bytes.Buffer
			require.NoError(t, json.Compact(&compact, got.Result))
			assert.Equal(t, tc.result, compact.String(), "%s, %s", tc.body, accept)
		}
	}
}

// A request that net/http never wrote whole cannot have run: MayHaveRun
// says false however it failed, and whatever the client asks to Accept
// (OnNotify and Stream ask for streamed answers), and a failure to
// connect wraps ErrClosed unless ctx ended. One that was written and then
// lost its connection may have run.
func TestHTTPClientNotWrittenNotRun(t *testing.T) {
	checkLeaks(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	refused := "http://" + ln.Addr().String()
	require.NoError(t, ln.Close())
	hc := newTransportClient(t)
	onNotify := func(*jsonrpc.Request) {}
	for _, c := range []*jsonrpc.HTTPClient{
		{URL: refused, HTTP: hc},
		{URL: refused, HTTP: hc, OnNotify: onNotify},
	} {
		err := c.Call(t.Context(), "m", nil, nil)
		assert.ErrorIs(t, err, jsonrpc.ErrClosed, "refused, OnNotify %v", c.OnNotify != nil)
		assert.False(t, jsonrpc.MayHaveRun(err), "refused, OnNotify %v: %v", c.OnNotify != nil, err)
		for _, err = range c.Stream(t.Context(), "m", nil) {
		}
		assert.ErrorIs(t, err, jsonrpc.ErrClosed, "Stream, refused")
		assert.False(t, jsonrpc.MayHaveRun(err), "Stream, refused: %v", err)
	}

	t.Run("retried when refused, with OnNotify", func(t *testing.T) {
		var dials atomic.Int64
		tr := &http.Transport{DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			dials.Add(1)
			return nil, &net.OpError{Op: "dial", Net: network, Err: errors.New("connection refused")}
		}}
		defer tr.CloseIdleConnections()
		c := &jsonrpc.HTTPClient{URL: "http://backend.invalid", HTTP: &http.Client{Transport: tr}, OnNotify: onNotify,
			Retry: func(string) bool { return false }, MinBackoff: time.Millisecond, MaxBackoff: time.Millisecond}
		ctx, cancel := context.WithTimeout(t.Context(), 200*time.Millisecond)
		defer cancel()
		err := c.Call(ctx, "m", nil, nil)
		assert.Greater(t, dials.Load(), int64(1), "a call that was never sent is sent again: %v", err)
	})

	t.Run("ctx ends during the dial", func(t *testing.T) {
		tr := &http.Transport{DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			<-ctx.Done()
			return nil, &net.OpError{Op: "dial", Net: network, Err: ctx.Err()}
		}}
		defer tr.CloseIdleConnections()
		c := &jsonrpc.HTTPClient{URL: "http://backend.invalid", HTTP: &http.Client{Transport: tr}}
		ctx, cancel := context.WithTimeout(t.Context(), 50*time.Millisecond)
		defer cancel()
		err := c.Call(ctx, "m", nil, nil)
		assert.ErrorIs(t, err, context.DeadlineExceeded)
		assert.False(t, jsonrpc.MayHaveRun(err), "%v", err)
	})

	t.Run("ctx ends waiting for a connection", func(t *testing.T) {
		release := make(chan struct{})
		var hits atomic.Int64
		ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			hits.Add(1)
			<-release
		}))
		defer ts.Close()
		tr := &http.Transport{MaxConnsPerHost: 1}
		defer tr.CloseIdleConnections()
		c := &jsonrpc.HTTPClient{URL: ts.URL, HTTP: &http.Client{Transport: tr}}
		done := make(chan struct{})
		go func() { defer close(done); _ = c.Notify(context.Background(), "slow", nil) }()
		require.Eventually(t, func() bool { return hits.Load() == 1 }, time.Minute, time.Millisecond)
		ctx, cancel := context.WithTimeout(t.Context(), 50*time.Millisecond)
		defer cancel()
		err := c.Call(ctx, "second", nil, nil)
		close(release)
		<-done
		assert.Equal(t, int64(1), hits.Load())
		assert.ErrorIs(t, err, context.DeadlineExceeded)
		assert.False(t, jsonrpc.MayHaveRun(err), "%v", err)
	})

	t.Run("TLS handshake fails", func(t *testing.T) {
		var hits atomic.Int64
		ts := httptest.NewUnstartedServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { hits.Add(1) }))
		ts.Config.ErrorLog = log.New(io.Discard, "", 0)
		ts.StartTLS()
		defer ts.Close()
		c := &jsonrpc.HTTPClient{URL: ts.URL, HTTP: newTransportClient(t)}
		err := c.Call(t.Context(), "m", nil, nil)
		assert.Error(t, err)
		assert.Zero(t, hits.Load())
		assert.ErrorIs(t, err, jsonrpc.ErrClosed)
		assert.False(t, jsonrpc.MayHaveRun(err), "%v", err)
	})

	t.Run("redirected to where nothing listens", func(t *testing.T) {
		ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			http.Redirect(w, r, refused, http.StatusTemporaryRedirect)
		}))
		defer ts.Close()
		c := &jsonrpc.HTTPClient{URL: ts.URL, HTTP: newTransportClient(t)}
		err := c.Call(t.Context(), "m", nil, nil)
		assert.ErrorIs(t, err, jsonrpc.ErrClosed)
		assert.False(t, jsonrpc.MayHaveRun(err), "the hop that failed never connected: %v", err)
	})

	t.Run("http.DefaultTransport replaced", func(t *testing.T) {
		// A RoundTripper of the program's, which reads the request
		// whole (its server ran it) and says nothing of what it wrote.
		rt := roundTripFunc(func(req *http.Request) (*http.Response, error) {
			_, _ = io.Copy(io.Discard, req.Body)
			return nil, errors.New("connection reset after the request was read")
		})
		old := http.DefaultTransport
		http.DefaultTransport = rt
		defer func() { http.DefaultTransport = old }()
		for _, c := range []*jsonrpc.HTTPClient{{URL: "http://backend.invalid"}, {URL: "http://backend.invalid", HTTP: &http.Client{}}} {
			err := c.Call(t.Context(), "m", nil, nil)
			assert.True(t, jsonrpc.MayHaveRun(err), "HTTP %v: %v", c.HTTP, err)
		}
	})

	t.Run("with the caller's own trace", func(t *testing.T) {
		ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			_, _ = io.WriteString(w, `{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Parse error"}}`)
		}))
		defer ts.Close()
		c := &jsonrpc.HTTPClient{URL: ts.URL, HTTP: newTransportClient(t)}
		var wrote atomic.Int64
		ctx := httptrace.WithClientTrace(t.Context(), &httptrace.ClientTrace{
			WroteRequest: func(httptrace.WroteRequestInfo) { wrote.Add(1) },
		})
		for i := range 3 {
			_ = c.Call(t.Context(), "m", nil, nil) // a trace of c's own, reused
			_ = c.Call(ctx, "m", nil, nil)
			assert.Equal(t, int64(i+1), wrote.Load(), "the caller's hook, once a call")
		}
	})

	t.Run("written, then the connection breaks", func(t *testing.T) {
		ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			_, _ = io.Copy(io.Discard, r.Body)
			conn, _, err := http.NewResponseController(w).Hijack()
			if err == nil {
				_ = conn.Close()
			}
		}))
		defer ts.Close()
		c := &jsonrpc.HTTPClient{URL: ts.URL, HTTP: newTransportClient(t)}
		err := c.Call(t.Context(), "m", nil, nil)
		assert.ErrorIs(t, err, jsonrpc.ErrClosed)
		assert.True(t, jsonrpc.MayHaveRun(err), "%v", err)
	})
}

// An error answer with a call's id, sent for a batch as a lone object
// rather than in an array, is that call's answer alone: the other calls
// got none and may have run. One with a null id is for the whole batch.
func TestHTTPClientBatchLoneError(t *testing.T) {
	checkLeaks(t)
	for _, nullID := range []bool{false, true} {
		ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			var reqs []struct{ ID json.RawMessage }
			if err := json.NewDecoder(r.Body).Decode(&reqs); err != nil || len(reqs) != 2 {
				http.Error(w, "not a batch of two", http.StatusBadRequest)
				return
			}
			id := string(reqs[0].ID)
			if nullID {
				id = "null"
			}
			w.Header().Set("Content-Type", "application/json")
			_, _ = fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"error":{"code":-32601,"message":"Method not found"}}`, id)
		}))
		c := &jsonrpc.HTTPClient{URL: ts.URL, HTTP: newTransportClient(t)}
		a, b := &jsonrpc.BatchCall{Method: "a"}, &jsonrpc.BatchCall{Method: "b"}
		_ = c.Batch(t.Context(), a, b)
		ts.Close()
		assert.ErrorIs(t, a.Err, jsonrpc.ErrMethodNotFound, "null id %v: a", nullID)
		if nullID {
			assert.ErrorIs(t, b.Err, jsonrpc.ErrMethodNotFound, "null id: b")
			continue
		}
		assert.NotErrorIs(t, b.Err, jsonrpc.ErrMethodNotFound, "b got no answer")
		assert.Error(t, b.Err)
		assert.True(t, jsonrpc.MayHaveRun(b.Err), "b got no answer: it may have run")
	}
}

// sseCall makes a call to a server that answers it with an event stream
// written in chunks, each flushed, in which NOTE stands for a
// notification and ANSWER for the call's answer, result 7; it returns
// the result, the notifications handed over and the call's error.
func sseCall(t *testing.T, chunks ...string) (n int, notes int64, err error) {
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req struct{ ID json.RawMessage }
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		for _, c := range chunks {
			c = strings.ReplaceAll(c, "NOTE", `{"jsonrpc":"2.0","method":"note","params":[1]}`)
			c = strings.ReplaceAll(c, "ANSWER", `{"jsonrpc":"2.0","id":`+string(req.ID)+`,"result":7}`)
			_, _ = io.WriteString(w, c)
			http.NewResponseController(w).Flush()
		}
	}))
	defer ts.Close()
	var seen atomic.Int64
	c := &jsonrpc.HTTPClient{URL: ts.URL, HTTP: newTransportClient(t), OnNotify: func(*jsonrpc.Request) { seen.Add(1) }}
	err = c.Call(t.Context(), "m", nil, &n)
	return n, seen.Load(), err
}

// The lines of server-sent events end with "\r\n", "\n" or a lone "\r",
// in any mix, also when a "\r\n" is split between two writes: the client
// reads the answer of each such stream, and a notification before it.
func TestHTTPClientSSELineEndings(t *testing.T) {
	checkLeaks(t)
	for name, chunks := range map[string][]string{
		"LF":         {"event: message\ndata: NOTE\n\ndata: ANSWER\n\n"},
		"CRLF":       {"event: message\r\ndata: NOTE\r\n\r\ndata: ANSWER\r\n\r\n"},
		"CR":         {"event: message\rdata: NOTE\r\rdata: ANSWER\r\r"},
		"mixed":      {": hello\r\ndata: NOTE\r\n\rdata: ANSWER\n\r"},
		"CRLF split": {"data: NOTE\r", "\n\r", "\ndata:", " ANSWER\r", "\n", "\r", "\n"},
	} {
		n, notes, err := sseCall(t, chunks...)
		assert.NoError(t, err, name)
		assert.Equal(t, 7, n, name)
		assert.Equal(t, int64(1), notes, "%s: notifications", name)
	}
}

// An event of server-sent events that the end of the stream cuts off
// before its blank line is discarded, as the format says: the call gets
// no answer from it and may have run; a notification cut off so is not
// handed over.
func TestHTTPClientSSECutEvent(t *testing.T) {
	checkLeaks(t)
	for name, body := range map[string]string{
		"answer, no blank line":    "data: ANSWER\n",
		"answer, no line end":      "data: ANSWER",
		"answer, CR only":          "data: ANSWER\r",
		"notification, no end":     "data: NOTE\n",
		"two data lines, no blank": "data: NOTE\n\ndata: ANSWER\ndata: \n",
	} {
		n, notes, err := sseCall(t, body)
		assert.Error(t, err, name)
		assert.True(t, jsonrpc.MayHaveRun(err), "%s: %v", name, err)
		assert.Zero(t, n, name)
		want := int64(0)
		if strings.HasPrefix(body, "data: NOTE\n\n") {
			want = 1
		}
		assert.Equal(t, want, notes, "%s: notifications", name)
	}
}

// roundTripFunc is an http.RoundTripper made of a function.
type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(req *http.Request) (*http.Response, error) { return f(req) }

// statusWatch is a ResponseWriter that notes whether a status was
// written.
type statusWatch struct {
	http.ResponseWriter
	wrote atomic.Int32
}

func (w *statusWatch) WriteHeader(code int) {
	w.wrote.Store(int32(code))
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWatch) Write(p []byte) (int, error) {
	w.wrote.CompareAndSwap(0, http.StatusOK)
	return w.ResponseWriter.Write(p)
}

// Server.Shutdown returns once the responses of the HTTP requests in
// flight are written, their status too: a body of notifications gets its
// 202 after its connection has finished. (Each round is a race that the
// old code lost a few times in a few hundred.)
func TestHTTPShutdownWaitsForTheStatus(t *testing.T) {
	checkLeaks(t)
	for i := range 300 {
		started := make(chan struct{})
		mux := new(jsonrpc.Mux)
		mux.HandleFunc("slow", func(context.Context, *jsonrpc.Request) (any, error) {
			close(started)
			time.Sleep(time.Millisecond)
			return nil, nil
		})
		srv := &jsonrpc.Server{Options: jsonrpc.Options{Handler: mux}}
		req := httptest.NewRequest("POST", "/", strings.NewReader(`{"jsonrpc":"2.0","method":"slow"}`))
		req.Header.Set("Content-Type", "application/json")
		w := &statusWatch{ResponseWriter: httptest.NewRecorder()}
		done := make(chan struct{})
		go func() { srv.ServeHTTP(w, req); close(done) }()
		<-started
		require.NoError(t, srv.Shutdown(t.Context()))
		if got := w.wrote.Load(); got != http.StatusAccepted {
			t.Fatalf("round %d: Shutdown returned with status %d written; want 202", i, got)
		}
		<-done
	}
}

// TestHTTPClientSSELeadingBOM checks that an event stream that starts
// with a U+FEFF (BOM), which the format ignores, still delivers its first
// event, here the call's answer.
func TestHTTPClientSSELeadingBOM(t *testing.T) {
	checkLeaks(t)
	n, _, err := sseCall(t, "\ufeffdata: ANSWER\n\n")
	if err != nil || n != 7 {
		t.Fatalf("got %d, %v; want 7, nil", n, err)
	}
}

// A call redirected by 301, 302 or 303 reached the first server whole
// and may have run there: net/http follows with a GET that carries no
// call, and whatever that GET gets (405, 503, a dial that fails) is no
// answer to it, nor a sign that it did not run. Retry refuses the method,
// so it is sent once.
func TestHTTPClientRedirectMayHaveRun(t *testing.T) {
	dead, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	deadURL := "http://" + dead.Addr().String() + "/b"
	_ = dead.Close() // a redirect there cannot connect
	for _, final := range []int{http.StatusMethodNotAllowed, http.StatusServiceUnavailable, 0} {
		t.Run(fmt.Sprint(final), func(t *testing.T) {
			checkLeaks(t)
			var ran atomic.Int64
			mux := http.NewServeMux()
			mux.HandleFunc("/a", func(w http.ResponseWriter, r *http.Request) {
				_, _ = io.ReadAll(r.Body)
				ran.Add(1) // the call ran here
				if final == 0 {
					http.Redirect(w, r, deadURL, http.StatusSeeOther)
					return
				}
				http.Redirect(w, r, "/b", http.StatusSeeOther)
			})
			mux.HandleFunc("/b", func(w http.ResponseWriter, r *http.Request) {
				http.Error(w, "no", final)
			})
			ts := httptest.NewServer(mux)
			defer ts.Close()
			c := &jsonrpc.HTTPClient{URL: ts.URL + "/a", HTTP: newTransportClient(t),
				Retry: func(string) bool { return false }, MinBackoff: 10 * time.Millisecond}
			ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
			defer cancel()
			err := c.Call(ctx, "transfer", nil, nil)
			require.Error(t, err)
			t.Logf("err: %v; ran %d times", err, ran.Load())
			require.True(t, jsonrpc.MayHaveRun(err), "MayHaveRun false, but the call reached /a whole and ran there")
			require.EqualValues(t, 1, ran.Load(), "a call whose method Retry refuses was sent again")
		})
	}
}

// A refusal that leaves the body unread gets out while the client is
// still sending (here a chunked body that stalls): a body over
// MaxMessageSize gets its 413, a body that is not JSON its 415, a PUT its
// 405. The response closes the connection, so net/http does not read on
// for the rest of the body first.
func TestHTTPRefusalWhileBodyStalls(t *testing.T) {
	for _, tc := range []struct {
		method, ctype string
		want          int
	}{
		{"POST", "application/json", http.StatusRequestEntityTooLarge},
		{"POST", "text/plain", http.StatusUnsupportedMediaType},
		{"PUT", "application/json", http.StatusMethodNotAllowed},
	} {
		t.Run(strconv.Itoa(tc.want), func(t *testing.T) {
			checkLeaks(t)
			srv := &jsonrpc.Server{Options: jsonrpc.Options{Handler: new(jsonrpc.Mux), MaxMessageSize: 64 << 10}}
			returned := make(chan struct{}, 1)
			ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				srv.ServeHTTP(w, r)
				returned <- struct{}{}
			}))
			defer ts.Close()
			nc, err := net.Dial("tcp", ts.Listener.Addr().String())
			require.NoError(t, err)
			defer nc.Close()
			_, err = fmt.Fprintf(nc, "%s / HTTP/1.1\r\nHost: x\r\nContent-Type: %s\r\nTransfer-Encoding: chunked\r\n\r\n", tc.method, tc.ctype)
			require.NoError(t, err)
			chunk := strings.Repeat("b", 16<<10)
			for range 5 { // 80 KiB: past the limit; then nothing more, the body not ended
				_, err = fmt.Fprintf(nc, "%x\r\n%s\r\n", len(chunk), chunk)
				require.NoError(t, err)
			}
			recv(t, returned, "ServeHTTP to return")
			_ = nc.SetReadDeadline(time.Now().Add(2 * time.Second))
			resp, err := http.ReadResponse(bufio.NewReader(nc), nil)
			require.NoError(t, err, "no response within 2 s of ServeHTTP's return")
			resp.Body.Close()
			require.Equal(t, tc.want, resp.StatusCode)
		})
	}
}

// A streamed response may carry any message, and HTTPClient.Stream reads
// each before it knows what it is: one whose method is not a string (5,
// a one-byte value, once made Stream panic) is skipped, as is an item for
// another call or one that is not a valid request, and the stream goes on
// to its items and its answer.
func TestHTTPClientStreamInvalidMessages(t *testing.T) {
	checkLeaks(t)
	msgs := []string{
		`{"jsonrpc":"2.0","method":5}`,
		`{"jsonrpc":"2.0","method":12,"params":{"id":1,"item":"bad"}}`,
		`{"jsonrpc":"2.0","method":true}`,
		`{"jsonrpc":"2.0","method":["$/stream"],"params":{"id":1,"item":"bad"}}`,
		`{"jsonrpc":"2.0","method":"$/stream","params":{"id":1,"item":"first"}}`,
		`{"jsonrpc":"2.0","method":"$/stream","params":{"id":2,"item":"other call"}}`,
		`{"method":"$/stream","params":{"id":1,"item":"no version"}}`,
		`{"jsonrpc":"2.0","method":"$/stream","params":{"id":1,"item":"second"}}`,
		`{"jsonrpc":"2.0","id":1,"result":2}`,
	}
	bodies := map[string]string{
		"ndjson": "HTTP/1.1 200 OK\r\nContent-Type: application/x-ndjson\r\n\r\n" + strings.Join(msgs, "\n") + "\n",
		"sse":    "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n\r\ndata: " + strings.Join(msgs, "\n\ndata: ") + "\n\n",
	}
	for name, raw := range bodies {
		c := &jsonrpc.HTTPClient{URL: "http://test.invalid/rpc", HTTP: &http.Client{Transport: rawResponse(raw)}}
		var items []string
		for item, err := range c.Stream(context.Background(), "count", nil) {
			require.NoError(t, err, name)
			items = append(items, string(item))
		}
		assert.Equal(t, []string{`"first"`, `"second"`}, items, name)
	}
}
