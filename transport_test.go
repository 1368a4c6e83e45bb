package jsonrpc_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/iotest"
	"testing/synctest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ndjsonrpc/jsonrpc"
)

// readAll reads messages until an error and returns them with that error.
// A message too large is recorded as "<too large>".
func readAll(t *testing.T, lr *jsonrpc.LineReader) ([]string, error) {
	t.Helper()
	var out []string
	for range 10000 {
		msg, err := lr.ReadMessage()
		if errors.Is(err, jsonrpc.ErrMessageTooLarge) {
			assert.Nil(t, msg)
			out = append(out, "<too large>")
			continue
		}
		if err != nil {
			assert.Nil(t, msg)
			return out, err
		}
		out = append(out, string(msg))
	}
	require.FailNow(t, "ReadMessage never ended")
	return nil, nil
}

func TestLineReader(t *testing.T) {
	big := strings.Repeat("x", 1<<20) // beyond any initial buffer
	tests := []struct {
		name  string
		input string
		max   int
		want  []string
	}{
		{"lines", "a\nb\nc\n", 0, []string{"a", "b", "c"}},
		{"last line without newline", "a\nb", 0, []string{"a", "b"}},
		{"CRLF", "a\r\nb\r\n", 0, []string{"a", "b"}},
		{"only the last CR goes", "a\r\r\n", 0, []string{"a\r"}},
		{"lone CR at the end", "a\r", 0, []string{"a"}},
		{"inner CR stays", "a\rb\n", 0, []string{"a\rb"}},
		{"blank lines skipped", "\n\n \t \r\n\r\na\n\n\nb\n \n", 0, []string{"a", "b"}},
		{"spaces kept", "  a b  \n", 0, []string{"  a b  "}},
		{"empty input", "", 0, nil},
		{"only blank lines", "\n\r\n  ", 0, nil},
		{"1 MiB line", big + "\n" + "after\n", 0, []string{big, "after"}},
		{"1 MiB last line", "before\n" + big, 0, []string{"before", big}},
		{"exactly the max", "0123456789\n", 10, []string{"0123456789"}},
		{"one over the max", "01234567890\nnext\n", 10, []string{"<too large>", "next"}},
		{"far over the max", "a\n" + strings.Repeat("y", 1000) + "\nb\n", 10, []string{"a", "<too large>", "b"}},
		{"over the max, last", "a\n" + strings.Repeat("y", 1000), 10, []string{"a", "<too large>"}},
		{"several over the max", strings.Repeat(strings.Repeat("z", 50)+"\n", 3) + "ok\n", 10,
			[]string{"<too large>", "<too large>", "<too large>", "ok"}},
		{"over the max with CRLF", strings.Repeat("y", 30) + "\r\nok\r\n", 10, []string{"<too large>", "ok"}},
		{"1 MiB line over a 64 KiB max", big + "\nnext\n", 64 << 10, []string{"<too large>", "next"}},
		// Lines longer than the first buffer (64 KiB) are read in pieces
		// and joined: a pattern that does not repeat every 64 KiB shows
		// pieces out of order.
		{"64 KiB line", pattern(64<<10) + "\nnext\n", 0, []string{pattern(64 << 10), "next"}},
		{"CR ends a piece", pattern(64<<10-1) + "\r\nnext\n", 0, []string{pattern(64<<10 - 1), "next"}},
		{"long lines in turn", pattern(200<<10) + "\na\n" + pattern(300<<10) + "\n" + pattern(130<<10) + "\n", 0,
			[]string{pattern(200 << 10), "a", pattern(300 << 10), pattern(130 << 10)}},
		{"long last line", "a\n" + pattern(200<<10), 0, []string{"a", pattern(200 << 10)}},
		{"long blank line", strings.Repeat(" ", 150<<10) + "\nb\n", 0, []string{"b"}},
		{"exactly a long max", pattern(100<<10) + "\nb\n", 100 << 10, []string{pattern(100 << 10), "b"}},
		{"one over a long max", pattern(100<<10+1) + "\nb\n", 100 << 10, []string{"<too large>", "b"}},
		{"over a long max, last", "a\n" + pattern(100<<10+1), 100 << 10, []string{"a", "<too large>"}},
	}
	readers := []struct {
		name string
		wrap func(io.Reader) io.Reader
	}{
		{"whole", func(r io.Reader) io.Reader { return r }},
		{"one byte at a time", iotest.OneByteReader},
		{"half reads", iotest.HalfReader},
		{"data with EOF", iotest.DataErrReader},
	}
	for _, tc := range tests {
		for _, rd := range readers {
			if rd.name == "one byte at a time" && len(tc.input) > 1<<16 {
				continue // slow, and nothing new
			}
			t.Run(tc.name+"/"+rd.name, func(t *testing.T) {
				lr := jsonrpc.NewLineReader(rd.wrap(strings.NewReader(tc.input)), tc.max)
				got, err := readAll(t, lr)
				require.ErrorIs(t, err, io.EOF)
				if !assert.Equal(t, len(tc.want), len(got)) {
					return
				}
				for i := range got {
					assert.True(t, tc.want[i] == got[i], "message %d: got %.40q (%d bytes), want %.40q (%d bytes)",
						i, got[i], len(got[i]), tc.want[i], len(tc.want[i]))
				}
				_, err = lr.ReadMessage()
				assert.ErrorIs(t, err, io.EOF, "EOF again")
			})
		}
	}
}

