package jsonrpc_test

// Regression tests for the Client defects of the issue "Hardening II"
// (fixed in d81da3e): a stalled peer holding calls past their ctx (4),
// unbounded Handler goroutines (5), Close hanging on a Read it cannot
// interrupt (6), and unbounded stream buffers (9). Liveness is checked
// against deadlines far above the cost of the work, memory with
// runtime/metrics against generous bounds.

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"iter"
	"net"
	"os"
	"runtime"
	"runtime/metrics"
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

const (
	// promptly is how long an operation may take to return once its ctx
	// has ended: far above the milliseconds it needs.
	promptly = 2 * time.Second
	// outputHighWater is the LineWriter's high-water mark (highWater in
	// transport.go): with a write in flight and this much buffered,
	// writers wait for room.
	outputHighWater = 1 << 20
)

// stalledPeer is a peer that stops reading: its first pass Writes go
// through, and every later one blocks until release. It records what is
// written. It is not an io.Closer, so closing the client cannot unblock
// it.
type stalledPeer struct {
	pass        int64
	writes      atomic.Int64
	passed      chan struct{} // closed once the pass writes are done
	entered     chan struct{} // closed when the first blocked Write begins
	enterOnce   sync.Once
	released    chan struct{}
	releaseOnce sync.Once
	wrote       chan struct{} // signalled after each Write
	out         lockedBuffer
}

func (w *stalledPeer) Write(p []byte) (int, error) {
	n := w.writes.Add(1)
	if n > w.pass {
		w.enterOnce.Do(func() { close(w.entered) })
		<-w.released
	}
	_, _ = w.out.Write(p)
	if n == w.pass {
		close(w.passed)
	}
	select {
	case w.wrote <- struct{}{}:
	default:
	}
	return len(p), nil
}

// release lets every blocked and later Write through.
func (w *stalledPeer) release() {
	w.releaseOnce.Do(func() { close(w.released) })
}

// waitOutput waits until what was written contains s.
func (w *stalledPeer) waitOutput(t *testing.T, s string) {
	t.Helper()
	for !strings.Contains(w.out.String(), s) {
		recv(t, w.wrote, "the client to write "+s)
	}
}

// newStalledClient returns a client that writes to a stalledPeer letting
// pass Writes through, and reads from a pipe on which the peer never
// answers. The cleanups release the writer, then close the client.
func newStalledClient(t *testing.T, pass int64) (*jsonrpc.Conn, *stalledPeer) {
	t.Helper()
	w := &stalledPeer{
		pass:     pass,
		passed:   make(chan struct{}),
		entered:  make(chan struct{}),
		released: make(chan struct{}),
		wrote:    make(chan struct{}, 1),
	}
	respR, respW := io.Pipe()
	c := jsonrpc.NewConn(respR, w, &jsonrpc.Options{StopGrace: 100 * time.Millisecond})
	t.Cleanup(func() {
		assert.NoError(t, c.Close())
		_ = respW.Close()
	})
	t.Cleanup(w.release)
	return c, w
}

// returnsWithin runs f on a goroutine and reports whether it returned
// within d; if not, it fails t and leaves f running (whatever f writes
// must then not be read).
func returnsWithin(t *testing.T, d time.Duration, what string, f func()) bool {
	t.Helper()
	done := make(chan struct{})
	go func() {
		defer close(done)
		f()
	}()
	select {
	case <-done:
		return true
	case <-time.After(d):
		t.Errorf("%s did not return within %v", what, d)
		return false
	}
}

// fillLine is the size of each notification that fillOutput buffers:
// four of them make exactly outputHighWater.
const fillLine = outputHighWater / 4

// fillParams returns params that make a "fill" notification exactly
// fillLine bytes long on the wire, newline included. The size is measured
// on a client that writes to a buffer.
func fillParams(t *testing.T) []string {
	t.Helper()
	measure := func(pad string) int {
		var out lockedBuffer
		r, w := io.Pipe()
		c := jsonrpc.NewConn(r, &out, nil)
		// A context that cannot end: the caller writes the line itself.
		require.NoError(t, c.Notify(context.Background(), "fill", []string{pad}))
		require.NoError(t, c.Close())
		_ = w.Close()
		return len(out.String())
	}
	pad := strings.Repeat("x", fillLine-measure(""))
	require.Equal(t, fillLine, measure(pad), "the fill notification's size")
	return []string{pad}
}

// fillOutput makes the client's output full while the peer does not read:
// one notification is taken by a Write that blocks, then four of fillLine
// bytes fill the buffer up to the high-water mark exactly. (Exactly, so
// that the code before d81da3e, whose writers waited only past the mark,
// gets here too and fails at the step under test.)
func fillOutput(t *testing.T, c *jsonrpc.Conn, w *stalledPeer, params []string) {
	t.Helper()
	go func() { _ = c.Notify(context.Background(), "first", nil) }()
	recv(t, w.entered, "a write the peer does not take")
	for i := range 4 {
		var err error
		if !returnsWithin(t, promptly, fmt.Sprintf("filling Notify %d", i), func() {
			err = c.Notify(t.Context(), "fill", params)
		}) {
			t.FailNow()
		}
		require.NoError(t, err)
	}
}

// heapObjects returns the bytes of heap objects, live ones only: it
// collects first.
func heapObjects() uint64 {
	runtime.GC()
	s := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}

