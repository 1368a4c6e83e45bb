package jsonrpc_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ndjsonrpc/jsonrpc"
)

// orderState is what the handlers of the order tests share: the
// notifications handled, in the order their handlers ran.
type orderState struct {
	mu      sync.Mutex
	seen    []int
	running atomic.Int32 // notification handlers running now
	overlap atomic.Int32 // times two ran at once
}

// delay is a handler's pause for notification i: none for most, short for
// some, long enough for reading to be handed on for a few.
func delay(i int) {
	switch {
	case i%97 == 0:
		time.Sleep(2 * time.Millisecond)
	case i%13 == 0:
		time.Sleep(100 * time.Microsecond)
	}
}

// mux returns the handlers: "note" [i] records i, after a pause; "count"
// answers how many notes have been handled.
func (s *orderState) mux() *jsonrpc.Mux {
	mux := new(jsonrpc.Mux)
	mux.Handle("note", jsonrpc.Func(func(_ context.Context, p [1]int) (any, error) {
		if s.running.Add(1) > 1 {
			s.overlap.Add(1)
		}
		defer s.running.Add(-1)
		delay(p[0])
		s.mu.Lock()
		s.seen = append(s.seen, p[0])
		s.mu.Unlock()
		return nil, nil
	}))
	mux.Handle("count", jsonrpc.Func(func(context.Context, struct{}) (int, error) {
		s.mu.Lock()
		defer s.mu.Unlock()
		return len(s.seen), nil
	}))
	return mux
}

// check fails t unless the notes 0..n-1 were handled one at a time, in
// order.
func (s *orderState) check(t *testing.T, n int) {
	t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	assert.Zero(t, s.overlap.Load(), "notification handlers that ran at once")
	require.Len(t, s.seen, n)
	wrong := 0
	for i, v := range s.seen {
		if v != i {
			if wrong++; wrong <= 3 {
				t.Errorf("the note handled %d-th is %d", i, v)
			}
		}
	}
	assert.Zero(t, wrong, "notes handled out of arrival order")
}

