package jsonrpc

// This file holds how an HTTPClient reads a response: the messages of
// its body whatever its framing (plain JSON, newline-delimited JSON,
// server-sent events), the readers of the streamed ones line by line
// under the client's size limit, and the scratch space it reads with.

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"mime"
	"net/http"
	"sync"
)

// lineScanner reads lines of at most max bytes, for the readers of
// streamed responses. Unlike a lineReader, which a server needs to go on
// past a line over its limit, it fails as soon as a line passes the
// limit, so that a client stops reading an endless line at once.
type lineScanner struct {
	r    *bufio.Reader
	max  int
	line []byte
}

// readLine returns the next line without its ending ("\n", "\r\n" or
// "\r" before "\n"); a line over the limit is an error.
func (s *lineScanner) readLine() ([]byte, error) {
	s.line = s.line[:0]
	for {
		chunk, err := s.r.ReadSlice('\n')
		s.line = append(s.line, chunk...)
		if len(s.line) > s.max+2 {
			return nil, &tooLargeError{limit: s.max}
		}
		switch {
		case err == nil:
			line := s.line[:len(s.line)-1]
			return bytes.TrimSuffix(line, []byte{'\r'}), nil
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		case err == io.EOF && len(s.line) > 0:
			return bytes.TrimSuffix(s.line, []byte{'\r'}), nil
		default:
			return nil, err
		}
	}
}

// ndjsonReader reads newline-delimited JSON, as a lineReader does (a
// trailing "\r" is removed, blank lines are skipped), except that a line
// over the limit is an error that ends the stream.
type ndjsonReader struct{ lineScanner }

// ReadMessage returns the next line that is not blank.
func (n *ndjsonReader) ReadMessage() ([]byte, error) {
	for {
		line, err := n.readLine()
		if err != nil {
			return nil, err
		}
		if len(line) > n.max {
			return nil, &tooLargeError{limit: n.max}
		}
		if skipSpace(line, 0) < len(line) {
			return line, nil
		}
	}
}

// sseReader reads the data of server-sent events: the "data" lines of an
// event, joined by newlines, once the blank line that ends it is read.
// Other fields and comments are skipped, and so are events whose data is
// empty or blank, which carry no message: an MCP server may send one
// first, to prime the client's resumption with an event id. An event
// whose data is over max bytes, or a line longer than that, is an error
// that ends the stream. As the event-stream format says, an event that
// the end of the stream cuts off before its blank line is discarded: its
// data may be only the start of a message.
type sseReader struct {
	lineScanner
	data    []byte
	afterCR bool // the last line read ended with "\r": a "\n" next is part of its end
	started bool // the stream's first bytes were read, and a leading BOM skipped
}

// readLine returns the next line of the event stream without its ending,
// which is "\r\n", "\n" or "\r" there; a line over the limit is an
// error. A "\n" after a line that ended with "\r" is read with the next
// line, so that an event is handed over as soon as its blank line ends.
func (s *sseReader) readLine() ([]byte, error) {
	s.line = s.line[:0]
	if !s.started {
		// The format ignores one leading U+FEFF.
		s.started = true
		if b, _ := s.r.Peek(3); string(b) == "\ufeff" {
			_, _ = s.r.Discard(3)
		}
	}
	for {
		b, err := s.r.Peek(max(s.r.Buffered(), 1))
		if len(b) == 0 {
			if err == io.EOF && len(s.line) > 0 {
				return s.line, nil
			}
			return nil, err
		}
		if s.afterCR {
			s.afterCR = false
			if b[0] == '\n' {
				_, _ = s.r.Discard(1)
				continue
			}
		}
		end := bytes.IndexByte(b, '\n')
		if end < 0 {
			end = len(b)
		}
		if cr := bytes.IndexByte(b[:end], '\r'); cr >= 0 {
			end = cr
		}
		s.line = append(s.line, b[:end]...)
		if len(s.line) > s.max {
			return nil, &tooLargeError{limit: s.max}
		}
		if end < len(b) {
			s.afterCR = b[end] == '\r'
			_, _ = s.r.Discard(end + 1)
			return s.line, nil
		}
		_, _ = s.r.Discard(end)
	}
}

