package jsonrpc_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ndjsonrpc/jsonrpc"
)

// guard bounds every wait on the server in the tests below. It only turns
// a hang into a failure: no test passes or fails because of how long
// something takes.
const guard = 10 * time.Second

// pipeServer runs Serve over a pair of io.Pipes: the test writes request
// lines into one and reads response lines from the other.
type pipeServer struct {
	t        *testing.T
	in       *io.PipeWriter
	out      *io.PipeReader
	lines    chan string
	errc     chan error
	readDone chan struct{}
	served   bool
	err      error
}

// startPipe starts srv.Serve(ctx, ...) over pipes. Its cleanup closes the
// input, waits for Serve and for the output reader, so a test that has not
// finished its server still leaves nothing behind. Call checkLeaks first.
func startPipe(t *testing.T, ctx context.Context, srv *jsonrpc.Server) *pipeServer {
	t.Helper()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	p := &pipeServer{
		t:        t,
		in:       inW,
		out:      outR,
		lines:    make(chan string, 1<<14),
		errc:     make(chan error, 1),
		readDone: make(chan struct{}),
	}
	go func() {
		err := srv.Serve(ctx, inR, outW)
		_ = outW.Close()
		p.errc <- err
	}()
	go func() {
		defer close(p.readDone)
		defer close(p.lines)
		sc := bufio.NewScanner(outR)
		sc.Buffer(nil, 1<<26)
		for sc.Scan() {
			p.lines <- sc.Text()
		}
	}()
	t.Cleanup(func() {
		_ = inW.Close()
		if !p.served {
			select {
			case p.err = <-p.errc:
				p.served = true
			case <-time.After(guard):
				t.Error("Serve did not return at the end of the test")
			}
		}
		_ = outR.Close()
		select {
		case <-p.readDone:
		case <-time.After(guard):
			t.Error("output reader did not end")
		}
	})
	return p
}

// send writes lines to the server, each ended by "\n".
func (p *pipeServer) send(lines ...string) {
	p.t.Helper()
	data := strings.Join(lines, "\n") + "\n"
	done := make(chan error, 1)
	go func() {
		_, err := io.WriteString(p.in, data)
		done <- err
	}()
	select {
	case err := <-done:
		require.NoError(p.t, err, "writing to the server")
	case <-time.After(guard):
		require.FailNow(p.t, "the server does not read its input")
	}
}

// recv returns the next output line.
func (p *pipeServer) recv() string {
	p.t.Helper()
	select {
	case l, ok := <-p.lines:
		require.True(p.t, ok, "the output ended")
		return l
	case <-time.After(guard):
		require.FailNow(p.t, "no output from the server")
	}
	return ""
}

// wait returns what Serve returned, without closing the input.
func (p *pipeServer) wait() error {
	p.t.Helper()
	if !p.served {
		select {
		case p.err = <-p.errc:
			p.served = true
		case <-time.After(guard):
			require.FailNow(p.t, "Serve did not return")
		}
	}
	return p.err
}

// finish closes the input and returns what Serve returned.
func (p *pipeServer) finish() error {
	p.t.Helper()
	require.NoError(p.t, p.in.Close())
	return p.wait()
}

// rest returns the output lines not yet received, once the output ends.
func (p *pipeServer) rest() []string {
	p.t.Helper()
	var out []string
	for {
		select {
		case l, ok := <-p.lines:
			if !ok {
				return out
			}
			out = append(out, l)
		case <-time.After(guard):
			require.FailNow(p.t, "the output did not end")
		}
	}
}

// decodeResponse decodes one output line strictly as a Response.
func decodeResponse(t *testing.T, line string) jsonrpc.Response {
	t.Helper()
	var r jsonrpc.Response
	require.NoError(t, json.Unmarshal([]byte(line), &r), "response line %q", line)
	return r
}

// responsesByID decodes lines as responses and maps them by the JSON text of
// their ids, failing on an id answered twice.
func responsesByID(t *testing.T, lines []string) map[string]jsonrpc.Response {
	t.Helper()
	m := make(map[string]jsonrpc.Response)
	for _, l := range lines {
		r := decodeResponse(t, l)
		_, dup := m[r.ID.String()]
		assert.False(t, dup, "id %s answered twice", r.ID)
		m[r.ID.String()] = r
	}
	return m
}

// req builds a request line.
func req(id, method, params string) string {
	s := `{"jsonrpc":"2.0"`
	if id != "" {
		s += `,"id":` + id
	}
	s += `,"method":` + strconv.Quote(method)
	if params != "" {
		s += `,"params":` + params
	}
	return s + "}"
}

func cancelLine(id string) string {
	return `{"jsonrpc":"2.0","method":"$/cancelRequest","params":{"id":` + id + `}}`
}