// orderInput is n notifications with a count request after every 100th:
// the count's id is the number of notes before it, which its answer must
// equal.
func orderInput(n int) []string {
	var lines []string
	for i := range n {
		lines = append(lines, fmt.Sprintf(`{"jsonrpc":"2.0","method":"note","params":[%d]}`, i))
		if (i+1)%100 == 0 {
			lines = append(lines, fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"count"}`, i+1))
		}
	}
	return lines
}

// checkCounts fails t unless every answer in out is a count equal to its
// id, and all want of them came.
func checkCounts(t *testing.T, out []string, want int) {
	t.Helper()
	got, wrong := 0, 0
	for _, line := range out {
		var r struct {
			ID     int             `json:"id"`
			Result int             `json:"result"`
			Error  json.RawMessage `json:"error"`
		}
		require.NoError(t, json.Unmarshal([]byte(line), &r), line)
		require.Nil(t, r.Error, line)
		got++
		if r.Result != r.ID {
			if wrong++; wrong <= 3 {
				t.Errorf("the count sent after %d notes saw %d", r.ID, r.Result)
			}
		}
	}
	assert.Equal(t, want, got, "counts answered")
	assert.Zero(t, wrong, "counts that did not see every note before them")
}

// TestOrder sends 10,000 notifications, whose handlers pause at random, with
// a request after every 100th, over each transport: the notifications must
// be handled one at a time in arrival order, and each request must see
// every notification before it.
func TestOrder(t *testing.T) {
	n := 10_000
	if raceEnabled {
		n = 3_000
	}
	lines := orderInput(n)
	input := strings.Join(lines, "\n") + "\n"
	counts := n / 100

	// lineTransport runs the endpoint over pipes that the test writes to
	// and reads from, a line at a time.
	lineTransport := func(t *testing.T, start func(r io.Reader, w io.Writer) (stop func())) []string {
		inR, inW := io.Pipe()
		outR, outW := io.Pipe()
		stop := start(inR, outW)
		go func() {
			_, _ = io.WriteString(inW, input)
		}()
		var out []string
		sc := bufio.NewScanner(outR)
		for len(out) < counts && sc.Scan() {
			out = append(out, sc.Text())
		}
		_ = inW.Close()
		stop()
		_ = outW.Close()
		_ = outR.Close()
		return out
	}
	transports := map[string]func(t *testing.T, s *orderState) []string{
		"Server": func(t *testing.T, s *orderState) []string {
			return lineTransport(t, func(r io.Reader, w io.Writer) func() {
				srv := &jsonrpc.Server{Options: jsonrpc.Options{Handler: s.mux()}}
				done := make(chan error, 1)
				go func() { done <- srv.Serve(context.Background(), r, w) }()
				return func() { assert.NoError(t, <-done) }
			})
		},
		"Conn": func(t *testing.T, s *orderState) []string {
			return lineTransport(t, func(r io.Reader, w io.Writer) func() {
				c := jsonrpc.NewConn(r, w, &jsonrpc.Options{Handler: s.mux()})
				return func() { assert.NoError(t, c.Wait()) }
			})
		},
		"Client with a Handler": func(t *testing.T, s *orderState) []string {
			return lineTransport(t, func(r io.Reader, w io.Writer) func() {
				c := jsonrpc.NewConn(r, w, &jsonrpc.Options{Handler: s.mux()})
				return func() { <-c.Done(); assert.NoError(t, c.Close()) }
			})
		},
		"socket": func(t *testing.T, s *orderState) []string {
			l, err := net.Listen("tcp", "127.0.0.1:0")
			require.NoError(t, err)
			srv := &jsonrpc.Server{Options: jsonrpc.Options{Handler: s.mux()}}
			served := make(chan error, 1)
			go func() { served <- srv.ServeListener(context.Background(), l) }()
			defer func() {
				assert.NoError(t, srv.Shutdown(t.Context()))
				<-served
			}()
			nc, err := net.Dial("tcp", l.Addr().String())
			require.NoError(t, err)
			defer nc.Close()
			go func() { _, _ = io.WriteString(nc, input) }()
			var out []string
			sc := bufio.NewScanner(nc)
			for len(out) < counts && sc.Scan() {
				out = append(out, sc.Text())
			}
			return out
		},
		"HTTP, one batch": func(t *testing.T, s *orderState) []string {
			srv := &jsonrpc.Server{Options: jsonrpc.Options{Handler: s.mux(), MaxBatch: len(lines)}}
			hs := httptest.NewServer(srv)
			defer hs.Close()
			body := "[" + strings.Join(lines, ",") + "]"
			resp, err := http.Post(hs.URL, "application/json", strings.NewReader(body))
			require.NoError(t, err)
			defer resp.Body.Close()
			var answers []json.RawMessage
			require.NoError(t, json.NewDecoder(resp.Body).Decode(&answers))
			var out []string
			for _, a := range answers {
				out = append(out, string(bytes.TrimSpace(a)))
			}
			return out
		},
	}
	for name, run := range transports {
		t.Run(name, func(t *testing.T) {
			checkLeaks(t)
			s := new(orderState)
			out := run(t, s)
			checkCounts(t, out, counts)
			s.check(t, n)
		})
	}
}

// meetHandler answers "met" once two of its requests run at once, and
// fails after h3Guard if the other never comes.
func meetHandler() jsonrpc.Handler {
	var arrived sync.WaitGroup
	arrived.Add(2)
	return jsonrpc.Func(func(ctx context.Context, _ struct{}) (string, error) {
		arrived.Done()
		met := make(chan struct{})
		go func() { arrived.Wait(); close(met) }()
		select {
		case <-met:
			return "met", nil
		case <-time.After(h3Guard):
			return "", fmt.Errorf("the other request never ran")
		}
	})
}

// TestOrderRequestsConcurrent checks that requests still run at once: two
// requests that each wait for the other, after notifications, both end.
func TestOrderRequestsConcurrent(t *testing.T) {
	checkLeaks(t)
	s := new(orderState)
	mux := s.mux()
	mux.Handle("meet", meetHandler())
	in, lines := h3Server(t, &jsonrpc.Server{Options: jsonrpc.Options{Handler: mux}})
	for i := range 50 {
		_, err := fmt.Fprintf(in, `{"jsonrpc":"2.0","method":"note","params":[%d]}`+"\n", i)
		require.NoError(t, err)
	}
	_, err := io.WriteString(in, `{"jsonrpc":"2.0","id":1,"method":"meet"}`+"\n"+`{"jsonrpc":"2.0","id":2,"method":"meet"}`+"\n")
	require.NoError(t, err)
	for range 2 {
		assert.Contains(t, h3Recv(t, lines, "a meet"), `"result":"met"`)
	}
	s.check(t, 50)
}

// TestOrderAll checks Order.All: requests that change state, with random
// pauses, are handled one at a time in arrival order too, and
// Order.Concurrent exempts a method.
func TestOrderAll(t *testing.T) {
	checkLeaks(t)
	var counter, running, overlap atomic.Int32
	mux := new(jsonrpc.Mux)
	mux.Handle("inc", jsonrpc.Func(func(_ context.Context, p [1]int) (int32, error) {
		if running.Add(1) > 1 {
			overlap.Add(1)
		}
		defer running.Add(-1)
		delay(p[0])
		return counter.Add(1), nil
	}))
	mux.Handle("meet", meetHandler())
	in, lines := h3Server(t, &jsonrpc.Server{Options: jsonrpc.Options{Handler: mux, Order: jsonrpc.Order{All: true, Concurrent: []string{"meet"}}}})
	const n = 1000
	go func() {
		for i := range n {
			if _, err := fmt.Fprintf(in, `{"jsonrpc":"2.0","id":%d,"method":"inc","params":[%d]}`+"\n", i+1, i); err != nil {
				return
			}
		}
		_, _ = io.WriteString(in, `{"jsonrpc":"2.0","id":"a","method":"meet"}`+"\n"+`{"jsonrpc":"2.0","id":"b","method":"meet"}`+"\n")
	}()
	wrong := 0
	for range n + 2 {
		line := h3Recv(t, lines, "an answer")
		var r struct {
			ID     any `json:"id"`
			Result any `json:"result"`
		}
		require.NoError(t, json.Unmarshal([]byte(line), &r), line)
		if id, ok := r.ID.(float64); ok && r.Result != id {
			wrong++
		}
		if id, ok := r.ID.(string); ok {
			assert.Equal(t, "met", r.Result, "meet %s", id)
		}
	}
	assert.Zero(t, wrong, "requests not handled in arrival order")
	assert.Zero(t, overlap.Load(), "requests in order that ran at once")
}

// TestOrderConcurrentNotifications checks that notifications named in
// Order.Concurrent run at once: two that wait for each other both end.
func TestOrderConcurrentNotifications(t *testing.T) {
	checkLeaks(t)
	var arrived sync.WaitGroup
	arrived.Add(2)
	met := make(chan string, 2)
	mux := new(jsonrpc.Mux)
	mux.HandleFunc("meet", func(context.Context, *jsonrpc.Request) (any, error) {
		arrived.Done()
		done := make(chan struct{})
		go func() { arrived.Wait(); close(done) }()
		select {
		case <-done:
			met <- "met"
		case <-time.After(h3Guard):
			met <- "alone"
		}
		return nil, nil
	})
	in, _ := h3Server(t, &jsonrpc.Server{Options: jsonrpc.Options{Handler: mux, Order: jsonrpc.Order{Concurrent: []string{"meet"}}}})
	_, err := io.WriteString(in, strings.Repeat(`{"jsonrpc":"2.0","method":"meet"}`+"\n", 2))
	require.NoError(t, err)
	assert.Equal(t, "met", <-met)
	assert.Equal(t, "met", <-met)
}

// TestOrderCallsThePeer has a notification handler in order call the peer
// while later notifications wait: the answer is not held back.
func TestOrderCallsThePeer(t *testing.T) {
	checkLeaks(t)
	s := new(orderState)
	mux := s.mux()
	mux.Handle("ask", jsonrpc.Func(func(ctx context.Context, p [1]int) (any, error) {
		var sum int
		if err := jsonrpc.Peer(ctx).Call(ctx, "add", [2]int{p[0], 1}, &sum); err != nil {
			return nil, err
		}
		s.mu.Lock()
		s.seen = append(s.seen, sum-1)
		s.mu.Unlock()
		return nil, nil
	}))
	peer := new(jsonrpc.Mux)
	peer.Handle("add", jsonrpc.Func(func(_ context.Context, p [2]int) (int, error) { return p[0] + p[1], nil }))
	_, b := twConnPair(t, &jsonrpc.Options{Handler: mux}, &jsonrpc.Options{Handler: peer})
	ctx, cancel := context.WithTimeout(t.Context(), h3Guard)
	defer cancel()
	for i := range 200 {
		method := "note"
		if i%10 == 0 {
			method = "ask"
		}
		require.NoError(t, b.Notify(ctx, method, [1]int{i}))
	}
	var n int
	require.NoError(t, b.Call(ctx, "count", struct{}{}, &n))
	assert.Equal(t, 200, n)
	s.check(t, 200)
}
