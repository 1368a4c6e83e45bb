package jsonrpc

// Tests of the framings. They are internal: the engine reaches a framing
// through newFramedReader and newFramedWriter, and writes large results
// through writeLarge, none of which is exported.

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"math/rand/v2"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Markers that readFrames records in place of a message for its errors.
const (
	markTooLarge  = "<too large>"
	markBadHeader = "<bad header>"
)

// readFrames reads messages until an error other than a message too large
// or a bad header, and returns them with that error.
func readFrames(t *testing.T, mr MessageReader) ([]string, error) {
	t.Helper()
	var out []string
	for range 10000 {
		msg, err := mr.ReadMessage()
		switch {
		case errors.Is(err, ErrMessageTooLarge):
			assert.Nil(t, msg)
			out = append(out, markTooLarge)
		case errors.Is(err, ErrBadHeader):
			assert.Nil(t, msg)
			out = append(out, markBadHeader)
		case err != nil:
			assert.Nil(t, msg)
			return out, err
		default:
			require.NotNil(t, msg, "a message is never nil")
			out = append(out, string(msg))
		}
	}
	require.FailNow(t, "ReadMessage never ended")
	return nil, nil
}

// frame returns body framed by HeaderFraming.
func frame(body string) string {
	return string(HeaderFraming{}.AppendFrame(nil, []byte(body)))
}

// testReaders are ways of cutting the input into reads.
var testReaders = []struct {
	name string
	wrap func(io.Reader) io.Reader
}{
	{"whole", func(r io.Reader) io.Reader { return r }},
	{"one byte at a time", iotest.OneByteReader},
	{"half reads", iotest.HalfReader},
	{"data with EOF", iotest.DataErrReader},
}

