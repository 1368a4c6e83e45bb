package jsonrpc_test

// Regression tests for the scanner's cost on hostile input, through the
// public API: every line is scanned in time linear in its length (a long
// string full of escapes used to cost time quadratic in its length), and a
// long array costs no more memory than MaxBatch entries and the line
// itself (it used to be expanded to one envelope per element before its
// length was checked, and that scratch space was kept while idle).
//
// Liveness is checked with a deadline far above the linear cost, never
// with a timing; memory with runtime/metrics and generous bounds.

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"runtime"
	"runtime/metrics"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ndjsonrpc/jsonrpc"
)

const (
	// hugeLine is the size of the long strings sent here (and of the long
	// arrays, but see longArray). The old scanner took 73 s for an 8 MiB
	// escaped string.
	hugeLine = 16 << 20
	// linearDeadline bounds the wait for a huge line to be served. A
	// linear scan takes well under a second even under the race detector;
	// the old quadratic one took minutes.
	linearDeadline = 10 * time.Second
)

// escapedText returns about n bytes of JSON string content that is heavy
// in escapes and holds no quote: lines of 16 characters, each ended by the
// escape \n, like a log file sent as a param. Each line made the old
// scanner search the rest of the string for its closing quote.
func escapedText(n int) string {
	const line = `0123456789abcdef\n`
	return strings.Repeat(line, n/len(line))
}

// invalidTail returns n bytes of plain string content with a raw 0x01
// byte, which a JSON string may not hold, near its end.
func invalidTail(n int) string {
	return strings.Repeat("a", n-16) + "\x01" + strings.Repeat("a", 15)
}

// stringEchoLine returns a request to echo whose one param is the string
// with the given content (without its quotes).
func stringEchoLine(id, content string) string {
	return `{"jsonrpc":"2.0","id":` + id + `,"method":"echo","params":["` + content + `"]}`
}

// longArray returns the size of the long arrays sent here: 16 MiB, or
// 8 MiB under the race detector, which makes each of their millions of
// elements cost over 150 ns. The old scanner allocated about 100 times
// either size.
func longArray() int {
	if raceEnabled {
		return hugeLine / 2
	}
	return hugeLine
}

// onesArray returns a JSON array of about n bytes: [1,1,1,...,1].
func onesArray(n int) string {
	return "[" + strings.Repeat("1,", n/2) + "1]"
}

// runtimeMetric returns the value of the runtime metric name.
func runtimeMetric(t *testing.T, name string) uint64 {
	t.Helper()
	s := []metrics.Sample{{Name: name}}
	metrics.Read(s)
	require.Equal(t, metrics.KindUint64, s[0].Value.Kind(), "metric %s", name)
	return s[0].Value.Uint64()
}

// heapAllocated returns the bytes allocated on the heap so far.
func heapAllocated(t *testing.T) uint64 {
	t.Helper()
	return runtimeMetric(t, "/gc/heap/allocs:bytes")
}

// liveHeapBytes returns the bytes of heap found live by a collection run now.
func liveHeapBytes(t *testing.T) uint64 {
	t.Helper()
	runtime.GC()
	return runtimeMetric(t, "/gc/heap/live:bytes")
}

// withinDeadline runs f on a new goroutine and fails t at once if f has not
// returned within linearDeadline; what stands for what f does, in the
// failure message.
func withinDeadline(t *testing.T, what string, f func()) {
	t.Helper()
	done := make(chan struct{})
	start := time.Now()
	go func() {
		defer close(done)
		f()
	}()
	select {
	case <-done:
		t.Logf("%s: %v", what, time.Since(start).Round(time.Millisecond))
	case <-time.After(linearDeadline):
		require.FailNowf(t, "not linear", "%s did not finish within %v", what, linearDeadline)
	}
}

// serveWithin serves input with srv, from a strings.Reader into a
// bytes.Buffer, and returns the output lines. It fails t if Serve has not
// returned within linearDeadline.
func serveWithin(t *testing.T, srv *jsonrpc.Server, input string) []string {
	t.Helper()
	var out bytes.Buffer
	var err error
	withinDeadline(t, fmt.Sprintf("Serve of %d bytes", len(input)), func() {
		err = srv.Serve(t.Context(), strings.NewReader(input), &out)
	})
	require.NoError(t, err)
	return splitLines(out.String())
}

