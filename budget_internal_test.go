package jsonrpc

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
	"unsafe"
)

// rawPeer is the client end of a connection that a Server serves, which
// writes lines and collects the answers by id.
type rawPeer struct {
	t       *testing.T
	c       net.Conn
	mu      sync.Mutex
	answers map[string]*Response
	arrived chan struct{} // an answer arrived
}

// servePipe serves one end of a pipe with s and returns the other, and a
// channel closed once Serve has returned.
func servePipe(s *Server) (net.Conn, <-chan struct{}) {
	a, b := net.Pipe()
	served := make(chan struct{})
	go func() {
		defer close(served)
		_ = s.Serve(context.Background(), b, b)
		b.Close()
	}()
	return a, served
}

func newRawPeer(t *testing.T, s *Server) *rawPeer {
	a, served := servePipe(s)
	p := &rawPeer{t: t, c: a, answers: map[string]*Response{}, arrived: make(chan struct{}, 1)}
	read := make(chan struct{})
	go func() {
		defer close(read)
		sc := bufio.NewScanner(a)
		sc.Buffer(nil, 1<<24)
		for sc.Scan() {
			var r Response
			if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
				t.Errorf("answer %q: %v", sc.Text(), err)
				continue
			}
			p.mu.Lock()
			p.answers[r.ID.String()] = &r
			p.mu.Unlock()
			select {
			case p.arrived <- struct{}{}:
			default:
			}
		}
	}()
	t.Cleanup(func() {
		a.Close()
		<-served
		<-read
	})
	return p
}

// send writes a request with id and params on its own goroutine (a pipe
// write waits for the server to read it all).
func (p *rawPeer) send(id int, method, params string) {
	line := fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":%q,"params":%s}`+"\n", id, method, params)
	go func() { _, _ = p.c.Write([]byte(line)) }()
}

// answer waits for the answer to id.
func (p *rawPeer) answer(id int) *Response {
	p.t.Helper()
	timeout := time.After(20 * time.Second) // a hang, not a timing
	for {
		p.mu.Lock()
		r := p.answers[fmt.Sprint(id)]
		p.mu.Unlock()
		if r != nil {
			return r
		}
		select {
		case <-p.arrived:
		case <-time.After(10 * time.Millisecond):
		case <-timeout:
			p.t.Fatalf("no answer to %d", id)
		}
	}
}

// shed counts the answers that say the server's budget had no room.
func (p *rawPeer) shed() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := 0
	for _, r := range p.answers {
		if isServerFull(r) {
			n++
		}
	}
	return n
}

// waitFor waits until cond holds (a hang, not a timing, fails the test).
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for start := time.Now(); !cond(); time.Sleep(time.Millisecond) {
		if time.Since(start) > 20*time.Second {
			t.Fatalf("waited in vain for %s", what)
		}
	}
}

// budgetServer serves "block", which waits for release, and "echo".
func budgetServer(max int64) (*Server, chan struct{}) {
	release := make(chan struct{})
	mux := &Mux{}
	mux.HandleFunc("block", func(ctx context.Context, req *Request) (any, error) {
		select {
		case <-release:
		case <-ctx.Done():
		}
		return len(req.Params), nil
	})
	mux.HandleFunc("echo", func(ctx context.Context, req *Request) (any, error) {
		return len(req.Params), nil
	})
	return &Server{Options: Options{Handler: mux, MaxInFlight: 1}, MaxMemory: max}, release
}

func isServerFull(r *Response) bool {
	return r.Error != nil && r.Error.Code == CodeOverloaded && strings.Contains(string(r.Error.Data), "server memory budget")
}

// pad is params of about n bytes.
func pad(n int) string { return `["` + strings.Repeat("x", n) + `"]` }

