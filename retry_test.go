package jsonrpc_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"syscall"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ndjsonrpc/jsonrpc"
)

// A step is what a scripted server does with one HTTP request.
type step func(req *http.Request, body []byte) (*http.Response, error)

// scripted is an http.RoundTripper that answers the n-th request with its
// n-th step (the last step for all after), without a network, so that
// the retries run inside a synctest bubble with its fake clock.
type scripted struct {
	mu     sync.Mutex
	steps  []step
	bodies []string    // every request's body, in order
	at     []time.Time // when each request came, on the bubble's clock
}

func (s *scripted) RoundTrip(req *http.Request) (*http.Response, error) {
	body, _ := io.ReadAll(req.Body)
	s.mu.Lock()
	n := len(s.bodies)
	s.bodies = append(s.bodies, string(body))
	s.at = append(s.at, time.Now())
	st := s.steps[min(n, len(s.steps)-1)]
	s.mu.Unlock()
	return st(req, body)
}

func (s *scripted) requests() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.bodies)
}

func (s *scripted) client(retry func(string) bool) *jsonrpc.HTTPClient {
	return &jsonrpc.HTTPClient{URL: "http://backend/rpc", HTTP: &http.Client{Transport: s}, Retry: retry}
}

func response(status int, header http.Header, body io.Reader) *http.Response {
	if header == nil {
		header = make(http.Header)
	}
	return &http.Response{StatusCode: status, Status: http.StatusText(status), Header: header, Body: io.NopCloser(body), ContentLength: -1}
}

// answer answers each call of the request with its params as the result.
func answer(_ *http.Request, body []byte) (*http.Response, error) {
	type msg struct {
		ID     json.RawMessage `json:"id,omitempty"`
		Params json.RawMessage `json:"params,omitempty"`
	}
	reply := func(m msg) string {
		return `{"jsonrpc":"2.0","id":` + string(m.ID) + `,"result":` + string(m.Params) + `}`
	}
	var out string
	if bytes.HasPrefix(body, []byte("[")) {
		var ms []msg
		if err := json.Unmarshal(body, &ms); err != nil {
			return nil, err
		}
		var parts []string
		for _, m := range ms {
			if m.ID != nil {
				parts = append(parts, reply(m))
			}
		}
		if parts == nil {
			return response(http.StatusAccepted, nil, strings.NewReader("")), nil
		}
		out = "[" + strings.Join(parts, ",") + "]"
	} else {
		var m msg
		if err := json.Unmarshal(body, &m); err != nil {
			return nil, err
		}
		if m.ID == nil {
			return response(http.StatusAccepted, nil, strings.NewReader("")), nil
		}
		out = reply(m)
	}
	return response(http.StatusOK, http.Header{"Content-Type": {"application/json"}}, strings.NewReader(out)), nil
}

// unavailable answers 503, with Retry-After if after is not empty.
func unavailable(after string) step {
	return func(*http.Request, []byte) (*http.Response, error) {
		h := http.Header{"Content-Type": {"text/plain"}}
		if after != "" {
			h.Set("Retry-After", after)
		}
		return response(http.StatusServiceUnavailable, h, strings.NewReader("stopping\n")), nil
	}
}

// refused fails as a dial to a closed port does: the request was never sent.
func refused(*http.Request, []byte) (*http.Response, error) {
	return nil, &net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}
}

// broken fails as a connection that breaks once the request is sent.
func broken(*http.Request, []byte) (*http.Response, error) {
	return nil, io.ErrUnexpectedEOF
}

// status answers with an HTTP status and no JSON-RPC answer.
func status(code int) step {
	return func(*http.Request, []byte) (*http.Response, error) {
		return response(code, nil, strings.NewReader("")), nil
	}
}

func retryOnly(methods ...string) func(string) bool {
	return func(m string) bool {
		for _, x := range methods {
			if x == m {
				return true
			}
		}
		return false
	}
}

