// Package floor is the lower bound of the benchmarks: a hand-written
// newline-delimited JSON-RPC loop that uses no library and does only the
// minimum work each workload needs. It trusts the shape of its input (the
// benchmark workloads) instead of parsing JSON: it finds members with a
// plain byte search and skips values by counting brackets and quotes.
package floor

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"strconv"
)

const (
	readBufSize  = 1 << 20
	writeBufSize = 64 << 10
)

// Serve answers the requests read from r, one per line, writing one
// response line per call (or batch) to w. The output is flushed whenever
// the next read could block, and at the end of the input.
func Serve(r io.Reader, w io.Writer) error {
	br := bufio.NewReaderSize(r, readBufSize)
	bw := bufio.NewWriterSize(w, writeBufSize)
	var long []byte
	for {
		if br.Buffered() == 0 {
			if err := bw.Flush(); err != nil {
				return err
			}
		}
		line, err := br.ReadSlice('\n')
		if errors.Is(err, bufio.ErrBufferFull) {
			long = append(long[:0], line...)
			for errors.Is(err, bufio.ErrBufferFull) {
				line, err = br.ReadSlice('\n')
				long = append(long, line...)
			}
			line = long
		}
		if len(line) > 0 {
			serveLine(bw, line)
		}
		if err == io.EOF {
			return bw.Flush()
		}
		if err != nil {
			return err
		}
	}
}

func serveLine(bw *bufio.Writer, line []byte) {
	line = bytes.TrimSpace(line)
	if len(line) == 0 {
		return
	}
	if line[0] != '[' {
		if serveObject(bw, line, 0) {
			bw.WriteByte('\n')
		}
		return
	}
	// A batch: answer each element. A batch of notifications gets no
	// output at all, so the '[' is written just before the first response.
	sep := byte('[')
	i := 1
	for i < len(line) {
		c := line[i]
		if c == ']' {
			break
		}
		if c == ',' || c == ' ' || c == '\t' || c == '\r' {
			i++
			continue
		}
		end := skipValue(line, i)
		if end <= i {
			break
		}
		if serveObject(bw, line[i:end], sep) {
			sep = ','
		}
		i = end
	}
	if sep == ',' {
		bw.WriteString("]\n")
	}
}

var (
	keyID       = []byte(`"id":`)
	keyMethod   = []byte(`"method":"`)
	keyParams   = []byte(`"params":`)
	keyMinuend  = []byte(`"minuend":`)
	keySubtrah  = []byte(`"subtrahend":`)
	respHead    = []byte(`{"jsonrpc":"2.0","id":`)
	respResult  = []byte(`,"result":`)
	respUnknown = []byte(`,"error":{"code":-32601,"message":"method not found"}}`)
)

// serveObject writes the response to one request object, preceded by sep
// unless sep is 0, and reports whether it wrote one (notifications get
// none: for the workloads' methods there is nothing else to do).
func serveObject(bw *bufio.Writer, obj []byte, sep byte) bool {
	i := bytes.Index(obj, keyID)
	if i < 0 {
		return false
	}
	if sep != 0 {
		bw.WriteByte(sep)
	}
	idStart := skipSpace(obj, i+len(keyID))
	id := bytes.TrimSpace(obj[idStart:skipValue(obj, idStart)])

	var method []byte
	if m := bytes.Index(obj, keyMethod); m >= 0 {
		m += len(keyMethod)
		if e := bytes.IndexByte(obj[m:], '"'); e >= 0 {
			method = obj[m : m+e]
		}
	}

	bw.Write(respHead)
	bw.Write(id)
	switch string(method) {
	case "echo":
		var params []byte
		if p := bytes.Index(obj, keyParams); p >= 0 {
			p = skipSpace(obj, p+len(keyParams))
			params = obj[p:skipValue(obj, p)]
		}
		bw.Write(respResult)
		if len(params) == 0 {
			bw.WriteString("null")
		} else {
			bw.Write(params)
		}
		bw.WriteByte('}')
	case "subtract":
		a := intAfter(obj, keyMinuend)
		b := intAfter(obj, keySubtrah)
		bw.Write(respResult)
		var num [24]byte
		bw.Write(strconv.AppendInt(num[:0], a-b, 10))
		bw.WriteByte('}')
	default:
		bw.Write(respUnknown)
	}
	return true
}

// intAfter parses the integer that follows key in b (0 if there is none).
func intAfter(b, key []byte) int64 {
	i := bytes.Index(b, key)
	if i < 0 {
		return 0
	}
	return parseInt(b[skipSpace(b, i+len(key)):])
}

func parseInt(b []byte) int64 {
	neg := false
	if len(b) > 0 && b[0] == '-' {
		neg = true
		b = b[1:]
	}
	var n int64
	for _, c := range b {
		if c < '0' || c > '9' {
			break
		}
		n = n*10 + int64(c-'0')
	}
	if neg {
		return -n
	}
	return n
}

func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\r' || b[i] == '\n') {
		i++
	}
	return i
}

// skipValue returns the index just past the JSON value starting at b[i]
// (a scalar ends at the next ',' '}' or ']' outside any nesting).
func skipValue(b []byte, i int) int {
	depth := 0
	for i < len(b) {
		switch b[i] {
		case '"':
			i = skipString(b, i+1)
			if depth == 0 {
				return i
			}
			continue
		case '{', '[':
			depth++
		case '}', ']':
			depth--
			if depth == 0 {
				return i + 1
			}
			if depth < 0 {
				return i
			}
		case ',':
			if depth == 0 {
				return i
			}
		}
		i++
	}
	return i
}

// skipString returns the index just past the closing quote of the string
// whose contents start at b[i].
func skipString(b []byte, i int) int {
	for {
		j := bytes.IndexByte(b[i:], '"')
		if j < 0 {
			return len(b)
		}
		k := i + j
		bs := 0
		for k-bs-1 >= i && b[k-bs-1] == '\\' {
			bs++
		}
		if bs%2 == 0 {
			return k + 1
		}
		i = k + 1
	}
}