func TestServerMemoryBudgetShedsAcrossConnections(t *testing.T) {
	s, release := budgetServer(256 << 10)
	a := newRawPeer(t, s)
	a.send(1, "block", pad(10))
	// The rest queue behind it (one slot), 10 KiB each, until the
	// server's budget is spent; then they are shed, not held.
	const n = 40
	for id := 2; id <= n; id++ {
		a.send(id, "block", pad(10<<10))
	}
	waitFor(t, "a request to be shed", func() bool { return a.shed() > 0 })

	b := newRawPeer(t, s)
	b.send(1, "echo", pad(10<<10))
	if r := b.answer(1); !isServerFull(r) {
		t.Fatalf("another connection's request with the budget spent: got %+v, %v; want CodeOverloaded, server memory budget", r.Error, string(r.Result))
	}
	if MayHaveRun(b.answer(1).Error) {
		t.Error("MayHaveRun says a shed request may have run")
	}

	close(release)
	ok, shed := 0, 0
	for id := 1; id <= n; id++ {
		switch r := a.answer(id); {
		case r.Error == nil:
			ok++
		case isServerFull(r):
			shed++
		default:
			t.Errorf("request %d: %v", id, r.Error)
		}
	}
	// 256 KiB holds about 18 requests of 10 KiB beside the 64 KiB read
	// buffer that the blocked handler keeps (fewer when a queued one
	// was handed off too).
	if shed == 0 || ok < 10 {
		t.Errorf("%d answered, %d shed; want some of each", ok, shed)
	}
	waitFor(t, "the budget to empty", func() bool { return s.memory().held.Load() == 0 })
	b.send(2, "echo", pad(10))
	if r := b.answer(2); r.Error != nil {
		t.Errorf("once the budget has room: %v", r.Error)
	}
}

func TestServerMemoryBudgetServesAWaitingReader(t *testing.T) {
	s, release := budgetServer(256 << 10)
	a := newRawPeer(t, s)
	a.send(1, "block", pad(10))
	for id := 2; id <= 40; id++ {
		a.send(id, "block", pad(10<<10))
	}
	waitFor(t, "the budget to fill", func() bool { return s.memory().full(0) })

	// A line of 200 KiB needs a larger buffer than a connection starts
	// with: its reader waits for room, and meanwhile the server sheds
	// other new work, even what would fit, so that it gets room.
	b := newRawPeer(t, s)
	b.send(1, "echo", pad(200<<10))
	waitFor(t, "the reader to wait", func() bool { return s.memory().waiting.Load() > 0 })
	close(release) // the held requests drain; shed ones stay shed
	c := newRawPeer(t, s)
	for id := 1; s.memory().waiting.Load() > 0; id++ {
		c.send(id, "echo", pad(10))
		if r := c.answer(id); r.Error != nil && !isServerFull(r) {
			t.Fatalf("small request: %v", r.Error)
		}
	}
	if r := b.answer(1); r.Error != nil {
		t.Fatalf("the waiting reader's request: %v", r.Error)
	}
	waitFor(t, "the budget to empty", func() bool { return s.memory().held.Load() == 0 })
}

func TestServerMemoryBudgetTwoLongLinesAtOnce(t *testing.T) {
	// Each line is longer than the budget: the readers must not wait
	// for each other's half-read lines.
	s, _ := budgetServer(128 << 10)
	peers := []*rawPeer{newRawPeer(t, s), newRawPeer(t, s), newRawPeer(t, s)}
	for _, p := range peers {
		p.send(1, "echo", pad(300<<10))
	}
	for i, p := range peers {
		if r := p.answer(1); r.Error != nil {
			t.Errorf("peer %d: %v", i, r.Error)
		}
	}
	waitFor(t, "the budget to empty", func() bool { return s.memory().held.Load() == 0 })
}