func TestServeOneShot(t *testing.T) {
	tests := []struct {
		name  string
		srv   func() *jsonrpc.Server
		input string
		want  []string // expected output lines, compared as JSON, in order
	}{
		{
			name:  "result",
			input: req("1", "echo", `[1,"a"]`) + "\n",
			want:  []string{`{"jsonrpc":"2.0","id":1,"result":[1,"a"]}`},
		},
		{
			name:  "last line without newline",
			input: req("1", "echo", `[1]`),
			want:  []string{`{"jsonrpc":"2.0","id":1,"result":[1]}`},
		},
		{
			name:  "null id is answered with null",
			input: req("null", "echo", `{"a":1}`) + "\n",
			want:  []string{`{"jsonrpc":"2.0","id":null,"result":{"a":1}}`},
		},
		{
			name:  "null id unknown method",
			input: req("null", "nope", "") + "\n",
			want:  []string{`{"jsonrpc":"2.0","id":null,"error":{"code":-32601,"message":"Method not found"}}`},
		},
		{
			name:  "no params gives null to echo",
			input: req(`"x"`, "echo", "") + "\n",
			want:  []string{`{"jsonrpc":"2.0","id":"x","result":null}`},
		},
		{
			name: "notifications are never answered, invalid requests are",
			input: strings.Join([]string{
				req("", "echo", "[1]"),
				req("", "no such method", ""),
				req("", "subtract", `"bad"`), // invalid params member: invalid request, but no id: still an error
			}, "\n") + "\n",
			want: []string{`{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Invalid Request"}}`},
		},
		{
			name: "notification whose handler fails is not answered",
			input: req("", "subtract", `{"minuend":"x"}`) + "\n" +
				req("", "sum", `{"not":"an array"}`) + "\n",
			want: nil,
		},
		{
			name:  "broken line then a fresh line",
			input: `{"jsonrpc":"2.0","id":1,"method":"echo",` + "\n" + req("2", "echo", "[2]") + "\n",
			want: []string{
				`{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Parse error"}}`,
				`{"jsonrpc":"2.0","id":2,"result":[2]}`,
			},
		},
		{
			name:  "invalid UTF-8 is a parse error",
			input: `{"jsonrpc":"2.0","id":1,"method":"ec` + "\xff" + `ho"}` + "\n",
			want:  []string{`{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Parse error"}}`},
		},
		{
			name:  "trailing garbage is a parse error",
			input: req("1", "echo", "") + " x\n",
			want:  []string{`{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Parse error"}}`},
		},
		{
			name:  "scalar is an invalid request",
			input: "42\n\"x\"\nnull\n",
			want: []string{
				`{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Invalid Request"}}`,
				`{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Invalid Request"}}`,
				`{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Invalid Request"}}`,
			},
		},
		{
			name: "CRLF and blank lines",
			input: req("1", "echo", "[1]") + "\r\n\r\n   \n\t\r\n\n" + req("2", "echo", "[2]") + "\r\n" +
				req("3", "echo", "[3]") + "\r",
			want: []string{
				`{"jsonrpc":"2.0","id":1,"result":[1]}`,
				`{"jsonrpc":"2.0","id":2,"result":[2]}`,
				`{"jsonrpc":"2.0","id":3,"result":[3]}`,
			},
		},
		{
			name:  "valid response from the peer is not answered",
			input: `{"jsonrpc":"2.0","id":1,"result":5}` + "\n" + `{"jsonrpc":"2.0","id":2,"error":{"code":1,"message":"m"}}` + "\n",
			want:  nil,
		},
		{
			name:  "response with both result and error is an invalid request",
			input: `{"jsonrpc":"2.0","id":1,"result":5,"error":{"code":1,"message":"m"}}` + "\n",
			want:  []string{`{"jsonrpc":"2.0","id":1,"error":{"code":-32600,"message":"Invalid Request"}}`},
		},
		{
			name: "duplicate unknown members are checked line by line",
			input: `{"jsonrpc":"2.0","id":1,"method":"echo","params":[1],` + manyMembers(40, "") + "}\n" +
				`{"jsonrpc":"2.0","id":2,"method":"echo",` + manyMembers(20, `"u3":1`) + "}\n" +
				`{"jsonrpc":"2.0","id":3,"method":"echo","params":[3],` + manyMembers(40, "") + "}\n" +
				`{"jsonrpc":"2.0","id":4,"method":"echo","params":[4],"u1":1}` + "\n",
			want: []string{
				`{"jsonrpc":"2.0","id":1,"result":[1]}`,
				`{"jsonrpc":"2.0","id":2,"error":{"code":-32600,"message":"Invalid Request"}}`,
				`{"jsonrpc":"2.0","id":3,"result":[3]}`,
				`{"jsonrpc":"2.0","id":4,"result":[4]}`,
			},
		},
		{
			name: "zero Server answers method not found",
			srv:  func() *jsonrpc.Server { return &jsonrpc.Server{} },
			input: req("1", "echo", "") + "\n" +
				req("", "echo", "") + "\n",
			want: []string{`{"jsonrpc":"2.0","id":1,"error":{"code":-32601,"message":"Method not found"}}`},
		},
		{
			name:  "zero Mux answers method not found",
			srv:   func() *jsonrpc.Server { return &jsonrpc.Server{Options: jsonrpc.Options{Handler: new(jsonrpc.Mux)}} },
			input: req("1", "echo", "") + "\n",
			want:  []string{`{"jsonrpc":"2.0","id":1,"error":{"code":-32601,"message":"Method not found"}}`},
		},
		{
			name: "result that cannot be encoded",
			srv: func() *jsonrpc.Server {
				mux := new(jsonrpc.Mux)
				mux.HandleFunc("chan", func(context.Context, *jsonrpc.Request) (any, error) { return make(chan int), nil })
				mux.HandleFunc("raw", func(context.Context, *jsonrpc.Request) (any, error) { return json.RawMessage(`{`), nil })
				return &jsonrpc.Server{Options: jsonrpc.Options{Handler: mux, HideErrorDetail: true}}
			},
			input: req("1", "chan", "") + "\n" + req("2", "raw", "") + "\n",
			want: []string{
				`{"jsonrpc":"2.0","id":1,"error":{"code":-32603,"message":"Internal error","data":{"exception":"*json.UnsupportedTypeError"}}}`,
				`{"jsonrpc":"2.0","id":2,"error":{"code":-32603,"message":"Internal error","data":{"exception":"*errors.errorString"}}}`,
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			srv := &jsonrpc.Server{Options: jsonrpc.Options{Handler: specMux()}}
			if tc.srv != nil {
				srv = tc.srv()
			}
			// The lines carry one request at most each that a handler runs,
			// so their answers come in input order.
			got := serveString(t, srv, tc.input)
			require.Len(t, got, len(tc.want), "output: %q", got)
			for i := range tc.want {
				assert.JSONEq(t, tc.want[i], got[i])
			}
		})
	}
}

func TestServePackageFunc(t *testing.T) {
	checkLeaks(t)
	var out bytes.Buffer
	err := jsonrpc.Serve(t.Context(), strings.NewReader(req("7", "x", "")+"\n"), &out, nil)
	require.NoError(t, err)
	assert.JSONEq(t, `{"jsonrpc":"2.0","id":7,"error":{"code":-32601,"message":"Method not found"}}`, strings.TrimSpace(out.String()))
}

