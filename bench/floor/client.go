package floor

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"strconv"
	"sync"
	"sync/atomic"
)

// Client is the floor's hand-written client: it writes one request line
// per call and matches response lines to callers by id. Like the floor
// server it trusts the shape of what it reads.
type Client struct {
	w      io.WriteCloser
	wmu    sync.Mutex
	buf    []byte
	nextID atomic.Int64

	mu      sync.Mutex
	pending map[int64]chan int64
	err     error
	done    chan struct{}
}

// ErrClosed is returned by calls on a client whose connection has ended.
var ErrClosed = errors.New("floor: connection closed")

var chanPool = sync.Pool{New: func() any { return make(chan int64, 1) }}

var (
	keyID     = []byte(`"id":`)
	keyResult = []byte(`"result":`)
)

// intAfter parses the integer that follows key in b (0 if there is none).
func intAfter(b, key []byte) int64 {
	i := bytes.Index(b, key)
	if i < 0 {
		return 0
	}
	n, _ := parseInt(b, skipSpace(b, i+len(key)))
	return n
}

// NewClient returns a client that writes requests to w and reads responses
// from r.
func NewClient(r io.Reader, w io.WriteCloser) *Client {
	c := &Client{w: w, pending: make(map[int64]chan int64), done: make(chan struct{})}
	go c.read(r)
	return c
}

func (c *Client) read(r io.Reader) {
	br := bufio.NewReaderSize(r, 64<<10)
	var err error
	for {
		var line []byte
		line, err = br.ReadSlice('\n')
		if len(line) > 0 && err == nil {
			id := intAfter(line, keyID)
			res := intAfter(line, keyResult)
			c.mu.Lock()
			ch := c.pending[id]
			delete(c.pending, id)
			c.mu.Unlock()
			if ch != nil {
				ch <- res
			}
		}
		if err != nil {
			break
		}
	}
	if err == io.EOF {
		err = ErrClosed
	}
	c.mu.Lock()
	c.err = err
	c.mu.Unlock()
	close(c.done)
}

// Subtract calls subtract with params {"minuend":a,"subtrahend":b}.
func (c *Client) Subtract(ctx context.Context, a, b int) (int, error) {
	id := c.nextID.Add(1)
	ch := chanPool.Get().(chan int64)
	c.mu.Lock()
	if c.err != nil {
		c.mu.Unlock()
		return 0, c.err
	}
	c.pending[id] = ch
	c.mu.Unlock()

	c.wmu.Lock()
	c.buf = append(c.buf[:0], `{"jsonrpc":"2.0","id":`...)
	c.buf = strconv.AppendInt(c.buf, id, 10)
	c.buf = append(c.buf, `,"method":"subtract","params":{"minuend":`...)
	c.buf = strconv.AppendInt(c.buf, int64(a), 10)
	c.buf = append(c.buf, `,"subtrahend":`...)
	c.buf = strconv.AppendInt(c.buf, int64(b), 10)
	c.buf = append(c.buf, "}}\n"...)
	_, err := c.w.Write(c.buf)
	c.wmu.Unlock()
	if err != nil {
		return 0, err
	}

	select {
	case v := <-ch:
		chanPool.Put(ch)
		return int(v), nil
	case <-c.done:
		return 0, ErrClosed
	case <-ctx.Done():
		return 0, ctx.Err()
	}
}

// Close closes the request stream and waits until the server has closed
// the response stream.
func (c *Client) Close() error {
	err := c.w.Close()
	<-c.done
	return err
}
