// Package httpfloor is the lower bound of the HTTP benchmarks: a
// hand-written net/http handler and client for the subtract call, doing as
// little as can be done on top of net/http. The handler reads the body,
// finds "id", "minuend" and "subtrahend" with bytes.Index, parses the two
// integers and writes {"jsonrpc":"2.0","id":<id>,"result":<a-b>}; the
// client writes the request by hand and reads the id and the result back
// the same way. Neither validates anything: they trust the shape of what
// they read, as the stream floor does. What they cost is, near enough,
// what net/http costs for one small POST and its answer.
package httpfloor

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
)

var (
	keyID         = []byte(`"id":`)
	keyMinuend    = []byte(`"minuend":`)
	keySubtrahend = []byte(`"subtrahend":`)
	keyResult     = []byte(`"result":`)
)

// intAfter returns the integer that follows key in b, and whether there is
// one.
func intAfter(b, key []byte) (int64, bool) {
	i := bytes.Index(b, key)
	if i < 0 {
		return 0, false
	}
	b = b[i+len(key):]
	for len(b) > 0 && b[0] == ' ' {
		b = b[1:]
	}
	neg := len(b) > 0 && b[0] == '-'
	if neg {
		b = b[1:]
	}
	var n int64
	digits := 0
	for ; digits < len(b) && '0' <= b[digits] && b[digits] <= '9'; digits++ {
		n = n*10 + int64(b[digits]-'0')
	}
	if digits == 0 {
		return 0, false
	}
	if neg {
		n = -n
	}
	return n, true
}

// bufPool holds the buffers both sides read bodies into and write them
// from.
var bufPool = sync.Pool{New: func() any { return new(bytes.Buffer) }}

// Handler answers a POST of one subtract request.
type Handler struct{}

// ServeHTTP answers the subtract request in r's body.
func (Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	buf := bufPool.Get().(*bytes.Buffer)
	defer bufPool.Put(buf)
	buf.Reset()
	if _, err := buf.ReadFrom(r.Body); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	body := buf.Bytes()
	id, ok1 := intAfter(body, keyID)
	a, ok2 := intAfter(body, keyMinuend)
	b, ok3 := intAfter(body, keySubtrahend)
	if !ok1 || !ok2 || !ok3 {
		http.Error(w, "not a subtract request", http.StatusBadRequest)
		return
	}
	out := append(body[len(body):], `{"jsonrpc":"2.0","id":`...)
	out = strconv.AppendInt(out, id, 10)
	out = append(out, `,"result":`...)
	out = strconv.AppendInt(out, a-b, 10)
	out = append(out, "}\n"...)
	h := w.Header()
	h["Content-Type"] = contentType
	h["Content-Length"] = []string{strconv.Itoa(len(out))}
	w.Write(out)
}

var contentType = []string{"application/json"}

// Client posts subtract requests to URL through an http.Client.
type Client struct {
	url    string
	hc     *http.Client
	nextID atomic.Int64
}

// NewClient returns a client posting to url through hc.
func NewClient(url string, hc *http.Client) *Client {
	return &Client{url: url, hc: hc}
}

// Subtract calls subtract(a, b).
func (c *Client) Subtract(ctx context.Context, a, b int) (int, error) {
	id := c.nextID.Add(1)
	buf := bufPool.Get().(*bytes.Buffer)
	defer bufPool.Put(buf)
	buf.Reset()
	msg := append(buf.AvailableBuffer(), `{"jsonrpc":"2.0","id":`...)
	msg = strconv.AppendInt(msg, id, 10)
	msg = append(msg, `,"method":"subtract","params":{"minuend":`...)
	msg = strconv.AppendInt(msg, int64(a), 10)
	msg = append(msg, `,"subtrahend":`...)
	msg = strconv.AppendInt(msg, int64(b), 10)
	msg = append(msg, "}}"...)
	buf.Write(msg)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.url, bytes.NewReader(buf.Bytes()))
	if err != nil {
		return 0, err
	}
	req.Header["Content-Type"] = contentType
	resp, err := c.hc.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	// The transport may still hold the request's body: read the answer
	// into another buffer.
	rbuf := bufPool.Get().(*bytes.Buffer)
	defer bufPool.Put(rbuf)
	rbuf.Reset()
	if _, err := rbuf.ReadFrom(resp.Body); err != nil {
		return 0, err
	}
	if resp.StatusCode != http.StatusOK {
		return 0, fmt.Errorf("httpfloor: %s", resp.Status)
	}
	body := rbuf.Bytes()
	got, ok := intAfter(body, keyID)
	if !ok || got != id {
		return 0, errors.New("httpfloor: answer to another call")
	}
	res, ok := intAfter(body, keyResult)
	if !ok {
		return 0, errors.New("httpfloor: no result")
	}
	return int(res), nil
}

// Close does nothing: the connections belong to the http.Client.
func (c *Client) Close() error { return nil }
