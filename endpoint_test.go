package jsonrpc_test

// This file tests a Conn made with nil Options, which must behave as the
// defaults say, and how a Conn ends: Wait's answer and Done after a clean
// end of its input, Close and Shutdown.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ndjsonrpc/jsonrpc"
)

// defaultOptions are the ways to ask for the defaults: nil, the zero
// Options, and every default spelled out.
var defaultOptions = []struct {
	name string
	opts *jsonrpc.Options
}{
	{"nil", nil},
	{"zero", &jsonrpc.Options{}},
	{"spelled out", &jsonrpc.Options{
		Framing:         jsonrpc.LineFraming{},
		MaxMessageSize:  jsonrpc.DefaultMaxMessageSize,
		MaxBatch:        jsonrpc.DefaultMaxBatch,
		MaxInFlight:     jsonrpc.DefaultMaxInFlight,
		MaxPendingBytes: jsonrpc.DefaultMaxPendingBytes,
		MaxStreamBuffer: jsonrpc.DefaultMaxStreamBuffer,
		StopGrace:       jsonrpc.DefaultStopGrace,
		Cancellation:    jsonrpc.Cancellation{Method: jsonrpc.CancelMethod, IDMember: "id"},
	}},
}

func TestConnDefaultOptions(t *testing.T) {
	for _, do := range defaultOptions {
		t.Run(do.name, func(t *testing.T) {
			t.Run("requests get Method not found, notifications nothing", func(t *testing.T) {
				checkLeaks(t)
				_, p := newRawPeer(t, do.opts)
				p.send(t, `{"jsonrpc":"2.0","method":"hello","params":[1]}`)
				p.send(t, `{"jsonrpc":"2.0","id":7,"method":"hello","params":{"a":1}}`)
				p.send(t, `{"jsonrpc":"2.0","id":"x","method":"other"}`)
				assert.JSONEq(t, `{"jsonrpc":"2.0","id":7,"error":{"code":-32601,"message":"Method not found"}}`, p.next(t))
				assert.JSONEq(t, `{"jsonrpc":"2.0","id":"x","error":{"code":-32601,"message":"Method not found"}}`, p.next(t))
				assertNone(t, p.lines, "an answer to the notification")
			})

			t.Run("one message a line, and LSP's cancel notification", func(t *testing.T) {
				checkLeaks(t)
				c, p := newRawPeer(t, do.opts)
				var n int
				done := make(chan error, 1)
				go func() { done <- c.Call(t.Context(), "sum", []int{1, 2}, &n) }()
				m := p.nextMsg(t)
				assert.Equal(t, "sum", m.Method)
				assert.JSONEq(t, `[1,2]`, string(m.Params))
				p.sendf(t, `{"jsonrpc":"2.0","id":%s,"result":3}`, m.ID)
				require.NoError(t, recv(t, done, "the call"))
				assert.Equal(t, 3, n)

				ctx, cancel := context.WithCancel(t.Context())
				go func() { done <- c.Call(ctx, "slow", nil, nil) }()
				m = p.nextMsg(t)
				cancel()
				assert.ErrorIs(t, recv(t, done, "the cancelled call"), context.Canceled)
				assert.Equal(t, fmt.Sprintf(`{"jsonrpc":"2.0","method":"$/cancelRequest","params":{"id":%s}}`, m.ID), p.next(t))
			})

			t.Run("MaxBatch", func(t *testing.T) {
				checkLeaks(t)
				_, p := newRawPeer(t, do.opts)
				batch := func(n int) string {
					entries := make([]string, n)
					for i := range entries {
						entries[i] = fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"m"}`, i)
					}
					return "[" + strings.Join(entries, ",") + "]"
				}
				p.send(t, batch(jsonrpc.DefaultMaxBatch))
				var answers []json.RawMessage
				require.NoError(t, json.Unmarshal([]byte(p.next(t)), &answers))
				assert.Len(t, answers, jsonrpc.DefaultMaxBatch, "a batch of DefaultMaxBatch entries is answered")

				p.send(t, batch(jsonrpc.DefaultMaxBatch+1))
				var answer struct {
					ID    json.RawMessage `json:"id"`
					Error *jsonrpc.Error  `json:"error"`
				}
				require.NoError(t, json.Unmarshal([]byte(p.next(t)), &answer))
				assert.Equal(t, "null", string(answer.ID))
				if assert.NotNil(t, answer.Error) {
					assert.Equal(t, jsonrpc.CodeInvalidRequest, answer.Error.Code)
					var data struct{ Limit int }
					require.NoError(t, json.Unmarshal(answer.Error.Data, &data))
					assert.Equal(t, jsonrpc.DefaultMaxBatch, data.Limit)
				}
			})

			t.Run("StopGrace", func(t *testing.T) {
				checkLeaks(t)
				synctest.Test(t, func(t *testing.T) {
					// The Conn's output is never read: its answer to the
					// request stays stuck in a write, which Close waits
					// StopGrace for before it gives up.
					inR, inW := io.Pipe()
					outR, outW := io.Pipe()
					c := jsonrpc.NewConn(inR, outW, do.opts)
					go func() { _, _ = io.WriteString(inW, `{"jsonrpc":"2.0","id":1,"method":"m"}`+"\n") }()
					synctest.Wait()
					start := time.Now()
					require.NoError(t, c.Close())
					assert.Equal(t, jsonrpc.DefaultStopGrace, time.Since(start))
					assert.ErrorIs(t, c.Wait(), jsonrpc.ErrClosed)
					_ = inW.Close()
					_ = outR.Close()
				})
			})
		})
	}
}

// connRig is a Conn over two io.Pipes: in writes its input, out reads its
// output.
type connRig struct {
	c   *jsonrpc.Conn
	in  *io.PipeWriter
	out *io.PipeReader
}

func newConnRig(t *testing.T, opts *jsonrpc.Options) *connRig {
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	c := jsonrpc.NewConn(inR, outW, opts)
	t.Cleanup(func() {
		_ = c.Close()
		_ = inW.Close()
		_ = outR.Close()
	})
	return &connRig{c: c, in: inW, out: outR}
}

func TestConnWaitAndDone(t *testing.T) {
	for _, do := range defaultOptions {
		tests := []struct {
			name string
			end  func(t *testing.T, r *connRig)
			want error // nil, or what Wait's error wraps
		}{
			{"clean EOF", func(t *testing.T, r *connRig) { require.NoError(t, r.in.Close()) }, nil},
			{"EOF after a whole last line without its newline", func(t *testing.T, r *connRig) {
				_, err := io.WriteString(r.in, `{"jsonrpc":"2.0","method":"note"}`)
				require.NoError(t, err)
				require.NoError(t, r.in.Close())
			}, nil},
			{"Close", func(t *testing.T, r *connRig) { require.NoError(t, r.c.Close()) }, jsonrpc.ErrClosed},
			{"Close twice", func(t *testing.T, r *connRig) {
				require.NoError(t, r.c.Close())
				require.NoError(t, r.c.Close())
			}, jsonrpc.ErrClosed},
			{"Shutdown", func(t *testing.T, r *connRig) { require.NoError(t, r.c.Shutdown(t.Context())) }, jsonrpc.ErrClosed},
			{"Close after EOF", func(t *testing.T, r *connRig) {
				require.NoError(t, r.in.Close())
				<-r.c.Done()
				require.NoError(t, r.c.Close())
			}, nil},
		}
		for _, tc := range tests {
			t.Run(do.name+"/"+tc.name, func(t *testing.T) {
				checkLeaks(t)
				synctest.Test(t, func(t *testing.T) {
					r := newConnRig(t, do.opts)
					outClosed := make(chan error, 1)
					go func() {
						_, err := io.Copy(io.Discard, r.out)
						outClosed <- err
					}()
					synctest.Wait()
					assert.False(t, isDone(r.c), "the Conn ended before its end")

					tc.end(t, r)
					err := r.c.Wait()
					if tc.want == nil {
						assert.NoError(t, err)
					} else {
						assert.ErrorIs(t, err, tc.want)
					}
					synctest.Wait()
					assert.True(t, isDone(r.c), "Done is closed once Wait returns")
					assert.Equal(t, err, r.c.Wait(), "Wait again")
					select {
					case err := <-outClosed:
						assert.NoError(t, err, "the output ends cleanly: the Conn closed its writer")
					default:
						t.Error("the Conn did not close its writer")
					}
					_, werr := io.WriteString(r.in, "\n")
					assert.ErrorIs(t, werr, io.ErrClosedPipe, "the Conn closed its reader")
					assert.ErrorIs(t, r.c.Call(t.Context(), "m", nil, nil), jsonrpc.ErrClosed, "Call after the end")
				})
			})
		}
	}

	t.Run("a read error", func(t *testing.T) {
		checkLeaks(t)
		br := brokenReader{errc: make(chan error, 1)}
		outR, outW := io.Pipe()
		c := jsonrpc.NewConn(br, outW, nil)
		go func() { _, _ = io.Copy(io.Discard, outR) }()
		readErr := errors.New("the disk fell off")
		br.errc <- readErr
		recv(t, c.Done(), "the Conn to end")
		assert.ErrorIs(t, c.Wait(), readErr)
		require.NoError(t, c.Close())
	})
}