// pattern returns n bytes of letters that repeat every 26.
func pattern(n int) string {
	b := make([]byte, n)
	for i := range b {
		b[i] = 'a' + byte(i%26)
	}
	return string(b)
}

// TestLineReaderLongLineMemory checks what reading one long line
// allocates: the line is read in pieces and copied once, about twice its
// size in all (growing one buffer by half at a time took three times).
func TestLineReaderLongLineMemory(t *testing.T) {
	const size = 4 << 20
	input := pattern(size) + "\n"
	for range 2 {
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		lr := jsonrpc.NewLineReader(strings.NewReader(input), 0)
		msg, err := lr.ReadMessage()
		runtime.ReadMemStats(&after)
		require.NoError(t, err)
		require.Equal(t, size, len(msg))
		allocated := after.TotalAlloc - before.TotalAlloc
		if allocated <= 2*size+(256<<10) {
			return
		}
		t.Logf("reading a %d-byte line allocated %d bytes", size, allocated)
	}
	t.Errorf("reading a long line allocated more than twice its size and 256 KiB, twice")
}

// readCounter counts the calls of Read.
type readCounter struct {
	r     io.Reader
	reads int
}

func (c *readCounter) Read(p []byte) (int, error) {
	c.reads++
	return c.r.Read(p)
}

// TestLineReaderOverLongLineReads checks that a line over a limit larger
// than the first buffer is skipped in reads of a whole buffer, whatever
// the size of the piece that crossed the limit.
func TestLineReaderOverLongLineReads(t *testing.T) {
	const size = 8 << 20
	for _, limit := range []int{100 << 10, 128 << 10, 128<<10 - 1, 128<<10 + 1} {
		in := &readCounter{r: strings.NewReader(pattern(size) + "\nnext\n")}
		lr := jsonrpc.NewLineReader(in, limit)
		got, err := readAll(t, lr)
		require.ErrorIs(t, err, io.EOF)
		assert.Equal(t, []string{"<too large>", "next"}, got, "limit %d", limit)
		assert.Less(t, in.reads, 2*size/(64<<10), "limit %d: %d reads", limit, in.reads)
	}
}

func TestLineReaderTooLargeError(t *testing.T) {
	lr := jsonrpc.NewLineReader(strings.NewReader(strings.Repeat("x", 100)+"\n"), 16)
	_, err := lr.ReadMessage()
	require.ErrorIs(t, err, jsonrpc.ErrMessageTooLarge)
	assert.Contains(t, err.Error(), "16", "the error names the limit")
}