// TestClientHardeningStalledPeer checks that Call, Batch, Stream and
// Notify return promptly once their ctx ends while the peer does not read:
// whether their own message is stuck in a Write that does not return, or
// the output buffer is full.
func TestClientHardeningStalledPeer(t *testing.T) {
	type op struct {
		name string
		run  func(ctx context.Context, c *jsonrpc.Conn) error
	}
	ops := []op{
		{"Call", func(ctx context.Context, c *jsonrpc.Conn) error {
			return c.Call(ctx, "op", []int{1}, nil)
		}},
		{"Batch", func(ctx context.Context, c *jsonrpc.Conn) error {
			calls := []*jsonrpc.BatchCall{{Method: "op"}, {Method: "note", Notify: true}}
			err := c.Batch(ctx, calls...)
			if !errors.Is(calls[0].Err, err) || calls[1].Err != nil {
				return fmt.Errorf("Batch() = %v with entry errors %v, %v", err, calls[0].Err, calls[1].Err)
			}
			return err
		}},
		{"Stream", func(ctx context.Context, c *jsonrpc.Conn) error {
			var errs []error
			for item, err := range c.Stream(ctx, "op", nil) {
				if err == nil {
					return fmt.Errorf("Stream yielded item %s", item)
				}
				errs = append(errs, err)
			}
			if len(errs) != 1 {
				return fmt.Errorf("Stream yielded errors %v; want one", errs)
			}
			return errs[0]
		}},
		{"Notify", func(ctx context.Context, c *jsonrpc.Conn) error {
			return c.Notify(ctx, "op", []int{1})
		}},
	}
	params := fillParams(t)
	states := []struct {
		name string
		// notifyErr is what Notify returns: it returns nil once its
		// message is handed to the writer, as it is when there is room.
		notifyErr error
		setup     func(t *testing.T, c *jsonrpc.Conn, w *stalledPeer)
	}{
		{"own message not written", nil, func(*testing.T, *jsonrpc.Conn, *stalledPeer) {}},
		{"output full", context.DeadlineExceeded, func(t *testing.T, c *jsonrpc.Conn, w *stalledPeer) {
			fillOutput(t, c, w, params)
		}},
	}
	for _, st := range states {
		for _, o := range ops {
			t.Run(st.name+"/"+o.name, func(t *testing.T) {
				checkLeaks(t)
				c, w := newStalledClient(t, 0)
				st.setup(t, c, w)
				want := error(context.DeadlineExceeded)
				if o.name == "Notify" {
					want = st.notifyErr
				}
				ctx, cancel := context.WithTimeout(t.Context(), 50*time.Millisecond)
				defer cancel()
				var err error
				if !returnsWithin(t, promptly+50*time.Millisecond, o.name, func() { err = o.run(ctx, c) }) {
					return
				}
				if want == nil {
					assert.NoError(t, err)
				} else {
					assert.ErrorIs(t, err, want)
				}
				assert.False(t, isDone(c), "the connection ended")
			})
		}
	}
}

// TestClientHardeningCancelWhilePeerStalled checks a call whose request
// was written but whose answer never comes, the peer having stopped
// reading: when its ctx ends, Call returns at once, and the
// "$/cancelRequest" notice is sent if there is room and dropped if not,
// never waited for.
func TestClientHardeningCancelWhilePeerStalled(t *testing.T) {
	params := fillParams(t)
	tests := []struct {
		name string
		full bool // the output buffer is full when the ctx ends
	}{
		{"room for the cancel notice", false},
		{"output full", true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			checkLeaks(t)
			c, w := newStalledClient(t, 1)
			ctx, cancel := context.WithCancel(t.Context())
			defer cancel()
			res := make(chan error, 1)
			go func() { res <- c.Call(ctx, "wait", nil, nil) }()
			recv(t, w.passed, "the request to be written")
			var req wireMsg
			require.NoError(t, json.Unmarshal([]byte(strings.TrimSpace(w.out.String())), &req))

			// The peer stops reading.
			if tc.full {
				fillOutput(t, c, w, params)
			} else {
				go func() { _ = c.Notify(context.Background(), "first", nil) }()
				recv(t, w.entered, "a write the peer does not take")
			}
			cancel()
			select {
			case err := <-res:
				assert.ErrorIs(t, err, context.Canceled)
			case <-time.After(promptly):
				t.Fatalf("Call did not return within %v of its ctx ending", promptly)
			}
			assert.False(t, isDone(c), "the connection ended")

			if tc.full {
				// The buffer was still full: the notice had no room.
				nctx, ncancel := context.WithTimeout(t.Context(), 50*time.Millisecond)
				defer ncancel()
				var err error
				if returnsWithin(t, promptly, "Notify on a full output", func() { err = c.Notify(nctx, "probe", nil) }) {
					assert.ErrorIs(t, err, context.DeadlineExceeded)
				}
				return
			}
			// The peer reads again: the notice that had room comes.
			w.release()
			w.waitOutput(t, `{"jsonrpc":"2.0","method":"$/cancelRequest","params":{"id":`+string(req.ID)+`}}`)
		})
	}
}