// TestScanLinearEscapedString guards against a scan quadratic in the
// length of a string: a 16 MiB param full of \n escapes and with no quote
// (the old scanner searched the rest of the string for its closing quote
// after every escape) is echoed back intact well inside the deadline, and
// the connection goes on.
func TestScanLinearEscapedString(t *testing.T) {
	checkLeaks(t)
	text := escapedText(hugeLine)
	srv := &jsonrpc.Server{Options: jsonrpc.Options{Handler: specMux()}}
	got := serveWithin(t, srv, stringEchoLine("1", text)+"\n"+afterLine+"\n")

	require.Len(t, got, 2, "answers: %q", clip(strings.Join(got, "\n")))
	want := `{"jsonrpc":"2.0","id":1,"result":["` + text + `"]}`
	assert.True(t, got[0] == want, "the echo of a %d-byte param differs: %q", len(text), clip(got[0]))
	assert.JSONEq(t, afterAnswer, got[1])
}

// TestScanLinearInvalidTail guards against a scan quadratic in the length
// of an invalid string: a 16 MiB string with a raw 0x01 byte near its end
// and no closing quote (the old scanner retried its bulk path every 16
// bytes, each time up to the end of the line) is answered with a Parse
// error with a null id well inside the deadline, and the next line is
// still answered.
func TestScanLinearInvalidTail(t *testing.T) {
	checkLeaks(t)
	bad := `{"jsonrpc":"2.0","id":1,"method":"echo","params":["` + invalidTail(hugeLine)
	srv := &jsonrpc.Server{Options: jsonrpc.Options{Handler: specMux()}}
	got := serveWithin(t, srv, bad+"\n"+afterLine+"\n")

	require.Len(t, got, 2, "answers: %q", clip(strings.Join(got, "\n")))
	assertError(t, got[0], jsonrpc.CodeParseError, "null")
	assert.JSONEq(t, afterAnswer, got[1])
}

// TestScanLinearClientResult guards the Client's reader, which uses the
// same scanner: a response whose result is a 16 MiB string full of
// escapes is read and returned intact well inside the deadline.
func TestScanLinearClientResult(t *testing.T) {
	checkLeaks(t)
	text := escapedText(hugeLine)
	c, peer := newLinearPeer(t, nil)

	var r callResult
	withinDeadline(t, "a Call whose result is a 16 MiB escaped string", func() {
		calls := goCall(t.Context(), c, "echo", nil)
		m := <-peer.requests
		peer.respond <- [][]byte{[]byte(`{"jsonrpc":"2.0","id":` + string(m.ID) + `,"result":"` + text + `"}` + "\n")}
		r = <-calls
	})
	require.NoError(t, r.err)
	want := `"` + text + `"`
	assert.True(t, string(r.result) == want, "the result differs from what was sent: %q", clip(string(r.result)))
}

// linearPeer is a fake server for a Client: a goroutine that reads one
// request at a time, hands it to the test, and writes back what the test
// gives it, piece by piece without copying (newlines included).
type linearPeer struct {
	requests chan wireMsg
	respond  chan [][]byte
}

// newLinearPeer returns a Client talking to a linearPeer over io.Pipe. A
// cleanup closes both and waits for them, but no longer than
// linearDeadline, so that a client stuck scanning fails the test rather
// than hanging it.
func newLinearPeer(t *testing.T, opts *jsonrpc.Options) (*jsonrpc.Conn, *linearPeer) {
	t.Helper()
	reqR, reqW := io.Pipe()
	respR, respW := io.Pipe()
	p := &linearPeer{requests: make(chan wireMsg, 1), respond: make(chan [][]byte, 1)}
	quit := make(chan struct{})
	peerDone := make(chan struct{})
	go func() {
		defer close(peerDone)
		br := bufio.NewReader(reqR)
		for {
			line, err := br.ReadBytes('\n')
			if err != nil {
				return
			}
			var m wireMsg
			if json.Unmarshal(line, &m) != nil || m.ID == nil {
				continue
			}
			select {
			case p.requests <- m:
			case <-quit:
				return
			}
			var resp [][]byte
			select {
			case resp = <-p.respond:
			case <-quit:
				return
			}
			for _, b := range resp {
				if _, err := respW.Write(b); err != nil {
					return
				}
			}
		}
	}()
	c := jsonrpc.NewConn(respR, reqW, opts)
	t.Cleanup(func() {
		close(quit)
		_ = reqR.Close()
		_ = respW.Close()
		closed := make(chan error, 1)
		go func() { closed <- c.Close() }()
		select {
		case err := <-closed:
			assert.NoError(t, err)
		case <-time.After(linearDeadline):
			t.Errorf("Client.Close did not return within %v: its reader is still busy", linearDeadline)
		}
		<-peerDone
	})
	return c, p
}