// TestLineReaderTooLargeEarly: a line over the limit is reported as soon
// as the reader has read past the limit, without waiting for its end,
// which may never come (a peer that sends one endless line); the next
// call skips the rest of the line and returns the line after it, or the
// end of the input if it comes first.
func TestLineReaderTooLargeEarly(t *testing.T) {
	// Under a limit of 16 the first read fills a buffer of 17 bytes,
	// which may yet be a line of 16 and its "\r": the second read is the
	// first that shows the line over the limit.
	piece := strings.Repeat("x", 17)
	tests := []struct {
		name  string
		reads []scriptRead
		want  []string
	}{
		{"the line goes on", []scriptRead{{data: piece}, {data: piece}, {data: piece + "\nnext\n"}}, []string{"<too large>", "next"}},
		{"the input ends in the line", []scriptRead{{data: piece}, {data: piece}, {data: piece}}, []string{"<too large>"}},
		{"the end in the same read", []scriptRead{{data: piece}, {data: piece + "\r\nnext"}}, []string{"<too large>", "next"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := &scriptReader{reads: tc.reads}
			lr := jsonrpc.NewLineReader(r, 16)
			_, err := lr.ReadMessage()
			require.ErrorIs(t, err, jsonrpc.ErrMessageTooLarge)
			assert.LessOrEqual(t, r.calls, 2, "reported by the first read past the limit")
			got := []string{"<too large>"}
			for {
				msg, err := lr.ReadMessage()
				if err != nil {
					require.ErrorIs(t, err, io.EOF)
					break
				}
				got = append(got, string(msg))
			}
			assert.Equal(t, tc.want, got)
		})
	}
}

// scriptReader returns its reads in turn, then EOF.
type scriptReader struct {
	reads []scriptRead
	calls int
}

type scriptRead struct {
	data string
	err  error
	n    int // if set, the count returned instead of len(data)
}

func (r *scriptReader) Read(p []byte) (int, error) {
	if r.calls >= len(r.reads) {
		return 0, io.EOF
	}
	rd := r.reads[r.calls]
	r.calls++
	n := copy(p, rd.data)
	if rd.n != 0 {
		n = rd.n
	}
	return n, rd.err
}

func TestLineReaderReadError(t *testing.T) {
	errRead := errors.New("disk on fire")
	tests := []struct {
		name  string
		reads []scriptRead
		want  []string
	}{
		{"after lines", []scriptRead{{data: "a\nb\n"}, {err: errRead}}, []string{"a", "b"}},
		{"with the last data", []scriptRead{{data: "a\nb", err: errRead}}, []string{"a", "b"}},
		{"at once", []scriptRead{{err: errRead}}, nil},
		{"mid-line", []scriptRead{{data: "a\npar"}, {data: "tial", err: errRead}}, []string{"a", "partial"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			lr := jsonrpc.NewLineReader(&scriptReader{reads: tc.reads}, 0)
			got, err := readAll(t, lr)
			require.ErrorIs(t, err, errRead)
			assert.Equal(t, tc.want, got)
			_, err = lr.ReadMessage()
			assert.ErrorIs(t, err, errRead, "the error is returned again")
		})
	}
	t.Run("invalid count", func(t *testing.T) {
		lr := jsonrpc.NewLineReader(&scriptReader{reads: []scriptRead{{data: "a\n", n: 1 << 30}}}, 0)
		_, err := lr.ReadMessage()
		require.Error(t, err)
		assert.NotErrorIs(t, err, io.EOF)
	})
}

type closeCounter struct {
	io.Reader
	io.Writer
	closes atomic.Int32
	err    error
}

func (c *closeCounter) Close() error {
	c.closes.Add(1)
	return c.err
}