// TestClientHardeningIncomingRequests checks that requests from the peer
// to the client's Handler are bounded as a Server bounds them: a peer that
// sends many and reads no answers meets backpressure instead of making
// the client start a goroutine for each, or hold every request.
func TestClientHardeningIncomingRequests(t *testing.T) {
	t.Run("MaxInFlight", func(t *testing.T) {
		checkLeaks(t)
		synctest.Test(t, func(t *testing.T) {
			const n = 10000
			const maxInFlight = 8
			base := runtime.NumGoroutine()
			release := make(chan struct{})
			unblock := sync.OnceFunc(func() { close(release) })
			t.Cleanup(unblock)
			var started atomic.Int64
			h := jsonrpc.HandlerFunc(func(context.Context, *jsonrpc.Request) (any, error) {
				started.Add(1)
				<-release
				return "done", nil
			})
			// The queue is bounded by bytes: 512 a queued request, plus
			// its line. 64 KiB holds about a hundred.
			opts := &jsonrpc.Options{Handler: h, MaxInFlight: maxInFlight, MaxPendingBytes: 64 << 10}
			answers, sent := newFloodPeer(t, opts, n,
				func(w io.Writer, i int) error {
					_, err := fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%d,"method":"block"}`+"\n", i)
					return err
				})

			synctest.Wait() // everyone is blocked: handlers, reader, peer
			goroutines := runtime.NumGoroutine() - base
			t.Logf("%d goroutines, %d requests sent, %d handlers started", goroutines, sent.Load(), started.Load())
			assert.LessOrEqual(t, goroutines, 2*maxInFlight+8, "goroutines")
			assert.LessOrEqual(t, started.Load(), int64(maxInFlight), "handlers started")
			assert.Less(t, sent.Load(), int64(n), "the client read every request: the peer met no backpressure")

			unblock()
			answers(`"done"`)
		})
	})

	t.Run("MaxPendingBytes", func(t *testing.T) {
		checkLeaks(t)
		synctest.Test(t, func(t *testing.T) {
			const n = 40 // 40 MiB of requests, 10 times the budget
			const size = 1 << 20
			const maxPending = 4 << 20
			body := strings.Repeat("x", size)
			release := make(chan struct{})
			unblock := sync.OnceFunc(func() { close(release) })
			t.Cleanup(unblock)
			var started atomic.Int64
			h := jsonrpc.HandlerFunc(func(context.Context, *jsonrpc.Request) (any, error) {
				started.Add(1)
				<-release
				return nil, nil
			})
			before := heapObjects()
			answers, sent := newFloodPeer(t, &jsonrpc.Options{Handler: h, MaxInFlight: 64, MaxPendingBytes: maxPending}, n,
				func(w io.Writer, i int) error {
					// Three writes: the peer holds one copy of the body.
					if _, err := fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%d,"method":"big","params":["`, i); err != nil {
						return err
					}
					if _, err := io.WriteString(w, body); err != nil {
						return err
					}
					_, err := io.WriteString(w, "\"]}\n")
					return err
				})

			synctest.Wait()
			held := int64(heapObjects()) - int64(before)
			t.Logf("heap grew by %d MiB; %d requests sent, %d handlers started", held>>20, sent.Load(), started.Load())
			assert.Less(t, held, int64(24<<20), "heap held while handlers are blocked")
			assert.LessOrEqual(t, started.Load(), int64(maxPending/size), "handlers started")
			assert.Less(t, sent.Load(), int64(n), "the client read every request: the peer met no backpressure")

			unblock()
			answers("null")
		})
	})

	// Close while the reader waits for a slot: the Handlers' contexts end,
	// the queued requests are answered at once, and nothing waits for
	// StopGrace.
	t.Run("Close while held", func(t *testing.T) {
		checkLeaks(t)
		synctest.Test(t, func(t *testing.T) {
			const grace = time.Second
			const maxInFlight = 2
			var started atomic.Int64
			h := jsonrpc.HandlerFunc(func(ctx context.Context, _ *jsonrpc.Request) (any, error) {
				started.Add(1)
				<-ctx.Done()
				return nil, ctx.Err()
			})
			ansR, ansW := io.Pipe()
			reqR, reqW := io.Pipe()
			c := jsonrpc.NewConn(reqR, ansW, &jsonrpc.Options{Handler: h, MaxInFlight: maxInFlight, StopGrace: grace})
			go func() { _, _ = io.Copy(io.Discard, ansR) }() // the peer reads the answers
			peerDone := make(chan struct{})
			go func() {
				defer close(peerDone)
				for i := range 1000 {
					if _, err := fmt.Fprintf(reqW, `{"jsonrpc":"2.0","id":%d,"method":"block"}`+"\n", i); err != nil {
						return
					}
				}
			}()
			synctest.Wait()
			// The first runs on the reader until the watchdog, whose clock
			// stands still here, hands reading on: one or two have started.
			assert.LessOrEqual(t, started.Load(), int64(maxInFlight), "handlers started")
			assert.Positive(t, started.Load(), "handlers started")
			start := time.Now()
			assert.NoError(t, c.Close())
			assert.Less(t, time.Since(start), grace, "Close waited out StopGrace")
			recv(t, c.Done(), "the reader goroutine to end")
			_ = reqW.Close()
			_ = ansR.Close()
			<-peerDone
		})
	})
}

// newFloodPeer connects a client with opts to a peer that writes the n
// requests made by write (ids 0 to n-1) on a goroutine of its own, counting
// them in sent, and reads nothing until answers is called. answers reads
// the client's answers and checks that each request is answered exactly
// once with result, then ends the connection. It must run inside a
// synctest bubble: its deadlines fire only when everyone is stuck.
func newFloodPeer(t *testing.T, opts *jsonrpc.Options, n int, write func(w io.Writer, i int) error) (answers func(result string), sent *atomic.Int64) {
	t.Helper()
	ansR, ansW := io.Pipe() // client -> peer: the answers
	reqR, reqW := io.Pipe() // peer -> client: the requests
	c := jsonrpc.NewConn(reqR, ansW, opts)
	sent = new(atomic.Int64)
	peerDone := make(chan error, 1)
	go func() {
		for i := range n {
			if err := write(reqW, i); err != nil {
				peerDone <- err
				return
			}
			sent.Add(1)
		}
		peerDone <- nil
	}()
	t.Cleanup(func() {
		_ = reqW.Close()
		assert.NoError(t, c.Close())
		_ = ansR.Close()
		<-peerDone
	})

	answers = func(result string) {
		t.Helper()
		lines := make(chan string)
		go func() {
			defer close(lines)
			br := bufio.NewReader(ansR)
			for {
				line, err := br.ReadString('\n')
				if err != nil {
					return
				}
				lines <- line
			}
		}()
		count := make(map[string]int)
		for len(count) < n {
			select {
			case line, ok := <-lines:
				require.True(t, ok, "the answers ended after %d", len(count))
				var resp struct {
					ID     json.RawMessage `json:"id"`
					Result json.RawMessage `json:"result"`
				}
				require.NoError(t, json.Unmarshal([]byte(line), &resp), "answer %q", line)
				assert.JSONEq(t, result, string(resp.Result), "answer %q", line)
				count[string(resp.ID)]++
			case <-time.After(time.Minute):
				t.Fatalf("%d of %d requests answered", len(count), n)
			}
		}
		require.NoError(t, recv(t, peerDone, "the peer to send every request"))
		peerDone <- nil // for the cleanup
		_ = reqW.Close()
		recv(t, c.Done(), "the client to read the end of its input")
		require.NoError(t, c.Close()) // closes ansW: the answers end
		extra := 0
		for range lines {
			extra++
		}
		for i := range n {
			assert.Equal(t, 1, count[strconv.Itoa(i)], "answers to request %d", i)
		}
		assert.Equal(t, n, len(count), "ids answered")
		assert.Zero(t, extra, "answers after one per request")
	}
	return answers, sent
}