func TestHeaderFramingRead(t *testing.T) {
	body := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}`
	next := `{"jsonrpc":"2.0","method":"next"}`
	big := strings.Repeat("x", 200<<10)
	longHeader := "X-Padding: " + strings.Repeat("p", maxHeaderBytes) + "\r\n"
	manyHeaders := strings.Repeat("X-Padding: "+strings.Repeat("p", 80)+"\r\n", maxHeaderBytes/80)
	tests := []struct {
		name    string
		input   string
		max     int
		want    []string
		wantErr error
	}{
		{"plain", frame(body), 0, []string{body}, io.EOF},
		{"with Content-Type after", "Content-Length: 58\r\nContent-Type: application/vscode-jsonrpc; charset=utf-8\r\n\r\n" + body,
			0, []string{body}, io.EOF},
		{"with Content-Type before", "Content-Type: application/vscode-jsonrpc; charset=utf-8\r\nContent-Length: 58\r\n\r\n" + body,
			0, []string{body}, io.EOF},
		{"lower-case names", "content-length: 58\r\ncontent-type: x\r\n\r\n" + body, 0, []string{body}, io.EOF},
		{"mixed-case names", "CONTENT-LENGTH: 58\r\nConTent-TyPe: x\r\n\r\n" + body, 0, []string{body}, io.EOF},
		{"bare LF line ends", "Content-Length: 58\nContent-Type: x\n\n" + body, 0, []string{body}, io.EOF},
		{"mixed line ends", "Content-Length: 58\r\nContent-Type: x\n\r\n" + body, 0, []string{body}, io.EOF},
		{"no space after the colon", "Content-Length:58\r\n\r\n" + body, 0, []string{body}, io.EOF},
		{"spaces and tabs around the value", "Content-Length: \t 58 \t\r\n\r\n" + body, 0, []string{body}, io.EOF},
		{"other headers ignored", "X-Anything: 1\r\nContent-Length: 58\r\nX-Empty:\r\n\r\n" + body, 0, []string{body}, io.EOF},
		{"several messages", frame(body) + frame(next) + frame(body), 0, []string{body, next, body}, io.EOF},
		{"body holding a blank line and newlines", frame("{\r\n\r\n\"a\":\n1\n}\n\n"), 0, []string{"{\r\n\r\n\"a\":\n1\n}\n\n"}, io.EOF},
		{"body holding a header", frame("Content-Length: 3\r\n\r\nabc") + frame(next), 0, []string{"Content-Length: 3\r\n\r\nabc", next}, io.EOF},
		{"empty body", frame("") + frame(next), 0, []string{"", next}, io.EOF},
		{"empty lines between messages", "\r\n\n" + frame(body) + "\r\n \r\n\n" + frame(next) + "\r\n", 0, []string{body, next}, io.EOF},
		{"repeated Content-Length, same value", "Content-Length: 58\r\ncontent-length: 58\r\n\r\n" + body, 0, []string{body}, io.EOF},
		{"200 KiB body", frame(big) + frame(next), 0, []string{big, next}, io.EOF},
		{"exactly the max", frame("0123456789") + frame("1"), 10, []string{"0123456789", "1"}, io.EOF},
		{"one over the max", frame("01234567890") + frame("1"), 10, []string{markTooLarge, "1"}, io.EOF},
		{"far over the max", frame(big) + frame(next), 1000, []string{markTooLarge, next}, io.EOF},
		{"over the max, last", frame(next) + frame(big), 1000, []string{next, markTooLarge}, io.EOF},

		{"missing Content-Length", "Content-Type: x\r\n\r\n" + body + frame(next), 0, []string{markBadHeader, next}, io.EOF},
		{"body without a header", "\r\n" + body + frame(next), 0, []string{markBadHeader, next}, io.EOF},
		{"invalid Content-Length", "Content-Length: abc\r\n\r\n" + body + frame(next), 0, []string{markBadHeader, next}, io.EOF},
		{"negative Content-Length", "Content-Length: -58\r\n\r\n" + body + frame(next), 0, []string{markBadHeader, next}, io.EOF},
		{"signed Content-Length", "Content-Length: +58\r\n\r\n" + body + frame(next), 0, []string{markBadHeader, next}, io.EOF},
		{"empty Content-Length", "Content-Length:\r\n\r\n" + body + frame(next), 0, []string{markBadHeader, next}, io.EOF},
		{"Content-Length with a unit", "Content-Length: 58 bytes\r\n\r\n" + body + frame(next), 0, []string{markBadHeader, next}, io.EOF},
		{"Content-Length overflowing", "Content-Length: 99999999999999999999999\r\n\r\n" + body + frame(next), 0,
			[]string{markBadHeader, next}, io.EOF},
		{"conflicting Content-Length", "Content-Length: 58\r\nContent-Length: 57\r\n\r\n" + body + frame(next), 0,
			[]string{markBadHeader, next}, io.EOF},
		{"malformed header line", "Content-Length 58\r\n\r\n" + body + frame(next), 0, []string{markBadHeader, next}, io.EOF},
		{"space in a name", "Content Length: 58\r\n\r\n" + body + frame(next), 0, []string{markBadHeader, next}, io.EOF},
		{"line that is not a header", "Content-Length: 58\r\nhello\r\n\r\n" + body + frame(next), 0, []string{markBadHeader, next}, io.EOF},
		{"Content-Length too short", "Content-Length: 50\r\n\r\n" + body + frame(next), 0,
			[]string{body[:50], markBadHeader, next}, io.EOF},
		{"Content-Length too long", "Content-Length: 60\r\n\r\n" + body + frame(next) + frame(next) + frame(body), 0,
			[]string{body + "Co", markBadHeader, next, body}, io.EOF},
		{"newline-delimited input", body + "\n" + next + "\n", 0, []string{markBadHeader}, io.EOF},
		{"header block too long, one line", longHeader + "Content-Length: 58\r\n\r\n" + body + frame(next), 0,
			[]string{markBadHeader, next}, io.EOF},
		{"header block too long, many lines", "Content-Length: 58\r\n" + manyHeaders + "\r\n" + body + frame(next), 0,
			[]string{markBadHeader, next}, io.EOF},
		{"junk line just within the header bound", strings.Repeat("x", maxHeaderBytes) + "\n" + frame(next), 0,
			[]string{markBadHeader, next}, io.EOF},
		{"junk line over the header bound", strings.Repeat("x", maxHeaderBytes+8) + "\n" + frame(next), 0,
			[]string{markBadHeader, next}, io.EOF},
		{"long junk line", "{" + strings.Repeat("j", 100000) + "}\r\n" + frame(next), 0, []string{markBadHeader, next}, io.EOF},
		{"long junk running into a header", strings.Repeat("x", 100000) + frame(next) + frame(body), 0,
			[]string{markBadHeader, next, body}, io.EOF},
		{"long blank line", strings.Repeat(" ", maxHeaderBytes+800) + "\r\n" + frame(next), 0, []string{markBadHeader, next}, io.EOF},
		{"header block just within the bound", "Content-Length: 58\r\nX: " + strings.Repeat("p", maxHeaderBytes-20-3-2-2) + "\r\n\r\n" + body, 0,
			[]string{body}, io.EOF},

		{"empty input", "", 0, nil, io.EOF},
		{"only empty lines", "\r\n\n  \r\n", 0, nil, io.EOF},
		{"EOF in a header", "Content-Len", 0, nil, io.ErrUnexpectedEOF},
		{"EOF in a header block", "Content-Length: 58\r\n", 0, nil, io.ErrUnexpectedEOF},
		{"EOF before the body", "Content-Length: 58\r\n\r\n", 0, nil, io.ErrUnexpectedEOF},
		{"EOF in the body", frame(next) + "Content-Length: 58\r\n\r\n" + body[:20], 0, []string{next}, io.ErrUnexpectedEOF},
		{"EOF in a skipped body", frame(next) + "Content-Length: 5000\r\n\r\n" + big[:2000], 1000,
			[]string{next, markTooLarge}, io.ErrUnexpectedEOF},
		{"EOF in an over-long header", longHeader[:maxHeaderBytes+5], 0, nil, io.ErrUnexpectedEOF},
		{"EOF while out of step", "Content-Type: x\r\n\r\n" + body, 0, []string{markBadHeader}, io.EOF},
	}
	for _, tc := range tests {
		for _, rd := range testReaders {
			if rd.name == "one byte at a time" && len(tc.input) > 1<<16 {
				continue // slow, and nothing new
			}
			t.Run(tc.name+"/"+rd.name, func(t *testing.T) {
				mr := HeaderFraming{}.NewReader(rd.wrap(strings.NewReader(tc.input)), tc.max)
				got, err := readFrames(t, mr)
				require.ErrorIs(t, err, tc.wantErr)
				if !assert.Equal(t, len(tc.want), len(got), "messages: %.60q", got) {
					return
				}
				for i := range got {
					assert.True(t, tc.want[i] == got[i], "message %d: got %.60q (%d bytes), want %.60q (%d bytes)",
						i, got[i], len(got[i]), tc.want[i], len(tc.want[i]))
				}
				_, err = mr.ReadMessage()
				assert.ErrorIs(t, err, io.EOF, "EOF after the end")
			})
		}
	}
}

// TestHeaderFramingJunkCostsNoFrame: whatever junk comes between good
// frames (short or long lines, lines without a newline that run into the
// next header, bad blocks, bodies too large), every good frame after it
// is read, however the input is cut into reads.
func TestHeaderFramingJunkCostsNoFrame(t *testing.T) {
	junks := []string{
		"{junk}\n", "{" + strings.Repeat("j", 9000) + "}\n", "{" + strings.Repeat("j", 100000) + "}\n",
		"\r\n", strings.Repeat("\r\n", 5000), strings.Repeat(" ", 20000) + "\n",
		"Content-Length: x\r\n\r\n{junk}", "Content-Type: x\r\n\r\n{junk}", "content-length: 5\r\n\r\n{jun}",
		frame(strings.Repeat("b", 1001)), frame(strings.Repeat("b", 100000)), frame(""),
		"Content-Length: 1\r\nContent-Length: 2\r\n\r\n{junk}",
		strings.Repeat("X-A: 1234567890\r\n", 700) + "Content-Length: 5\r\n\r\n{jun}",
		"{" + strings.Repeat("j", 100000), // no newline: runs into the next header
		"Content-Length: 2\n\n{}",
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range 300 {
		var in strings.Builder
		var goods []string
		for k := range 1 + rng.IntN(8) {
			in.WriteString(junks[rng.IntN(len(junks))])
			g := `{"jsonrpc":"2.0","method":"good","params":[` + strconv.Itoa(k) + `]}`
			goods = append(goods, g)
			in.WriteString(frame(g))
		}
		for _, rd := range testReaders[2:] { // half reads, data with EOF
			got, err := readFrames(t, HeaderFraming{}.NewReader(rd.wrap(strings.NewReader(in.String())), 1000))
			require.ErrorIs(t, err, io.EOF)
			served := slices.DeleteFunc(got, func(m string) bool { return !strings.Contains(m, `"good"`) })
			require.Equal(t, goods, served, "input %d, %s: %.200q", i, rd.name, in.String())
		}
	}
}

func TestHeaderFramingErrors(t *testing.T) {
	tests := []struct {
		name   string
		input  string
		target error
		detail string
	}{
		{"missing", "Content-Type: x\r\n\r\n", ErrBadHeader, "missing Content-Length"},
		{"invalid", "Content-Length: 12a\r\n\r\n", ErrBadHeader, `invalid Content-Length "12a"`},
		{"conflicting", "Content-Length: 1\r\nContent-Length: 2\r\n\r\n", ErrBadHeader, "conflicting Content-Length"},
		{"malformed", "{\"jsonrpc\":\"2.0\"}\r\n", ErrBadHeader, `malformed header line "{\"jsonrpc\":\"2.0\"}"`},
		{"long line quoted short", strings.Repeat("z", 100) + "\n", ErrBadHeader, `"zzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzz"...`},
		{"too long", "X: " + strings.Repeat("p", maxHeaderBytes) + "\r\n\r\n", ErrBadHeader, "header block longer than 8192 bytes"},
		{"too large", "Content-Length: 100\r\n\r\n", ErrMessageTooLarge, "limit 16 bytes"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			mr := HeaderFraming{}.NewReader(strings.NewReader(tc.input), 16)
			_, err := mr.ReadMessage()
			require.ErrorIs(t, err, tc.target)
			assert.Contains(t, err.Error(), tc.detail)
			assert.True(t, strings.HasPrefix(err.Error(), "jsonrpc: "), "%q", err)
		})
	}
}

func TestHeaderFramingReadError(t *testing.T) {
	errRead := errors.New("disk on fire")
	tests := []struct {
		name  string
		input string
	}{
		{"between messages", frame("1")},
		{"in a header", frame("1") + "Content-Le"},
		{"in a body", frame("1") + "Content-Length: 5\r\n\r\n12"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := io.MultiReader(strings.NewReader(tc.input), iotest.ErrReader(errRead))
			mr := HeaderFraming{}.NewReader(r, 0)
			got, err := readFrames(t, mr)
			require.ErrorIs(t, err, errRead)
			assert.Equal(t, []string{"1"}, got)
			_, err = mr.ReadMessage()
			assert.ErrorIs(t, err, errRead, "the error is returned again")
		})
	}
}

// xReader returns n bytes of 'x', then EOF, without holding them.
type xReader struct{ n int }

func (r *xReader) Read(p []byte) (int, error) {
	if r.n == 0 {
		return 0, io.EOF
	}
	n := min(len(p), r.n)
	for i := range p[:n] {
		p[i] = 'x'
	}
	r.n -= n
	return n, nil
}

// TestHeaderFramingSkipsLargeBody checks that a body over the limit is
// discarded as it arrives: reading past 100 MiB of it, under a limit of
// 1 MiB, allocates a few buffers at most.
func TestHeaderFramingSkipsLargeBody(t *testing.T) {
	const size = 100 << 20
	next := `{"jsonrpc":"2.0","method":"next"}`
	r := io.MultiReader(
		strings.NewReader("Content-Length: "+strconv.Itoa(size)+"\r\n\r\n"),
		&xReader{n: size},
		strings.NewReader(frame(next)),
	)
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	mr := HeaderFraming{}.NewReader(r, 1<<20)
	_, err := mr.ReadMessage()
	require.ErrorIs(t, err, ErrMessageTooLarge)
	msg, err := mr.ReadMessage()
	require.NoError(t, err)
	assert.Equal(t, next, string(msg))
	runtime.ReadMemStats(&after)
	assert.Less(t, after.TotalAlloc-before.TotalAlloc, uint64(4<<20), "bytes allocated while skipping 100 MiB")
	assert.LessOrEqual(t, cap(mr.(*lineReader).buf), initialBufSize, "the buffer never grew")
}

// TestHeaderFramingGrowsOnArrival checks that a Content-Length is not
// trusted for an allocation: a claim of 60 MiB followed by a few bytes
// leaves the buffer small.
func TestHeaderFramingGrowsOnArrival(t *testing.T) {
	pr, pw := io.Pipe()
	defer pr.Close()
	go func() {
		_, _ = pw.Write([]byte("Content-Length: 62914560\r\n\r\n{\"a\":"))
		_ = pw.CloseWithError(errors.New("peer gone"))
	}()
	lr := newFramedReader(HeaderFraming{}, pr, 0)
	_, err := lr.ReadMessage()
	require.Error(t, err)
	assert.LessOrEqual(t, cap(lr.buf), initialBufSize)
}

// TestFramingDetach checks that detach keeps the messages returned before
// it valid, under each framing.
func TestFramingDetach(t *testing.T) {
	msgs := []string{`{"a":1}`, `{"b":2}`, `{"c":3}`, `{"d":4}`}
	for _, f := range []Framing{LineFraming{}, HeaderFraming{}, lengthPrefix{}} {
		t.Run(framingName(f), func(t *testing.T) {
			var wire []byte
			for _, m := range msgs {
				wire = f.AppendFrame(wire, []byte(m))
			}
			lr := newFramedReader(f, bytes.NewReader(wire), 0)
			var held [][]byte
			for range msgs {
				msg, err := lr.ReadMessage()
				require.NoError(t, err)
				held = append(held, msg)
				lr.detach()
			}
			_, err := lr.ReadMessage()
			require.ErrorIs(t, err, io.EOF)
			for i, m := range msgs {
				assert.Equal(t, m, string(held[i]))
			}
		})
	}
}

func TestFramingAppendFrame(t *testing.T) {
	tests := []struct {
		name string
		f    Framing
		msg  string
		want string
	}{
		{"line", LineFraming{}, `{"a":1}`, "{\"a\":1}\n"},
		{"line, empty", LineFraming{}, ``, "\n"},
		{"header", HeaderFraming{}, `{"a":1}`, "Content-Length: 7\r\n\r\n{\"a\":1}"},
		{"header, empty", HeaderFraming{}, ``, "Content-Length: 0\r\n\r\n"},
		{"header, multi-byte", HeaderFraming{}, `"é"`, "Content-Length: 4\r\n\r\n\"é\""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := tc.f.AppendFrame([]byte("prefix"), []byte(tc.msg))
			assert.Equal(t, "prefix"+tc.want, string(got))
		})
	}
}

// TestFramingConstructors checks which reader and writer each framing
// gets: the built-in ones by value or pointer, nil meaning lines.
func TestFramingConstructors(t *testing.T) {
	tests := []struct {
		f    Framing
		mode uint8
	}{
		{nil, modeLine},
		{LineFraming{}, modeLine},
		{&LineFraming{}, modeLine},
		{HeaderFraming{}, modeHeader},
		{&HeaderFraming{}, modeHeader},
		{lengthPrefix{}, modeCustom},
	}
	for _, tc := range tests {
		t.Run(framingName(tc.f), func(t *testing.T) {
			assert.Equal(t, tc.mode, newFramedReader(tc.f, strings.NewReader(""), 0).mode)
			assert.Equal(t, tc.mode, newFramedWriter(tc.f, io.Discard).mode)
		})
	}
	assert.Equal(t, modeLine, int(LineFraming{}.NewReader(strings.NewReader(""), 0).(*lineReader).mode))
	assert.Equal(t, modeHeader, int(HeaderFraming{}.NewReader(strings.NewReader(""), 0).(*lineReader).mode))
	assert.Equal(t, defaultMaxMessageSize, HeaderFraming{}.NewReader(strings.NewReader(""), 0).(*lineReader).max)
}

func framingName(f Framing) string {
	switch f.(type) {
	case nil:
		return "nil"
	case LineFraming:
		return "line"
	case *LineFraming:
		return "*line"
	case HeaderFraming:
		return "header"
	case *HeaderFraming:
		return "*header"
	default:
		return "custom"
	}
}

// writeAll writes msgs through every path the engine uses: append,
// appendCtx, tryAppend, writeLarge for a message given as head, body and
// tail, and WriteMessage; then it closes the writer.
func writeAll(t *testing.T, lw *lineWriter, msgs []string) {
	t.Helper()
	for i, m := range msgs {
		add := func(b []byte) []byte { return append(b, m...) }
		switch i % 5 {
		case 0:
			require.NoError(t, lw.append(add, i%2 == 0))
		case 1:
			require.NoError(t, lw.appendCtx(t.Context(), add, nil))
		case 2:
			require.True(t, lw.tryAppend(add))
		case 3:
			h, tl := min(len(m), 3), max(len(m)-1, min(len(m), 3))
			require.NoError(t, lw.writeLarge([]byte(m[:h]), []byte(m[h:tl]), []byte(m[tl:])))
		case 4:
			require.NoError(t, lw.WriteMessage([]byte(m)))
		}
	}
	require.NoError(t, lw.Close())
}

func TestHeaderFramingWriter(t *testing.T) {
	t.Run("one message", func(t *testing.T) {
		var buf bytes.Buffer
		lw := newFramedWriter(HeaderFraming{}, &buf)
		require.NoError(t, lw.append(func(b []byte) []byte { return append(b, `{"a":1}`...) }, true))
		assert.Equal(t, "Content-Length: 7\r\n\r\n{\"a\":1}", buf.String())
	})
	t.Run("WriteMessage", func(t *testing.T) {
		var buf bytes.Buffer
		lw := newFramedWriter(HeaderFraming{}, &buf)
		require.NoError(t, lw.WriteMessage([]byte(" {\n\"a\": 1\n} ")))
		require.ErrorIs(t, lw.WriteMessage([]byte(`{`)), ErrParse)
		require.NoError(t, lw.Flush())
		assert.Equal(t, "Content-Length: 7\r\n\r\n{\"a\":1}", buf.String())
	})
	t.Run("writeLarge", func(t *testing.T) {
		var buf bytes.Buffer
		w := &countWriter{w: &buf}
		lw := newFramedWriter(HeaderFraming{}, w)
		result := `"` + strings.Repeat("r", 200<<10) + `"`
		head, tail := `{"jsonrpc":"2.0","id":7,"result":`, `}`
		require.NoError(t, lw.append(func(b []byte) []byte { return append(b, `{"before":1}`...) }, false))
		require.NoError(t, lw.writeLarge([]byte(head), []byte(result), []byte(tail)))
		require.NoError(t, lw.append(func(b []byte) []byte { return append(b, `{"after":1}`...) }, true))
		assert.Greater(t, w.writes, 2, "the body is written apart")
		want := frame(`{"before":1}`) + frame(head+result+tail) + frame(`{"after":1}`)
		assert.True(t, want == buf.String(), "got %.120q", buf.String())
	})
	t.Run("every path", func(t *testing.T) {
		var buf bytes.Buffer
		msgs := []string{`{"a":1}`, `[1,2]`, `"s"`, `{"big":"` + strings.Repeat("b", 100<<10) + `"}`, `{"w":"m"}`, `null`, "{\r\n\r\n}"}
		writeAll(t, newFramedWriter(HeaderFraming{}, &buf), msgs)
		var want strings.Builder
		for i, m := range msgs {
			if i%5 == 4 {
				m = strings.Join(strings.Fields(m), "") // compacted
			}
			want.WriteString(frame(m))
		}
		assert.True(t, want.String() == buf.String(), "got %.200q", buf.String())
	})
}

// TestLineWriterWriteLarge checks the newline path of writeLarge: one line.
func TestLineWriterWriteLarge(t *testing.T) {
	var buf bytes.Buffer
	lw := newFramedWriter(nil, &buf)
	body := strings.Repeat("r", 200<<10)
	require.NoError(t, lw.append(func(b []byte) []byte { return append(b, `1`...) }, false))
	require.NoError(t, lw.writeLarge([]byte(`["`), []byte(body), []byte(`"]`)))
	require.NoError(t, lw.append(func(b []byte) []byte { return append(b, `2`...) }, true))
	assert.True(t, "1\n[\""+body+"\"]\n2\n" == buf.String())
}

type countWriter struct {
	w      io.Writer
	writes int
}

func (c *countWriter) Write(p []byte) (int, error) {
	c.writes++
	return c.w.Write(p)
}

// lengthPrefix is a framing of the user's: a 4-byte big-endian length,
// then the message.
type lengthPrefix struct{}

func (lengthPrefix) NewReader(r io.Reader, maxSize int) MessageReader {
	return &lengthPrefixReader{r: bufio.NewReader(r), max: maxSize}
}

func (lengthPrefix) AppendFrame(dst, msg []byte) []byte {
	return append(binary.BigEndian.AppendUint32(dst, uint32(len(msg))), msg...)
}

type lengthPrefixReader struct {
	r   *bufio.Reader
	max int
	n   [4]byte
	buf []byte
}

func (lr *lengthPrefixReader) ReadMessage() ([]byte, error) {
	if _, err := io.ReadFull(lr.r, lr.n[:]); err != nil {
		return nil, err
	}
	size := int(binary.BigEndian.Uint32(lr.n[:]))
	if size > lr.max {
		if _, err := lr.r.Discard(size); err != nil {
			return nil, io.ErrUnexpectedEOF
		}
		return nil, &tooLargeError{limit: lr.max}
	}
	lr.buf = append(lr.buf[:0], make([]byte, size)...)
	if _, err := io.ReadFull(lr.r, lr.buf); err != nil {
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		return nil, err
	}
	return lr.buf, nil
}

// nulFraming ends each message with a NUL byte. Its reader returns the
// last message, if not ended, together with io.EOF, as
// bufio.Reader.ReadBytes does.
type nulFraming struct{}

func (nulFraming) NewReader(r io.Reader, _ int) MessageReader {
	return nulReader{bufio.NewReader(r)}
}

func (nulFraming) AppendFrame(dst, msg []byte) []byte { return append(append(dst, msg...), 0) }

type nulReader struct{ r *bufio.Reader }

func (n nulReader) ReadMessage() ([]byte, error) {
	b, err := n.r.ReadBytes(0)
	return bytes.TrimSuffix(b, []byte{0}), err
}

func TestCustomFraming(t *testing.T) {
	t.Run("last message with io.EOF", func(t *testing.T) {
		got, err := readFrames(t, newFramedReader(nulFraming{}, strings.NewReader("1\x002"), 0))
		require.ErrorIs(t, err, io.EOF)
		assert.Equal(t, []string{"1", "2"}, got)
		got, err = readFrames(t, newFramedReader(nulFraming{}, strings.NewReader("1\x002\x00"), 0))
		require.ErrorIs(t, err, io.EOF)
		assert.Equal(t, []string{"1", "2"}, got)
	})
	t.Run("round trip", func(t *testing.T) {
		var buf bytes.Buffer
		msgs := []string{`{"a":1}`, `[1,2]`, `"s"`, `{"big":"` + strings.Repeat("b", 100<<10) + `"}`, `{"w":"m"}`, `null`, ``}
		writeAll(t, newFramedWriter(lengthPrefix{}, &buf), msgs)
		lr := newFramedReader(lengthPrefix{}, iotest.HalfReader(&buf), 0)
		got, err := readFrames(t, lr)
		require.ErrorIs(t, err, io.EOF)
		require.Equal(t, len(msgs), len(got))
		for i := range msgs {
			assert.True(t, msgs[i] == got[i], "message %d: got %.60q", i, got[i])
		}
	})
	t.Run("too large", func(t *testing.T) {
		f := lengthPrefix{}
		wire := f.AppendFrame(f.AppendFrame(f.AppendFrame(nil, []byte("0123456789")), []byte("01234567890")), []byte("1"))
		got, err := readFrames(t, newFramedReader(f, bytes.NewReader(wire), 10))
		require.ErrorIs(t, err, io.EOF)
		assert.Equal(t, []string{"0123456789", markTooLarge, "1"}, got)
	})
	t.Run("a reader breaking the limit", func(t *testing.T) {
		// The inner reader is given the limit but ignores it.
		wire := lengthPrefix{}.AppendFrame(lengthPrefix{}.AppendFrame(nil, []byte("0123456789")), []byte("1"))
		lr := newFramedReader(lengthPrefix{}, bytes.NewReader(wire), 10)
		lr.inner.(*lengthPrefixReader).max = 1 << 20
		lr.max = 5
		got, err := readFrames(t, lr)
		require.ErrorIs(t, err, io.EOF)
		assert.Equal(t, []string{markTooLarge, "1"}, got)
	})
	t.Run("hooks around each read", func(t *testing.T) {
		wire := lengthPrefix{}.AppendFrame(lengthPrefix{}.AppendFrame(nil, []byte("ab")), []byte("cd"))
		lr := newFramedReader(lengthPrefix{}, iotest.OneByteReader(bytes.NewReader(wire)), 0)
		var h countingHooks
		lr.hooks = &h
		before, after := &h.before, &h.after
		msg, err := lr.ReadMessage()
		require.ErrorIs(t, err, errReadStopped, "the fourth read is refused: got %q", msg)
		assert.Equal(t, 4, *before)
		assert.Equal(t, 3, *after)
		_, err = lr.ReadMessage()
		require.ErrorIs(t, err, errReadStopped, "reading stays stopped")
		assert.Equal(t, 4, *before)
	})
	t.Run("close", func(t *testing.T) {
		src := &closeCounter{r: bytes.NewReader(lengthPrefix{}.AppendFrame(nil, []byte("1")))}
		lr := newFramedReader(lengthPrefix{}, src, 0)
		require.NoError(t, lr.Close())
		assert.Equal(t, 1, src.closes)
		_, err := lr.ReadMessage()
		require.ErrorIs(t, err, ErrClosed)
	})
}

type closeCounter struct {
	r      io.Reader
	closes int
}

func (c *closeCounter) Read(p []byte) (int, error) { return c.r.Read(p) }
func (c *closeCounter) Close() error               { c.closes++; return nil }

func TestHeaderFramingClose(t *testing.T) {
	src := &closeCounter{r: strings.NewReader(frame("1") + frame("2"))}
	lr := newFramedReader(HeaderFraming{}, src, 0)
	msg, err := lr.ReadMessage()
	require.NoError(t, err)
	assert.Equal(t, "1", string(msg))
	require.NoError(t, lr.Close())
	assert.Equal(t, 1, src.closes)
	_, err = lr.ReadMessage()
	require.ErrorIs(t, err, ErrClosed)
}

// TestFramingRoundTrip writes messages of random sizes from 0 to 200 KiB
// through each framing's writer, by every path, and reads them back.
func TestFramingRoundTrip(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 11))
	sizes := []int{0, 1, 2, 63, 64 << 10, 64<<10 + 1, 200 << 10}
	for range 40 {
		sizes = append(sizes, rng.IntN(200<<10+1))
	}
	for range 40 {
		sizes = append(sizes, rng.IntN(200))
	}
	for _, f := range []Framing{LineFraming{}, HeaderFraming{}, lengthPrefix{}} {
		t.Run(framingName(f), func(t *testing.T) {
			msgs := make([]string, len(sizes))
			for i, n := range sizes {
				// WriteMessage (every fifth) compacts, and refuses an empty message.
				msgs[i] = randomMessage(rng, n, f, i%5 != 4)
			}
			var buf bytes.Buffer
			writeAll(t, newFramedWriter(f, &buf), msgs)
			for _, rd := range testReaders[2:] {
				lr := newFramedReader(f, rd.wrap(bytes.NewReader(buf.Bytes())), 300<<10)
				got, err := readFrames(t, lr)
				require.ErrorIs(t, err, io.EOF)
				require.Equal(t, len(msgs), len(got), rd.name)
				for i := range msgs {
					require.True(t, msgs[i] == got[i], "%s: message %d: got %d bytes %.60q, want %d bytes %.60q",
						rd.name, i, len(got[i]), got[i], len(msgs[i]), msgs[i])
				}
			}
		})
	}
}

// randomMessage returns a JSON message of n bytes. Under LineFraming, or
// unless free is set, it is at least 1 byte (an empty line is no message)
// and has no whitespace to compact; otherwise it may be empty or span
// lines.
func randomMessage(rng *rand.Rand, n int, f Framing, free bool) string {
	const alphabet = "abcdefghijklmnopqrstuvwxyz0123456789é{}[]:,"
	_, lines := f.(LineFraming)
	free = free && !lines
	switch {
	case n == 0 && free:
		return ""
	case n < 2:
		return "1"
	}
	b := make([]byte, 0, n)
	b = append(b, '"')
	for len(b) < n-1 {
		c := alphabet[rng.IntN(len(alphabet))]
		if c >= 0x80 {
			if len(b) >= n-2 {
				c = 'e'
			} else {
				b = append(b, "é"...)
				continue
			}
		}
		b = append(b, c)
	}
	b = append(b, '"')
	if free && n > 4 && rng.IntN(4) == 0 {
		b[0], b[1], b[n-2], b[n-1] = '[', '\n', '\n', ']'
		b[2] = '"'
		b[n-3] = '"'
		if b[n-4] == '\\' {
			b[n-4] = 'x'
		}
	}
	return string(b)
}

// FuzzHeaderFraming checks the header reader on any input: it never
// panics, it ends, and every message it returns is a body that the input
// framed, in order. Then it frames bodies cut from the input and checks
// that exactly those come back.
func FuzzHeaderFraming(f *testing.F) {
	body := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}`
	for _, seed := range []string{
		"",
		frame(body),
		frame(body) + frame("") + frame("{\r\n\r\n}"),
		"Content-Length: 58\r\nContent-Type: application/vscode-jsonrpc; charset=utf-8\r\n\r\n" + body,
		"content-length: 5\n\nhello",
		"Content-Type: x\r\n\r\n" + body + frame("1"),
		"Content-Length: abc\r\n\r\n" + body + frame("1"),
		"Content-Length: 1\r\nContent-Length: 2\r\n\r\nab" + frame("1"),
		"Content-Length: 50\r\n\r\n" + body + frame("1"),
		"Content-Length: 300\r\n\r\n" + strings.Repeat("x", 300) + frame("1"),
		"Content-Length: 5\r\n\r\n12",
		"Content-Length 5\r\n\r\nhello",
		body + "\n",
		"\r\n\r\n" + frame("2"),
	} {
		f.Add([]byte(seed), false)
		f.Add([]byte(seed), true)
	}
	f.Fuzz(func(t *testing.T, data []byte, oneByte bool) {
		wrap := func(r io.Reader) io.Reader { return r }
		if oneByte {
			wrap = iotest.OneByteReader
		}

		// Any input, read whole and one byte at a time, with the same
		// results.
		whole := fuzzRead(t, bytes.NewReader(data), len(data))
		if oneByte {
			if bytewise := fuzzRead(t, iotest.OneByteReader(bytes.NewReader(data)), len(data)); !slices.Equal(whole, bytewise) {
				t.Fatalf("read whole: %q\nread byte by byte: %q", whole, bytewise)
			}
		}
		pos := 0
		for _, msg := range whole[:len(whole)-1] {
			msg, ok := strings.CutPrefix(msg, "m")
			if !ok {
				continue // an error
			}
			if len(msg) > fuzzMax {
				t.Fatalf("message of %d bytes over the limit", len(msg))
			}
			// The body follows the "\n" that ends its header block.
			at := -1
			for i := pos; i+len(msg) <= len(data); i++ {
				if i > 0 && data[i-1] == '\n' && string(data[i:i+len(msg)]) == msg {
					at = i
					break
				}
			}
			if at < 0 {
				t.Fatalf("message %q is not a body of the input after offset %d", msg, pos)
			}
			pos = at + len(msg)
		}

		// Framed bodies.
		bodies := bytes.Split(data, []byte{0})
		var wire []byte
		for i, b := range bodies {
			if i%3 == 1 {
				wire = append(wire, "Content-Type: application/vscode-jsonrpc; charset=utf-8\r\n"...)
			}
			wire = HeaderFraming{}.AppendFrame(wire, b)
		}
		mr := HeaderFraming{}.NewReader(wrap(bytes.NewReader(wire)), 0)
		for i, b := range bodies {
			msg, err := mr.ReadMessage()
			if err != nil {
				t.Fatalf("body %d: %v", i, err)
			}
			if !bytes.Equal(msg, b) {
				t.Fatalf("body %d: got %q, want %q", i, msg, b)
			}
		}
		if _, err := mr.ReadMessage(); err != io.EOF {
			t.Fatalf("after the bodies: got %v, want io.EOF", err)
		}
	})
}