func TestServeOverLongLine(t *testing.T) {
	long := `{"jsonrpc":"2.0","id":1,"method":"echo","params":["` + strings.Repeat("x", 5000) + `"]}`
	tests := []struct {
		name  string
		input string
		want  []string // ids of the answers, in order; "null" for the limit error
	}{
		{"alone", long + "\n", []string{"null"}},
		{"between requests", req("1", "echo", "[1]") + "\n" + long + "\n" + req("2", "echo", "[2]") + "\n", []string{"1", "null", "2"}},
		{"last without newline", req("1", "echo", "[1]") + "\n" + long, []string{"1", "null"}},
		{"with CRLF", long + "\r\n" + req("2", "echo", "[2]") + "\r\n", []string{"null", "2"}},
		{"two in a row", long + "\n" + long + "\n" + req("3", "echo", "[3]") + "\n", []string{"null", "null", "3"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			srv := &jsonrpc.Server{Options: jsonrpc.Options{Handler: specMux(), MaxMessageSize: 100}}
			got := serveString(t, srv, tc.input)
			require.Len(t, got, len(tc.want), "output: %q", got)
			for i, id := range tc.want {
				r := decodeResponse(t, got[i])
				assert.Equal(t, id, r.ID.String())
				if id == "null" {
					require.NotNil(t, r.Error, got[i])
					assert.Equal(t, jsonrpc.CodeInvalidRequest, r.Error.Code)
				} else {
					assert.Nil(t, r.Error, got[i])
					assert.JSONEq(t, "["+id+"]", string(r.Result))
				}
			}
		})
	}
}

func TestServeAnswersEachRequestOnce(t *testing.T) {
	const n = 300
	var lines []string
	for i := range n {
		switch i % 3 {
		case 0:
			lines = append(lines, req(strconv.Itoa(i), "slow", "["+strconv.Itoa(i)+"]"))
		case 1:
			lines = append(lines, req(`"s`+strconv.Itoa(i)+`"`, "echo", "["+strconv.Itoa(i)+"]"))
		case 2:
			lines = append(lines, req("", "slow", "["+strconv.Itoa(i)+"]")) // notification
		}
	}
	var notified atomic.Int64
	mux := specMux()
	mux.HandleFunc("slow", func(ctx context.Context, r *jsonrpc.Request) (any, error) {
		if r.ID.IsZero() {
			notified.Add(1)
		}
		select {
		case <-time.After(time.Duration(len(r.Params)%3) * time.Millisecond): // vary the order; not checked
		case <-ctx.Done():
		}
		return r.Params, nil
	})
	got := serveString(t, &jsonrpc.Server{Options: jsonrpc.Options{Handler: mux, MaxInFlight: 8}}, strings.Join(lines, "\n")+"\n")
	byID := responsesByID(t, got)
	assert.Len(t, got, 2*n/3)
	for i := range n {
		var id string
		switch i % 3 {
		case 0:
			id = strconv.Itoa(i)
		case 1:
			id = `"s` + strconv.Itoa(i) + `"`
		default:
			continue
		}
		r, ok := byID[id]
		if assert.True(t, ok, "no answer for %s", id) {
			assert.JSONEq(t, "["+strconv.Itoa(i)+"]", string(r.Result))
		}
	}
	assert.Equal(t, int64(n/3), notified.Load(), "every notification runs")
}