func TestServerMemoryBudgetIdleConnectionHoldsNothing(t *testing.T) {
	s, _ := budgetServer(0)
	p := newRawPeer(t, s)
	p.send(1, "echo", pad(500<<10))
	if r := p.answer(1); r.Error != nil {
		t.Fatal(r.Error)
	}
	// The buffer grown for the line is let go once read: an idle
	// connection keeps no room that others need.
	waitFor(t, "the budget to empty", func() bool { return s.memory().held.Load() == 0 })
	if s.memory().max != defaultMaxMemory {
		t.Errorf("the zero MaxMemory gives %d, want %d", s.memory().max, defaultMaxMemory)
	}
	if (&Server{MaxMemory: -1}).memory() != nil {
		t.Error("a negative MaxMemory still has a budget")
	}
}

func TestServerMemoryBudgetHTTP(t *testing.T) {
	s, release := budgetServer(64 << 10)
	ts := httptest.NewServer(s)
	defer ts.Close()
	client := &HTTPClient{URL: ts.URL}
	first := make(chan error, 1)
	go func() {
		first <- client.Call(context.Background(), "block", []string{strings.Repeat("x", 60<<10)}, nil)
	}()
	waitFor(t, "the first body to be held", func() bool { return s.memory().held.Load() > 60<<10 })
	err := client.Call(context.Background(), "echo", []string{strings.Repeat("x", 10<<10)}, nil)
	var he *HTTPError
	if !errors.Is(err, ErrOverloaded) || !errors.As(err, &he) || he.StatusCode != http.StatusServiceUnavailable {
		t.Fatalf("a body the budget has no room for: %v; want 503 and ErrOverloaded", err)
	}
	if MayHaveRun(err) {
		t.Error("MayHaveRun says a shed HTTP request may have run")
	}
	close(release)
	if err := <-first; err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the budget to empty", func() bool { return s.memory().held.Load() == 0 })
	if err := client.Call(context.Background(), "echo", []string{strings.Repeat("x", 10<<10)}, nil); err != nil {
		t.Errorf("once the budget has room: %v", err)
	}
}

// TestServerMemoryBudgetHTTPLargeBody checks that an HTTP body larger
// than most of the budget, or than all of it, is let through on an idle
// server, whether or not its size is announced: growing its buffer must
// not count the body's own smaller buffer as held by someone else.
func TestServerMemoryBudgetHTTPLargeBody(t *testing.T) {
	s, _ := budgetServer(1 << 20)
	for _, size := range []int{800_000, 3_000_000} {
		for _, announced := range []bool{true, false} {
			req := `{"jsonrpc":"2.0","id":1,"method":"echo","params":[1]}`
			body := req + strings.Repeat(" ", size-len(req))
			r := httptest.NewRequest(http.MethodPost, "/", strings.NewReader(body))
			r.Header.Set("Content-Type", "application/json")
			if !announced {
				r.ContentLength = -1
			}
			w := httptest.NewRecorder()
			s.ServeHTTP(w, r)
			if w.Code != http.StatusOK || !strings.Contains(w.Body.String(), `"result":3`) { // echo answers len(params)
				t.Errorf("a %d-byte body (length announced: %v) on an idle server: %d %s", size, announced, w.Code, w.Body)
			}
			if held := s.memory().held.Load(); held != 0 {
				t.Errorf("after a %d-byte body the budget holds %d bytes", size, held)
			}
		}
	}
}

func TestEntryCostCoversATask(t *testing.T) {
	if n := unsafe.Sizeof(task{}) + unsafe.Sizeof(reqCtx{}); n > entryCost {
		t.Errorf("a batch entry's task and context take %d bytes, entryCost says %d", n, entryCost)
	}
}