func TestLineReaderClose(t *testing.T) {
	t.Run("closer", func(t *testing.T) {
		src := &closeCounter{Reader: strings.NewReader("a\nb\n")}
		lr := jsonrpc.NewLineReader(src, 0)
		msg, err := lr.ReadMessage()
		require.NoError(t, err)
		assert.Equal(t, "a", string(msg))
		assert.False(t, lr.IsClosed())

		require.NoError(t, lr.Close())
		assert.True(t, lr.IsClosed())
		assert.Equal(t, int32(1), src.closes.Load())
		_, err = lr.ReadMessage()
		require.ErrorIs(t, err, jsonrpc.ErrClosed)
		assert.Contains(t, err.Error(), "closed")

		require.NoError(t, lr.Close(), "Close is idempotent")
		assert.Equal(t, int32(1), src.closes.Load(), "the reader is closed once")
		assert.True(t, lr.IsClosed())
	})
	t.Run("close error", func(t *testing.T) {
		errClose := errors.New("close failed")
		lr := jsonrpc.NewLineReader(&closeCounter{Reader: strings.NewReader(""), err: errClose}, 0)
		require.ErrorIs(t, lr.Close(), errClose)
		require.NoError(t, lr.Close())
	})
	t.Run("not a closer", func(t *testing.T) {
		lr := jsonrpc.NewLineReader(strings.NewReader("a\n"), 0)
		require.NoError(t, lr.Close())
		assert.True(t, lr.IsClosed())
		_, err := lr.ReadMessage()
		require.ErrorIs(t, err, jsonrpc.ErrClosed)
	})
	t.Run("unblocks a pending read", func(t *testing.T) {
		pr, pw := io.Pipe()
		defer pw.Close()
		lr := jsonrpc.NewLineReader(pr, 0)
		errc := make(chan error, 1)
		go func() {
			_, err := lr.ReadMessage()
			errc <- err
		}()
		require.NoError(t, lr.Close())
		require.Error(t, <-errc)
	})
}

