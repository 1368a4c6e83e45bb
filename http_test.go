package jsonrpc_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"iter"
	"net"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ndjsonrpc/jsonrpc"
)

// post sends body to h as an HTTP request with the given headers (pairs
// of name and value) and returns the recorded response.
func post(h http.Handler, body string, headers ...string) *httptest.ResponseRecorder {
	req := httptest.NewRequest(http.MethodPost, "/rpc", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec
}

// TestHTTPSpecExamples posts every example of the specification as
// written there, over several lines where it spans them: each gets its
// answer with status 200, and those that get none get 202 and no body.
func TestHTTPSpecExamples(t *testing.T) {
	checkLeaks(t)
	srv := &jsonrpc.Server{Options: jsonrpc.Options{Handler: specMux()}}
	for _, tc := range specExamples {
		t.Run(tc.name, func(t *testing.T) {
			rec := post(srv, tc.in)
			if tc.want == "" {
				assert.Equal(t, http.StatusAccepted, rec.Code)
				assert.Empty(t, rec.Body.String())
				return
			}
			assert.Equal(t, http.StatusOK, rec.Code)
			assert.Equal(t, "application/json", rec.Header().Get("Content-Type"))
			assert.JSONEq(t, tc.want, rec.Body.String())
		})
	}
}

func TestHTTPStatus(t *testing.T) {
	checkLeaks(t)
	srv := &jsonrpc.Server{Options: jsonrpc.Options{Handler: specMux(), MaxMessageSize: 64}}
	call := `{"jsonrpc":"2.0","id":1,"method":"sum","params":[1,2]}`

	t.Run("GET", func(t *testing.T) {
		rec := httptest.NewRecorder()
		srv.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/", nil))
		assert.Equal(t, http.StatusMethodNotAllowed, rec.Code)
		assert.Equal(t, "POST", rec.Header().Get("Allow"))
	})
	for _, ct := range []string{"", "text/plain", "application/jsonx", "application/x-www-form-urlencoded"} {
		t.Run("Content-Type "+ct, func(t *testing.T) {
			rec := post(srv, call, "Content-Type", ct)
			assert.Equal(t, http.StatusUnsupportedMediaType, rec.Code)
		})
	}
	t.Run("charset", func(t *testing.T) {
		rec := post(srv, call, "Content-Type", "application/json; charset=utf-8")
		assert.Equal(t, http.StatusOK, rec.Code)
		assert.JSONEq(t, `{"jsonrpc":"2.0","id":1,"result":3}`, rec.Body.String())
	})
	t.Run("whitespace", func(t *testing.T) {
		rec := post(srv, "\r\n\t "+call+"\n\n")
		assert.JSONEq(t, `{"jsonrpc":"2.0","id":1,"result":3}`, rec.Body.String())
	})
	t.Run("empty body", func(t *testing.T) {
		rec := post(srv, "")
		assert.Equal(t, http.StatusOK, rec.Code)
		assert.JSONEq(t, `{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Parse error"}}`, rec.Body.String())
	})
	t.Run("two messages", func(t *testing.T) {
		rec := post(&jsonrpc.Server{Options: jsonrpc.Options{Handler: specMux()}}, call+"\n"+call)
		assert.Equal(t, http.StatusOK, rec.Code)
		assert.Contains(t, rec.Body.String(), `-32700`)
	})
	t.Run("too large by Content-Length", func(t *testing.T) {
		body := &countingReader{r: strings.NewReader(strings.Repeat(" ", 1000) + call)}
		req := httptest.NewRequest(http.MethodPost, "/", body)
		req.Header.Set("Content-Type", "application/json")
		req.ContentLength = 1000 + int64(len(call))
		rec := httptest.NewRecorder()
		srv.ServeHTTP(rec, req)
		assert.Equal(t, http.StatusRequestEntityTooLarge, rec.Code)
		assert.Zero(t, body.n.Load(), "the body is refused unread")
	})
	t.Run("too large, no Content-Length", func(t *testing.T) {
		body := &countingReader{r: strings.NewReader(strings.Repeat(" ", 1<<20) + call)}
		req := httptest.NewRequest(http.MethodPost, "/", body)
		req.Header.Set("Content-Type", "application/json")
		req.ContentLength = -1
		rec := httptest.NewRecorder()
		srv.ServeHTTP(rec, req)
		assert.Equal(t, http.StatusRequestEntityTooLarge, rec.Code)
		assert.LessOrEqual(t, body.n.Load(), int64(4096), "reading stops past the limit")
	})
	t.Run("at the limit", func(t *testing.T) {
		body := strings.Repeat(" ", 64-len(call)) + call
		rec := post(srv, body)
		assert.Equal(t, http.StatusOK, rec.Code)
		assert.JSONEq(t, `{"jsonrpc":"2.0","id":1,"result":3}`, rec.Body.String())
	})
	t.Run("closed", func(t *testing.T) {
		closed := &jsonrpc.Server{}
		require.NoError(t, closed.Close())
		assert.Equal(t, http.StatusServiceUnavailable, post(closed, call).Code)
	})
}

// countingReader counts the bytes read through it.
type countingReader struct {
	r io.Reader
	n atomic.Int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n.Add(int64(n))
	return n, err
}

// progressMux has "progress", which sends n notifications and then
// answers "done", and "count", a Stream handler of n items.
func progressMux() *jsonrpc.Mux {
	mux := new(jsonrpc.Mux)
	mux.Handle("progress", jsonrpc.Func(func(ctx context.Context, p struct{ N int }) (string, error) {
		for i := range p.N {
			if err := jsonrpc.Peer(ctx).Notify(ctx, "progress", map[string]int{"i": i}); err != nil {
				return "", err
			}
		}
		return "done", nil
	}))
	mux.Handle("count", jsonrpc.Stream(func(ctx context.Context, p struct{ N int }) iter.Seq2[int, error] {
		return func(yield func(int, error) bool) {
			for i := range p.N {
				if !yield(i, nil) {
					return
				}
			}
		}
	}))
	return mux
}

func TestHTTPStreaming(t *testing.T) {
	checkLeaks(t)
	srv := &jsonrpc.Server{Options: jsonrpc.Options{Handler: progressMux()}}
	two := `{"jsonrpc":"2.0","id":"x","method":"progress","params":{"N":2}}`
	none := `{"jsonrpc":"2.0","id":"x","method":"progress","params":{"N":0}}`
	note := func(i int) string { return fmt.Sprintf(`{"jsonrpc":"2.0","method":"progress","params":{"i":%d}}`, i) }
	answer := `{"jsonrpc":"2.0","id":"x","result":"done"}`
	sse := func(msgs ...string) string {
		var b strings.Builder
		for _, m := range msgs {
			b.WriteString("event: message\ndata: " + m + "\n\n")
		}
		return b.String()
	}
	tests := []struct {
		name, accept, body string
		ctype, want        string
	}{
		{"no Accept", "", two, "application/json", answer + "\n"},
		{"wildcard", "*/*", two, "application/json", answer + "\n"},
		{"json only", "application/json", two, "application/json", answer + "\n"},
		{"sse only", "text/event-stream", two, "text/event-stream", sse(note(0), note(1), answer)},
		{"sse only, no notification", "text/event-stream", none, "text/event-stream", sse(answer)},
		{"either", "application/json, text/event-stream", two, "text/event-stream", sse(note(0), note(1), answer)},
		{"either, no notification", "application/json, text/event-stream", none, "application/json", answer + "\n"},
		{"json preferred", "application/json, text/event-stream;q=0.5", two, "application/json", answer + "\n"},
		{"sse preferred", "application/json;q=0.5, text/event-stream", none, "text/event-stream", sse(answer)},
		{"ndjson", "application/x-ndjson", two, "application/x-ndjson", note(0) + "\n" + note(1) + "\n" + answer + "\n"},
		{"ndjson over sse", "application/x-ndjson, text/event-stream;q=0.9", two, "application/x-ndjson", note(0) + "\n" + note(1) + "\n" + answer + "\n"},
		{"sse at q=0", "text/event-stream;q=0", two, "application/json", answer + "\n"},
		{"unusable Accept", "text/html", two, "application/json", answer + "\n"},
		// The most specific range that matches application/json gives
		// its quality (RFC 9110, 12.5.1): not a wildcard's higher one.
		{"json below sse, wildcard", "application/json;q=0.2, text/event-stream;q=0.5, */*", none, "text/event-stream", sse(answer)},
		{"json refused, application/*", "application/json;q=0, text/event-stream;q=0.5, application/*", two, "text/event-stream", sse(note(0), note(1), answer)},
		{"application/* below sse", "application/*;q=0.3, */*, text/event-stream;q=0.5", none, "text/event-stream", sse(answer)},
		{"malformed q skipped", "application/json;q=abc, text/event-stream;q=0.5", none, "text/event-stream", sse(answer)},
		{"stream items", "text/event-stream", `{"jsonrpc":"2.0","id":7,"method":"count","params":{"N":2}}`, "text/event-stream",
			sse(`{"jsonrpc":"2.0","method":"$/stream","params":{"id":7,"item":0}}`, `{"jsonrpc":"2.0","method":"$/stream","params":{"id":7,"item":1}}`, `{"jsonrpc":"2.0","id":7,"result":2}`)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			rec := post(srv, tc.body, "Accept", tc.accept)
			assert.Equal(t, http.StatusOK, rec.Code)
			assert.Equal(t, tc.ctype, rec.Header().Get("Content-Type"))
			assert.Equal(t, tc.want, rec.Body.String())
		})
	}
}