// TestScanLinearLineWriter guards LineWriter's check of each message, which
// uses the same scanner: a 16 MiB message whose string is full of escapes
// is accepted and written as it is, well inside the deadline.
func TestScanLinearLineWriter(t *testing.T) {
	checkLeaks(t)
	msg := `{"jsonrpc":"2.0","method":"log","params":["` + escapedText(hugeLine) + `"]}`
	var out bytes.Buffer
	lw := jsonrpc.NewLineWriter(&out)
	var err error
	withinDeadline(t, "WriteMessage of a 16 MiB escaped string", func() {
		if err = lw.WriteMessage([]byte(msg)); err == nil {
			err = lw.Flush()
		}
	})
	require.NoError(t, err)
	assert.True(t, out.String() == msg+"\n", "the line written differs from the message (%d bytes, want %d)", out.Len(), len(msg)+1)
}

// TestScanLinearLongBatch guards against expanding a long array before
// MaxBatch is checked: a 16 MiB line [1,1,1,...] (eight million elements;
// see longArray) sent to a server whose MaxBatch is 100 is answered with one Invalid
// Request error, "batch too long", or with a Parse error if the array is
// not valid JSON; and serving it allocates a small multiple of the line,
// where the old scanner allocated an envelope for every element, about 100
// times the line.
func TestScanLinearLongBatch(t *testing.T) {
	array := onesArray(longArray())
	unclosed := strings.TrimSuffix(array, "]")
	tests := []struct {
		name   string
		line   string
		code   jsonrpc.Code
		reason string
	}{
		{name: "valid", line: array, code: jsonrpc.CodeInvalidRequest, reason: "batch too long"},
		{name: "trailing comma", line: unclosed + ",]", code: jsonrpc.CodeParseError},
		{name: "unclosed", line: unclosed, code: jsonrpc.CodeParseError},
		{name: "bad last element", line: unclosed + "x]", code: jsonrpc.CodeParseError},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			checkLeaks(t)
			input := tc.line + "\n" + afterLine + "\n"
			srv := &jsonrpc.Server{Options: jsonrpc.Options{Handler: specMux(), MaxBatch: 100}}

			before := heapAllocated(t)
			got := serveWithin(t, srv, input)
			allocated := heapAllocated(t) - before

			require.Len(t, got, 2, "answers: %q", got)
			assertError(t, got[0], tc.code, "null")
			if tc.reason != "" {
				var r struct {
					Error struct {
						Data struct {
							Reason string `json:"reason"`
							Limit  int    `json:"limit"`
						} `json:"data"`
					} `json:"error"`
				}
				require.NoError(t, json.Unmarshal([]byte(got[0]), &r), "answer %q", got[0])
				assert.Equal(t, tc.reason, r.Error.Data.Reason, "answer %q", got[0])
				assert.Equal(t, 100, r.Error.Data.Limit, "answer %q", got[0])
			}
			assert.JSONEq(t, afterAnswer, got[1])

			// The reader's buffer grows by half at a time up to the line:
			// about three times the line in all. The bound leaves room
			// for twice that.
			limit := uint64(6*len(input) + 8<<20)
			t.Logf("allocated %d MiB serving a %d MiB array", allocated>>20, len(input)>>20)
			assert.Less(t, allocated, limit,
				"serving a %d MiB array with MaxBatch 100 allocated %d MiB", len(input)>>20, allocated>>20)
		})
	}
}