// A batch handed off from the reader is charged its requests, as a
// queued batch is, besides its read buffer, and gives them back when it
// ends.
func TestHandedOffBatchChargesItsEntries(t *testing.T) {
	s, release := budgetServer(64 << 20)
	a, served := servePipe(s)
	read := make(chan int)
	go func() {
		n := 0
		sc := bufio.NewScanner(a)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			n++
		}
		read <- n
	}()
	const n = 1000
	var b strings.Builder
	b.WriteByte('[')
	for i := range n - 1 {
		fmt.Fprintf(&b, `{"jsonrpc":"2.0","id":%d,"method":"echo"},`, i)
	}
	b.WriteString(`{"jsonrpc":"2.0","id":"last","method":"block"}]` + "\n")
	if _, err := io.WriteString(a, b.String()); err != nil {
		t.Fatal(err)
	}
	// The batch runs on the reader until "block" holds it up; then
	// reading is handed off.
	want := int64((n - 1) * entryCost)
	waitFor(t, "the handed-off batch to be charged its entries", func() bool { return s.memory().held.Load() >= want })
	close(release)
	waitFor(t, "the charge to be given back", func() bool { return s.memory().held.Load() == 0 })
	a.Close()
	<-served
	if got := <-read; got != 1 {
		t.Errorf("got %d answer lines, want 1", got)
	}
}

func TestServerMemoryBudgetBoundUnderMixedLoad(t *testing.T) {
	// Connections that send long lines, queue requests behind slow
	// handlers and hand their readers off, all at once: every request is
	// answered or shed, and the bytes held never pass the bound that
	// SECURITY.md gives.
	const (
		budget   = 256 << 10
		pending  = 64 << 10
		message  = 128 << 10
		conns    = 8
		requests = 60
	)
	mux := &Mux{}
	mux.HandleFunc("slow", func(ctx context.Context, req *Request) (any, error) {
		time.Sleep(2 * time.Millisecond)
		return len(req.Params), nil
	})
	mux.HandleFunc("echo", func(ctx context.Context, req *Request) (any, error) {
		return len(req.Params), nil
	})
	s := &Server{Options: Options{Handler: mux, MaxInFlight: 2, MaxPendingBytes: pending, MaxMessageSize: message}, MaxMemory: budget}
	var wg sync.WaitGroup
	for c := range conns {
		p := newRawPeer(t, s)
		wg.Add(1)
		go func() {
			defer wg.Done()
			for id := 1; id <= requests; id++ {
				method, size := "echo", 10
				switch (id + c) % 4 {
				case 0:
					size = 100 << 10 // a long line
				case 1:
					method, size = "slow", 10<<10
				case 2:
					method = "slow"
				}
				line := fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":%q,"params":%s}`+"\n", id, method, pad(size))
				if _, err := p.c.Write([]byte(line)); err != nil {
					t.Error(err)
					return
				}
			}
			for id := 1; id <= requests; id++ {
				if r := p.answer(id); r.Error != nil && !isServerFull(r) {
					t.Errorf("conn %d, request %d: %v", c, id, r.Error)
				}
			}
		}()
	}
	wg.Wait()
	mem := s.memory()
	waitFor(t, "the budget to empty", func() bool { return mem.held.Load() == 0 })
	bound := int64(budget + pending + 3*(message+1) + conns*initialBufSize)
	t.Logf("peak %d bytes held, bound %d", mem.peak.Load(), bound)
	if p := mem.peak.Load(); p > bound {
		t.Errorf("peak %d bytes held, over the bound %d", p, bound)
	}
}

func TestServerMemoryBudgetComesBackWhenConnectionsEnd(t *testing.T) {
	s, _ := budgetServer(0)
	mem := s.memory()

	// A peer that goes away in the middle of a long line: its reader's
	// grown buffer must not stay charged.
	a, served := servePipe(s)
	_, _ = a.Write([]byte(`{"jsonrpc":"2.0","id":1,"method":"echo","params":["` + strings.Repeat("x", 300<<10)))
	waitFor(t, "the buffer to be charged", func() bool { return mem.held.Load() > 0 })
	a.Close()
	<-served
	if h := mem.held.Load(); h != 0 {
		t.Errorf("a connection that ended in a long line left %d bytes charged", h)
	}

	// Requests queued behind a blocked handler, dropped by Close.
	p := newRawPeer(t, s)
	p.send(1, "block", pad(10))
	for id := 2; id <= 10; id++ {
		p.send(id, "block", pad(10<<10))
	}
	waitFor(t, "requests to queue", func() bool { return mem.held.Load() > 50<<10 })
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the budget to empty", func() bool { return mem.held.Load() == 0 })
}