// uninterruptibleReader is a reader whose Close does not interrupt its Read, as
// closing an *os.File on a blocking pipe does not: Read blocks until
// unblock is closed, then reports io.EOF.
type uninterruptibleReader struct {
	entered chan struct{}
	once    sync.Once
	unblock chan struct{}
}

func (r *uninterruptibleReader) Read([]byte) (int, error) {
	r.once.Do(func() { close(r.entered) })
	<-r.unblock
	return 0, io.EOF
}

func (r *uninterruptibleReader) Close() error { return nil }

func newUninterruptibleReader() *uninterruptibleReader {
	return &uninterruptibleReader{entered: make(chan struct{}), unblock: make(chan struct{})}
}

// ownFraming is newline-delimited JSON as a Framing of one's own, read
// through the interface rather than by the built-in reader.
type ownFraming struct{ jsonrpc.LineFraming }

// readerTransport is a Transport whose ReadMessage returns what one Read
// of r gives, and whose Close interrupts nothing.
type readerTransport struct{ r io.Reader }

func (t readerTransport) ReadMessage() ([]byte, error) {
	var b [512]byte
	n, err := t.r.Read(b[:])
	return b[:n], err
}

func (readerTransport) WriteMessage([]byte) error { return nil }
func (readerTransport) Close() error              { return nil }

// waitBlockedRead waits until a goroutine of the client's sits in a
// read(2) system call under lineReader.fill.
func waitBlockedRead(t *testing.T) {
	t.Helper()
	deadline := time.Now().Add(waitTimeout)
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		for g := range strings.SplitSeq(string(buf[:n]), "\n\n") {
			if strings.Contains(g, "[syscall") && strings.Contains(g, "jsonrpc.(*lineReader).fill") {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatal("the client's reader did not block in a read system call")
		}
		<-time.After(time.Millisecond)
	}
}

// TestClientHardeningCloseBounded checks that Close returns within about
// StopGrace when the reader goroutine sits in a Read that closing the
// reader does not interrupt (under the built-in framing, a Framing of
// one's own, or a Transport), or a Handler ignores its context; and that
// what was left running ends once it can.
func TestClientHardeningCloseBounded(t *testing.T) {
	const grace = 200 * time.Millisecond
	tests := []struct {
		name string
		// start returns a client stuck in some way and a function that
		// unsticks it.
		start func(t *testing.T) (c *jsonrpc.Conn, unstick func())
	}{
		{"reader whose Close does not interrupt Read", func(t *testing.T) (*jsonrpc.Conn, func()) {
			r := newUninterruptibleReader()
			c := jsonrpc.NewConn(r, io.Discard, &jsonrpc.Options{StopGrace: grace})
			recv(t, r.entered, "the reader goroutine to start a Read")
			return c, func() { close(r.unblock) }
		}},
		{"a Framing of one's own over such a reader", func(t *testing.T) (*jsonrpc.Conn, func()) {
			r := newUninterruptibleReader()
			c := jsonrpc.NewConn(r, io.Discard, &jsonrpc.Options{StopGrace: grace, Framing: ownFraming{}})
			recv(t, r.entered, "the reader goroutine to start a Read")
			return c, func() { close(r.unblock) }
		}},
		{"a Transport whose Close does not interrupt ReadMessage", func(t *testing.T) (*jsonrpc.Conn, func()) {
			r := newUninterruptibleReader()
			c := jsonrpc.NewTransportConn(readerTransport{r}, &jsonrpc.Options{StopGrace: grace})
			recv(t, r.entered, "the reader goroutine to start a ReadMessage")
			return c, func() { close(r.unblock) }
		}},
		{"os.File on a pipe in blocking mode", func(t *testing.T) (*jsonrpc.Conn, func()) {
			if runtime.GOOS == "windows" {
				t.Skip("a Unix pipe in blocking mode")
			}
			r, w, err := os.Pipe()
			require.NoError(t, err)
			// Fd puts the file in blocking mode, as os.Stdin is when it is
			// an ordinary pipe: Read is a read(2) that Close does not
			// interrupt.
			_ = r.Fd()
			c := jsonrpc.NewConn(r, io.Discard, &jsonrpc.Options{StopGrace: grace})
			waitBlockedRead(t)
			return c, func() { _ = w.Close() }
		}},
		{"Handler that ignores its context", func(t *testing.T) (*jsonrpc.Conn, func()) {
			respR, respW := io.Pipe()
			entered, unblock := make(chan struct{}), make(chan struct{})
			h := jsonrpc.HandlerFunc(func(context.Context, *jsonrpc.Request) (any, error) {
				close(entered)
				<-unblock
				return nil, nil
			})
			c := jsonrpc.NewConn(respR, io.Discard, &jsonrpc.Options{Handler: h, StopGrace: grace})
			_, err := io.WriteString(respW, `{"jsonrpc":"2.0","id":1,"method":"hold"}`+"\n")
			require.NoError(t, err)
			recv(t, entered, "the Handler to start")
			return c, func() { close(unblock); _ = respW.Close() }
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			checkLeaks(t)
			c, unstick := tc.start(t)
			var once sync.Once
			t.Cleanup(func() { once.Do(unstick) })

			call := make(chan error, 1)
			go func() { call <- c.Call(t.Context(), "pending", nil, nil) }()
			if !returnsWithin(t, grace+3*time.Second, "Close", func() { _ = c.Close() }) {
				return
			}
			assert.ErrorIs(t, recv(t, call, "the pending call"), jsonrpc.ErrClosed)
			assert.ErrorIs(t, c.Wait(), jsonrpc.ErrClosed)

			// What was left behind ends once it can (checkLeaks checks the
			// rest).
			once.Do(unstick)
			recv(t, c.Done(), "the reader goroutine to end")
		})
	}
}