// fuzzMax is the limit of FuzzHeaderFraming's reader.
const fuzzMax = 256

// fuzzRead reads messages of at most fuzzMax bytes from r, which holds n
// bytes, and returns them, each after an "m", with markers for errors; the
// last is the error that ended reading.
func fuzzRead(t *testing.T, r io.Reader, n int) []string {
	mr := HeaderFraming{}.NewReader(r, fuzzMax)
	var out []string
	for range 2*n + 10 {
		msg, err := mr.ReadMessage()
		switch {
		case errors.Is(err, ErrMessageTooLarge):
			out = append(out, markTooLarge)
		case errors.Is(err, ErrBadHeader):
			out = append(out, markBadHeader)
		case err == io.EOF || err == io.ErrUnexpectedEOF:
			return append(out, err.Error())
		case err != nil:
			t.Fatalf("ReadMessage: %v", err)
		case msg == nil:
			t.Fatalf("ReadMessage returned nil and no error")
		default:
			out = append(out, "m"+string(msg))
		}
	}
	t.Fatalf("reading did not end")
	return nil
}

// cyclicReader reads data over and over.
type cyclicReader struct {
	data []byte
	off  int
}

func (r *cyclicReader) Read(p []byte) (int, error) {
	n := copy(p, r.data[r.off:])
	r.off = (r.off + n) % len(r.data)
	return n, nil
}

