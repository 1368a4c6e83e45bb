package jsonrpc_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"net"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ndjsonrpc/jsonrpc"
)

// scriptedPeer reads the requests that come on its end of a pipe and
// hands each, with the writer, to answer, on its own goroutine; it ends
// when the pipe does.
func scriptedPeer(t *testing.T, end net.Conn, answer func(w net.Conn, id json.RawMessage)) {
	t.Helper()
	var wg sync.WaitGroup
	t.Cleanup(wg.Wait)
	wg.Go(func() {
		r := bufio.NewReader(end)
		for {
			line, err := r.ReadBytes('\n')
			if err != nil {
				return
			}
			var m struct {
				ID     json.RawMessage `json:"id"`
				Method string          `json:"method"`
			}
			if json.Unmarshal(line, &m) != nil || m.ID == nil || strings.HasPrefix(m.Method, "$/") {
				continue
			}
			wg.Go(func() { answer(end, m.ID) })
		}
	})
}

// pause sleeps d, or less if t ends first.
func pause(t *testing.T, d time.Duration) {
	select {
	case <-time.After(d):
	case <-t.Context().Done():
	}
}

const silence = 10 * time.Second

func silentConn(t *testing.T, timeout time.Duration, answer func(w net.Conn, id json.RawMessage)) *jsonrpc.Conn {
	t.Helper()
	client, server := net.Pipe()
	scriptedPeer(t, server, answer)
	c := jsonrpc.NewConn(client, client, &jsonrpc.Options{SilenceTimeout: timeout})
	t.Cleanup(func() {
		_ = c.Close()
		_ = server.Close()
	})
	return c
}

func never(net.Conn, json.RawMessage) {}

// timedCall calls echo on c, giving up after d, and returns how long it
// waited and whether it found the connection ended by its SilenceTimeout;
// a call that ends otherwise than so or at d fails the test.
func timedCall(t *testing.T, c *jsonrpc.Conn, d time.Duration) (time.Duration, bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), d)
	defer cancel()
	start := time.Now()
	err := c.Call(ctx, "echo", nil, nil)
	took := time.Since(start)
	if errors.Is(err, jsonrpc.ErrClosed) {
		assert.Contains(t, err.Error(), "SilenceTimeout")
		return took, true
	}
	require.ErrorIs(t, err, context.DeadlineExceeded)
	return took, false
}