// bigItem returns stream item i: a JSON string of about 1 MiB that
// starts with i in eight digits.
func bigItem(i int) string {
	return fmt.Sprintf("%08d", i) + strings.Repeat("x", 1<<20-8)
}

// bigItemIndex returns the index of an item made by bigItem.
func bigItemIndex(t *testing.T, item json.RawMessage) int {
	t.Helper()
	require.Greater(t, len(item), 10, "item")
	require.Equal(t, byte('"'), item[0], "item")
	i, err := strconv.Atoi(string(item[1:9]))
	require.NoError(t, err)
	return i
}

// bigItemsMux serves "items", a stream of n items made by bigItem, whose producer
// reports on ended whether its ctx ended (the call was cancelled); before
// yielding item i, it calls pace(ctx, i) if set, and stops if that reports
// false. "ping" answers "pong".
func bigItemsMux(ended chan<- bool, pace func(ctx context.Context, i int) bool) *jsonrpc.Mux {
	mux := new(jsonrpc.Mux)
	mux.Handle("items", jsonrpc.Stream(func(ctx context.Context, p countParams) iter.Seq2[string, error] {
		return func(yield func(string, error) bool) {
			defer func() { ended <- ctx.Err() != nil }()
			for i := range p.N {
				if pace != nil && !pace(ctx, i) {
					return
				}
				if !yield(bigItem(i), nil) {
					return
				}
			}
		}
	}))
	mux.HandleFunc("ping", func(context.Context, *jsonrpc.Request) (any, error) { return "pong", nil })
	return mux
}

// TestClientHardeningStreamBuffer checks the bound on the items of a
// Client.Stream that wait for the range: a range that stalls gets the
// items buffered, then an error wrapping ErrStreamOverflow, its call is
// cancelled, the heap stays bounded and the client goes on; a range that
// keeps up gets every item.
func TestClientHardeningStreamBuffer(t *testing.T) {
	const maxBuffer = 4 << 20

	t.Run("range stalls", func(t *testing.T) {
		checkLeaks(t)
		const n = 64 // 64 MiB of items
		ended := make(chan bool, 1)
		c := newPairOpts(t, bigItemsMux(ended, nil), &jsonrpc.Options{MaxStreamBuffer: maxBuffer})
		before := heapObjects()
		var got []int
		var errs []error
		var held int64
		for item, err := range c.Stream(t.Context(), "items", map[string]int{"n": n}) {
			if err != nil {
				errs = append(errs, err)
				continue
			}
			got = append(got, bigItemIndex(t, item))
			if len(got) > 1 {
				continue
			}
			// Stall on the first item until the producer ends: cancelled,
			// or out of items.
			assert.True(t, recv(t, ended, "the producer to end"), "the producer's ctx did not end: the call was not cancelled")
			held = int64(heapObjects()) - int64(before)
		}
		t.Logf("heap grew by %d MiB while the range stalled; %d items, errors %v", held>>20, len(got), errs)
		assert.Less(t, held, int64(24<<20), "heap held for a stalled range")
		if assert.Len(t, errs, 1) {
			assert.ErrorIs(t, errs[0], jsonrpc.ErrStreamOverflow)
		}
		// The items that were buffered, in order, and no more than fit.
		assert.GreaterOrEqual(t, len(got), 2)
		assert.LessOrEqual(t, len(got), 2+maxBuffer>>20)
		for i, v := range got {
			assert.Equal(t, i, v, "item %d", i)
		}

		var pong string
		require.NoError(t, c.Call(t.Context(), "ping", nil, &pong), "a call after the overflow")
		assert.Equal(t, "pong", pong)
		assert.False(t, isDone(c), "the connection ended")
	})

	t.Run("range keeps up", func(t *testing.T) {
		checkLeaks(t)
		const n = 12     // 12 MiB of items, 3 times the buffer
		const window = 3 // items the producer may be ahead: 3 MiB
		taken := make(chan struct{}, n)
		ended := make(chan bool, 1)
		pace := func(ctx context.Context, i int) bool {
			if i < window {
				return true
			}
			select {
			case <-taken:
				return true
			case <-ctx.Done():
				return false
			}
		}
		c := newPairOpts(t, bigItemsMux(ended, pace), &jsonrpc.Options{MaxStreamBuffer: maxBuffer})
		var got []int
		for item, err := range c.Stream(t.Context(), "items", map[string]int{"n": n}) {
			require.NoError(t, err)
			got = append(got, bigItemIndex(t, item))
			taken <- struct{}{}
		}
		assert.Len(t, got, n)
		for i, v := range got {
			assert.Equal(t, i, v, "item %d", i)
		}
		assert.False(t, recv(t, ended, "the producer to end"), "the producer was cancelled")
	})
}

// writesThenFails accepts its first n writes and fails every one after.
type writesThenFails struct{ n atomic.Int32 }

func (w *writesThenFails) Write(p []byte) (int, error) {
	if w.n.Add(-1) < 0 {
		return 0, errors.New("the write failed (test)")
	}
	return len(p), nil
}