// BenchmarkFraming measures reading and writing one typical message under
// each framing: reading from a stream in memory, writing to io.Discard.
func BenchmarkFraming(b *testing.B) {
	msgs := make([][]byte, 1000)
	for i := range msgs {
		msgs[i] = []byte(`{"jsonrpc":"2.0","id":` + strconv.Itoa(i) + `,"method":"echo","params":[` + strconv.Itoa(i) + `,"hello"]}`)
	}
	for _, f := range []Framing{LineFraming{}, HeaderFraming{}, lengthPrefix{}} {
		var wire []byte
		for _, m := range msgs {
			wire = f.AppendFrame(wire, m)
		}
		b.Run("read/"+framingName(f), func(b *testing.B) {
			lr := newFramedReader(f, &cyclicReader{data: wire}, 0)
			b.SetBytes(int64(len(wire) / len(msgs)))
			b.ReportAllocs()
			for b.Loop() {
				if _, err := lr.ReadMessage(); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run("write/"+framingName(f), func(b *testing.B) {
			lw := newFramedWriter(f, io.Discard)
			b.SetBytes(int64(len(wire) / len(msgs)))
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				m := msgs[i%len(msgs)]
				i++
				if err := lw.append(func(b []byte) []byte { return append(b, m...) }, false); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
	big := bytes.Repeat([]byte("r"), 256<<10)
	for _, f := range []Framing{LineFraming{}, HeaderFraming{}} {
		b.Run("writeLarge/"+framingName(f), func(b *testing.B) {
			lw := newFramedWriter(f, io.Discard)
			head, tail := []byte(`{"jsonrpc":"2.0","id":1,"result":"`), []byte(`"}`)
			b.SetBytes(int64(len(head) + len(big) + len(tail)))
			b.ReportAllocs()
			for b.Loop() {
				if err := lw.writeLarge(head, big, tail); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// countingHooks counts the calls of a lineReader's hooks, and stops
// reading at the fourth.
type countingHooks struct{ before, after int }

func (h *countingHooks) beforeRead() bool { h.before++; return h.before <= 3 }
func (h *countingHooks) afterRead()       { h.after++ }

// TestDetachBufferSize checks the buffer a hand-off leaves the reader: a
// small one after a buffer of the first size, grown back to that size by
// the first read that fills it; one as large after a buffer grown for
// long lines.
func TestDetachBufferSize(t *testing.T) {
	line := strings.Repeat("a", 100) + "\n"
	input := strings.Repeat(line, 2000) // 200 KB: reads fill any buffer
	lr := newLineReader(strings.NewReader(input), 0)
	_, err := lr.ReadMessage()
	require.NoError(t, err)
	require.Equal(t, initialBufSize, len(lr.buf))
	lr.detach()
	assert.Less(t, len(lr.buf), initialBufSize, "the buffer after a hand-off")
	for range 2000 - 1 {
		msg, err := lr.ReadMessage()
		require.NoError(t, err)
		require.Equal(t, line[:100], string(msg))
	}
	_, err = lr.ReadMessage()
	require.ErrorIs(t, err, io.EOF)
	assert.Equal(t, initialBufSize, len(lr.buf), "a small buffer that reads fill grows")

	long := strings.Repeat("b", 200<<10) + "\n"
	lr = newLineReader(strings.NewReader(long+long+"c\n"), 0)
	_, err = lr.ReadMessage()
	require.NoError(t, err)
	grown := len(lr.buf)
	require.Greater(t, grown, 200<<10)
	lr.detach()
	assert.Equal(t, grown, len(lr.buf), "the buffer after a hand-off from a grown one")
	msg, err := lr.ReadMessage()
	require.NoError(t, err)
	assert.Equal(t, long[:200<<10], string(msg))
}

// TestLineReaderLimitWithoutFraming: MaxMessageSize bounds the message,
// not its framing: a line of exactly the limit is read whether it ends in
// "\n", "\r\n" or the end of the input, and one byte more is refused in
// each case, the next line read as usual.
func TestLineReaderLimitWithoutFraming(t *testing.T) {
	for _, max := range []int{10, 100 << 10} {
		for _, end := range []string{"\n", "\r\n", ""} {
			for _, over := range []int{0, 1} {
				msg := strings.Repeat("1", max+over)
				input := msg + end
				if end != "" {
					input += "2\n"
				}
				lr := newLineReader(strings.NewReader(input), max)
				got, err := lr.ReadMessage()
				if over == 0 {
					if err != nil || string(got) != msg {
						t.Errorf("limit %d, line of the limit ending %q: %d bytes, %v", max, end, len(got), err)
					}
				} else if !errors.Is(err, ErrMessageTooLarge) {
					t.Errorf("limit %d, line one over ending %q: %d bytes, %v; want ErrMessageTooLarge", max, end, len(got), err)
				}
				if end != "" {
					if got, err := lr.ReadMessage(); err != nil || string(got) != "2" {
						t.Errorf("limit %d, ending %q: the next line %q, %v", max, end, got, err)
					}
				}
			}
		}
	}
}

// TestTooLargeHead: the error for a message over the limit holds the
// message's first bytes, tooLargeHead of them or all that arrived, in
// every framing and however the reads cut the input (a line longer than
// the read buffer comes in chunks), and reading goes on with the next
// message.
func TestTooLargeHead(t *testing.T) {
	framings := []Framing{LineFraming{}, HeaderFraming{}}
	for _, limit := range []int{100, 1000, 100 << 10} {
		for _, size := range []int{limit + 2, 3 * limit, 300 << 10} {
			msg := `{"jsonrpc":"2.0","id":7,"result":"` + strings.Repeat("y", size) + `"}`
			next := `{"jsonrpc":"2.0","method":"next"}`
			for _, f := range framings {
				for _, tr := range testReaders {
					in := f.AppendFrame(f.AppendFrame(nil, []byte(msg)), []byte(next))
					r := newFramedReader(f, tr.wrap(bytes.NewReader(in)), limit)
					_, err := r.ReadMessage()
					var tl *tooLargeError
					if !errors.As(err, &tl) {
						t.Fatalf("%T, limit %d, size %d, %s: got %v, want a message too large", f, limit, size, tr.name, err)
					}
					if want := msg[:min(len(msg), tooLargeHead, limit+1)]; string(tl.head) != want {
						t.Errorf("%T, limit %d, size %d, %s: head %.40q…, want %.40q…", f, limit, size, tr.name, tl.head, want)
					}
					got, err := r.ReadMessage()
					if err != nil || string(got) != next {
						t.Errorf("%T, limit %d, size %d, %s: next message %q, %v", f, limit, size, tr.name, got, err)
					}
				}
			}
		}
	}
}

// TestResponseHeadID: the id of a response is read from the head of a
// message too large to read only when the head shows it surely.
func TestResponseHeadID(t *testing.T) {
	tests := []struct{ head, id string }{
		{`{"jsonrpc":"2.0","id":7,"result":"yyy`, "7"},
		{` { "id" : "a" , "jsonrpc":"2.0", "error":{"code":1,"mess`, `"a"`},
		{`{"jsonrpc":"2.0","result":[1,2],"id":7,"x":"yyy`, "7"},
		{`{"\u0069d":7,"result":"yyy`, "7"},
		{`{"id":7,"error":`, "7"},
		{`{"jsonrpc":"2.0","result":"yyy`, ""},                     // the id lies beyond the head
		{`{"jsonrpc":"2.0","id":7,"method":"m","params":"yyy`, ""}, // a request
		{`{"jsonrpc":"2.0","id":7,"params":"yyy`, ""},              // no sign of a response yet
		{`{"id":7,"id":8,"result":"yyy`, ""},                       // the id twice
		{`{"jsonrpc":"2.0","id":7`, ""},                            // the id may go on
		{`{"jsonrpc":"2.0","id":7}`, ""},                           // whole, and no response
		{`{"jsonrpc":"2.0","id":7,"result":1}`, "7"},               // whole (a limit under the head's size)
		{`{"jsonrpc":"2.0","result":1,"id":7}`, "7"},
		{`{"jsonrpc":"2.0","id":7,"result":1,"method":"m","params":"yyy`, ""}, // a method after the result
		{`{"jsonrpc":"2.0","id":7,"error":{"code":1,"message":"x"},"method":"m","params":"yyy`, ""},
		{`{"jsonrpc":"2.0","id":7,"result":1,"id":8,"x":"yyy`, ""}, // the id twice, after the result
		{`{"jsonrpc":"2.0","id":7,"result":1,"meth`, "7"},          // a name cut short shows nothing more
		{`{"jsonrpc":"2.0","id":"abc`, ""},                         // an id cut short
		{`[{"jsonrpc":"2.0","id":7,"result":"yyy`, ""},             // a batch
		{`{"jsonrpc":"2.0","id":7,,"result":"yyy`, ""},
		{`{"jsonrpc":"2.0","id":7 "result":"yyy`, ""},
		{``, ""},
	}
	for _, tt := range tests {
		if got := string(responseHeadID([]byte(tt.head))); got != tt.id {
			t.Errorf("responseHeadID(%s) = %q, want %q", tt.head, got, tt.id)
		}
	}
}

// TestStreamHeadID: the call a stream item too large to read was for is
// read from its head only when the head shows it surely.
func TestStreamHeadID(t *testing.T) {
	tests := []struct{ head, id string }{
		{`{"jsonrpc":"2.0","method":"$/stream","params":{"id":3,"item":"yyy`, "3"},
		{`{"method":"$/stream","jsonrpc":"2.0","params":{"item":1,"id":3,"x":"yyy`, "3"},
		{`{"jsonrpc":"2.0","method":"$/stream","params":{"item":"yyy`, ""},             // the id lies beyond the head
		{`{"jsonrpc":"2.0","method":"$/stream","params":{"id":3`, ""},                  // the id may go on
		{`{"jsonrpc":"2.0","method":"$/stream","params":{"id":3,"id":4,"item":"y`, ""}, // the id twice
		{`{"jsonrpc":"2.0","params":{"id":3,"item":"yyy`, ""},                          // params before the method
		{`{"jsonrpc":"2.0","method":"other","params":{"id":3,"item":"yyy`, ""},
		{`{"jsonrpc":"2.0","id":9,"method":"$/stream","params":{"id":3,"item":"y`, ""}, // a request
		{`{"jsonrpc":"2.0","method":"$/stream","method":"$/stream","params":{"id":3,"item":"y`, ""},
		{`{"jsonrpc":"2.0","method":"$/str`, ""},
	}
	for _, tt := range tests {
		if got := string(streamHeadID([]byte(tt.head))); got != tt.id {
			t.Errorf("streamHeadID(%s) = %q, want %q", tt.head, got, tt.id)
		}
	}
}

// TestTryAppendPastHighWater checks that a cancel notice (tryAppend) finds
// room behind a write in flight past the high-water mark, up to cancelRoom
// more, and none past that.
func TestTryAppendPastHighWater(t *testing.T) {
	lw := newLineWriter(io.Discard)
	lw.writing = true // a write in flight, which the test stands for
	lw.buf = make([]byte, highWater)
	cancel := func(b []byte) []byte {
		return append(b, `{"jsonrpc":"2.0","method":"$/cancelRequest","params":{"id":1}}`...)
	}
	n := 0
	for lw.tryAppend(cancel) {
		n++
		require.Less(t, n, 10000, "tryAppend found room without bound")
	}
	assert.Greater(t, n, 1000, "cancel notices added past the high-water mark")
	assert.LessOrEqual(t, len(lw.buf), highWater+cancelRoom+100)
}