func TestMemBudgetGrowthThatFitsShedsNothing(t *testing.T) {
	// A reader that grows its buffer with room to spare must not count
	// as waiting for room, even for an instant: that sheds other
	// connections' requests (it did, once in 3,000 calls of the fault
	// run's latency row, with a 256 MiB budget nearly empty).
	b := newMemBudget(1 << 30)
	lr := &lineReader{}
	var own atomic.Int64
	done := make(chan struct{})
	go func() {
		defer close(done)
		for range 200000 {
			if !b.grow(lr, 1024, &own, func() bool { return false }, nil) {
				t.Error("a growth that fits was refused")
				return
			}
			b.give(1024)
		}
	}()
	refused := 0
	for {
		select {
		case <-done:
			if refused > 0 {
				t.Errorf("%d small takes refused while another reader grew its buffer within the budget", refused)
			}
			return
		default:
		}
		if b.tryTake(1, 0) {
			b.give(1)
		} else {
			refused++
		}
	}
}

// probeReader runs probe before each Read of r.
type probeReader struct {
	r     io.Reader
	probe func()
}

func (p *probeReader) Read(b []byte) (int, error) {
	p.probe()
	return p.r.Read(b)
}

// TestLineReaderChunksCharged checks, before each Read while a long line
// is read in pieces (the reader may wait there as long as its peer
// likes), that the reader holds at most the limit plus one byte, chunks
// and buffer, and that the budget is charged for all of it past the
// first initialBufSize bytes; and that the buffer the line is joined
// into is within the limit too.
func TestLineReaderChunksCharged(t *testing.T) {
	for _, limit := range []int{100 << 10, 128 << 10, 1 << 20, 1<<20 + 5} {
		t.Run(strconv.Itoa(limit), func(t *testing.T) {
			b := newMemBudget(1 << 30)
			var own atomic.Int64
			var lr *lineReader
			probe := func() {
				holds := lr.chunked + len(lr.buf)
				want := max(holds-initialBufSize, 0)
				if holds > lr.max+1 {
					t.Fatalf("holds %d bytes (%d in chunks), over the limit and a byte, %d", holds, lr.chunked, lr.max+1)
				}
				if lr.charged != want || b.held.Load() != int64(want) {
					t.Fatalf("holds %d bytes (%d in chunks): charged %d, the budget holds %d, want %d",
						holds, lr.chunked, lr.charged, b.held.Load(), want)
				}
			}
			line := strings.Repeat("abcdefghijklmnopqrstuvwxyz", limit/26+1)[:limit]
			lr = newLineReader(&probeReader{r: strings.NewReader(line + "\nb\n"), probe: probe}, limit)
			lr.budget = &readBudget{mem: &memAccount{mem: b}, own: &own, stop: func() bool { return false }}
			msg, err := lr.ReadMessage()
			if err != nil || string(msg) != line {
				t.Fatalf("the line: %d bytes, %v", len(msg), err)
			}
			if len(lr.buf) > limit+1 {
				t.Errorf("the line was joined into %d bytes, over the limit and a byte", len(lr.buf))
			}
			if msg, err = lr.ReadMessage(); err != nil || string(msg) != "b" {
				t.Errorf("the next line: %q, %v", msg, err)
			}
		})
	}
}