// TestServeSlowHandlerDoesNotStopReading checks that a request that blocks
// until a later request arrives is not a deadlock.
func TestServeSlowHandlerDoesNotStopReading(t *testing.T) {
	checkLeaks(t)
	release := make(chan struct{})
	mux := new(jsonrpc.Mux)
	mux.HandleFunc("wait", func(ctx context.Context, _ *jsonrpc.Request) (any, error) {
		select {
		case <-release:
			return "released", nil
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	})
	mux.HandleFunc("release", func(context.Context, *jsonrpc.Request) (any, error) {
		close(release)
		return "ok", nil
	})
	p := startPipe(t, t.Context(), &jsonrpc.Server{Options: jsonrpc.Options{Handler: mux}})
	p.send(req("1", "wait", ""))
	p.send(req("2", "release", ""))
	byID := responsesByID(t, []string{p.recv(), p.recv()})
	require.NoError(t, p.finish())
	assert.Empty(t, p.rest())
	assert.JSONEq(t, `"released"`, string(byID["1"].Result))
	assert.JSONEq(t, `"ok"`, string(byID["2"].Result))
}

// TestServeMaxInFlight checks that no more than MaxInFlight handlers run at
// once and that the others wait their turn.
func TestServeMaxInFlight(t *testing.T) {
	checkLeaks(t)
	synctest.Test(t, func(t *testing.T) {
		var running, peak, started atomic.Int64
		release := make(chan struct{})
		srv := &jsonrpc.Server{
			Options: jsonrpc.Options{
				MaxInFlight: 2,
				Handler: jsonrpc.HandlerFunc(func(ctx context.Context, r *jsonrpc.Request) (any, error) {
					started.Add(1)
					n := running.Add(1)
					for {
						p := peak.Load()
						if n <= p || peak.CompareAndSwap(p, n) {
							break
						}
					}
					defer running.Add(-1)
					<-release
					return r.ID.String(), nil
				}),
			},
		}
		p := startPipe(t, t.Context(), srv)
		for i := 1; i <= 4; i++ {
			p.send(req(strconv.Itoa(i), "block", ""))
		}
		synctest.Wait()
		assert.Equal(t, int64(2), started.Load(), "handlers started while two slots are taken")
		close(release)
		got := []string{p.recv(), p.recv(), p.recv(), p.recv()}
		require.NoError(t, p.finish())
		byID := responsesByID(t, got)
		assert.Len(t, byID, 4)
		assert.Equal(t, int64(4), started.Load())
		assert.Equal(t, int64(2), peak.Load())
	})
}

func TestServeCancelRequest(t *testing.T) {
	checkLeaks(t)
	started := make(chan string, 4)
	mux := new(jsonrpc.Mux)
	mux.HandleFunc("wait", func(ctx context.Context, r *jsonrpc.Request) (any, error) {
		started <- r.ID.String()
		<-ctx.Done()
		return nil, fmt.Errorf("stopped: %w", ctx.Err())
	})
	mux.HandleFunc("echo", func(_ context.Context, r *jsonrpc.Request) (any, error) { return r.Params, nil })
	p := startPipe(t, t.Context(), &jsonrpc.Server{Options: jsonrpc.Options{Handler: mux}})

	p.send(req(`"a"`, "wait", ""))
	assert.Equal(t, `"a"`, <-started)
	p.send(req("2", "wait", ""))
	assert.Equal(t, "2", <-started)
	// A cancel for an id nobody uses, and malformed cancels, do nothing.
	p.send(cancelLine("99"), `{"jsonrpc":"2.0","method":"$/cancelRequest","params":[2]}`,
		`{"jsonrpc":"2.0","method":"$/cancelRequest","params":{"id":{}}}`,
		`{"jsonrpc":"2.0","method":"$/cancelRequest"}`)
	p.send(cancelLine(`"a"`))
	r := decodeResponse(t, p.recv())
	assert.Equal(t, `"a"`, r.ID.String())
	if assert.NotNil(t, r.Error) {
		assert.Equal(t, jsonrpc.CodeRequestCancelled, r.Error.Code)
		assert.Equal(t, "Request cancelled", r.Error.Message)
	}
	// The other request is still running: a later request is answered
	// before it.
	p.send(req("3", "echo", "[3]"))
	r = decodeResponse(t, p.recv())
	assert.Equal(t, "3", r.ID.String())
	// A cancel inside a batch takes effect too.
	p.send("[" + cancelLine("2") + "]")
	r = decodeResponse(t, p.recv())
	assert.Equal(t, "2", r.ID.String())
	if assert.NotNil(t, r.Error) {
		assert.Equal(t, jsonrpc.CodeRequestCancelled, r.Error.Code)
	}
	require.NoError(t, p.finish())
	assert.Empty(t, p.rest())
}

// TestServeCancelQueued checks that a request still waiting for a slot when
// its cancel arrives never runs and is answered at once.
func TestServeCancelQueued(t *testing.T) {
	checkLeaks(t)
	started := make(chan struct{})
	release := make(chan struct{})
	var ranQueued atomic.Bool
	mux := new(jsonrpc.Mux)
	mux.HandleFunc("block", func(context.Context, *jsonrpc.Request) (any, error) {
		close(started)
		<-release
		return "done", nil
	})
	mux.HandleFunc("queued", func(context.Context, *jsonrpc.Request) (any, error) {
		ranQueued.Store(true)
		return "ran", nil
	})
	p := startPipe(t, t.Context(), &jsonrpc.Server{Options: jsonrpc.Options{Handler: mux, MaxInFlight: 1}})
	p.send(req("1", "block", ""))
	<-started
	p.send(req("2", "queued", ""))
	p.send(cancelLine("2"))

	// Answered while request 1 still blocks.
	r := decodeResponse(t, p.recv())
	assert.Equal(t, "2", r.ID.String())
	if assert.NotNil(t, r.Error) {
		assert.Equal(t, jsonrpc.CodeRequestCancelled, r.Error.Code)
	}
	close(release)
	r = decodeResponse(t, p.recv())
	assert.Equal(t, "1", r.ID.String())
	assert.JSONEq(t, `"done"`, string(r.Result))
	require.NoError(t, p.finish())
	assert.Empty(t, p.rest(), "request 2 is answered once")
	assert.False(t, ranQueued.Load(), "a cancelled queued request must not run")
}

func TestServeContextCancel(t *testing.T) {
	checkLeaks(t)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	started := make(chan struct{})
	var handlerErr atomic.Value
	mux := specMux()
	mux.HandleFunc("wait", func(ctx context.Context, _ *jsonrpc.Request) (any, error) {
		close(started)
		<-ctx.Done()
		handlerErr.Store(ctx.Err())
		return nil, ctx.Err()
	})
	p := startPipe(t, ctx, &jsonrpc.Server{Options: jsonrpc.Options{Handler: mux}})
	p.send(req("1", "echo", "[1]"))
	assert.JSONEq(t, `{"jsonrpc":"2.0","id":1,"result":[1]}`, p.recv())
	p.send(req("2", "wait", ""))
	<-started
	cancel()
	err := p.wait()
	require.ErrorIs(t, err, context.Canceled)
	assert.Equal(t, context.Canceled, handlerErr.Load(), "the handler's context is cancelled")
}

type failWriter struct{ err error }

func (w failWriter) Write([]byte) (int, error) { return 0, w.err }

func TestServeWriteError(t *testing.T) {
	errBroken := errors.New("broken output")
	t.Run("writer", func(t *testing.T) {
		checkLeaks(t)
		err := jsonrpc.Serve(t.Context(), strings.NewReader(req("1", "echo", "[1]")+"\n"+req("2", "echo", "[2]")+"\n"),
			failWriter{errBroken}, specMux())
		require.ErrorIs(t, err, errBroken)
	})
	t.Run("closed pipe", func(t *testing.T) {
		checkLeaks(t)
		inR, inW := io.Pipe()
		outR, outW := io.Pipe()
		require.NoError(t, outR.Close())
		errc := make(chan error, 1)
		go func() { errc <- jsonrpc.Serve(t.Context(), inR, outW, specMux()) }()
		t.Cleanup(func() { _ = inW.Close() })
		go func() { _, _ = io.WriteString(inW, req("1", "echo", "[1]")+"\n") }()
		select {
		case err := <-errc:
			require.ErrorIs(t, err, io.ErrClosedPipe)
		case <-time.After(guard):
			require.FailNow(t, "Serve did not return after a write error")
		}
	})
}

type errReader struct {
	data string
	err  error
}

func (r *errReader) Read(p []byte) (int, error) {
	if r.data == "" {
		return 0, r.err
	}
	n := copy(p, r.data)
	r.data = r.data[n:]
	return n, nil
}

func TestServeReadError(t *testing.T) {
	checkLeaks(t)
	errRead := errors.New("read failed")
	var out bytes.Buffer
	err := jsonrpc.Serve(t.Context(), &errReader{data: req("1", "echo", "[1]") + "\n", err: errRead}, &out, specMux())
	require.ErrorIs(t, err, errRead)
	assert.JSONEq(t, `{"jsonrpc":"2.0","id":1,"result":[1]}`, strings.TrimSpace(out.String()), "answers are flushed")
}

func TestServerClose(t *testing.T) {
	checkLeaks(t)
	started := make(chan struct{})
	var handlerErr atomic.Value
	srv := &jsonrpc.Server{
		Options: jsonrpc.Options{
			Handler: jsonrpc.HandlerFunc(func(ctx context.Context, _ *jsonrpc.Request) (any, error) {
				close(started)
				<-ctx.Done()
				handlerErr.Store(ctx.Err())
				return nil, ctx.Err()
			}),
		},
	}
	p := startPipe(t, t.Context(), srv)
	p.send(req("1", "wait", ""))
	<-started
	require.NoError(t, srv.Close())
	require.ErrorIs(t, p.wait(), jsonrpc.ErrServerClosed)
	assert.Equal(t, context.Canceled, handlerErr.Load(), "Close cancels the handlers")
	require.NoError(t, srv.Close(), "Close is idempotent")

	// A closed server serves no more.
	var out bytes.Buffer
	err := srv.Serve(t.Context(), strings.NewReader(req("2", "x", "")+"\n"), &out)
	require.ErrorIs(t, err, jsonrpc.ErrServerClosed)
	assert.Empty(t, out.String())
}

func TestServerCloseIdle(t *testing.T) {
	checkLeaks(t)
	srv := &jsonrpc.Server{Options: jsonrpc.Options{Handler: specMux()}}
	p := startPipe(t, t.Context(), srv)
	p.send(req("1", "echo", "[1]"))
	assert.JSONEq(t, `{"jsonrpc":"2.0","id":1,"result":[1]}`, p.recv())
	require.NoError(t, srv.Close())
	require.ErrorIs(t, p.wait(), jsonrpc.ErrServerClosed)
}

func TestServerShutdown(t *testing.T) {
	checkLeaks(t)
	synctest.Test(t, func(t *testing.T) {
		started := make(chan struct{})
		release := make(chan struct{})
		var finished atomic.Bool
		var ctxErr atomic.Value
		srv := &jsonrpc.Server{
			Options: jsonrpc.Options{
				Handler: jsonrpc.HandlerFunc(func(ctx context.Context, _ *jsonrpc.Request) (any, error) {
					close(started)
					<-release
					if err := ctx.Err(); err != nil {
						ctxErr.Store(err)
					}
					finished.Store(true)
					return "finished", nil
				}),
			},
		}
		p := startPipe(t, t.Context(), srv)
		p.send(req("1", "work", ""))
		<-started

		done := make(chan error, 1)
		go func() { done <- srv.Shutdown(t.Context()) }()
		synctest.Wait()
		select {
		case <-done:
			assert.Fail(t, "Shutdown returned while a handler was still running")
		default:
		}
		close(release)
		require.NoError(t, <-done)
		assert.True(t, finished.Load())
		assert.Nil(t, ctxErr.Load(), "Shutdown does not cancel the handlers")
		require.ErrorIs(t, p.wait(), jsonrpc.ErrServerClosed)
		assert.JSONEq(t, `{"jsonrpc":"2.0","id":1,"result":"finished"}`, p.recv(), "the answer is written")
	})
}

func TestServerShutdownContext(t *testing.T) {
	checkLeaks(t)
	synctest.Test(t, func(t *testing.T) {
		started := make(chan struct{})
		release := make(chan struct{})
		srv := &jsonrpc.Server{
			Options: jsonrpc.Options{
				Handler: jsonrpc.HandlerFunc(func(ctx context.Context, _ *jsonrpc.Request) (any, error) {
					close(started)
					<-release
					return nil, nil
				}),
			},
		}
		p := startPipe(t, t.Context(), srv)
		p.send(req("1", "work", ""))
		<-started
		ctx, cancel := context.WithTimeout(t.Context(), time.Second)
		defer cancel()
		err := srv.Shutdown(ctx)
		require.ErrorIs(t, err, context.DeadlineExceeded)
		close(release)
		require.ErrorIs(t, p.wait(), jsonrpc.ErrServerClosed)
	})
}

// TestServeCancelGrace checks that a handler that ignores its context does
// not hold Serve beyond StopGrace once the server is told to stop.
func TestServeCancelGrace(t *testing.T) {
	const grace = 50 * time.Millisecond
	tests := []struct {
		name string
		stop func(srv *jsonrpc.Server, cancel context.CancelFunc)
		want error
	}{
		{"Close", func(srv *jsonrpc.Server, _ context.CancelFunc) { _ = srv.Close() }, jsonrpc.ErrServerClosed},
		{"context", func(_ *jsonrpc.Server, cancel context.CancelFunc) { cancel() }, context.Canceled},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			checkLeaks(t)
			synctest.Test(t, func(t *testing.T) {
				started := make(chan struct{})
				release := make(chan struct{})
				defer close(release) // let the stuck handler go at the end
				srv := &jsonrpc.Server{
					Options: jsonrpc.Options{
						StopGrace: grace,
						Handler: jsonrpc.HandlerFunc(func(context.Context, *jsonrpc.Request) (any, error) {
							close(started)
							<-release // ignores its context
							return nil, nil
						}),
					},
				}
				ctx, cancel := context.WithCancel(t.Context())
				defer cancel()
				p := startPipe(t, ctx, srv)
				p.send(req("1", "stuck", ""))
				<-started

				start := time.Now()
				tc.stop(srv, cancel)
				select {
				case err := <-p.errc:
					p.served, p.err = true, err
					assert.ErrorIs(t, err, tc.want)
					assert.LessOrEqual(t, time.Since(start), grace)
				case <-time.After(10 * grace):
					assert.Fail(t, "Serve did not return within StopGrace of a stop while a handler ignores its context")
				}
			})
		})
	}
}