func TestHTTPClientRetryCall(t *testing.T) {
	tests := []struct {
		name     string
		steps    []step
		retry    func(string) bool
		requests int
		wantErr  error // nil: the call succeeds, unless failed
		failed   bool
		mayHave  bool // MayHaveRun of the error
	}{
		{"no Retry: a 503 is not retried", []step{unavailable(""), answer}, nil, 1, jsonrpc.ErrNotRun, true, false},
		{"no Retry: a refused dial is not retried", []step{refused, answer}, nil, 1, jsonrpc.ErrClosed, true, false},
		{"503 retried", []step{unavailable(""), unavailable(""), answer}, retryOnly(), 3, nil, false, false},
		{"refused dial retried", []step{refused, refused, answer}, retryOnly(), 3, nil, false, false},
		{"overloaded retried", []step{overloaded, answer}, retryOnly(), 2, nil, false, false},
		{"broken after send, method not retryable", []step{broken, answer}, retryOnly("other"), 1, jsonrpc.ErrClosed, true, true},
		{"broken after send, method retryable", []step{broken, answer}, retryOnly("echo"), 2, nil, false, false},
		{"a proxy's 502, method retryable", []step{status(http.StatusBadGateway), answer}, retryOnly("echo"), 2, nil, false, false},
		{"a proxy's 502, method not retryable", []step{status(http.StatusBadGateway), answer}, retryOnly(), 1, nil, true, true},
		{"a 415 is not retried", []step{status(http.StatusUnsupportedMediaType), answer}, retryOnly("echo"), 1, nil, true, false},
		{"ran, then not run, then refused for good", []step{broken, unavailable(""), status(http.StatusUnsupportedMediaType)}, retryOnly("echo"), 3, nil, true, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				s := &scripted{steps: tc.steps}
				var got []int
				err := s.client(tc.retry).Call(t.Context(), "echo", []int{1, 2}, &got)
				assert.Equal(t, tc.requests, s.requests(), "requests sent")
				if !tc.failed {
					require.NoError(t, err)
					assert.Equal(t, []int{1, 2}, got)
					return
				}
				require.Error(t, err)
				if tc.wantErr != nil {
					assert.ErrorIs(t, err, tc.wantErr)
				}
				assert.Equal(t, tc.mayHave, jsonrpc.MayHaveRun(err), "MayHaveRun(%v)", err)
			})
		})
	}
}

// A call that may have run is sent again at most MaxRetries times, so
// that a request that breaks every server it reaches (or the proxy before
// them) is not sent for as long as its ctx lasts; attempts that surely did
// not run are not counted.
func TestHTTPClientMaxRetries(t *testing.T) {
	tests := []struct {
		name       string
		steps      []step
		maxRetries int
		requests   int
		ok         bool
	}{
		{"zero means 4", []step{broken}, 0, 5, false},
		{"a proxy's 502 each time", []step{status(http.StatusBadGateway)}, 0, 5, false},
		{"one", []step{broken}, 1, 2, false},
		{"negative means none", []step{broken}, -1, 1, false},
		{"attempts not run are not counted", []step{broken, refused, unavailable(""), answer}, 1, 4, true},
		{"the last retry may succeed", []step{broken, broken, answer}, 2, 3, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				s := &scripted{steps: tc.steps}
				c := s.client(retryOnly("echo"))
				c.MaxRetries = tc.maxRetries
				err := c.Call(t.Context(), "echo", []int{1}, nil)
				assert.Equal(t, tc.requests, s.requests(), "requests sent")
				if tc.ok {
					require.NoError(t, err)
					return
				}
				require.Error(t, err)
				assert.NotErrorIs(t, err, context.Canceled)
				assert.True(t, jsonrpc.MayHaveRun(err), "MayHaveRun(%v)", err)
			})
		})
	}
}

// overloaded answers 503 with an ErrOverloaded answer, as a Server whose
// memory budget is spent does.
func overloaded(*http.Request, []byte) (*http.Response, error) {
	return response(http.StatusServiceUnavailable, http.Header{"Content-Type": {"application/json"}, "Retry-After": {"1"}},
		strings.NewReader(`{"jsonrpc":"2.0","id":null,"error":{"code":-32090,"message":"Overloaded"}}`)), nil
}

