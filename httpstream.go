package jsonrpc

// This file holds the readers of the streamed responses an HTTPClient
// reads: newline-delimited JSON and server-sent events, line by line
// under the client's size limit.

import (
	"bufio"
	"bytes"
	"errors"
	"io"
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
			return nil, &tooLargeError{s.max}
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
			return nil, &tooLargeError{n.max}
		}
		if skipSpace(line, 0) < len(line) {
			return line, nil
		}
	}
}

// sseReader reads the data of server-sent events: the "data" lines of an
// event, joined by newlines, once the blank line that ends it is read.
// Other fields and comments are skipped. An event whose data is over max
// bytes, or a line longer than that, is an error that ends the stream.
type sseReader struct {
	lineScanner
	data []byte
}

// ReadMessage returns the data of the next event.
func (s *sseReader) ReadMessage() ([]byte, error) {
	s.data = s.data[:0]
	has := false
	for {
		line, err := s.readLine()
		if err != nil {
			if err == io.EOF && has {
				return s.data, nil
			}
			return nil, err
		}
		if len(line) == 0 {
			if has {
				return s.data, nil
			}
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
			return nil, &tooLargeError{s.max}
		}
	}
}