func TestServeHandlerPanic(t *testing.T) {
	var logBuf lockedBuffer
	logger := slogText(&logBuf)
	mux := specMux()
	mux.HandleFunc("panic", func(context.Context, *jsonrpc.Request) (any, error) {
		panicHere()
		return nil, nil
	})
	tests := []struct {
		name string
		hide bool
		data string
	}{
		{"detail", false, `{"exception":"panic","detail":"boom from the handler"}`},
		{"hidden detail", true, `{"exception":"panic"}`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			logBuf.mu.Lock()
			logBuf.buf.Reset()
			logBuf.mu.Unlock()
			srv := &jsonrpc.Server{Options: jsonrpc.Options{Handler: mux, Logger: logger, HideErrorDetail: tc.hide}}
			got := serveString(t, srv, req("1", "panic", "")+"\n"+req("2", "echo", "[2]")+"\n"+req("", "panic", "")+"\n"+req("3", "echo", "[3]")+"\n")
			require.Len(t, got, 3)
			byID := responsesByID(t, got)
			if assert.NotNil(t, byID["1"].Error) {
				assert.Equal(t, jsonrpc.CodeInternalError, byID["1"].Error.Code)
				assert.Equal(t, "Internal error", byID["1"].Error.Message)
				assert.JSONEq(t, tc.data, string(byID["1"].Error.Data))
			}
			assert.JSONEq(t, `[2]`, string(byID["2"].Result), "the server keeps serving")
			assert.JSONEq(t, `[3]`, string(byID["3"].Result), "the server keeps serving")
			log := logBuf.String()
			assert.Contains(t, log, "boom from the handler")
			assert.Contains(t, log, "goroutine ", "the log has the stack")
			assert.Contains(t, log, "panicHere", "the stack names the panicking function")
			assert.Equal(t, 2, strings.Count(log, "level=ERROR"), "both panics are logged")
		})
	}
}

