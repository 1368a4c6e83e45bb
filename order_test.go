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

// notesRig is a connection whose peer a test plays by hand over pipes, to
// see what becomes of notifications in order while the connection is over
// its byte budget. Its handlers: orderState's "note" and "count"; "hold"
// waits for release; "ask" calls the peer; "gate" (a notification) waits
// for release unless its param is 0, when it holds its reader up until
// reading is handed on.
type notesRig struct {
	t       *testing.T
	conn    *jsonrpc.Conn
	in      *io.PipeWriter
	lines   chan string
	release chan struct{}
	orderState
}

func newNotesRig(t *testing.T, o jsonrpc.Options) *notesRig {
	r := &notesRig{t: t, lines: make(chan string, 64), release: make(chan struct{})}
	mux := r.mux()
	mux.Handle("hold", jsonrpc.Func(func(context.Context, [1]string) (int, error) {
		<-r.release
		return 0, nil
	}))
	mux.Handle("ask", jsonrpc.Func(func(ctx context.Context, _ struct{}) (int, error) {
		return 0, jsonrpc.Peer(ctx).Call(ctx, "ping", nil, nil)
	}))
	mux.Handle("gate", jsonrpc.Func(func(ctx context.Context, p [1]int) (any, error) {
		if p[0] == 0 {
			holdReader(r.t, ctx) // the method counts as slow from then on
		} else {
			<-r.release
		}
		return nil, nil
	}))
	o.Handler = mux
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	r.in = inW
	c := jsonrpc.NewConn(inR, outW, &o)
	r.conn = c
	t.Cleanup(func() {
		_ = inW.Close()
		_ = c.Close()
		_ = outR.Close()
	})
	go func() {
		sc := bufio.NewScanner(outR)
		for sc.Scan() {
			r.lines <- sc.Text()
		}
		close(r.lines)
	}()
	return r
}

func (r *notesRig) send(format string, args ...any) {
	r.t.Helper()
	_, err := fmt.Fprintf(r.in, format+"\n", args...)
	require.NoError(r.t, err)
}

func (r *notesRig) recv(what string) string { r.t.Helper(); return h3Recv(r.t, r.lines, what) }

// notes sends notes first to first+n-1.
func (r *notesRig) notes(first, n int) {
	for i := first; i < first+n; i++ {
		r.send(`{"jsonrpc":"2.0","method":"note","params":[%d]}`, i)
	}
}

// answer answers the call to the peer that line holds.
func (r *notesRig) answer(line string) {
	r.t.Helper()
	var call struct{ ID json.RawMessage }
	require.NoError(r.t, json.Unmarshal([]byte(line), &call))
	r.send(`{"jsonrpc":"2.0","id":%s,"result":null}`, call.ID)
}

// noted asks for the count of notes handled, and returns the notes.
func (r *notesRig) noted() []int {
	r.t.Helper()
	time.Sleep(50 * time.Millisecond) // what was held is given back
	r.send(`{"jsonrpc":"2.0","id":"count","method":"count"}`)
	answer := r.recv("count's answer")
	r.mu.Lock()
	defer r.mu.Unlock()
	assert.Equal(r.t, fmt.Sprintf(`{"jsonrpc":"2.0","id":"count","result":%d}`, len(r.seen)), answer)
	assert.Zero(r.t, r.overlap.Load(), "two notes ran at once")
	return r.seen
}

// TestOrderNotesOverBudgetWhileCalling: while this side's own call awaits
// the peer's answer, the reader cannot wait for the budget (the answer
// must arrive), and requests past it are refused; notifications, which
// a refusal would lose, are queued past it and run in order, and so is
// a batch that holds one, its requests with it.
func TestOrderNotesOverBudgetWhileCalling(t *testing.T) {
	r := newNotesRig(t, jsonrpc.Options{MaxPendingBytes: 48 << 10})
	called := make(chan error, 1)
	go func() { called <- r.conn.Call(context.Background(), "ping", nil, nil) }()
	ping := r.recv("the call to the peer")
	require.Contains(t, ping, `"method":"ping"`)
	// A request that runs long holds the budget, and then some.
	r.send(`{"jsonrpc":"2.0","id":1,"method":"hold","params":["%s"]}`, strings.Repeat("x", 49<<10))
	time.Sleep(50 * time.Millisecond) // reading is handed on past its handler
	r.notes(0, 5)
	r.send(`{"jsonrpc":"2.0","id":2,"method":"count"}`)
	assert.Contains(t, r.recv("the refusal"), `"id":2,"error":{"code":-32090`)
	r.send(`[{"jsonrpc":"2.0","method":"note","params":[5]},{"jsonrpc":"2.0","id":3,"method":"count"}]`)
	time.Sleep(50 * time.Millisecond) // a refusal would come now
	close(r.release)
	assert.Equal(t, `{"jsonrpc":"2.0","id":1,"result":0}`, r.recv("hold's answer"))
	assert.Equal(t, `[{"jsonrpc":"2.0","id":3,"result":6}]`, r.recv("the batch's answer"))
	r.answer(ping)
	require.NoError(t, <-called)
	assert.Equal(t, []int{0, 1, 2, 3, 4, 5}, r.noted())
}

