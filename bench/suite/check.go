package suite

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"reflect"
	"sync"
)

// Counter is an io.Writer that counts the responses written to it: lines
// when the output is newline-delimited, or complete top-level JSON values
// when it is not (x/exp/jsonrpc2's RawFramer writes values back to back).
// It keeps nothing it is given, so it costs close to nothing per byte.
//
// Done is closed when Target responses have been seen (at once if Target
// is 0).
type Counter struct {
	mu     sync.Mutex
	lines  bool
	n      int
	bytes  int64
	target int
	done   chan struct{}
	closed bool
	sc     valueScanner
}

// NewCounter returns a Counter. lines selects newline counting.
func NewCounter(lines bool, target int) *Counter {
	c := &Counter{lines: lines, target: target, done: make(chan struct{})}
	c.check()
	return c
}

func (c *Counter) check() {
	if !c.closed && c.n >= c.target {
		c.closed = true
		close(c.done)
	}
}

// Write implements io.Writer.
func (c *Counter) Write(p []byte) (int, error) {
	c.mu.Lock()
	if c.lines {
		c.n += bytes.Count(p, []byte{'\n'})
	} else {
		c.n += c.sc.scan(p)
	}
	c.bytes += int64(len(p))
	c.check()
	c.mu.Unlock()
	return len(p), nil
}

// Close implements io.Closer; it does nothing (some libraries insist on
// closing their output).
func (c *Counter) Close() error { return nil }

// Done is closed once Target responses have arrived.
func (c *Counter) Done() <-chan struct{} { return c.done }

// Count returns the number of responses and bytes seen so far.
func (c *Counter) Count() (responses int, n int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n, c.bytes
}

// valueScanner counts complete top-level JSON objects and arrays in a
// stream that may be split anywhere. It only tracks nesting and strings;
// it does not validate.
type valueScanner struct {
	depth int
	inStr bool
	esc   bool
}

// scan returns how many top-level values end within p.
func (s *valueScanner) scan(p []byte) int {
	n := 0
	for {
		k := s.until(p)
		if k < 0 {
			return n
		}
		n++
		p = p[k:]
	}
}

// response is one JSON-RPC response object as read by the validator.
type response struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Result  json.RawMessage `json:"result"`
	Error   json.RawMessage `json:"error"`
}

// Validate reads every response from r (newline-delimited or back-to-back
// JSON values) and checks that each request of w was answered exactly once
// with the expected result. It returns the number of top-level values read.
func (w Workload) Validate(r io.Reader) (int, error) {
	seen := make([]bool, w.Requests()+1)
	dec := json.NewDecoder(r)
	values := 0
	answered := 0
	var want []byte
	for {
		var raw json.RawMessage
		err := dec.Decode(&raw)
		if err == io.EOF {
			break
		}
		if err != nil {
			return values, fmt.Errorf("response %d: %v", values+1, err)
		}
		values++
		var rs []response
		if len(raw) > 0 && raw[0] == '[' {
			if w.Batch == 0 {
				return values, fmt.Errorf("response %d: batch response to a single request", values)
			}
			if err := json.Unmarshal(raw, &rs); err != nil {
				return values, fmt.Errorf("response %d: %v", values, err)
			}
			if len(rs) != w.Batch {
				return values, fmt.Errorf("response %d: batch of %d responses, want %d", values, len(rs), w.Batch)
			}
		} else {
			if w.Batch > 0 {
				return values, fmt.Errorf("response %d: single response to a batch: %.200s", values, raw)
			}
			rs = make([]response, 1)
			if err := json.Unmarshal(raw, &rs[0]); err != nil {
				return values, fmt.Errorf("response %d: %v", values, err)
			}
		}
		for _, r := range rs {
			var id int64
			if err := json.Unmarshal(r.ID, &id); err != nil || id < 1 || id >= int64(len(seen)) {
				return values, fmt.Errorf("response %d: bad id %s", values, r.ID)
			}
			if seen[id] {
				return values, fmt.Errorf("response %d: id %d answered twice", values, id)
			}
			seen[id] = true
			answered++
			if r.JSONRPC != "2.0" {
				return values, fmt.Errorf("id %d: jsonrpc %q", id, r.JSONRPC)
			}
			if r.Error != nil {
				return values, fmt.Errorf("id %d: error %s", id, r.Error)
			}
			want = w.AppendResult(want[:0], id)
			if !bytes.Equal(r.Result, want) && !sameJSON(r.Result, want) {
				return values, fmt.Errorf("id %d: result %.200s, want %.200s", id, r.Result, want)
			}
		}
	}
	wantAnswers := w.Requests()
	if w.Notify {
		wantAnswers = 0
	}
	if answered != wantAnswers {
		return values, fmt.Errorf("%d requests answered, want %d", answered, wantAnswers)
	}
	return values, nil
}

func sameJSON(a, b []byte) bool {
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return false
	}
	return reflect.DeepEqual(x, y)
}
