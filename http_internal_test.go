package jsonrpc

import (
	"bufio"
	"bytes"
	"io"
	"math/rand/v2"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestReadBodySmallIsOneAllocation checks that a body of known size up to
// maxFirstBodyBuf costs readBody one allocation, of its size and one byte
// to see its end.
func TestReadBodySmallIsOneAllocation(t *testing.T) {
	for _, n := range []int{0, 1, 57, 4 << 10, maxFirstBodyBuf - 1, maxFirstBodyBuf} {
		body := strings.Repeat("x", n)
		rd := strings.NewReader(body)
		var got []byte
		allocs := testing.AllocsPerRun(10, func() {
			rd.Reset(body)
			var err error
			got, _, err = readBody(rd, int64(n), defaultMaxMessageSize, nil)
			if err != nil {
				t.Fatal(err)
			}
		})
		assert.Equal(t, 1.0, allocs, "%d bytes", n)
		assert.Equal(t, body, string(got), "%d bytes", n)
		assert.Equal(t, n+1, cap(got), "%d bytes", n)
	}
}

// readRecorder hands out its data in pieces of at most step bytes, and
// records the room each Read offers.
type readRecorder struct {
	data []byte
	step int
	read int
	room []int // len(p) of each Read, with the bytes read before it
	past []int
}

func (r *readRecorder) Read(p []byte) (int, error) {
	r.room = append(r.room, len(p))
	r.past = append(r.past, r.read)
	if len(r.data) == 0 {
		return 0, io.EOF
	}
	n := copy(p[:min(len(p), r.step)], r.data)
	r.data = r.data[n:]
	r.read += n
	return n, nil
}

// TestReadBodyGrowsWithWhatArrives checks that the buffer readBody reads
// into follows the bytes that have arrived, whatever the Content-Length
// claims: at most maxFirstBodyBuf and a byte at first, then at most twice
// what has arrived, and never more than the limit and a byte.
func TestReadBodyGrowsWithWhatArrives(t *testing.T) {
	const limit = 1 << 20
	tests := []struct {
		name  string
		size  int64 // the Content-Length, -1 for none
		body  int
		err   error
		bytes int // the most offered to a Read, past what had arrived
	}{
		{"claims the limit, sends 1 byte", limit, 1, nil, maxFirstBodyBuf + 1},
		{"claims the limit, sends 100 KiB", limit, 100 << 10, nil, 200 << 10},
		{"claims the limit, sends it", limit, limit, nil, limit + 1},
		{"unknown, sends 100 KiB", -1, 100 << 10, nil, 200 << 10},
		{"unknown, sends over the limit", -1, limit + 10, ErrMessageTooLarge, limit + 1},
		{"claims less, sends over the limit", 1000, limit + 10, ErrMessageTooLarge, limit + 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			data := bytes.Repeat([]byte("x"), tc.body)
			r := &readRecorder{data: data, step: 1000}
			got, _, err := readBody(r, tc.size, limit, nil)
			if tc.err != nil {
				require.ErrorIs(t, err, tc.err)
			} else {
				require.NoError(t, err)
				assert.Equal(t, tc.body, len(got))
			}
			most := 0
			for i, room := range r.room {
				buf := r.past[i] + room // the buffer's capacity
				assert.LessOrEqual(t, buf, max(maxFirstBodyBuf+1, 2*r.past[i]), "read %d: a buffer of %d after %d bytes", i, buf, r.past[i])
				assert.LessOrEqual(t, buf, limit+1, "read %d", i)
				most = max(most, buf)
			}
			assert.LessOrEqual(t, most, tc.bytes)
		})
	}
}

// acceptsJSON takes the quality of application/json from the most
// specific range that matches it.
func TestAcceptsJSON(t *testing.T) {
	for accept, want := range map[string]bool{
		"":                                    false,
		"application/json":                    true,
		"*/*":                                 true,
		"text/html":                           false,
		"application/json;q=0, */*":           false,
		"application/*;q=0, */*":              false,
		"application/json;q=0.1, */*;q=0":     true,
		"application/*, application/json;q=0": false,
		"application/json;q=2, text/html":     false,
	} {
		if got := acceptsJSON([]string{accept}); got != want {
			t.Errorf("acceptsJSON(%q) = %v; want %v", accept, got, want)
		}
	}
	if !acceptsJSON(nil) {
		t.Error("acceptsJSON(no header) = false; want true")
	}
}

// refSSE parses an event stream as the HTML standard says, returning the
// data of each dispatched event that is not blank.
func refSSE(s string) []string {
	s = strings.TrimPrefix(s, "\ufeff")
	var lines []string
	complete := false
	for len(s) > 0 {
		i := strings.IndexAny(s, "\r\n")
		if i < 0 {
			lines = append(lines, s)
			complete = false
			s = ""
			break
		}
		lines = append(lines, s[:i])
		if s[i] == '\r' && i+1 < len(s) && s[i+1] == '\n' {
			s = s[i+2:]
		} else {
			s = s[i+1:]
		}
		complete = true
	}
	if !complete && len(lines) > 0 {
		lines = lines[:len(lines)-1] // an incomplete last line is discarded
	}
	var out []string
	var data []byte
	for _, l := range lines {
		if l == "" {
			if len(data) > 0 {
				d := strings.TrimSuffix(string(data), "\n")
				if strings.TrimSpace(d) != "" {
					out = append(out, d)
				}
			}
			data = data[:0]
			continue
		}
		if l[0] == ':' {
			continue
		}
		name, value := l, ""
		if i := strings.IndexByte(l, ':'); i >= 0 {
			name, value = l[:i], l[i+1:]
			value = strings.TrimPrefix(value, " ")
		}
		if name == "data" {
			data = append(data, value...)
			data = append(data, '\n')
		}
	}
	return out
}

// TestSSEReaderMatchesStandard checks the client's event-stream reader
// against refSSE on random streams made of the format's pieces (fields,
// comments, the three line endings, a BOM), read whole and a byte at a
// time.
func TestSSEReaderMatchesStandard(t *testing.T) {
	atoms := []string{"data", ":", " ", "x", "{}", "\r", "\n", "\r\n", "id", "event", "1", "\ufeff"}
	r := rand.New(rand.NewPCG(1, 2))
	for iter := 0; iter < 20000; iter++ {
		var b strings.Builder
		for n := r.IntN(20); n > 0; n-- {
			b.WriteString(atoms[r.IntN(len(atoms))])
		}
		in := b.String()
		want := refSSE(in)
		for _, one := range []bool{false, true} {
			var rd io.Reader = strings.NewReader(in)
			if one {
				rd = iotest.OneByteReader(rd)
			}
			s := &sseReader{lineScanner: lineScanner{r: bufio.NewReaderSize(rd, 16), max: 1 << 20}}
			var got []string
			for {
				m, err := s.ReadMessage()
				if err != nil {
					break
				}
				got = append(got, string(bytes.Clone(m)))
			}
			if strings.Join(got, "|") != strings.Join(want, "|") || len(got) != len(want) {
				t.Fatalf("input %q (one byte %v): got %q, want %q", in, one, got, want)
			}
		}
	}
}