func TestLineWriterWriteMessage(t *testing.T) {
	tests := []struct {
		name string
		msg  string
		want string
	}{
		{"one line", `{"a":1}`, `{"a":1}`},
		{"spaces around", "  {\"a\" : 1}\t ", `{"a" : 1}`},
		{"multi-line compacted", "{\n  \"a\": [\n    1,\n    2\n  ],\n  \"b\": \"x\\ny\"\n}\n", `{"a":[1,2],"b":"x\ny"}`},
		{"CRLF lines compacted", "[\r\n1,\r\n2\r\n]", `[1,2]`},
		{"scalar", `42`, `42`},
		{"string", `"<&>"`, `"<&>"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var buf bytes.Buffer
			lw := jsonrpc.NewLineWriter(&buf)
			require.NoError(t, lw.WriteMessage([]byte(tc.msg)))
			require.NoError(t, lw.Flush())
			assert.Equal(t, tc.want+"\n", buf.String(), "exactly one line")
		})
	}
}

func TestLineWriterRefusesInvalidJSON(t *testing.T) {
	for _, msg := range []string{``, ` `, `{"a":`, `1 2`, `{"a":1}{"b":2}`, "\"\xff\"", `{a:1}`, "{\"a\":\"x\ny\"}"} {
		t.Run(msg, func(t *testing.T) {
			var buf bytes.Buffer
			lw := jsonrpc.NewLineWriter(&buf)
			err := lw.WriteMessage([]byte(msg))
			require.ErrorIs(t, err, jsonrpc.ErrParse)
			require.NoError(t, lw.WriteMessage([]byte(`1`)), "a refused message does not break the writer")
			require.NoError(t, lw.Flush())
			assert.Equal(t, "1\n", buf.String(), "nothing of the refused message is written")
		})
	}
}

func TestLineWriterBuffersUntilFlush(t *testing.T) {
	var buf bytes.Buffer
	lw := jsonrpc.NewLineWriter(&buf)
	require.NoError(t, lw.WriteMessage([]byte(`{"a":1}`)))
	require.NoError(t, lw.WriteMessage([]byte(`{"b":2}`)))
	assert.Empty(t, buf.String(), "small messages wait for Flush")
	require.NoError(t, lw.Flush())
	assert.Equal(t, "{\"a\":1}\n{\"b\":2}\n", buf.String())
	require.NoError(t, lw.Flush(), "Flush with nothing buffered")
	assert.Equal(t, "{\"a\":1}\n{\"b\":2}\n", buf.String())

	big := `"` + strings.Repeat("b", 100<<10) + `"`
	require.NoError(t, lw.WriteMessage([]byte(big)))
	assert.Equal(t, "{\"a\":1}\n{\"b\":2}\n"+big+"\n", buf.String(), "a large buffer goes out without Flush")
	assert.NoError(t, lw.Err())
}

// serialWriter records what is written and fails the test if two Writes
// overlap.
type serialWriter struct {
	mu      sync.Mutex
	buf     bytes.Buffer
	active  atomic.Int32
	overlap atomic.Bool
	gate    chan struct{} // if set, each Write waits for a value
	enter   chan struct{} // if set, told of each Write as it begins
}

func (w *serialWriter) Write(p []byte) (int, error) {
	if w.active.Add(1) != 1 {
		w.overlap.Store(true)
	}
	defer w.active.Add(-1)
	if w.enter != nil {
		select {
		case w.enter <- struct{}{}:
		default:
		}
	}
	if w.gate != nil {
		<-w.gate
	}
	runtime.Gosched()
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.buf.Write(p)
}

func (w *serialWriter) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.buf.String()
}

func TestLineWriterConcurrent(t *testing.T) {
	const goroutines, each = 8, 120
	w := &serialWriter{}
	lw := jsonrpc.NewLineWriter(w)
	var wg sync.WaitGroup
	errs := make(chan error, goroutines*each)
	for g := range goroutines {
		wg.Go(func() {
			for i := range each {
				pad := strings.Repeat("p", (g*each+i)%97)
				if i%40 == 7 {
					pad = strings.Repeat("P", 70<<10) // over the flush threshold
				}
				msg := fmt.Sprintf("{\n  \"g\": %d,\n  \"i\": %d,\n  \"pad\": %q\n}", g, i, pad)
				if err := lw.WriteMessage([]byte(msg)); err != nil {
					errs <- err
				}
				if i%10 == 0 {
					if err := lw.Flush(); err != nil {
						errs <- err
					}
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	require.NoError(t, lw.Flush())
	assert.False(t, w.overlap.Load(), "Writes never overlap")

	out := w.String()
	require.True(t, strings.HasSuffix(out, "\n"))
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	require.Len(t, lines, goroutines*each)
	next := make([]int, goroutines)
	for _, line := range lines {
		var m struct{ G, I int }
		if !assert.NoError(t, json.Unmarshal([]byte(line), &m), "line %.80q", line) {
			continue
		}
		assert.Equal(t, next[m.G], m.I, "goroutine %d's messages in order", m.G)
		next[m.G] = m.I + 1
	}
}

// TestLineWriterBackpressure has a writer pile up more than a megabyte
// while a Write is held up, so that it waits for room, and checks that all
// of it comes out in order once the Write goes through.
func TestLineWriterBackpressure(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := &serialWriter{gate: make(chan struct{}), enter: make(chan struct{}, 1)}
		lw := jsonrpc.NewLineWriter(w)
		big := func(i int) string { return fmt.Sprintf(`{"i":%d,"pad":"%s"}`, i, strings.Repeat("q", 300<<10)) }

		first := make(chan error, 1)
		go func() { first <- lw.WriteMessage([]byte(big(0))) }() // starts a Write, held by the gate
		<-w.enter
		rest := make(chan error, 1)
		wrote := make(chan int, 8)
		go func() {
			for i := 1; i < 8; i++ {
				if err := lw.WriteMessage([]byte(big(i))); err != nil {
					rest <- err
					return
				}
				wrote <- i
			}
			rest <- lw.Flush()
		}()
		synctest.Wait()
		assert.Less(t, len(wrote), 7, "the writer waits for room while the Write is held")
		close(w.gate)
		require.NoError(t, <-first)
		require.NoError(t, <-rest)
		require.NoError(t, lw.Flush())
		lines := strings.Split(strings.TrimSuffix(w.String(), "\n"), "\n")
		require.Len(t, lines, 8)
		for i, line := range lines {
			assert.True(t, strings.HasPrefix(line, fmt.Sprintf(`{"i":%d,`, i)), "line %d", i)
		}
		assert.False(t, w.overlap.Load())
	})
}

func TestLineWriterClose(t *testing.T) {
	t.Run("flushes and closes once", func(t *testing.T) {
		var buf bytes.Buffer
		dst := &closeCounter{Writer: &buf}
		lw := jsonrpc.NewLineWriter(dst)
		require.NoError(t, lw.WriteMessage([]byte(`{"a":1}`)))
		assert.False(t, lw.IsClosed())
		require.NoError(t, lw.Close())
		assert.True(t, lw.IsClosed())
		assert.Equal(t, "{\"a\":1}\n", buf.String(), "Close flushes")
		assert.Equal(t, int32(1), dst.closes.Load())

		require.NoError(t, lw.Close(), "Close is idempotent")
		assert.Equal(t, int32(1), dst.closes.Load())
		require.ErrorIs(t, lw.WriteMessage([]byte(`1`)), jsonrpc.ErrClosed)
		require.ErrorIs(t, lw.Flush(), jsonrpc.ErrClosed)
		assert.Equal(t, "{\"a\":1}\n", buf.String())
	})
	t.Run("close error", func(t *testing.T) {
		errClose := errors.New("close failed")
		lw := jsonrpc.NewLineWriter(&closeCounter{Writer: io.Discard, err: errClose})
		require.ErrorIs(t, lw.Close(), errClose)
	})
	t.Run("not a closer", func(t *testing.T) {
		var buf bytes.Buffer
		lw := jsonrpc.NewLineWriter(&buf)
		require.NoError(t, lw.WriteMessage([]byte(`2`)))
		require.NoError(t, lw.Close())
		assert.Equal(t, "2\n", buf.String())
		assert.True(t, lw.IsClosed())
	})
	t.Run("flush error wins", func(t *testing.T) {
		errWrite := errors.New("write failed")
		lw := jsonrpc.NewLineWriter(&closeCounter{Writer: failWriter{errWrite}})
		require.NoError(t, lw.WriteMessage([]byte(`3`)))
		require.ErrorIs(t, lw.Close(), errWrite)
	})
}

func TestLineWriterStickyError(t *testing.T) {
	errWrite := errors.New("write failed")
	fw := &flakyWriter{failAt: 2, err: errWrite}
	lw := jsonrpc.NewLineWriter(fw)
	require.NoError(t, lw.WriteMessage([]byte(`1`)))
	require.NoError(t, lw.Flush())
	require.NoError(t, lw.WriteMessage([]byte(`2`)))
	require.ErrorIs(t, lw.Flush(), errWrite)
	assert.ErrorIs(t, lw.Err(), errWrite)
	assert.ErrorIs(t, lw.WriteMessage([]byte(`3`)), errWrite, "later writes fail")
	assert.ErrorIs(t, lw.Flush(), errWrite)
	assert.Equal(t, 2, fw.calls, "nothing is written after the error")
	assert.Equal(t, "1\n", fw.buf.String())
}

// flakyWriter fails its failAt-th Write, and every later one.
type flakyWriter struct {
	buf    bytes.Buffer
	calls  int
	failAt int
	err    error
}

func (w *flakyWriter) Write(p []byte) (int, error) {
	w.calls++
	if w.calls >= w.failAt {
		return 0, w.err
	}
	return w.buf.Write(p)
}

// gatedWriter holds its first Write until released, and says when that
// Write has begun.
type gatedWriter struct {
	entered chan struct{}
	release chan struct{}
	once    sync.Once
	mu      sync.Mutex
	buf     bytes.Buffer
}

func (w *gatedWriter) Write(p []byte) (int, error) {
	first := false
	w.once.Do(func() { first = true })
	if first {
		close(w.entered)
		<-w.release
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.buf.Write(p)
}

// TestLineWriterCloseKeepsAccepted checks that Close, while another
// goroutine's write is in flight, still writes what was accepted meanwhile.
func TestLineWriterCloseKeepsAccepted(t *testing.T) {
	w := &gatedWriter{entered: make(chan struct{}), release: make(chan struct{})}
	lw := jsonrpc.NewLineWriter(w)
	first := make(chan error, 1)
	go func() {
		if err := lw.WriteMessage([]byte(`"first"`)); err != nil {
			first <- err
			return
		}
		first <- lw.Flush()
	}()
	<-w.entered
	require.NoError(t, lw.WriteMessage([]byte(`"second"`)))
	closed := make(chan error, 1)
	go func() { closed <- lw.Close() }()
	close(w.release)
	assert.NoError(t, <-first)
	assert.NoError(t, <-closed)
	assert.Equal(t, "\"first\"\n\"second\"\n", w.buf.String())
}