func TestSilenceTimeout(t *testing.T) {
	t.Run("a silent peer ends the connection", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			c := silentConn(t, silence, never)
			start := time.Now()
			err := c.Call(t.Context(), "echo", nil, nil)
			took := time.Since(start)
			require.ErrorIs(t, err, jsonrpc.ErrClosed)
			assert.Contains(t, err.Error(), "SilenceTimeout", "the error says why")
			assert.True(t, jsonrpc.MayHaveRun(err), "the call was sent")
			assert.GreaterOrEqual(t, took, silence)
			assert.LessOrEqual(t, took, silence+silence/4)
			synctest.Wait()
			select {
			case <-c.Done():
				werr := c.Wait()
				assert.ErrorIs(t, werr, jsonrpc.ErrClosed, "Wait: %v", werr)
				assert.Contains(t, werr.Error(), "SilenceTimeout", "Wait says why")
			default:
				t.Error("the connection did not end")
			}
		})
	})
	t.Run("a stream too", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			c := silentConn(t, silence, never)
			var last error
			for _, err := range c.Stream(t.Context(), "count", nil) {
				last = err
			}
			assert.ErrorIs(t, last, jsonrpc.ErrClosed)
		})
	})
	t.Run("short calls add up", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			c := silentConn(t, silence, never)
			calls := 0
			for {
				calls++
				if _, ended := timedCall(t, c, silence/3); ended {
					break
				}
				require.Less(t, calls, 10, "calls of a third of SilenceTimeout each never end the connection")
				time.Sleep(time.Minute) // idle time between calls does not count
			}
			assert.GreaterOrEqual(t, calls, 3, "the connection ends once the calls have waited SilenceTimeout in all")
			assert.LessOrEqual(t, calls, 4)
		})
	})
	t.Run("only the time calls wait counts", func(t *testing.T) {
		// Short calls, each waiting across one sample of the watch:
		// the connection ends once they have waited SilenceTimeout in
		// all, not once they have been seen at four samples.
		synctest.Test(t, func(t *testing.T) {
			c := silentConn(t, silence, never)
			const d = 20 * time.Millisecond
			var waited time.Duration
			start := time.Now()
			for k := 0; ; k++ {
				time.Sleep(time.Until(start.Add(time.Duration(k)*silence/4 - d/2)))
				took, ended := timedCall(t, c, d)
				waited += took
				if ended {
					break
				}
				require.Less(t, waited, 2*silence, "calls waited twice SilenceTimeout, and the connection goes on")
			}
			assert.GreaterOrEqual(t, waited, silence-d, "the calls' waiting in all when the connection ended")
		})
	})
	t.Run("calls shorter than a sample add up", func(t *testing.T) {
		// Each call is given up before the watch's first sample after
		// it: their waiting still adds up, and ends the connection.
		synctest.Test(t, func(t *testing.T) {
			c := silentConn(t, silence, never)
			const d = silence / 10
			var waited time.Duration
			for calls := 1; ; calls++ {
				require.Less(t, calls, 30, "the connection was never ended")
				took, ended := timedCall(t, c, d)
				waited += took
				if ended {
					break
				}
				time.Sleep(time.Minute) // idle time between calls does not count
			}
			assert.GreaterOrEqual(t, waited, silence, "the calls' waiting in all when the connection ended")
			assert.LessOrEqual(t, waited, silence+silence/4+d)
		})
	})
	t.Run("a slow answer ends it, if nothing else came", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			c := silentConn(t, silence, func(w net.Conn, id json.RawMessage) {
				pause(t, 2*silence)
				_, _ = w.Write([]byte(`{"jsonrpc":"2.0","id":` + string(id) + `,"result":1}` + "\n"))
			})
			assert.ErrorIs(t, c.Call(t.Context(), "echo", nil, nil), jsonrpc.ErrClosed)
		})
	})
	t.Run("a peer that sends something is not silent", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			c := silentConn(t, silence, func(w net.Conn, id json.RawMessage) {
				for range 10 {
					pause(t, silence/2)
					_, _ = w.Write([]byte(`{"jsonrpc":"2.0","method":"progress"}` + "\n"))
				}
				_, _ = w.Write([]byte(`{"jsonrpc":"2.0","id":` + string(id) + `,"result":1}` + "\n"))
			})
			var n int
			require.NoError(t, c.Call(t.Context(), "echo", nil, &n), "five SilenceTimeouts of waiting, with a byte every half")
			assert.Equal(t, 1, n)
		})
	})
	t.Run("an idle connection is not silent", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			c := silentConn(t, silence, func(w net.Conn, id json.RawMessage) {
				_, _ = w.Write([]byte(`{"jsonrpc":"2.0","id":` + string(id) + `,"result":1}` + "\n"))
			})
			require.NoError(t, c.Call(t.Context(), "echo", nil, nil))
			time.Sleep(100 * silence)
			require.NoError(t, c.Call(t.Context(), "echo", nil, nil))
		})
	})
	t.Run("zero: no limit", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			c := silentConn(t, 0, never)
			ctx, cancel := context.WithTimeout(t.Context(), 100*silence)
			defer cancel()
			err := c.Call(ctx, "echo", nil, nil)
			assert.ErrorIs(t, err, context.DeadlineExceeded)
			assert.NotErrorIs(t, err, jsonrpc.ErrClosed)
		})
	})
}

// TestSilenceTimeoutRedialer checks that a Redialer dials again when its
// connection's peer goes silent, and makes an idempotent call again on the
// new connection.
func TestSilenceTimeoutRedialer(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		dials := 0
		r := &jsonrpc.Redialer{
			Dial: func(ctx context.Context) (*jsonrpc.Conn, error) {
				dials++
				answer := never // the first peer is a black hole
				if dials > 1 {
					answer = func(w net.Conn, id json.RawMessage) {
						_, _ = w.Write([]byte(`{"jsonrpc":"2.0","id":` + string(id) + `,"result":2}` + "\n"))
					}
				}
				return silentConn(t, silence, answer), nil
			},
			Retry: func(method string) bool { return method == "get" },
		}
		defer r.Close()
		var n int
		require.NoError(t, r.Call(t.Context(), "get", nil, &n))
		assert.Equal(t, 2, n)
		assert.Equal(t, 2, dials)
	})
}