//go:noinline
func panicHere() { panic("boom from the handler") }

// slogText returns a logger that writes every level as text to w.
func slogText(w io.Writer) *slog.Logger {
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

type ctxKey struct{}

// TestHandlerContext checks the context a handler gets: values and
// deadline of Serve's context, and its end when the handler returns.
func TestHandlerContext(t *testing.T) {
	checkLeaks(t)
	deadline := time.Now().Add(time.Hour)
	ctx, cancel := context.WithDeadline(context.WithValue(t.Context(), ctxKey{}, "from Serve"), deadline)
	defer cancel()

	type seen struct {
		value       any
		deadline    time.Time
		hasDeadline bool
		errDuring   error
	}
	kept := make(chan context.Context, 2)
	seenc := make(chan seen, 2)
	mux := new(jsonrpc.Mux)
	handler := func(armed bool) func(context.Context, *jsonrpc.Request) (any, error) {
		return func(ctx context.Context, _ *jsonrpc.Request) (any, error) {
			if armed {
				_ = ctx.Done() // arm the context while the handler runs
			}
			d, ok := ctx.Deadline()
			seenc <- seen{ctx.Value(ctxKey{}), d, ok, ctx.Err()}
			kept <- ctx
			return "ok", nil
		}
	}
	mux.HandleFunc("plain", handler(false))
	mux.HandleFunc("armed", handler(true))

	var out bytes.Buffer
	require.NoError(t, (&jsonrpc.Server{Options: jsonrpc.Options{Handler: mux}}).Serve(ctx, strings.NewReader(req("1", "plain", "")+"\n"+req("2", "armed", "")+"\n"), &out))
	assert.Len(t, splitLines(out.String()), 2)
	for _, name := range []string{"plain", "armed"} {
		t.Run(name, func(t *testing.T) {
			s := <-seenc
			assert.Equal(t, "from Serve", s.value)
			assert.True(t, s.hasDeadline)
			assert.True(t, deadline.Equal(s.deadline))
			assert.NoError(t, s.errDuring, "the context is live while the handler runs")

			hctx := <-kept
			assert.ErrorIs(t, hctx.Err(), context.Canceled, "the context ends when the handler returns")
			select {
			case <-hctx.Done():
			default:
				assert.Fail(t, "Done is not closed after the handler returned")
			}
			err := jsonrpc.Peer(hctx).Notify(hctx, "late", nil)
			assert.Error(t, err, "Notify after the handler returned")
		})
	}
}

// TestServeDuplicateIDsInFlight checks that a cancel reaches every request
// in flight with that id.
func TestServeDuplicateIDsInFlight(t *testing.T) {
	checkLeaks(t)
	started := make(chan struct{}, 2)
	mux := waitingMux(started)
	p := startPipe(t, t.Context(), &jsonrpc.Server{Options: jsonrpc.Options{Handler: mux}})
	p.send(req("5", "wait", ""))
	<-started
	p.send(req("5", "wait", ""))
	<-started
	p.send(cancelLine("5"))
	for range 2 {
		r := decodeResponse(t, p.recv())
		assert.Equal(t, "5", r.ID.String())
		if assert.NotNil(t, r.Error) {
			assert.Equal(t, jsonrpc.CodeRequestCancelled, r.Error.Code)
		}
	}
	require.NoError(t, p.finish())
	assert.Empty(t, p.rest())
}

// TestServeCancelQueuedBatchEntry checks that a batch entry cancelled
// while the batch waits for a slot never runs, and gets -32800 in the
// batch's answer.
func TestServeCancelQueuedBatchEntry(t *testing.T) {
	checkLeaks(t)
	synctest.Test(t, func(t *testing.T) {
		started := make(chan struct{})
		release := make(chan struct{})
		var ranCancelled atomic.Bool
		mux := specMux()
		mux.HandleFunc("block", func(context.Context, *jsonrpc.Request) (any, error) {
			close(started)
			<-release
			return "done", nil
		})
		mux.HandleFunc("mark", func(context.Context, *jsonrpc.Request) (any, error) {
			ranCancelled.Store(true)
			return "ran", nil
		})
		p := startPipe(t, t.Context(), &jsonrpc.Server{Options: jsonrpc.Options{Handler: mux, MaxInFlight: 1}})
		p.send(req("1", "block", ""))
		<-started
		p.send("[" + req("2", "mark", "") + "," + req("3", "echo", "[3]") + "]")
		p.send(cancelLine("2"))
		synctest.Wait() // the cancel has been handled: the reader waits for more
		close(release)
		got := []string{p.recv(), p.recv()}
		require.NoError(t, p.finish())
		assert.Empty(t, p.rest())
		if strings.HasPrefix(got[0], "[") {
			got[0], got[1] = got[1], got[0]
		}
		assert.JSONEq(t, `{"jsonrpc":"2.0","id":1,"result":"done"}`, got[0])
		assert.JSONEq(t, `[{"jsonrpc":"2.0","id":2,"error":{"code":-32800,"message":"Request cancelled"}},{"jsonrpc":"2.0","id":3,"result":[3]}]`, got[1])
		assert.False(t, ranCancelled.Load(), "the cancelled entry never runs")
	})
}

// TestServeQueueFull checks that once MaxInFlight requests run and the
// queue holds MaxPendingBytes, the reader waits too, and everything is
// answered in the end. The budget fits the running request (handed off
// from the reader, it counts its 64 KiB read buffer) and one queued request
// (its 42-byte line and 512 bytes of overhead), not two.
func TestServeQueueFull(t *testing.T) {
	checkLeaks(t)
	synctest.Test(t, func(t *testing.T) {
		release := make(chan struct{})
		var ran atomic.Int64
		srv := &jsonrpc.Server{
			Options: jsonrpc.Options{
				MaxInFlight:     1,
				MaxPendingBytes: 64<<10 + 800,
				Handler: jsonrpc.HandlerFunc(func(_ context.Context, r *jsonrpc.Request) (any, error) {
					ran.Add(1)
					if r.Method == "block" {
						<-release
					}
					return r.ID.String(), nil
				}),
			},
		}
		p := startPipe(t, t.Context(), srv)
		p.send(req("1", "block", ""))
		p.send(req("2", "quick", "")) // waits for the slot
		p.send(req("3", "quick", "")) // read; the reader now waits for room
		synctest.Wait()
		assert.Equal(t, int64(1), ran.Load())
		sent := make(chan struct{})
		go func() {
			defer close(sent)
			_, _ = io.WriteString(p.in, req("4", "quick", "")+"\n")
		}()
		synctest.Wait()
		select {
		case <-sent:
			assert.Fail(t, "the server read on with its queue full")
		default:
		}
		close(release)
		got := []string{p.recv(), p.recv(), p.recv(), p.recv()}
		<-sent
		require.NoError(t, p.finish())
		byID := responsesByID(t, got)
		for _, id := range []string{"1", "2", "3", "4"} {
			assert.JSONEq(t, strconv.Quote(id), string(byID[id].Result))
		}
	})
}

func TestServeWriteErrorOnLargeAnswer(t *testing.T) {
	errBroken := errors.New("broken output")
	big := `["` + strings.Repeat("z", 70<<10) + `"]`
	tests := []struct {
		name, in string
	}{
		{"single", req("1", "echo", big)},
		{"batch", "[" + req("1", "echo", big) + "," + req("2", "echo", "[2]") + "]"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			checkLeaks(t)
			err := jsonrpc.Serve(t.Context(), strings.NewReader(tc.in+"\n"+req("3", "echo", "[3]")+"\n"), failWriter{errBroken}, specMux())
			require.ErrorIs(t, err, errBroken)
		})
	}
}