// TestParkedHandlersCountAgainstTheBudget sends a flood of short requests
// whose handlers each call the peer, which never answers: a handler that
// waits so gives up its slot, so MaxInFlight does not bound them, and
// each keeps a goroutine. The byte budget must count that (parkCost), not
// the short line alone: past it, the requests are refused.
func TestParkedHandlersCountAgainstTheBudget(t *testing.T) {
	var parked atomic.Int32
	mux := &Mux{}
	mux.HandleFunc("hello", func(ctx context.Context, _ *Request) (any, error) {
		parked.Add(1)
		return nil, Peer(ctx).Call(ctx, "whoami", nil, nil)
	})
	const budget, slots = 256 << 10, 4
	s := &Server{Options: Options{Handler: mux, MaxPendingBytes: budget, MaxInFlight: slots}, MaxMemory: -1}
	a, served := servePipe(s)
	var refused atomic.Int32
	read := make(chan struct{})
	go func() {
		defer close(read)
		sc := bufio.NewScanner(a)
		for sc.Scan() {
			if strings.Contains(sc.Text(), `"code":-32090`) {
				refused.Add(1)
			}
		}
	}()
	const n = 2000
	w := bufio.NewWriter(a)
	for i := range n {
		fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%d,"method":"hello"}`+"\n", i)
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "each request to be parked or refused", func() bool { return int(parked.Load()+refused.Load()) == n })
	// Each slot may start a request before the handlers started beside
	// it have parked.
	if p := parked.Load(); p > budget/parkCost+slots+4 {
		t.Errorf("%d handlers parked waiting for the peer under a budget of %d bytes; want at most about %d", p, budget, budget/parkCost+slots)
	}
	a.Close()
	<-served
	<-read
}

// A notification queued behind a running request when the server's
// budget has no room is dropped, as MaxMemory's doc says; with no server
// budget (its advice for a protocol that cannot lose one), the request
// after it sees it.
func TestServerMemoryBudgetNotifications(t *testing.T) {
	for _, max := range []int64{100 << 10, -1} {
		s, release := budgetServer(max)
		var notes atomic.Int64
		mux := s.Handler.(*Mux)
		mux.HandleFunc("note", func(context.Context, *Request) (any, error) { notes.Add(1); return nil, nil })
		mux.HandleFunc("count", func(context.Context, *Request) (any, error) { return notes.Load(), nil })
		dropped := &logWatch{what: "dropped a notification"}
		s.Logger = slog.New(slog.NewTextHandler(dropped, &slog.HandlerOptions{Level: slog.LevelDebug}))
		p := newRawPeer(t, s)
		p.send(1, "block", pad(10))
		waitFor(t, "the blocked request to be handed off", func() bool {
			s.mu.Lock()
			defer s.mu.Unlock()
			for c := range s.conns {
				return c.held.Load() > 0
			}
			return false
		})
		written := make(chan struct{})
		go func() {
			_, _ = fmt.Fprintf(p.c, `{"jsonrpc":"2.0","method":"note","params":%s}`+"\n", pad(60<<10))
			close(written)
		}()
		waitFor(t, "the server to read the notification", func() bool {
			select {
			case <-written:
				return true
			default:
				return false
			}
		})
		if max > 0 {
			waitFor(t, "the notification to be dropped, and logged", dropped.seen.Load)
		}
		close(release)
		p.answer(1)
		if max > 0 {
			waitFor(t, "the budget to empty", func() bool { return s.memory().held.Load() == 0 })
		}
		p.send(2, "count", "[]")
		want := "1"
		if max > 0 {
			want = "0"
		}
		if r := p.answer(2); r.Error != nil || string(r.Result) != want {
			t.Errorf("MaxMemory %d: the request after the notification: %s, %v; want %s", max, r.Result, r.Error, want)
		}
	}
}

// logWatch is a log's writer that notes whether a line holding what was
// written.
type logWatch struct {
	what string
	seen atomic.Bool
}

func (w *logWatch) Write(p []byte) (int, error) {
	if strings.Contains(string(p), w.what) {
		w.seen.Store(true)
	}
	return len(p), nil
}