// TestClientHardeningBatchWhileWriterFails sends batches from several
// goroutines while a failing write ends the connection: a batch whose
// entries the end of the connection has failed already must not write
// their errors while that is still under way (the race detector saw it),
// and every call of a batch that failed has an error.
func TestClientHardeningBatchWhileWriterFails(t *testing.T) {
	checkLeaks(t)
	rounds := 60
	if raceEnabled {
		rounds = 30
	}
	for round := range rounds {
		pr, pw := io.Pipe()
		w := new(writesThenFails)
		w.n.Store(int32(round % 3))
		c := jsonrpc.NewConn(pr, w, nil)
		var wg sync.WaitGroup
		for range 4 {
			wg.Go(func() {
				for range 10 {
					calls := []*jsonrpc.BatchCall{{Method: "a"}, {Method: "b", Notify: true}, {Method: "c"}}
					ctx, cancel := context.WithTimeout(t.Context(), 20*time.Millisecond)
					err := c.Batch(ctx, calls...)
					cancel()
					if err == nil {
						continue
					}
					for _, bc := range calls {
						if !bc.Notify {
							assert.Error(t, bc.Err, "a call of a batch that failed")
						}
					}
				}
			})
		}
		wg.Wait()
		_ = pw.Close()
		_ = c.Close()
	}
}

// TestClientHardeningCloseEndsBlockedWrite closes a Conn while a call whose
// context cannot end is writing a large request, on its own goroutine, to
// a peer that reads nothing: Close must end that write (the writer is an
// io.Closer) within its bound, fail the call with ErrClosed, and leave no
// goroutine behind.
func TestClientHardeningCloseEndsBlockedWrite(t *testing.T) {
	checkLeaks(t)
	big := json.RawMessage(`["` + strings.Repeat("x", 1<<20) + `"]`)
	reqR, reqW := io.Pipe()
	respR, respW := io.Pipe()
	defer reqR.Close()
	defer respW.Close()
	c := jsonrpc.NewConn(respR, reqW, &jsonrpc.Options{StopGrace: 100 * time.Millisecond})
	called := make(chan error, 1)
	go func() { called <- c.Call(context.Background(), "m", big, nil) }()
	// The call's write is in flight once the pipe has given the peer a
	// first piece of it.
	var first [16]byte
	_, err := io.ReadFull(reqR, first[:])
	require.NoError(t, err)
	require.NoError(t, c.Close())
	assert.ErrorIs(t, recv(t, called, "the call whose write was in flight"), jsonrpc.ErrClosed)
}

// framedPeer returns a Conn, with framing f and limit as its
// MaxMessageSize, whose peer reads each message the Conn sends, reports it
// on read, and writes to the Conn what answer returns for it, if
// anything. The peer stops, and closes read and its side of the
// connection, once the Conn closes.
func framedPeer(f jsonrpc.Framing, limit int, answer func(msg []byte) []byte) (*jsonrpc.Conn, <-chan string) {
	reqR, reqW := io.Pipe()
	respR, respW := io.Pipe()
	c := jsonrpc.NewConn(respR, reqW, &jsonrpc.Options{Framing: f, MaxMessageSize: limit})
	read := make(chan string, 8)
	go func() {
		defer close(read)
		defer respW.Close()
		msgs := f.NewReader(reqR, 1<<20)
		for {
			msg, err := msgs.ReadMessage()
			if err != nil {
				return
			}
			read <- string(msg)
			if out := answer(msg); out != nil {
				if _, err := respW.Write(out); err != nil {
					return
				}
			}
		}
	}()
	return c, read
}

// TestClientHardeningResponseTooLarge: a response over the Conn's
// MaxMessageSize is never held, yet the call it answers learns of it (an
// error wrapping ErrMessageTooLarge, and the call ran), in every framing
// the library reads, whatever the size of the response against the read
// buffer; the peer is not answered, and the next call goes on. A stream's
// item over the limit ends the stream with that error.
func TestClientHardeningResponseTooLarge(t *testing.T) {
	const limit = 1000
	for _, f := range []jsonrpc.Framing{jsonrpc.LineFraming{}, jsonrpc.HeaderFraming{}} {
		for _, size := range []int{limit, 200 << 10} {
			t.Run(fmt.Sprintf("%T/%d", f, size), func(t *testing.T) {
				checkLeaks(t)
				big := `"` + strings.Repeat("x", size) + `"`
				// The peer answers "big" with the result past the limit,
				// and anything else with its method's name.
				c, read := framedPeer(f, limit, func(msg []byte) []byte {
					var req struct {
						ID     json.RawMessage `json:"id"`
						Method string          `json:"method"`
					}
					if json.Unmarshal(msg, &req) != nil {
						return nil
					}
					result := `"` + req.Method + `"`
					var out []byte
					switch req.Method {
					case "big":
						result = big
					case "stream":
						// Three items, the second past the limit.
						for _, item := range []string{`"1"`, big, `"3"`} {
							out = f.AppendFrame(out, []byte(`{"jsonrpc":"2.0","method":"$/stream","params":{"id":`+string(req.ID)+`,"item":`+item+`}}`))
						}
					case "$/cancelRequest":
						return nil
					}
					return f.AppendFrame(out, []byte(`{"jsonrpc":"2.0","id":`+string(req.ID)+`,"result":`+result+`}`))
				})
				ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
				defer cancel()
				var got string
				err := c.Call(ctx, "big", nil, &got)
				require.ErrorIs(t, err, jsonrpc.ErrMessageTooLarge)
				assert.True(t, jsonrpc.MayHaveRun(err), "the peer answered: the call ran")
				require.NoError(t, c.Call(ctx, "small", nil, &got))
				assert.Equal(t, "small", got)

				// A stream's item too large ends the stream with the
				// error, after the items before it, and cancels the call.
				var items []string
				for item, err := range c.Stream(ctx, "stream", nil) {
					if err != nil {
						require.ErrorIs(t, err, jsonrpc.ErrMessageTooLarge)
						items = append(items, "error")
						break
					}
					items = append(items, string(item))
				}
				assert.Equal(t, []string{`"1"`, "error"}, items)
				require.NoError(t, c.Call(ctx, "small", nil, &got))
				require.NoError(t, c.Close())
				var methods []string
				for m := range read {
					var req struct{ Method string }
					require.NoError(t, json.Unmarshal([]byte(m), &req))
					methods = append(methods, req.Method)
				}
				assert.Equal(t, []string{"big", "small", "stream", "$/cancelRequest", "small"}, methods, "the peer was sent nothing but the calls and the stream's cancel")
			})
		}
	}
}