// TestHTTPNotificationsGetNoStream checks that a body without a call gets
// 202 and no body whatever the Accept header, even when its handlers send
// notifications, and that those of a batch with a call do stream.
func TestHTTPNotificationsGetNoStream(t *testing.T) {
	checkLeaks(t)
	srv := &jsonrpc.Server{Options: jsonrpc.Options{Handler: progressMux()}}
	note := `{"jsonrpc":"2.0","method":"progress","params":{"N":2}}`
	for _, accept := range []string{"", "application/json", "text/event-stream", "application/x-ndjson", "application/json, text/event-stream"} {
		for _, body := range []string{note, "[" + note + "," + note + "]"} {
			t.Run(accept+" "+body[:1], func(t *testing.T) {
				rec := post(srv, body, "Accept", accept)
				assert.Equal(t, http.StatusAccepted, rec.Code)
				assert.Empty(t, rec.Body.String())
			})
		}
	}
	rec := post(srv, "["+note+`,{"jsonrpc":"2.0","id":1,"method":"progress","params":{"N":0}}]`, "Accept", "application/x-ndjson")
	assert.Equal(t, http.StatusOK, rec.Code)
	assert.Equal(t, 3, strings.Count(rec.Body.String(), "\n"), "two notifications, then the answer")
}

// TestHTTPStreamsAsItHappens checks that each notification reaches the
// client while the handler still runs, not all at the end.
func TestHTTPStreamsAsItHappens(t *testing.T) {
	checkLeaks(t)
	step := make(chan struct{})
	mux := new(jsonrpc.Mux)
	mux.HandleFunc("steps", func(ctx context.Context, _ *jsonrpc.Request) (any, error) {
		for i := range 3 {
			if err := jsonrpc.Peer(ctx).Notify(ctx, "step", []int{i}); err != nil {
				return nil, err
			}
			<-step // the client has seen it
		}
		return "end", nil
	})
	ts := httptest.NewServer(&jsonrpc.Server{Options: jsonrpc.Options{Handler: mux}})
	defer ts.Close()
	req, err := http.NewRequest(http.MethodPost, ts.URL, strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"steps"}`))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "text/event-stream")
	resp, err := ts.Client().Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	br := bufio.NewReader(resp.Body)
	readEvent := func() string {
		var data string
		for {
			line, err := br.ReadString('\n')
			require.NoError(t, err)
			if line == "\n" {
				return data
			}
			if d, ok := strings.CutPrefix(line, "data: "); ok {
				data = strings.TrimSuffix(d, "\n")
			}
		}
	}
	for i := range 3 {
		assert.JSONEq(t, fmt.Sprintf(`{"jsonrpc":"2.0","method":"step","params":[%d]}`, i), readEvent())
		step <- struct{}{}
	}
	assert.JSONEq(t, `{"jsonrpc":"2.0","id":1,"result":"end"}`, readEvent())
}

func TestHTTPContext(t *testing.T) {
	checkLeaks(t)
	started := make(chan struct{})
	ended := make(chan error, 1)
	mux := new(jsonrpc.Mux)
	mux.HandleFunc("whoami", func(ctx context.Context, _ *jsonrpc.Request) (any, error) {
		r := jsonrpc.HTTPRequestFromContext(ctx)
		if r == nil {
			return nil, errors.New("no HTTP request")
		}
		return r.Header.Get("Authorization"), nil
	})
	mux.HandleFunc("wait", func(ctx context.Context, _ *jsonrpc.Request) (any, error) {
		close(started)
		<-ctx.Done()
		ended <- ctx.Err()
		return nil, ctx.Err()
	})
	mux.HandleFunc("callback", func(ctx context.Context, _ *jsonrpc.Request) (any, error) {
		err := jsonrpc.Peer(ctx).Call(ctx, "roots/list", nil, nil)
		if errors.Is(err, jsonrpc.ErrNoConnection) {
			return nil, jsonrpc.Errorf(-32001, "no callback: %v", err)
		}
		return nil, err
	})
	srv := &jsonrpc.Server{Options: jsonrpc.Options{Handler: mux}}
	ts := httptest.NewServer(srv)
	defer ts.Close()

	c := &jsonrpc.HTTPClient{URL: ts.URL, HTTP: ts.Client(), Header: http.Header{"Authorization": {"Bearer t0ken"}}}
	var who string
	require.NoError(t, c.Call(t.Context(), "whoami", nil, &who))
	assert.Equal(t, "Bearer t0ken", who)
	assert.Nil(t, jsonrpc.HTTPRequestFromContext(t.Context()))

	// A handler's call to the client fails at once rather than waiting
	// for an answer that cannot come.
	err := c.Call(t.Context(), "callback", nil, nil)
	var werr *jsonrpc.Error
	require.ErrorAs(t, err, &werr)
	assert.Equal(t, jsonrpc.Code(-32001), werr.Code, "Call's error wraps ErrNoConnection")

	// A client that hangs up cancels the handler.
	ctx, cancel := context.WithCancel(t.Context())
	errc := make(chan error, 1)
	go func() { errc <- c.Call(ctx, "wait", nil, nil) }()
	<-started
	cancel()
	assert.ErrorIs(t, <-errc, context.Canceled)
	select {
	case err := <-ended:
		assert.ErrorIs(t, err, context.Canceled)
	case <-time.After(10 * time.Second):
		t.Fatal("the handler's context was not cancelled when the client went away")
	}
}

func TestHTTPClient(t *testing.T) {
	checkLeaks(t)
	mux := progressMux()
	mux.Handle("sum", jsonrpc.Func(func(_ context.Context, nums []int) (int, error) {
		s := 0
		for _, n := range nums {
			s += n
		}
		return s, nil
	}))
	var notified atomic.Int32
	mux.HandleFunc("note", func(context.Context, *jsonrpc.Request) (any, error) {
		notified.Add(1)
		return nil, nil
	})
	var conns atomic.Int32
	ts := httptest.NewUnstartedServer(&jsonrpc.Server{Options: jsonrpc.Options{Handler: mux}})
	ts.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			conns.Add(1)
		}
	}
	ts.Start()
	defer ts.Close()
	ctx := t.Context()

	var notes []string
	c := &jsonrpc.HTTPClient{URL: ts.URL, HTTP: ts.Client(), OnNotify: func(r *jsonrpc.Request) {
		notes = append(notes, r.Method+" "+string(r.Params))
	}}
	for i := range 20 {
		var n int
		require.NoError(t, c.Call(ctx, "sum", []int{i, 1}, &n))
		assert.Equal(t, i+1, n)
	}
	assert.Equal(t, int32(1), conns.Load(), "calls reuse one kept-alive connection")

	var done string
	require.NoError(t, c.Call(ctx, "progress", map[string]int{"N": 2}, &done))
	assert.Equal(t, "done", done)
	assert.Equal(t, []string{`progress {"i":0}`, `progress {"i":1}`}, notes)

	err := c.Call(ctx, "missing", nil, nil)
	var werr *jsonrpc.Error
	require.ErrorAs(t, err, &werr)
	assert.Equal(t, jsonrpc.CodeMethodNotFound, werr.Code)

	require.NoError(t, c.Notify(ctx, "note", nil))
	assert.Equal(t, int32(1), notified.Load(), "Notify returns once the server has run it")

	sum, bad := &jsonrpc.BatchCall{Method: "sum", Params: []int{2, 3}, Result: new(int)}, &jsonrpc.BatchCall{Method: "missing"}
	require.NoError(t, c.Batch(ctx, sum, bad, &jsonrpc.BatchCall{Method: "note", Notify: true}))
	assert.NoError(t, sum.Err)
	assert.Equal(t, 5, *sum.Result.(*int))
	require.ErrorAs(t, bad.Err, &werr)
	assert.Equal(t, jsonrpc.CodeMethodNotFound, werr.Code)
	require.NoError(t, c.Batch(ctx, &jsonrpc.BatchCall{Method: "note", Notify: true}))
	assert.Equal(t, int32(3), notified.Load())

	var items []string
	for item, err := range c.Stream(ctx, "count", map[string]int{"N": 3}) {
		require.NoError(t, err)
		items = append(items, string(item))
	}
	assert.Equal(t, []string{"0", "1", "2"}, items)
	for item, err := range c.Stream(ctx, "count", map[string]int{"N": 1000}) {
		require.NoError(t, err)
		if string(item) == "1" {
			break // drops the request
		}
	}
	for _, err := range c.Stream(ctx, "missing", nil) {
		require.ErrorAs(t, err, &werr)
	}

	bad415 := &jsonrpc.HTTPClient{URL: ts.URL + "/", HTTP: &http.Client{Transport: contentTypeSetter{ts.Client().Transport}}}
	err = bad415.Call(ctx, "sum", []int{1}, nil)
	var herr *jsonrpc.HTTPError
	require.ErrorAs(t, err, &herr)
	assert.Equal(t, http.StatusUnsupportedMediaType, herr.StatusCode)
	ts.CloseClientConnections()
}

// contentTypeSetter sends every request as text/plain.
type contentTypeSetter struct{ rt http.RoundTripper }

func (c contentTypeSetter) RoundTrip(r *http.Request) (*http.Response, error) {
	r.Header.Set("Content-Type", "text/plain")
	return c.rt.RoundTrip(r)
}

// TestHTTPClientReadsAnyFraming serves canned responses in each framing
// the client understands, with notifications and stray messages around
// the answer.
func TestHTTPClientReadsAnyFraming(t *testing.T) {
	checkLeaks(t)
	answer := `{"jsonrpc":"2.0","id":1,"result":42}`
	bodies := map[string]string{
		"application/json":     " " + answer + " ",
		"application/x-ndjson": `{"jsonrpc":"2.0","method":"log","params":["a"]}` + "\r\n\n" + answer + "\n",
		"text/event-stream": ": comment\nevent: message\nid: 1\ndata: {\"jsonrpc\":\"2.0\",\ndata: \"method\":\"log\",\"params\":[\"a\"]}\n\n" +
			"retry: 10\ndata: " + `{"jsonrpc":"2.0","id":99,"result":0}` + "\r\n\r\ndata: " + answer + "\n\n",
	}
	for ctype, body := range bodies {
		t.Run(ctype, func(t *testing.T) {
			ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", ctype)
				_, _ = io.WriteString(w, body)
			}))
			defer ts.Close()
			var notes []string
			c := &jsonrpc.HTTPClient{URL: ts.URL, HTTP: ts.Client(), OnNotify: func(r *jsonrpc.Request) {
				notes = append(notes, r.Method+string(r.Params))
			}}
			var n int
			require.NoError(t, c.Call(t.Context(), "x", nil, &n))
			assert.Equal(t, 42, n)
			if ctype != "application/json" {
				assert.Equal(t, []string{`log["a"]`}, notes)
			}
		})
	}
	t.Run("events without a message", func(t *testing.T) {
		// An MCP server primes the client's resumption with an event
		// that has an id and empty data; events of blank data carry no
		// message either.
		ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/event-stream")
			_, _ = io.WriteString(w, "id: 0\ndata:\n\ndata: \r\ndata:\t\n\n: keep-alive\n\ndata: "+answer+"\n\n")
		}))
		defer ts.Close()
		c := &jsonrpc.HTTPClient{URL: ts.URL, HTTP: ts.Client(), OnNotify: func(*jsonrpc.Request) {}}
		var n int
		require.NoError(t, c.Call(t.Context(), "x", nil, &n))
		assert.Equal(t, 42, n)
	})
	t.Run("no answer", func(t *testing.T) {
		ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/event-stream")
			_, _ = io.WriteString(w, "data: {\"jsonrpc\":\"2.0\",\"method\":\"log\"}\n\n")
		}))
		defer ts.Close()
		c := &jsonrpc.HTTPClient{URL: ts.URL, HTTP: ts.Client()}
		assert.Error(t, c.Call(t.Context(), "x", nil, nil))
	})
	t.Run("event over the limit", func(t *testing.T) {
		ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/event-stream")
			_, _ = io.WriteString(w, "data: "+strings.Repeat("x", 10000)+"\n\n")
		}))
		defer ts.Close()
		c := &jsonrpc.HTTPClient{URL: ts.URL, HTTP: ts.Client(), MaxMessageSize: 1000}
		assert.ErrorIs(t, c.Call(t.Context(), "x", nil, nil), jsonrpc.ErrMessageTooLarge)
	})
}

// TestHTTPClientMatchesAsAConnection answers HTTPClient's batches and
// streams with canned responses that a connection's reader would also
// have to sort out: answers to ids not in the batch, an id answered
// twice, an invalid answer, items for another call, and an item without
// its "item" member.
func TestHTTPClientMatchesAsAConnection(t *testing.T) {
	checkLeaks(t)
	var body string
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id := firstID(r)
		ids := strings.NewReplacer("ID+1", fmt.Sprint(id+1), "ID+2", fmt.Sprint(id+2), "ID+3", fmt.Sprint(id+3), "ID", fmt.Sprint(id))
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = io.WriteString(w, ids.Replace(body))
	}))
	defer ts.Close()
	c := &jsonrpc.HTTPClient{URL: ts.URL, HTTP: ts.Client()}
	ctx := t.Context()

	t.Run("batch", func(t *testing.T) {
		// The batch's ids are ID, ID+1 (a notification's, unused) and
		// ID+2; ID+3 is no call of the batch.
		body = "data: [" + strings.Join([]string{
			`{"jsonrpc":"2.0","id":ID,"result":"first"}`,
			`{"jsonrpc":"2.0","id":ID,"result":"second"}`,
			`{"jsonrpc":"2.0","id":ID+1,"result":"to a notification"}`,
			`{"jsonrpc":"2.0","id":ID+3,"result":"to no one"}`,
			`{"jsonrpc":"2.0","id":ID+2,"result":1,"error":{"code":1,"message":"both"}}`,
		}, ",") + "]\n\n"
		var got string
		a := &jsonrpc.BatchCall{Method: "a", Result: &got}
		n := &jsonrpc.BatchCall{Method: "n", Notify: true}
		b := &jsonrpc.BatchCall{Method: "b"}
		require.NoError(t, c.Batch(ctx, a, n, b))
		assert.NoError(t, a.Err)
		assert.Equal(t, "first", got, "the first answer to an id is taken, as on a connection")
		assert.NoError(t, n.Err)
		assert.ErrorContains(t, b.Err, "invalid response")
	})
	t.Run("stream", func(t *testing.T) {
		body = "data: " + `{"jsonrpc":"2.0","method":"$/stream","params":{"id":ID,"item":{"a":1}}}` + "\n\n" +
			"data: " + `{"jsonrpc":"2.0","method":"$/stream","params":{"id":ID+1,"item":2}}` + "\n\n" +
			"data: " + `{"jsonrpc":"2.0","method":"$/stream","params":{"id":ID}}` + "\n\n" +
			"data: " + `{"jsonrpc":"2.0","method":"$/stream","params":{"item":3}}` + "\n\n" +
			"data: " + `{"jsonrpc":"2.0","id":ID,"result":2}` + "\n\n"
		var items []string
		for item, err := range c.Stream(ctx, "s", nil) {
			require.NoError(t, err)
			items = append(items, string(item))
		}
		assert.Equal(t, []string{`{"a":1}`, "null"}, items, "an item without its member is null, as on a connection")
	})
}

// TestHTTPBodyAbuse sends bodies that lie about their length, and one
// that arrives slower than the server's read timeout.
func TestHTTPBodyAbuse(t *testing.T) {
	checkLeaks(t)
	var ran atomic.Int32
	mux := specMux()
	mux.HandleFunc("count", func(context.Context, *jsonrpc.Request) (any, error) {
		ran.Add(1)
		return "ran", nil
	})
	ts := httptest.NewUnstartedServer(&jsonrpc.Server{Options: jsonrpc.Options{Handler: mux}})
	ts.Config.ReadTimeout = 300 * time.Millisecond
	ts.Start()
	defer ts.Close()
	addr := ts.Listener.Addr().String()
	call := `{"jsonrpc":"2.0","id":1,"method":"count"}`

	raw := func(t *testing.T, payload string, pace time.Duration) string {
		t.Helper()
		nc, err := net.Dial("tcp", addr)
		require.NoError(t, err)
		defer nc.Close()
		_ = nc.SetDeadline(time.Now().Add(10 * time.Second))
		if pace == 0 {
			_, err = io.WriteString(nc, payload)
			require.NoError(t, err)
		} else {
			for i := range len(payload) {
				if _, err := nc.Write([]byte{payload[i]}); err != nil {
					break // the server gave up on us
				}
				time.Sleep(pace)
			}
		}
		resp, err := http.ReadResponse(bufio.NewReader(nc), nil)
		if err != nil {
			return "no response: " + err.Error()
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp.Status + " " + string(body)
	}
	head := func(n int) string {
		return fmt.Sprintf("POST / HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n", n)
	}

	t.Run("Content-Length too long", func(t *testing.T) {
		out := raw(t, head(len(call)+50)+call, 0)
		assert.NotContains(t, out, "200 OK")
		assert.Zero(t, ran.Load(), "a body cut short never runs")
		t.Log(out)
	})
	t.Run("Content-Length too short", func(t *testing.T) {
		out := raw(t, head(len(call)-5)+call, 0)
		assert.Contains(t, out, "200 OK")
		assert.Contains(t, out, `"code":-32700`, "the server reads what was declared, which is not JSON")
		assert.Zero(t, ran.Load())
	})
	t.Run("slower than the read timeout", func(t *testing.T) {
		out := raw(t, head(len(call))+call, 20*time.Millisecond)
		assert.NotContains(t, out, "200 OK")
		assert.Zero(t, ran.Load(), "a body that never arrived in time never runs")
		t.Log(out)
	})
	t.Run("honest", func(t *testing.T) {
		out := raw(t, head(len(call))+call, 0)
		assert.Contains(t, out, `"result":"ran"`)
		assert.Equal(t, int32(1), ran.Load())
	})
}

// TestHTTPShutdown checks that Server.Shutdown lets a request in flight
// over HTTP finish, and Close cancels one.
func TestHTTPShutdown(t *testing.T) {
	checkLeaks(t)
	release := make(chan struct{})
	started := make(chan struct{}, 2)
	mux := new(jsonrpc.Mux)
	mux.HandleFunc("block", func(ctx context.Context, _ *jsonrpc.Request) (any, error) {
		started <- struct{}{}
		select {
		case <-release:
			return "released", nil
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	})
	srv := &jsonrpc.Server{Options: jsonrpc.Options{Handler: mux, StopGrace: time.Second}}
	ts := httptest.NewServer(srv)
	defer ts.Close()
	c := &jsonrpc.HTTPClient{URL: ts.URL, HTTP: ts.Client()}

	var wg sync.WaitGroup
	var got string
	var callErr error
	wg.Go(func() { callErr = c.Call(t.Context(), "block", nil, &got) })
	<-started
	shut := make(chan error, 1)
	go func() { shut <- srv.Shutdown(t.Context()) }()
	select {
	case err := <-shut:
		t.Fatalf("Shutdown returned %v with a request in flight", err)
	case <-time.After(50 * time.Millisecond):
	}
	close(release)
	require.NoError(t, <-shut)
	wg.Wait()
	require.NoError(t, callErr)
	assert.Equal(t, "released", got)

	// Once shut down, the server refuses.
	var herr *jsonrpc.HTTPError
	require.ErrorAs(t, c.Call(t.Context(), "block", nil, nil), &herr)
	assert.Equal(t, http.StatusServiceUnavailable, herr.StatusCode)
}

func TestHTTPCloseCancels(t *testing.T) {
	checkLeaks(t)
	started := make(chan struct{})
	mux := new(jsonrpc.Mux)
	mux.HandleFunc("block", func(ctx context.Context, _ *jsonrpc.Request) (any, error) {
		close(started)
		<-ctx.Done()
		return nil, ctx.Err()
	})
	srv := &jsonrpc.Server{Options: jsonrpc.Options{Handler: mux}}
	ts := httptest.NewServer(srv)
	defer ts.Close()
	c := &jsonrpc.HTTPClient{URL: ts.URL, HTTP: ts.Client()}
	errc := make(chan error, 1)
	go func() { errc <- c.Call(t.Context(), "block", nil, nil) }()
	<-started
	require.NoError(t, srv.Close())
	err := <-errc
	require.Error(t, err, "the call was cancelled by Close")
}

// BenchmarkHTTPRoundTrip measures a call through HTTPClient and
// ServeHTTP over loopback, kept alive.
func BenchmarkHTTPRoundTrip(b *testing.B) {
	mux := new(jsonrpc.Mux)
	mux.HandleFunc("echo", func(_ context.Context, req *jsonrpc.Request) (any, error) {
		return req.Params, nil
	})
	ts := httptest.NewServer(&jsonrpc.Server{Options: jsonrpc.Options{Handler: mux}})
	defer ts.Close()
	tr := ts.Client().Transport.(*http.Transport)
	tr.MaxIdleConnsPerHost = 128
	c := &jsonrpc.HTTPClient{URL: ts.URL, HTTP: ts.Client()}
	for _, callers := range []int{1, 64} {
		b.Run(fmt.Sprintf("callers=%d", callers), func(b *testing.B) {
			// callLoop runs its parallelism per GOMAXPROCS.
			callLoop(b, context.Background(), c, max(1, callers/runtime.GOMAXPROCS(0)))
		})
	}
	ts.CloseClientConnections()
}

// BenchmarkServeHTTP measures ServeHTTP alone, without a network: what
// the library adds to each HTTP call on the server's side.
func BenchmarkServeHTTP(b *testing.B) {
	benchServeHTTP(b, "", `{"jsonrpc":"2.0","id":1,"result":{"a":1}}`+"\n")
}

// BenchmarkServeHTTPSSE is BenchmarkServeHTTP with the answer asked for
// as a server-sent event, the framing of MCP's Streamable HTTP.
func BenchmarkServeHTTPSSE(b *testing.B) {
	benchServeHTTP(b, "text/event-stream", "event: message\ndata: "+`{"jsonrpc":"2.0","id":1,"result":{"a":1}}`+"\n\n")
}

// benchServeHTTP serves one echo call after another, with accept as the
// request's Accept header (if set), each answered with want.
func benchServeHTTP(b *testing.B, accept, want string) {
	mux := new(jsonrpc.Mux)
	mux.HandleFunc("echo", func(_ context.Context, req *jsonrpc.Request) (any, error) {
		return req.Params, nil
	})
	srv := &jsonrpc.Server{Options: jsonrpc.Options{Handler: mux}}
	body := `{"jsonrpc":"2.0","id":1,"method":"echo","params":{"a":1}}`
	rd := strings.NewReader(body)
	req := httptest.NewRequest(http.MethodPost, "/", rd)
	req.Header.Set("Content-Type", "application/json")
	if accept != "" {
		req.Header.Set("Accept", accept)
	}
	w := &discardResponse{h: http.Header{}}
	b.ReportAllocs()
	for b.Loop() {
		rd.Reset(body)
		w.n = 0
		clear(w.h)
		srv.ServeHTTP(w, req)
		if w.code != http.StatusOK || w.n != len(want) {
			b.Fatalf("status %d, %d bytes", w.code, w.n)
		}
	}
}

// discardResponse is an http.ResponseWriter that keeps only the status
// and the number of bytes written.
type discardResponse struct {
	h    http.Header
	code int
	n    int
}

func (d *discardResponse) Header() http.Header  { return d.h }
func (d *discardResponse) WriteHeader(code int) { d.code = code }
func (d *discardResponse) Write(p []byte) (int, error) {
	d.n += len(p)
	return len(p), nil
}

// BenchmarkHTTPClientCall measures HTTPClient.Call alone, without a
// network or a server: an http.RoundTripper answers each request in
// process, so what is counted beside it is the client's own work per
// call.
func BenchmarkHTTPClientCall(b *testing.B) {
	type pair struct {
		N int    `json:"n"`
		S string `json:"s"`
	}
	for _, bc := range []struct {
		name   string
		params any
		want   string
	}{
		{"raw", json.RawMessage(`[1,"hello"]`), `[1,"hello"]`},
		{"typed", pair{1, "hello"}, `{"n":1,"s":"hello"}`},
	} {
		b.Run(bc.name, func(b *testing.B) {
			c := &jsonrpc.HTTPClient{URL: "http://example.test/rpc", HTTP: &http.Client{Transport: echoTransport{}}}
			b.ReportAllocs()
			for b.Loop() {
				var out json.RawMessage
				if err := c.Call(b.Context(), "echo", bc.params, &out); err != nil {
					b.Fatal(err)
				}
				if string(out) != bc.want {
					b.Fatalf("echo returned %s", out)
				}
			}
		})
	}
}

// echoTransport answers a POST of one call to echo in process, with the
// id of the request and its params as the result, as plain JSON.
type echoTransport struct{}

var echoHeader = http.Header{"Content-Type": {"application/json"}}

func (echoTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	body, err := io.ReadAll(req.Body)
	_ = req.Body.Close()
	if err != nil {
		return nil, err
	}
	var in struct {
		ID     json.RawMessage `json:"id"`
		Params json.RawMessage `json:"params"`
	}
	if err := json.Unmarshal(body, &in); err != nil {
		return nil, err
	}
	out := `{"jsonrpc":"2.0","id":` + string(in.ID) + `,"result":` + string(in.Params) + "}\n"
	return &http.Response{
		Status:        "200 OK",
		StatusCode:    http.StatusOK,
		Proto:         "HTTP/1.1",
		ProtoMajor:    1,
		ProtoMinor:    1,
		Header:        echoHeader,
		Body:          io.NopCloser(strings.NewReader(out)),
		ContentLength: int64(len(out)),
		Request:       req,
	}, nil
}

// TestServeHTTPAllocs bounds what ServeHTTP allocates for a plain call
// beside the handler's own: the request's state in one piece, its body,
// the connection's channels and context, the method learnt and the
// goroutine that serves the body (9 in all, with the handler's one).
func TestServeHTTPAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector allocates")
	}
	mux := new(jsonrpc.Mux)
	mux.HandleFunc("echo", func(_ context.Context, req *jsonrpc.Request) (any, error) {
		return req.Params, nil
	})
	srv := &jsonrpc.Server{Options: jsonrpc.Options{Handler: mux}}
	body := `{"jsonrpc":"2.0","id":1,"method":"echo","params":{"a":1}}`
	rd := strings.NewReader(body)
	req := httptest.NewRequest(http.MethodPost, "/", rd)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	w := &discardResponse{h: http.Header{}}
	allocs := testing.AllocsPerRun(100, func() {
		rd.Reset(body)
		clear(w.h)
		srv.ServeHTTP(w, req)
	})
	assert.Equal(t, http.StatusOK, w.code)
	assert.Equal(t, "application/json", w.h.Get("Content-Type"))
	assert.Equal(t, "nosniff", w.h.Get("X-Content-Type-Options"))
	assert.LessOrEqual(t, allocs, 10.0, "allocations per request")
}

// TestHTTPClientCallAllocs bounds what HTTPClient.Call allocates beside
// net/http and the RoundTripper (about 27 of the 30 counted here, with
// the result's copy): the request's bytes, and nothing for its headers or
// for reading the answer.
func TestHTTPClientCallAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector allocates")
	}
	c := &jsonrpc.HTTPClient{URL: "http://example.test/rpc", HTTP: &http.Client{Transport: echoTransport{}}}
	params := json.RawMessage(`[1,"hello"]`)
	var out json.RawMessage
	allocs := testing.AllocsPerRun(100, func() {
		if err := c.Call(t.Context(), "echo", params, &out); err != nil {
			t.Fatal(err)
		}
	})
	assert.Equal(t, string(params), string(out))
	assert.LessOrEqual(t, allocs, 31.0, "allocations per call")
}