// ReadMessage returns the data of the next event that is not blank.
func (s *sseReader) ReadMessage() ([]byte, error) {
	s.data = s.data[:0]
	has := false
	for {
		line, err := s.readLine()
		if err != nil {
			return nil, err // an event cut by the end, before its blank line, is not handed over
		}
		if len(line) == 0 {
			if skipSpace(s.data, 0) < len(s.data) {
				return s.data, nil
			}
			s.data, has = s.data[:0], false // no event, or one without a message
			continue
		}
		name, value := line, []byte(nil)
		if i := bytes.IndexByte(line, ':'); i >= 0 {
			name, value = line[:i], line[i+1:]
			if len(value) > 0 && value[0] == ' ' {
				value = value[1:]
			}
		}
		if string(name) != "data" {
			continue // a comment, or a field other than data
		}
		if has {
			s.data = append(s.data, '\n')
		}
		s.data = append(s.data, value...)
		has = true
		if len(s.data) > s.max {
			return nil, &tooLargeError{limit: s.max}
		}
	}
}

// messages calls f for each message of x's response, whatever its
// framing, until f reports false or fails; f's envelopes are valid only
// during the call. A response without a body (202, 204) has no messages.
// It notes in x whether it read the body to its end.
func (c *HTTPClient) messages(x *exchange, f func(e *envelope, batch []envelope, kind lineKind) (bool, error)) error {
	resp := x.resp
	if resp.StatusCode != http.StatusOK {
		return nil
	}
	limit := orDefault(c.MaxMessageSize, defaultMaxMessageSize)
	sc := clientScratchPool.Get().(*clientScratch)
	defer sc.put()
	var batch []envelope
	each := func(msg []byte) (bool, error) {
		var kind lineKind
		kind, batch = scanLine(msg, &sc.one, batch, defaultMaxBatch)
		switch kind {
		case lineObject, lineBatch:
			return f(&sc.one, batch, kind)
		}
		return false, errMalformedResponse
	}
	var mr MessageReader // nil for plain JSON: the body is one message
	switch mediaType(resp.Header.Get("Content-Type")) {
	case contentSSE:
		mr = &sseReader{lineScanner: lineScanner{r: bufio.NewReader(resp.Body), max: limit}}
	case contentNDJSON:
		mr = &ndjsonReader{lineScanner{r: bufio.NewReader(resp.Body), max: limit}}
	}
	for mr != nil {
		msg, err := mr.ReadMessage()
		if err == io.EOF {
			x.eof = true
			return nil
		}
		if err != nil {
			return err
		}
		if more, err := each(msg); !more || err != nil {
			return err
		}
	}
	body, _, err := readBodyInto(sc.body, resp.Body, resp.ContentLength, limit, nil)
	if err != nil {
		return err
	}
	sc.body = body
	x.eof = true
	_, err = each(body)
	return err
}

// mediaType returns the media type of a Content-Type, as
// mime.ParseMediaType reads it, but without its allocations for the
// types of the transport written plainly.
func mediaType(ct string) string {
	switch ct {
	case contentJSON, contentSSE, contentNDJSON:
		return ct
	}
	mt, _, _ := mime.ParseMediaType(ct)
	return mt
}

// clientScratch is what an HTTPClient reads a response with, kept in a
// pool between calls: the envelope of the message scanned, and the buffer
// of a plain JSON body. Nothing of a response outlives its call: what a
// call keeps (a result, an error's data) is decoded or copied out of it,
// and OnNotify's request is valid only during its call.
type clientScratch struct {
	one  envelope
	body []byte
}

var clientScratchPool = sync.Pool{New: func() any { return new(clientScratch) }}

// maxPooledBody is the largest body buffer a clientScratch keeps.
const maxPooledBody = 16 << 10

// put returns sc to the pool, holding no slice of the response.
func (sc *clientScratch) put() {
	sc.one = envelope{}
	if cap(sc.body) > maxPooledBody {
		sc.body = nil
	}
	sc.body = sc.body[:0]
	clientScratchPool.Put(sc)
}