// TestClientHardeningBatchResponseTooLarge: the answers to a batch come
// in one array; one over the Conn's MaxMessageSize is never held, and
// every call of the batch learns of it (an error wrapping
// ErrMessageTooLarge, and the calls ran) rather than waiting for answers
// that will not come. The peer is not answered, and the next call goes
// on. An array too large whose first answer is to no call of ours is
// dropped as well.
func TestClientHardeningBatchResponseTooLarge(t *testing.T) {
	const limit = 1000
	for _, f := range []jsonrpc.Framing{jsonrpc.LineFraming{}, jsonrpc.HeaderFraming{}} {
		t.Run(fmt.Sprintf("%T", f), func(t *testing.T) {
			checkLeaks(t)
			big := `"` + strings.Repeat("x", 2*limit) + `"`
			// The peer answers a batch with an array whose second answer
			// is past the limit, and a single call with its method's
			// name after an array too large that answers nothing of
			// ours.
			c, read := framedPeer(f, limit, func(msg []byte) []byte {
				var batch []struct {
					ID json.RawMessage `json:"id"`
				}
				if json.Unmarshal(msg, &batch) == nil {
					answers := make([]string, 0, len(batch))
					for i, r := range batch {
						if r.ID == nil {
							continue
						}
						result := `"small"`
						if i == 1 {
							result = big
						}
						answers = append(answers, `{"jsonrpc":"2.0","id":`+string(r.ID)+`,"result":`+result+`}`)
					}
					return f.AppendFrame(nil, []byte("["+strings.Join(answers, ",")+"]"))
				}
				var req struct {
					ID     json.RawMessage `json:"id"`
					Method string          `json:"method"`
				}
				if json.Unmarshal(msg, &req) != nil {
					return nil
				}
				out := f.AppendFrame(nil, []byte(`[{"jsonrpc":"2.0","id":424242,"result":`+big+`}]`))
				return f.AppendFrame(out, []byte(`{"jsonrpc":"2.0","id":`+string(req.ID)+`,"result":"`+req.Method+`"}`))
			})
			ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
			defer cancel()
			calls := []*jsonrpc.BatchCall{
				{Method: "a", Result: new(string)},
				{Method: "b", Result: new(string)},
				{Method: "note", Notify: true},
				{Method: "c", Result: new(string)},
			}
			require.NoError(t, c.Batch(ctx, calls...))
			for _, bc := range calls {
				if bc.Notify {
					continue
				}
				require.ErrorIs(t, bc.Err, jsonrpc.ErrMessageTooLarge, "call %s", bc.Method)
				assert.True(t, jsonrpc.MayHaveRun(bc.Err), "the peer answered: call %s ran", bc.Method)
			}
			var got string
			require.NoError(t, c.Call(ctx, "small", nil, &got))
			assert.Equal(t, "small", got)
			require.NoError(t, c.Close())
			var msgs []string
			for m := range read {
				msgs = append(msgs, m)
			}
			require.Len(t, msgs, 2, "the peer was sent nothing but the batch and the call: %q", msgs)
			assert.True(t, strings.HasPrefix(msgs[0], "["), "the batch: %s", msgs[0])
			assert.Contains(t, msgs[1], `"method":"small"`)
		})
	}
}

// TestClientHardeningEndlessResponse: a response line that goes on past
// MaxMessageSize and never ends fails its call as soon as the line is
// past the limit, not when (never) its newline comes; the rest of the
// line is skipped as it arrives.
func TestClientHardeningEndlessResponse(t *testing.T) {
	checkLeaks(t)
	const limit = 1000
	reqR, reqW := io.Pipe()
	respR, respW := io.Pipe()
	c := jsonrpc.NewConn(respR, reqW, &jsonrpc.Options{MaxMessageSize: limit})
	go func() {
		msgs := jsonrpc.LineFraming{}.NewReader(reqR, 1<<20)
		msg, err := msgs.ReadMessage()
		if err != nil {
			return
		}
		var req struct {
			ID json.RawMessage `json:"id"`
		}
		if json.Unmarshal(msg, &req) != nil {
			return
		}
		// The answer's head, then its result, on and on without an end
		// until the connection closes.
		if _, err := respW.Write([]byte(`{"jsonrpc":"2.0","id":` + string(req.ID) + `,"result":"`)); err != nil {
			return
		}
		piece := []byte(strings.Repeat("x", 512))
		for {
			if _, err := respW.Write(piece); err != nil {
				return
			}
		}
	}()
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	var got string
	err := c.Call(ctx, "endless", nil, &got)
	require.ErrorIs(t, err, jsonrpc.ErrMessageTooLarge)
	assert.NotErrorIs(t, err, context.DeadlineExceeded)
	require.NoError(t, c.Close())
	respR.Close()
	reqR.Close()
}