func TestHTTPClientRetryBackoff(t *testing.T) {
	t.Run("doubles from MinBackoff to MaxBackoff, jittered", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			s := &scripted{steps: []step{refused, refused, refused, refused, refused, answer}}
			c := s.client(retryOnly())
			c.MinBackoff, c.MaxBackoff = 100*time.Millisecond, 400*time.Millisecond
			require.NoError(t, c.Call(t.Context(), "echo", []int{1}, nil))
			bounds := []time.Duration{100, 200, 400, 400, 400}
			require.Len(t, s.at, len(bounds)+1)
			for i, b := range bounds {
				wait := s.at[i+1].Sub(s.at[i])
				b *= time.Millisecond
				assert.True(t, wait >= b/2 && wait <= b, "wait %d: %v, not within [%v, %v]", i, wait, b/2, b)
			}
		})
	})
	t.Run("Retry-After shorter than MaxBackoff is honoured", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			s := &scripted{steps: []step{unavailable("2"), answer}}
			c := s.client(retryOnly())
			c.MinBackoff, c.MaxBackoff = time.Hour, 2*time.Hour
			require.NoError(t, c.Call(t.Context(), "echo", []int{1}, nil))
			assert.Equal(t, 2*time.Second, s.at[1].Sub(s.at[0]))
		})
	})
	t.Run("Retry-After as an HTTP date", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			s := &scripted{steps: []step{func(r *http.Request, b []byte) (*http.Response, error) {
				return unavailable(time.Now().Add(3*time.Second).UTC().Format(http.TimeFormat))(r, b)
			}, answer}}
			c := s.client(retryOnly())
			c.MinBackoff, c.MaxBackoff = time.Hour, 2*time.Hour
			require.NoError(t, c.Call(t.Context(), "echo", []int{1}, nil))
			assert.Equal(t, 3*time.Second, s.at[1].Sub(s.at[0]))
		})
	})
	t.Run("Retry-After past MaxBackoff is not", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			s := &scripted{steps: []step{unavailable("60"), answer}}
			c := s.client(retryOnly())
			c.MinBackoff, c.MaxBackoff = 10*time.Millisecond, 10*time.Millisecond
			require.NoError(t, c.Call(t.Context(), "echo", []int{1}, nil))
			assert.LessOrEqual(t, s.at[1].Sub(s.at[0]), 10*time.Millisecond)
		})
	})
	t.Run("within ctx", func(t *testing.T) {
		for _, first := range []step{unavailable(""), broken} {
			synctest.Test(t, func(t *testing.T) {
				s := &scripted{steps: []step{first, unavailable("")}}
				c := s.client(retryOnly("echo"))
				ctx, cancel := context.WithTimeout(t.Context(), 3*time.Second)
				defer cancel()
				start := time.Now()
				err := c.Call(ctx, "echo", []int{1}, nil)
				assert.Equal(t, 3*time.Second, time.Since(start), "it gives up when ctx ends, not before")
				assert.ErrorIs(t, err, context.DeadlineExceeded)
				assert.ErrorIs(t, err, jsonrpc.ErrNotRun, "the last attempt's error")
				assert.Contains(t, err.Error(), "context deadline exceeded; the last attempt failed: ")
				assert.Greater(t, s.requests(), 2)
			})
		}
	})
}

func TestHTTPClientRetryMayHaveRunAcrossAttempts(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		for _, tc := range []struct {
			first step
			want  bool
		}{{unavailable(""), false}, {broken, true}} {
			s := &scripted{steps: []step{tc.first, unavailable("")}}
			ctx, cancel := context.WithTimeout(t.Context(), time.Second)
			err := s.client(retryOnly("echo")).Call(ctx, "echo", []int{1}, nil)
			cancel()
			assert.ErrorIs(t, err, context.DeadlineExceeded)
			assert.Equal(t, tc.want, jsonrpc.MayHaveRun(err), "an attempt that may have run makes the call one that may have: %v", err)
		}
	})
}

func TestHTTPClientRetryNotify(t *testing.T) {
	for _, tc := range []struct {
		name     string
		steps    []step
		requests int
		ok       bool
	}{
		{"not run: retried", []step{unavailable(""), refused, answer}, 3, true},
		{"may have run: not retried, whatever Retry says", []step{broken, answer}, 1, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				s := &scripted{steps: tc.steps}
				err := s.client(retryOnly("note")).Notify(t.Context(), "note", []int{1})
				assert.Equal(t, tc.requests, s.requests())
				assert.Equal(t, tc.ok, err == nil, "err: %v", err)
			})
		})
	}
}