// TestNotifyAfterClose checks Notify from a handler whose server is being
// closed: once Close has returned it fails with ErrClosed, and while the
// server stops, a notification it accepts is written, never lost.
func TestNotifyAfterClose(t *testing.T) {
	const waiters = 4
	tests := []struct {
		name string
		// during holds the server in the middle of stopping, after it has
		// cancelled the handlers' contexts, until they have called Notify;
		// otherwise they call it once Close has returned.
		during bool
	}{
		{"after Close returned", false},
		{"while the server stops", true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			checkLeaks(t)
			parent := &slowParent{Context: t.Context(), release: make(chan struct{})}
			closed := make(chan struct{})
			started := make(chan struct{})
			errc := make(chan error, waiters)
			srv := &jsonrpc.Server{
				Options: jsonrpc.Options{
					Handler: jsonrpc.HandlerFunc(func(ctx context.Context, _ *jsonrpc.Request) (any, error) {
						var wg sync.WaitGroup
						for range waiters {
							wg.Go(func() {
								<-ctx.Done()
								if !tc.during {
									<-closed
								}
								errc <- jsonrpc.Peer(ctx).Notify(ctx, "late", nil)
							})
						}
						close(started)
						wg.Wait()
						return nil, ctx.Err()
					}),
				},
			}
			p := startPipe(t, parent, srv)
			p.send(req("1", "wait", ""))
			<-started

			results := make(chan []error, 1)
			go func() {
				var errs []error
				for range waiters {
					errs = append(errs, <-errc)
				}
				close(parent.release)
				results <- errs
			}()
			parent.hold.Store(tc.during)
			require.NoError(t, srv.Close())
			close(closed)
			require.ErrorIs(t, p.wait(), jsonrpc.ErrServerClosed)
			accepted := 0
			for _, err := range <-results {
				if err == nil {
					accepted++
					continue
				}
				assert.ErrorIs(t, err, jsonrpc.ErrClosed)
				assert.Contains(t, err.Error(), "closed")
			}
			written := 0
			for _, line := range p.rest() {
				if strings.Contains(line, `"late"`) {
					written++
				}
			}
			assert.Equal(t, accepted, written, "every notification Notify accepted is written")
			if !tc.during {
				assert.Zero(t, accepted, "Notify after Close returned must fail")
			}
		})
	}
}

// slowParent is a context whose Done, once hold is set, waits for
// release before it answers. Given to Serve, it holds the server up while
// it stops: cancelling a child context consults its parent's Done.
type slowParent struct {
	context.Context
	hold    atomic.Bool
	release chan struct{}
}

func (p *slowParent) Done() <-chan struct{} {
	if p.hold.Load() {
		select {
		case <-p.release:
		case <-time.After(guard):
		}
	}
	return p.Context.Done()
}

// TestServeLargeResults checks that large results, which are written from
// where they lie instead of through the output buffer, come out whole, one
// line each, while other responses are written around them.
func TestServeLargeResults(t *testing.T) {
	checkLeaks(t)
	mux := new(jsonrpc.Mux)
	mux.HandleFunc("echo", func(_ context.Context, req *jsonrpc.Request) (any, error) {
		return req.Params, nil
	})
	mux.HandleFunc("later", func(_ context.Context, req *jsonrpc.Request) (any, error) {
		time.Sleep(3 * time.Millisecond) // long enough to be handed off
		return append(json.RawMessage(nil), req.Params...), nil
	})
	big := strings.Repeat("x", 300<<10)
	var in strings.Builder
	want := map[string]string{}
	for i := range 12 {
		method := []string{"echo", "later", "echo"}[i%3]
		params := fmt.Sprintf(`[%d]`, i)
		if i%2 == 0 {
			params = fmt.Sprintf(`[%d,"%s"]`, i, big)
		}
		fmt.Fprintf(&in, `{"jsonrpc":"2.0","id":%d,"method":%q,"params":%s}`+"\n", i, method, params)
		want[strconv.Itoa(i)] = params
	}
	lines := serveString(t, &jsonrpc.Server{Options: jsonrpc.Options{Handler: mux}}, in.String())
	require.Len(t, lines, len(want))
	for _, line := range lines {
		var resp struct {
			ID     json.RawMessage `json:"id"`
			Result json.RawMessage `json:"result"`
		}
		require.NoError(t, json.Unmarshal([]byte(line), &resp), "line of %d bytes", len(line))
		assert.Equal(t, want[string(resp.ID)], string(resp.Result), "id %s", resp.ID)
		delete(want, string(resp.ID))
	}
	assert.Empty(t, want, "ids never answered")
}

