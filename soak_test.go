package jsonrpc_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"runtime"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ndjsonrpc/jsonrpc"
)

// soakInput generates the soak workload line by line, without holding it
// in memory, and records what a correct server must answer.
type soakInput struct {
	total, next int
	pending     []byte

	wantIDs     map[string]bool // ids that must be answered once each
	parseErrors int             // lines that must get -32700
}

func (s *soakInput) Read(p []byte) (int, error) {
	for len(s.pending) == 0 {
		if s.next >= s.total {
			return 0, io.EOF
		}
		s.pending = s.line(s.next)
		s.next++
	}
	n := copy(p, s.pending)
	s.pending = s.pending[n:]
	return n, nil
}

// line returns message i of the mix: requests, notifications, broken
// lines, batches, slow requests and cancels for them.
func (s *soakInput) line(i int) []byte {
	id := strconv.Itoa(i)
	var b []byte
	switch i % 10 {
	case 0, 1, 2, 3:
		s.wantIDs[id] = true
		b = []byte(`{"jsonrpc":"2.0","id":` + id + `,"method":"echo","params":[` + id + `]}`)
	case 4:
		b = []byte(`{"jsonrpc":"2.0","method":"echo","params":[` + id + `]}`)
	case 5:
		s.parseErrors++
		b = []byte(`{"jsonrpc":"2.0","id":` + id + `,"method":"echo","params":[`)
	case 6:
		s.wantIDs[id+"a"] = true
		s.wantIDs[id+"b"] = true
		b = []byte(`[{"jsonrpc":"2.0","id":"` + id + `a","method":"echo","params":[1]},` +
			`{"jsonrpc":"2.0","method":"echo","params":[2]},` +
			`{"jsonrpc":"2.0","id":"` + id + `b","method":"nope"}]`)
	case 7:
		s.wantIDs[id] = true
		b = []byte(`{"jsonrpc":"2.0","id":` + id + `,"method":"slow","params":[` + id + `]}`)
	case 8:
		// Cancel the slow request just before, which may or may not
		// still be in flight.
		b = []byte(`{"jsonrpc":"2.0","method":"$/cancelRequest","params":{"id":` + strconv.Itoa(i-1) + `}}`)
	case 9:
		b = []byte(`{"jsonrpc":"2.0","method":"echo","params":{"n":` + id + `}}`)
	}
	return append(b, '\n')
}

// soakOutput checks each line written and counts the answers.
type soakOutput struct {
	t           *testing.T
	partial     []byte
	answered    map[string]int
	parseErrors int
	bad         int
}

func (o *soakOutput) Write(p []byte) (int, error) {
	o.partial = append(o.partial, p...)
	for {
		i := bytes.IndexByte(o.partial, '\n')
		if i < 0 {
			break
		}
		o.record(o.partial[:i])
		o.partial = o.partial[i+1:]
	}
	if len(o.partial) == 0 {
		o.partial = nil
	}
	return len(p), nil
}

type soakResponse struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Result  json.RawMessage `json:"result"`
	Error   *jsonrpc.Error  `json:"error"`
}

func (o *soakOutput) record(line []byte) {
	var resps []soakResponse
	if len(line) > 0 && line[0] == '[' {
		if json.Unmarshal(line, &resps) != nil {
			o.bad++
			return
		}
	} else {
		var r soakResponse
		if json.Unmarshal(line, &r) != nil {
			o.bad++
			return
		}
		resps = append(resps, r)
	}
	for _, r := range resps {
		if r.JSONRPC != "2.0" || (r.Result == nil) == (r.Error == nil) {
			o.bad++
			continue
		}
		if string(r.ID) == "null" {
			if r.Error != nil && r.Error.Code == jsonrpc.CodeParseError {
				o.parseErrors++
			} else {
				o.bad++
			}
			continue
		}
		var key string
		if err := json.Unmarshal(r.ID, &key); err != nil {
			key = string(r.ID)
		}
		o.answered[key]++
	}
}

// TestSoak pushes a long mix of messages through Serve with 64 requests in
// flight, and checks that every request is answered exactly once, nothing
// else is, and the live heap does not grow. Under -short it runs fewer.
func TestSoak(t *testing.T) {
	checkLeaks(t)
	total := 1_000_000
	if testing.Short() || raceEnabled {
		total = 100_000
	}
	mux := new(jsonrpc.Mux)
	mux.HandleFunc("echo", func(_ context.Context, req *jsonrpc.Request) (any, error) {
		return req.Params, nil
	})
	mux.HandleFunc("slow", func(ctx context.Context, req *jsonrpc.Request) (any, error) {
		t := time.NewTimer(20 * time.Microsecond)
		defer t.Stop()
		select {
		case <-t.C:
			return "done", nil
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	})

	heapBefore := liveHeap()
	in := &soakInput{total: total, wantIDs: make(map[string]bool, total/2)}
	out := &soakOutput{t: t, answered: make(map[string]int, total/2)}
	srv := &jsonrpc.Server{Options: jsonrpc.Options{Handler: mux, MaxInFlight: 64}}
	require.NoError(t, srv.Serve(t.Context(), in, out))

	assert.Zero(t, out.bad, "malformed or unexpected output lines")
	assert.Empty(t, out.partial, "output ends in a partial line")
	assert.Equal(t, in.parseErrors, out.parseErrors, "parse errors")
	missing, extra := 0, 0
	for id := range in.wantIDs {
		switch n := out.answered[id]; {
		case n == 0:
			missing++
		case n > 1:
			extra++
		}
	}
	for id := range out.answered {
		if !in.wantIDs[id] {
			extra++
		}
	}
	assert.Zero(t, missing, "requests never answered")
	assert.Zero(t, extra, "requests answered twice, or answers to no request")
	assert.Len(t, out.answered, len(in.wantIDs))

	in, out = nil, nil
	heapAfter := liveHeap()
	assert.Less(t, heapAfter, heapBefore+16<<20, "live heap grew from %d to %d bytes", heapBefore, heapAfter)
}

// liveHeap returns the bytes of live heap after a full collection.
func liveHeap() uint64 {
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}