// TestClientHardeningBatchResponseTooLong: an array of responses longer
// than this side's MaxBatch is not answered (the specification answers no
// response); one that answers a batch of ours fails each of its calls,
// which were sent and may have run, and one that answers nothing of ours
// is dropped. The connection goes on.
func TestClientHardeningBatchResponseTooLong(t *testing.T) {
	checkLeaks(t)
	reqR, reqW := io.Pipe()
	respR, respW := io.Pipe()
	c := jsonrpc.NewConn(respR, reqW, &jsonrpc.Options{MaxBatch: 2})
	defer c.Close()
	unexpected := make(chan string, 8)
	go func() {
		defer respW.Close()
		sc := bufio.NewScanner(reqR)
		for sc.Scan() {
			line := sc.Text()
			var batch []struct{ ID json.RawMessage }
			if json.Unmarshal([]byte(line), &batch) == nil {
				// Three answers to no call of ours, then three to the batch.
				answers := make([]string, len(batch))
				for i, r := range batch {
					answers[i] = `{"jsonrpc":"2.0","id":` + string(r.ID) + `,"result":"ran"}`
				}
				_, _ = io.WriteString(respW, `[{"jsonrpc":"2.0","id":901,"result":1},{"jsonrpc":"2.0","id":902,"result":2},{"jsonrpc":"2.0","id":903,"result":3}]`+"\n"+
					"["+strings.Join(answers, ",")+"]\n")
				continue
			}
			var req struct {
				ID     json.RawMessage
				Method string
			}
			if json.Unmarshal([]byte(line), &req) != nil || req.Method == "" {
				unexpected <- line // an answer to the peer's answers
				continue
			}
			_, _ = io.WriteString(respW, `{"jsonrpc":"2.0","id":`+string(req.ID)+`,"result":"pong"}`+"\n")
		}
	}()
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	calls := []*jsonrpc.BatchCall{{Method: "a"}, {Method: "b"}, {Method: "c"}}
	require.NoError(t, c.Batch(ctx, calls...))
	for _, bc := range calls {
		require.Error(t, bc.Err, bc.Method)
		assert.True(t, jsonrpc.MayHaveRun(bc.Err), "%s: sent and answered, it may have run", bc.Method)
	}
	var pong string
	require.NoError(t, c.Call(ctx, "ping", nil, &pong))
	assert.Equal(t, "pong", pong)
	select {
	case line := <-unexpected:
		t.Errorf("the peer's answers were answered: %s", line)
	default:
	}
}

// TestClientHardeningEOFWhileWriteBlocked: the input ends while a
// caller's own write is blocked on a peer that reads nothing, with more
// than the writer's high-water mark buffered behind it. The connection
// must end all the same (its end flushes without waiting for that write,
// and closing the writer ends it), not wait for the peer for ever.
func TestClientHardeningEOFWhileWriteBlocked(t *testing.T) {
	checkLeaks(t)
	inR, inW := io.Pipe()   // the peer to us
	outR, outW := io.Pipe() // us to the peer, which never reads
	defer outR.Close()
	w := &signalWriter{PipeWriter: outW, writing: make(chan struct{})}
	c := jsonrpc.NewConn(inR, w, &jsonrpc.Options{StopGrace: 100 * time.Millisecond})
	big := []string{strings.Repeat("x", 2<<20)}
	first := make(chan error, 1)
	go func() { first <- c.Notify(context.Background(), "first", big) }() // writes itself, and blocks
	<-w.writing
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	require.NoError(t, c.Notify(ctx, "second", big)) // buffered behind it
	require.NoError(t, inW.Close())
	select {
	case <-c.Done():
	case <-time.After(waitTimeout):
		_ = outR.Close()
		<-c.Done()
		t.Fatal("the connection did not end after its input did, with a write blocked")
	}
	assert.Error(t, <-first, "the blocked write was ended")
}

// stallingWriter writes through to its Conn while its gate is open, and
// waits at each Write while it is shut.
type stallingWriter struct {
	net.Conn
	mu   sync.Mutex
	gate chan struct{} // closed: open
}

func (s *stallingWriter) Write(p []byte) (int, error) {
	s.mu.Lock()
	gate := s.gate
	s.mu.Unlock()
	<-gate
	return s.Conn.Write(p)
}

func (s *stallingWriter) setGate(g chan struct{}) {
	s.mu.Lock()
	s.gate = g
	s.mu.Unlock()
}

// TestClientHardeningCancelBehindStall: A calls B's "outer", whose handler
// calls A's "inner", which waits for its context; A's link then stalls
// for a while behind two large notifications, and outer's context ends
// meanwhile. Its cancel notice must not be lost behind the stall: were it
// dropped, B's handler, and so A's inner, would wait for ever, and with
// them what waits behind them in order.
func TestClientHardeningCancelBehindStall(t *testing.T) {
	checkLeaks(t)
	a, b := net.Pipe()
	defer a.Close()
	defer b.Close()
	open := make(chan struct{})
	close(open)
	link := &stallingWriter{Conn: a, gate: open}
	inner := make(chan struct{}, 1)
	hA := jsonrpc.HandlerFunc(func(ctx context.Context, req *jsonrpc.Request) (any, error) {
		inner <- struct{}{}
		<-ctx.Done() // inner ends only when cancelled
		return nil, ctx.Err()
	})
	hB := jsonrpc.HandlerFunc(func(ctx context.Context, req *jsonrpc.Request) (any, error) {
		if req.Method == "outer" {
			return nil, jsonrpc.Peer(ctx).Call(ctx, "inner", nil, nil)
		}
		return "pong", nil
	})
	ca := jsonrpc.NewConn(a, link, &jsonrpc.Options{Handler: hA, StopGrace: 100 * time.Millisecond})
	cb := jsonrpc.NewConn(b, b, &jsonrpc.Options{Handler: hB, StopGrace: 100 * time.Millisecond})
	defer cb.Close()
	defer ca.Close()

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- ca.Call(ctx, "outer", nil, nil) }()
	recv(t, inner, "inner to run on A")

	stalled := make(chan struct{})
	link.setGate(stalled)
	big := []string{strings.Repeat("x", 1<<20)}
	nctx, ncancel := context.WithTimeout(context.Background(), waitTimeout)
	defer ncancel()
	go func() { _ = ca.Notify(nctx, "fill", big) }() // its write stalls
	time.Sleep(50 * time.Millisecond)                // let it take the writer
	_ = ca.Notify(nctx, "fill", big)                 // buffered past the high-water mark
	cancel()
	assert.ErrorIs(t, recv(t, done, "outer to return"), context.Canceled)
	close(stalled) // the link recovers

	pctx, pcancel := context.WithTimeout(context.Background(), waitTimeout)
	defer pcancel()
	var pong string
	require.NoError(t, ca.Call(pctx, "ping", nil, &pong), "a call after the link recovered")
	assert.Equal(t, "pong", pong)
}