// TestServeRawJSONSpanningLines checks that raw JSON which spans several
// lines, in a result or in an error's data, is compacted onto the one line
// of its response.
func TestServeRawJSONSpanningLines(t *testing.T) {
	mux := new(jsonrpc.Mux)
	mux.HandleFunc("pretty", func(context.Context, *jsonrpc.Request) (any, error) {
		return json.RawMessage("{\n  \"a\": [1,\n 2]\n}"), nil
	})
	mux.HandleFunc("prettyError", func(context.Context, *jsonrpc.Request) (any, error) {
		return nil, &jsonrpc.Error{Code: 7, Message: "m", Data: json.RawMessage("[\n1\n]")}
	})
	lines := serveString(t, &jsonrpc.Server{Options: jsonrpc.Options{Handler: mux}},
		`{"jsonrpc":"2.0","id":1,"method":"pretty"}`+"\n"+`{"jsonrpc":"2.0","id":2,"method":"prettyError"}`+"\n")
	require.Len(t, lines, 2)
	assert.JSONEq(t, `{"jsonrpc":"2.0","id":1,"result":{"a":[1,2]}}`, lines[0])
	assert.JSONEq(t, `{"jsonrpc":"2.0","id":2,"error":{"code":7,"message":"m","data":[1]}}`, lines[1])
}

// TestServeShutdownSharedConn checks that Shutdown on a connection that is
// both the reader and the writer stops reading without closing it, so the
// response of a request in flight still reaches the peer.
func TestServeShutdownSharedConn(t *testing.T) {
	checkLeaks(t)
	release := make(chan struct{})
	started := make(chan struct{})
	mux := new(jsonrpc.Mux)
	mux.HandleFunc("wait", func(context.Context, *jsonrpc.Request) (any, error) {
		close(started)
		<-release
		return "done", nil
	})
	srv := &jsonrpc.Server{Options: jsonrpc.Options{Handler: mux}}
	serverSide, peer := net.Pipe()
	defer peer.Close()
	served := make(chan error, 1)
	go func() { served <- srv.Serve(context.Background(), serverSide, serverSide) }()
	_, err := peer.Write([]byte(`{"jsonrpc":"2.0","id":1,"method":"wait"}` + "\n"))
	require.NoError(t, err)
	recv(t, started, "the handler to start")

	shut := make(chan error, 1)
	go func() { shut <- srv.Shutdown(context.Background()) }()
	close(release)
	line, err := bufio.NewReader(peer).ReadString('\n')
	require.NoError(t, err, "the response in flight is written after Shutdown")
	assert.JSONEq(t, `{"jsonrpc":"2.0","id":1,"result":"done"}`, line)
	assert.NoError(t, recv(t, shut, "Shutdown to return"))
	assert.ErrorIs(t, recv(t, served, "Serve to return"), jsonrpc.ErrServerClosed)
	serverSide.Close()
}

// TestRawHandlerFunc checks that a RawHandlerFunc is answered exactly as a
// HandlerFunc that returns the same json.RawMessage as any, byte for byte.
func TestRawHandlerFunc(t *testing.T) {
	results := map[string]func(req *jsonrpc.Request) (json.RawMessage, error){
		"params":  func(req *jsonrpc.Request) (json.RawMessage, error) { return req.Params, nil },
		"part":    func(req *jsonrpc.Request) (json.RawMessage, error) { return req.Params[1:4], nil },
		"spaced":  func(*jsonrpc.Request) (json.RawMessage, error) { return json.RawMessage(`{ "a" : [1, 2] }`), nil },
		"lines":   func(*jsonrpc.Request) (json.RawMessage, error) { return json.RawMessage("{\n\"a\":\t[1,\n2]\n}"), nil },
		"invalid": func(*jsonrpc.Request) (json.RawMessage, error) { return json.RawMessage(`{`), nil },
		"empty":   func(*jsonrpc.Request) (json.RawMessage, error) { return json.RawMessage{}, nil },
		"nil":     func(*jsonrpc.Request) (json.RawMessage, error) { return nil, nil },
		"failed": func(*jsonrpc.Request) (json.RawMessage, error) {
			return json.RawMessage(`1`), &jsonrpc.Error{Code: 7, Message: "no"}
		},
		"internal": func(*jsonrpc.Request) (json.RawMessage, error) { return nil, errors.New("broken") },
	}
	boxed, raw := new(jsonrpc.Mux), new(jsonrpc.Mux)
	var input strings.Builder
	for name, f := range results {
		boxed.HandleFunc(name, func(_ context.Context, req *jsonrpc.Request) (any, error) { return f(req) })
		raw.Handle(name, jsonrpc.RawHandlerFunc(func(_ context.Context, req *jsonrpc.Request) (json.RawMessage, error) { return f(req) }))
		input.WriteString(`{"jsonrpc":"2.0","id":"` + name + `","method":"` + name + `","params":[ 10 , "x" ]}` + "\n")
		input.WriteString(`{"jsonrpc":"2.0","method":"` + name + `","params":[ 10 , "x" ]}` + "\n")
		input.WriteString(`[{"jsonrpc":"2.0","id":1,"method":"` + name + `","params":{"a" :1}},{"jsonrpc":"2.0","id":2,"method":"` + name + `","params":[2]}]` + "\n")
	}
	want := serveString(t, &jsonrpc.Server{Options: jsonrpc.Options{Handler: boxed}}, input.String())
	got := serveString(t, &jsonrpc.Server{Options: jsonrpc.Options{Handler: raw}}, input.String())
	assert.Equal(t, want, got)
	assert.Len(t, got, 2*len(results))
	assert.Contains(t, got, `{"jsonrpc":"2.0","id":"params","result":[ 10 , "x" ]}`)

	// Served alone, without a Mux, and in process.
	echo := jsonrpc.RawHandlerFunc(func(_ context.Context, req *jsonrpc.Request) (json.RawMessage, error) { return req.Params, nil })
	got = serveString(t, &jsonrpc.Server{Options: jsonrpc.Options{Handler: echo}}, `{"jsonrpc":"2.0","id":1,"method":"any","params":{"k": "v"}}`+"\n")
	assert.Equal(t, []string{`{"jsonrpc":"2.0","id":1,"result":{"k": "v"}}`}, got)
	v, err := echo.ServeJSONRPC(t.Context(), &jsonrpc.Request{Method: "any", Params: json.RawMessage(`[1]`)})
	require.NoError(t, err)
	assert.Equal(t, json.RawMessage(`[1]`), v)
	failed := jsonrpc.RawHandlerFunc(func(_ context.Context, req *jsonrpc.Request) (json.RawMessage, error) { return results["failed"](req) })
	v, err = failed.ServeJSONRPC(t.Context(), &jsonrpc.Request{})
	assert.Nil(t, v)
	assert.ErrorIs(t, err, &jsonrpc.Error{Code: 7})
}