// TestScanLinearIdleAfterBatch guards against an idle connection holding
// the scratch space of its largest batch: after a batch of 100,000
// entries, once the server waits in Read again, the heap it keeps live is
// about the reader's buffer, where the old server kept an envelope of
// about 180 bytes for every entry (over 20 MB).
//
// The entries are responses, which a server drops, so that the batch makes
// no work: a batch of requests that runs for more than a millisecond is
// handed off to another goroutine, and its scratch space goes when that
// goroutine ends, whether or not the reader lets go of its own.
func TestScanLinearIdleAfterBatch(t *testing.T) {
	checkLeaks(t)
	const entries = 100_000
	reqR, reqW := io.Pipe()
	respR, respW := io.Pipe()
	srv := &jsonrpc.Server{Options: jsonrpc.Options{Handler: specMux(), MaxBatch: entries}}
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() {
		err := srv.Serve(ctx, reqR, respW)
		_ = respW.Close()
		served <- err
	}()
	t.Cleanup(func() {
		defer cancel()
		_ = reqW.Close()
		_ = respR.Close()
		select {
		case err := <-served:
			assert.NoError(t, err)
		case <-time.After(stopTimeout):
			t.Errorf("Serve did not return within %v of the end of its input", stopTimeout)
		}
	})
	br := bufio.NewReader(respR)
	// roundTrip sends a request and reads its answer. Its write returns
	// once the server has read the request: after the server, done with
	// all it read before, flushed its answers and let go of its scratch
	// space to wait in Read.
	roundTrip := func(id string) {
		t.Helper()
		_, err := io.WriteString(reqW, `{"jsonrpc":"2.0","id":"`+id+`","method":"echo","params":["`+id+`"]}`+"\n")
		require.NoError(t, err)
		line, err := br.ReadString('\n')
		require.NoError(t, err)
		assert.JSONEq(t, `{"jsonrpc":"2.0","id":"`+id+`","result":["`+id+`"]}`, line)
	}

	roundTrip("warm")
	base := liveHeapBytes(t)
	batch := make([]byte, 0, entries*40)
	batch = append(batch, '[')
	for i := range entries {
		if i > 0 {
			batch = append(batch, ',')
		}
		batch = append(batch, `{"jsonrpc":"2.0","id":1,"result":1}`...)
	}
	batch = append(batch, "]\n"...)
	_, err := reqW.Write(batch)
	require.NoError(t, err)
	roundTrip("first")  // the batch got no answer
	roundTrip("second") // read after the server let go of its scratch space
	lineSize := len(batch)
	batch = nil
	held := int64(liveHeapBytes(t)) - int64(base)

	// The reader keeps its buffer, which grew to hold the batch line: at
	// most one and a half times the line, 37 bytes an entry.
	limit := int64(2*lineSize + 4<<20)
	t.Logf("live heap grew by %d KiB after a %d KiB batch line", held>>10, lineSize>>10)
	assert.Less(t, held, limit,
		"an idle connection holds %d KiB after a batch of %d entries (%d KiB)", held>>10, entries, lineSize>>10)
}

// TestScanLinearClientLongBatch guards the Client against expanding a long
// array: a 16 MiB line [1,1,1,...] (see longArray) from the peer, to a
// client with Options.MaxBatch 10, is dropped after allocating a
// small multiple of the line, and the client goes on to read the answer to
// its call. The old client allocated an envelope for every element.
func TestScanLinearClientLongBatch(t *testing.T) {
	checkLeaks(t)
	line := []byte(onesArray(longArray()) + "\n")
	c, peer := newLinearPeer(t, &jsonrpc.Options{MaxBatch: 10})

	before := heapAllocated(t)
	var r callResult
	withinDeadline(t, fmt.Sprintf("a Call answered after a %d MiB array", len(line)>>20), func() {
		calls := goCall(t.Context(), c, "echo", nil)
		m := <-peer.requests
		peer.respond <- [][]byte{line, []byte(`{"jsonrpc":"2.0","id":` + string(m.ID) + `,"result":"done"}` + "\n")}
		r = <-calls
	})
	allocated := heapAllocated(t) - before

	require.NoError(t, r.err)
	assert.JSONEq(t, `"done"`, string(r.result))
	// The client's buffer grows by half at a time up to the line: about
	// three times the line in all. The bound leaves room for twice that.
	limit := uint64(6*len(line) + 8<<20)
	t.Logf("allocated %d MiB reading a %d MiB array", allocated>>20, len(line)>>20)
	assert.Less(t, allocated, limit,
		"reading a %d MiB array with MaxBatch 10 allocated %d MiB", len(line)>>20, allocated>>20)
}