// TestOrderNotesWhileHandlerWaitsForPeer: a handler outside the order
// waits for the peer, which takes the connection over its budget;
// notifications in order, read then, are kept, and run in their turn:
// after a request's handler that held reading up ("read"), or queued
// behind a slow notification ("queued"). Requests queued then are
// refused; a notification could only be lost.
func TestOrderNotesWhileHandlerWaitsForPeer(t *testing.T) {
	for _, tc := range []struct {
		name   string
		budget int
		first  []string // before the call to the peer; the first is let be 50 ms
	}{
		{"read", 70000, []string{`{"jsonrpc":"2.0","id":1,"method":"hold","params":["x"]}`}},
		{"queued", 9000, []string{`{"jsonrpc":"2.0","method":"gate","params":[0]}`, `{"jsonrpc":"2.0","method":"gate","params":[1]}`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newNotesRig(t, jsonrpc.Options{MaxPendingBytes: tc.budget, Order: jsonrpc.Order{Concurrent: []string{"ask"}}})
			for i, line := range tc.first {
				r.send("%s", line)
				if i == 0 {
					time.Sleep(50 * time.Millisecond) // reading is handed on, or the buffer given back
				}
			}
			r.send(`{"jsonrpc":"2.0","id":2,"method":"ask"}`)
			ping := r.recv("the call to the peer")
			require.Contains(t, ping, `"method":"ping"`)
			r.notes(0, 5)
			time.Sleep(50 * time.Millisecond)
			close(r.release)
			if tc.name == "read" {
				assert.Equal(t, `{"jsonrpc":"2.0","id":1,"result":0}`, r.recv("hold's answer"))
			}
			time.Sleep(50 * time.Millisecond) // the notes run, or are lost
			r.answer(ping)
			assert.Equal(t, `{"jsonrpc":"2.0","id":2,"result":0}`, r.recv("ask's answer"))
			assert.Equal(t, []int{0, 1, 2, 3, 4}, r.noted())
		})
	}
}

// TestOrderNotesOverdraftBounded: what notifications may hold past the
// budget while this side awaits answers is bounded (by the budget once
// more): past it they are dropped, the first kept in order.
func TestOrderNotesOverdraftBounded(t *testing.T) {
	r := newNotesRig(t, jsonrpc.Options{MaxPendingBytes: 48 << 10})
	called := make(chan error, 1)
	go func() { called <- r.conn.Call(context.Background(), "ping", nil, nil) }()
	ping := r.recv("the call to the peer")
	r.send(`{"jsonrpc":"2.0","id":1,"method":"hold","params":["%s"]}`, strings.Repeat("x", 49<<10))
	time.Sleep(50 * time.Millisecond) // reading is handed on past its handler
	const n = 200                     // 200 x 562 bytes: past the budget's 48 KiB
	r.notes(0, n)
	r.send(`{"jsonrpc":"2.0","id":2,"method":"count"}`) // read once the notes are
	assert.Contains(t, r.recv("the refusal"), `"id":2,"error":{"code":-32090`)
	close(r.release)
	assert.Equal(t, `{"jsonrpc":"2.0","id":1,"result":0}`, r.recv("hold's answer"))
	r.answer(ping)
	require.NoError(t, <-called)
	seen := r.noted()
	require.NotEmpty(t, seen)
	assert.Less(t, len(seen), n, "all kept: no bound")
	for i, v := range seen {
		require.Equal(t, i, v, "the notes kept are the first, in order")
	}
}
