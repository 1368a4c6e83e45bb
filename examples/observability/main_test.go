package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"regexp"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/ndjsonrpc/jsonrpc"
	jsonrpcotel "github.com/ndjsonrpc/jsonrpc/otel"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/propagation"
	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"
)

// collector is a fake OTLP/HTTP receiver: it accepts protobuf-encoded
// spans POSTed to path, and keeps them.
type collector struct {
	path  string
	mu    sync.Mutex
	spans []*tracepb.Span
	other []string // requests it refused, as "METHOD path"
}

func (c *collector) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost || r.URL.Path != c.path || r.Header.Get("Content-Type") != "application/x-protobuf" {
		c.mu.Lock()
		c.other = append(c.other, r.Method+" "+r.URL.Path)
		c.mu.Unlock()
		http.NotFound(w, r)
		return
	}
	body, err := io.ReadAll(r.Body)
	var req coltracepb.ExportTraceServiceRequest
	if err == nil {
		err = proto.Unmarshal(body, &req)
	}
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	c.mu.Lock()
	for _, rs := range req.ResourceSpans {
		for _, ss := range rs.ScopeSpans {
			c.spans = append(c.spans, ss.Spans...)
		}
	}
	c.mu.Unlock()
	resp, _ := proto.Marshal(&coltracepb.ExportTraceServiceResponse{})
	w.Header().Set("Content-Type", "application/x-protobuf")
	_, _ = w.Write(resp)
}

// attributes returns the string and int attributes of s.
func attributes(s *tracepb.Span) map[string]any {
	m := map[string]any{}
	for _, kv := range s.Attributes {
		if _, ok := kv.Value.Value.(*commonpb.AnyValue_IntValue); ok {
			m[kv.Key] = kv.Value.GetIntValue()
		} else {
			m[kv.Key] = kv.Value.GetStringValue()
		}
	}
	return m
}

// TestOTLPExport runs the example's tracing setup with each of the two
// standard variables pointing at a fake collector, serves calls over HTTP
// through the example's Mux, and checks that their spans reach the
// collector once the provider is shut down.
func TestOTLPExport(t *testing.T) {
	for _, tc := range []struct {
		name, variable, suffix, path string
	}{
		{"OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_ENDPOINT", "", "/v1/traces"},
		{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "/custom/traces", "/custom/traces"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			col := &collector{path: tc.path}
			cs := httptest.NewServer(col)
			defer cs.Close()
			t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "")
			t.Setenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "")
			t.Setenv(tc.variable, cs.URL+tc.suffix)

			var stdout bytes.Buffer
			tp, where, err := newTracerProvider(t.Context(), &stdout)
			require.NoError(t, err)
			assert.Equal(t, "spans to OTLP over HTTP", where)
			tel := jsonrpcotel.New(jsonrpcotel.WithTracerProvider(tp), jsonrpcotel.WithPropagators(propagation.TraceContext{}))
			ts := httptest.NewServer(&jsonrpc.Server{Options: jsonrpc.Options{Handler: newMux(tel)}})
			c := &jsonrpc.HTTPClient{URL: ts.URL}
			var sum int
			require.NoError(t, c.Call(t.Context(), "add", []int{1, 2}, &sum))
			assert.Equal(t, 3, sum)
			require.ErrorIs(t, c.Call(t.Context(), "nope", nil, nil), jsonrpc.ErrMethodNotFound)
			ts.Close() // waits for the handlers, and so for their spans to end

			require.NoError(t, tp.Shutdown(context.Background())) // sends the batch
			assert.Empty(t, stdout.String(), "no span printed")
			col.mu.Lock()
			defer col.mu.Unlock()
			assert.Empty(t, col.other)
			require.Len(t, col.spans, 2)
			add, nope := col.spans[0], col.spans[1]
			if add.Name != "add" {
				add, nope = nope, add
			}
			assert.Equal(t, "add", add.Name)
			assert.Equal(t, tracepb.Span_SPAN_KIND_SERVER, add.Kind)
			a := attributes(add)
			assert.Equal(t, "jsonrpc", a["rpc.system.name"])
			assert.Equal(t, "add", a["rpc.method"])
			assert.Equal(t, "1", a["jsonrpc.request.id"])
			assert.Equal(t, "jsonrpc", nope.Name)
			n := attributes(nope)
			assert.Equal(t, "_OTHER", n["rpc.method"])
			assert.Equal(t, "nope", n["rpc.method_original"])
			assert.Equal(t, "-32601", n["rpc.response.status_code"])
			assert.Equal(t, tracepb.Status_STATUS_CODE_ERROR, nope.Status.GetCode())
		})
	}
}