func TestHTTPClientRetryBatch(t *testing.T) {
	for _, tc := range []struct {
		name     string
		steps    []step
		retry    func(string) bool
		requests int
		ok       bool
	}{
		{"not run: retried", []step{unavailable(""), answer}, retryOnly(), 2, true},
		{"may have run, every method retryable: retried", []step{broken, answer}, retryOnly("a", "b"), 2, true},
		{"may have run, one method not retryable: not retried", []step{broken, answer}, retryOnly("a"), 1, false},
		{"no Retry", []step{unavailable(""), answer}, nil, 1, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				s := &scripted{steps: tc.steps}
				var ra, rb []int
				calls := []*jsonrpc.BatchCall{
					{Method: "a", Params: []int{1}, Result: &ra},
					{Method: "b", Params: []int{2}, Result: &rb},
				}
				err := s.client(tc.retry).Batch(t.Context(), calls...)
				assert.Equal(t, tc.requests, s.requests())
				if !tc.ok {
					assert.Error(t, err)
					return
				}
				require.NoError(t, err)
				require.NoError(t, calls[0].Err)
				require.NoError(t, calls[1].Err)
				assert.Equal(t, []int{1}, ra)
				assert.Equal(t, []int{2}, rb)
			})
		})
	}
}

// sse answers a stream call with n items and then breaks the connection,
// or with its answer if n is negative (-n items first).
func sse(n int) step {
	return func(_ *http.Request, body []byte) (*http.Response, error) {
		var m struct {
			ID json.RawMessage `json:"id"`
		}
		if err := json.Unmarshal(body, &m); err != nil {
			return nil, err
		}
		var b strings.Builder
		for i := range max(n, -n) {
			b.WriteString(`data: {"jsonrpc":"2.0","method":"$/stream","params":{"id":` + string(m.ID) + `,"item":` + string(rune('0'+i)) + "}}\n\n")
		}
		var r io.Reader = strings.NewReader(b.String())
		if n >= 0 {
			r = io.MultiReader(r, failingReader{io.ErrUnexpectedEOF})
		} else {
			r = io.MultiReader(r, strings.NewReader(`data: {"jsonrpc":"2.0","id":`+string(m.ID)+`,"result":null}`+"\n\n"))
		}
		return response(http.StatusOK, http.Header{"Content-Type": {"text/event-stream"}}, r), nil
	}
}

type failingReader struct{ err error }

func (r failingReader) Read([]byte) (int, error) { return 0, r.err }

func TestHTTPClientRetryStream(t *testing.T) {
	for _, tc := range []struct {
		name     string
		steps    []step
		requests int
		items    int
		ok       bool
	}{
		{"broken before any item: retried", []step{sse(0), unavailable(""), sse(-2)}, 3, 2, true},
		{"broken after an item: not retried", []step{sse(1), sse(-2)}, 1, 1, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				s := &scripted{steps: tc.steps}
				items, ok := 0, true
				for _, err := range s.client(retryOnly("count")).Stream(t.Context(), "count", nil) {
					if err != nil {
						ok = false
						assert.ErrorIs(t, err, jsonrpc.ErrClosed)
						continue
					}
					items++
				}
				assert.Equal(t, tc.requests, s.requests())
				assert.Equal(t, tc.items, items)
				assert.Equal(t, tc.ok, ok)
			})
		})
	}
}

func TestHTTPClientRetryThroughInterceptors(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := &scripted{steps: []step{unavailable(""), refused, answer}}
		c := s.client(retryOnly())
		var ids []string
		c.Interceptors = []jsonrpc.Interceptor{func(next jsonrpc.SendFunc) jsonrpc.SendFunc {
			return func(ctx context.Context, req *jsonrpc.Request) (json.RawMessage, error) {
				ids = append(ids, req.ID.String())
				return next(ctx, req)
			}
		}}
		var got []int
		require.NoError(t, c.Call(t.Context(), "echo", []int{7}, &got))
		assert.Equal(t, []int{7}, got)
		assert.Len(t, ids, 3, "each attempt passes through the interceptors")
		assert.NotEqual(t, ids[0], ids[1], "with an id of its own")
	})
}