// TestStdoutWithoutOTLP checks that spans are printed to stdout when no
// OTLP endpoint is set.
func TestStdoutWithoutOTLP(t *testing.T) {
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "")
	t.Setenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "")
	var stdout bytes.Buffer
	tp, where, err := newTracerProvider(t.Context(), &stdout)
	require.NoError(t, err)
	assert.Equal(t, "spans to stdout", where)
	tel := jsonrpcotel.New(jsonrpcotel.WithTracerProvider(tp))
	var out bytes.Buffer
	srv := &jsonrpc.Server{Options: jsonrpc.Options{Handler: newMux(tel)}}
	require.NoError(t, srv.Serve(t.Context(), strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"add","params":[1,2]}`+"\n"), &out))
	require.NoError(t, tp.Shutdown(context.Background()))
	assert.JSONEq(t, `{"jsonrpc":"2.0","id":1,"result":3}`, out.String())
	assert.Contains(t, stdout.String(), `"Name": "add"`)
	assert.Contains(t, stdout.String(), `"Value": "jsonrpc"`)
}

// TestAddOverflow checks that add refuses a sum that does not fit in an
// int, rather than answering a wrapped one.
func TestAddOverflow(t *testing.T) {
	for _, tc := range []struct {
		name, params, want string
	}{
		{"fits", `[9223372036854775806,1]`, `{"jsonrpc":"2.0","id":1,"result":9223372036854775807}`},
		{"negative fits", `[-9223372036854775807,-1]`, `{"jsonrpc":"2.0","id":1,"result":-9223372036854775808}`},
		{"over", `[9223372036854775807,1]`, `{"jsonrpc":"2.0","id":1,"error":{"code":-32602,"message":"9223372036854775807 + 1 overflows"}}`},
		{"under", `[-9223372036854775808,-1]`, `{"jsonrpc":"2.0","id":1,"error":{"code":-32602,"message":"-9223372036854775808 + -1 overflows"}}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out bytes.Buffer
			srv := newServer(newMux(jsonrpcotel.New()))
			in := `{"jsonrpc":"2.0","id":1,"method":"add","params":` + tc.params + "}\n"
			require.NoError(t, srv.Serve(t.Context(), strings.NewReader(in), &out))
			assert.JSONEq(t, tc.want, out.String())
		})
	}
}

// pipeListener is a net.Listener whose connections are net.Pipe pairs,
// made by dial.
type pipeListener struct {
	conns  chan net.Conn
	closed chan struct{}
	once   sync.Once
}

func newPipeListener(backlog int) *pipeListener {
	return &pipeListener{conns: make(chan net.Conn, backlog), closed: make(chan struct{})}
}

func (l *pipeListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.conns:
		return c, nil
	case <-l.closed:
		return nil, net.ErrClosed
	}
}

func (l *pipeListener) Close() error {
	l.once.Do(func() { close(l.closed) })
	return nil
}

func (l *pipeListener) Addr() net.Addr { return pipeAddr{} }

// dial returns the client's end of a new connection, whose server's end
// waits to be accepted.
func (l *pipeListener) dial() net.Conn {
	c, s := net.Pipe()
	l.conns <- s
	return c
}

type pipeAddr struct{}

func (pipeAddr) Network() string { return "pipe" }
func (pipeAddr) String() string  { return "pipe" }

// TestIdleConnectionsLeave fills every connection slot of the example's
// TCP server with connections that send nothing, and checks that a call
// on one more connection is answered once the idle ones are closed,
// rather than waiting behind them for ever.
func TestIdleConnectionsLeave(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := newServer(newMux(jsonrpcotel.New()))
		l := newPipeListener(maxConns + 1)
		served := make(chan error, 1)
		go func() { served <- srv.ServeListener(t.Context(), l) }()
		var idle []net.Conn
		for range maxConns {
			idle = append(idle, l.dial())
		}
		c := l.dial()
		go fmt.Fprintf(c, `{"jsonrpc":"2.0","id":1,"method":"add","params":[1,2]}`+"\n")
		// Long after idleTimeout, in the bubble's time: a server without
		// one fails here instead of waiting for ever.
		require.NoError(t, c.SetReadDeadline(time.Now().Add(time.Hour)))
		line, err := bufio.NewReader(c).ReadString('\n')
		require.NoError(t, err)
		assert.JSONEq(t, `{"jsonrpc":"2.0","id":1,"result":3}`, line)

		for _, c := range append(idle, c) {
			_ = c.Close()
		}
		require.NoError(t, srv.Close())
		require.ErrorIs(t, <-served, jsonrpc.ErrServerClosed)
	})
}

// TestREADMEMetricLabels runs the README's first commands (curl to
// localhost:8080, here with that Host on a free port) and checks that
// the add series on /metrics has each label the README shows for it.
func TestREADMEMetricLabels(t *testing.T) {
	readme, err := os.ReadFile("README.md")
	require.NoError(t, err)
	line := regexp.MustCompile(`(?m)^rpc_server_call_duration_seconds_count\{.*rpc_method="add".*$`).Find(readme)
	require.NotNil(t, line, "the README shows the add series")
	labels := regexp.MustCompile(`[a-z_]+="[^"]*"`).FindAllString(string(line), -1)

	addr := freeAddr(t)
	startExample(t, buildExample(t), "-http", addr, "-listen", "", "-spans=false")
	dialListening(t, addr).Close()
	req, _ := http.NewRequest("POST", "http://"+addr+"/", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"add","params":[1,2]}`))
	req.Host = "localhost:8080"
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	resp, err = http.Get("http://" + addr + "/metrics")
	require.NoError(t, err)
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	series := regexp.MustCompile(`(?m)^rpc_server_call_duration_seconds_count\{.*rpc_method="add".*$`).FindString(string(body))
	require.NotEmpty(t, series)
	for _, l := range labels {
		assert.Contains(t, series, l, "label the README shows")
	}
}
