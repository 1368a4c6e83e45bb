package faults

// This file holds what the fault runs share: the echo server and its
// bookkeeping, toxiproxy run in this process, the callers of each
// transport, the load that drives them, and the tally of outcomes.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httptrace"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/Shopify/toxiproxy/v2"
	"github.com/rs/zerolog"
	"github.com/stretchr/testify/require"

	"github.com/ndjsonrpc/jsonrpc"
)

// hungMargin is how long past its deadline a call may take to return
// before it counts as hung.
const hungMargin = 3 * time.Second

// stopTimeout bounds every wait for something to stop (a server, a
// proxy, the calls still running), so that a bug fails the run as "hung"
// instead of hanging it.
const stopTimeout = 15 * time.Second

// echo is the params and the result of the method "echo": the server
// returns what it got, so each answer can be checked against its call.
type echo struct {
	ID   string `json:"id"`
	Data string `json:"data"`
}

// payloadRunes is what payloads are made of: JSON's escapes, multi-byte
// UTF-8 (which a slicer may cut between bytes), and characters that
// encoding/json escapes.
var payloadRunes = []rune("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789 \"\\/\n\t\r\x01<>&é✓€𝄞\u2028")

// payload returns the data of call n of a run seeded with seed; the
// server recomputes it from the call's id to check what it received. One
// call in ten carries 16 to 64 KiB, the others 8 to 512 bytes.
func payload(seed uint64, n int) string {
	r := rand.New(rand.NewPCG(seed, uint64(n)))
	size := 8 + r.IntN(505)
	if n%10 == 0 {
		size = 16<<10 + r.IntN(48<<10)
	}
	var b strings.Builder
	b.Grow(size)
	for b.Len() < size {
		b.WriteRune(payloadRunes[r.IntN(len(payloadRunes))])
	}
	return b.String()
}

// callID names call n of a run, so that its payload can be found again.
func callID(n int) string { return fmt.Sprintf("call-%d", n) }

// parseCallID returns the n of callID(n).
func parseCallID(id string) (int, bool) {
	var n int
	_, err := fmt.Sscanf(id, "call-%d", &n)
	return n, err == nil && callID(n) == id
}

// echoServer is the handler of a run: it answers "echo" and records how
// often each call ran and whether its params arrived intact.
type echoServer struct {
	seed  uint64
	mu    sync.Mutex
	runs  map[string]int
	stray int // requests with an id that no call of the run had
	bent  int // requests whose data is not what their call sent
}

func newEchoServer(seed uint64) *echoServer {
	return &echoServer{seed: seed, runs: make(map[string]int)}
}

func (s *echoServer) mux() *jsonrpc.Mux {
	mux := new(jsonrpc.Mux)
	mux.Handle("echo", jsonrpc.Func(func(ctx context.Context, p echo) (echo, error) {
		n, ok := parseCallID(p.ID)
		s.mu.Lock()
		s.runs[p.ID]++
		if !ok {
			s.stray++
		} else if p.Data != payload(s.seed, n) {
			s.bent++
		}
		s.mu.Unlock()
		return p, nil
	}))
	return mux
}

// ranTwice returns the number of calls that ran more than once.
func (s *echoServer) ranTwice() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	twice := 0
	for _, k := range s.runs {
		if k > 1 {
			twice++
		}
	}
	return twice
}

// toxic is one fault, as toxiproxy's API takes it, and what a run under
// it should expect.
type toxic struct {
	name     string         // the row's name in the table
	kind     string         // toxiproxy's type
	attrs    map[string]any // toxiproxy's attributes
	toxicity float64        // the chance that a connection gets it, per direction
	deadline time.Duration  // each call's deadline is this, ±25%
	// passes reports whether data gets through, so that calls must be
	// answered right; closes, whether it ends connections, so that calls
	// must fail and the callers carry on; everyConn, whether it ends every
	// connection, so that right answers must come over connections
	// dialed again.
	passes, closes, everyConn bool
	// shortSpan, if set, is the short run's span for this toxic, in
	// place of the default; tcpConns, the number of Conns the TCP
	// callers spread over, in place of the default tcpConns (with
	// callers/tcpConns workers on each).
	shortSpan time.Duration
	tcpConns  int
}

// startProxy runs a toxiproxy proxy in this process from a loopback port
// to upstream, with tx on both directions (none if tx.kind is empty), and
// stops it when t ends.
func startProxy(t *testing.T, name, upstream string, tx toxic) string {
	t.Helper()
	srv := toxiproxy.NewServer(toxiproxy.NewMetricsContainer(nil), zerolog.Nop())
	p := toxiproxy.NewProxy(srv, name, "127.0.0.1:0", upstream)
	require.NoError(t, p.Start())
	for _, stream := range []string{"upstream", "downstream"} {
		if tx.kind == "" {
			break
		}
		spec, err := json.Marshal(map[string]any{
			"name":       tx.kind + "_" + stream,
			"type":       tx.kind,
			"stream":     stream,
			"toxicity":   tx.toxicity,
			"attributes": tx.attrs,
		})
		require.NoError(t, err)
		_, err = p.Toxics.AddToxicJson(bytes.NewReader(spec))
		require.NoError(t, err)
	}
	t.Cleanup(func() {
		stopped := make(chan struct{})
		go func() { p.Stop(); close(stopped) }()
		select {
		case <-stopped:
		case <-time.After(stopTimeout):
			t.Errorf("toxiproxy did not stop within %v (hung)", stopTimeout)
		}
	})
	return p.Listen
}

// caller is one transport's way of calling through the proxy. call calls
// "echo" on behalf of worker w; it returns the error and whether the call
// went over a connection dialed after one had been dropped: over TCP, one
// that the test dialed again; over HTTP, one that net/http dialed (it
// dials again by itself).
type caller interface {
	call(ctx context.Context, w int, p echo, result *echo) (err error, redialed bool)
	dials() int
	// abandoned counts the connections that ended because their peer
	// went silent (Options.SilenceTimeout).
	abandoned() int
	close()
}

// tcpCaller spreads its workers over a few Dial'd Conns. When a Conn
// ends, the next worker to see it dials again. A Conn behind a black hole
// ends by itself, once its calls have waited silenceTimeout with no byte
// from the proxy (Options.SilenceTimeout).
type tcpCaller struct {
	addr           string
	perConn        int
	slots          []*tcpSlot
	dialed         atomic.Int64
	abandonedConns atomic.Int64
}

// silenceTimeout is the Conns' SilenceTimeout: two deadlines of the
// black-hole run, and well over any wait for a byte under the toxics that
// let data through (64 KB/s sends a message of the run in a few ms).
const silenceTimeout = 2 * time.Second

// tcpOptions are the options of the caller's Conns.
var tcpOptions = &jsonrpc.Options{SilenceTimeout: silenceTimeout}

type tcpSlot struct {
	mu     sync.Mutex
	c      *jsonrpc.Conn
	gen    int  // how many times this slot has dialed again
	silent bool // c ended because its peer went silent (counted once)
}

func newTCPCaller(t *testing.T, addr string, conns, perConn int) *tcpCaller {
	t.Helper()
	tc := &tcpCaller{addr: addr, perConn: perConn}
	for range conns {
		c, err := jsonrpc.Dial(t.Context(), "tcp", addr, tcpOptions)
		require.NoError(t, err)
		tc.slots = append(tc.slots, &tcpSlot{c: c})
	}
	return tc
}

// conn returns the slot's Conn, dialing again if the one it holds has
// ended.
func (tc *tcpCaller) conn(s *tcpSlot) (*jsonrpc.Conn, int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	select {
	case <-s.c.Done():
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		c, err := jsonrpc.Dial(ctx, "tcp", tc.addr, tcpOptions)
		if err != nil {
			return nil, s.gen, err
		}
		s.c = c
		s.gen++
		s.silent = false
		tc.dialed.Add(1)
	default:
	}
	return s.c, s.gen, nil
}

func (tc *tcpCaller) call(ctx context.Context, w int, p echo, result *echo) (error, bool) {
	s := tc.slots[w/tc.perConn]
	c, gen, err := tc.conn(s)
	if err != nil {
		return err, false
	}
	err = c.Call(ctx, "echo", p, result)
	if classify(err) == closed && strings.Contains(err.Error(), "SilenceTimeout") {
		s.mu.Lock()
		if s.c == c && !s.silent {
			s.silent = true
			tc.abandonedConns.Add(1)
		}
		s.mu.Unlock()
	}
	return err, gen > 0
}

// dials counts the connections dialed, the first ones included.
func (tc *tcpCaller) dials() int { return len(tc.slots) + int(tc.dialed.Load()) }

func (tc *tcpCaller) abandoned() int { return int(tc.abandonedConns.Load()) }

func (tc *tcpCaller) close() {
	for _, s := range tc.slots {
		s.mu.Lock()
		_ = s.c.Close()
		s.mu.Unlock()
	}
}

// httpCaller shares one HTTPClient, keeping connections alive, among its
// workers; net/http dials again when a connection fails.
type httpCaller struct {
	client  *jsonrpc.HTTPClient
	tr      *http.Transport
	dialed  atomic.Int64
	dropped atomic.Int64 // connections that the other end ended
}

func newHTTPCaller(addr string, workers int) *httpCaller {
	hc := &httpCaller{}
	dialer := new(net.Dialer)
	hc.tr = &http.Transport{
		DialContext: func(ctx context.Context, network, a string) (net.Conn, error) {
			nc, err := dialer.DialContext(ctx, network, a)
			if err != nil {
				return nil, err
			}
			hc.dialed.Add(1)
			return &watchedConn{Conn: nc, dropped: &hc.dropped, afterDrop: hc.dropped.Load() > 0}, nil
		},
		MaxIdleConns:        workers,
		MaxIdleConnsPerHost: workers,
		IdleConnTimeout:     30 * time.Second,
	}
	hc.client = &jsonrpc.HTTPClient{URL: "http://" + addr + "/", HTTP: &http.Client{Transport: hc.tr}}
	return hc
}

func (hc *httpCaller) call(ctx context.Context, _ int, p echo, result *echo) (error, bool) {
	var redialed atomic.Bool
	ctx = httptrace.WithClientTrace(ctx, &httptrace.ClientTrace{
		GotConn: func(info httptrace.GotConnInfo) {
			if wc, ok := info.Conn.(*watchedConn); ok {
				redialed.Store(wc.afterDrop)
			}
		},
	})
	err := hc.client.Call(ctx, "echo", p, result)
	return err, redialed.Load()
}

// dials counts the connections that net/http opened.
func (hc *httpCaller) dials() int { return int(hc.dialed.Load()) }

// abandoned is zero: net/http closes a connection whose request was
// cancelled by itself.
func (hc *httpCaller) abandoned() int { return 0 }

func (hc *httpCaller) close() { hc.tr.CloseIdleConnections() }

// watchedConn counts, in dropped, a connection whose reading ends other
// than by its own Close: the proxy ended it.
type watchedConn struct {
	net.Conn
	dropped   *atomic.Int64
	afterDrop bool // dialed once a connection had been dropped
	closing   atomic.Bool
	once      sync.Once
}

func (wc *watchedConn) Read(b []byte) (int, error) {
	n, err := wc.Conn.Read(b)
	if err != nil && !wc.closing.Load() {
		wc.once.Do(func() { wc.dropped.Add(1) })
	}
	return n, err
}

func (wc *watchedConn) Close() error {
	wc.closing.Store(true)
	return wc.Conn.Close()
}

// class is how a call ended.
type class int

const (
	right     class = iota // answered, and the answer is its own
	wrong                  // answered with what another call sent, or bent
	answerErr              // answered with a *jsonrpc.Error
	closed                 // failed with an error wrapping jsonrpc.ErrClosed
	transport              // failed with another error of the transport
	deadline               // its context's deadline passed
	hung                   // not returned within its deadline and hungMargin
)

// tally counts the outcomes of one run.
type tally struct {
	mu          sync.Mutex
	calls       int
	by          [hung + 1]int
	dup         int // answers that an earlier call already got
	rightRedial int // right answers over a connection dialed again
	rightAfter  int // right answers to calls made after a call failed on its connection
	latencies   []time.Duration
	seen        map[string]bool
	errs        map[string]int // failures by error type and message
	dials       int
	abandoned   int
	deadline    time.Duration // the calls' deadline, ±25%
	elapsed     time.Duration
	ranTwice    int
	stray, bent int
}

func (ty *tally) add(c class, d time.Duration, redialed, after bool) {
	ty.mu.Lock()
	defer ty.mu.Unlock()
	ty.calls++
	ty.by[c]++
	if c == right {
		ty.latencies = append(ty.latencies, d)
		if redialed {
			ty.rightRedial++
		}
		if after {
			ty.rightAfter++
		}
	}
}

// loopbackPort matches the addresses in error messages, which differ
// from connection to connection.
var loopbackPort = regexp.MustCompile(`127\.0\.0\.1:[0-9]+`)

// note counts err by its type and message, addresses left out.
func (ty *tally) note(err error) {
	key := loopbackPort.ReplaceAllString(fmt.Sprintf("%T: %v", err, err), "127.0.0.1:…")
	if len(key) > 160 {
		key = key[:160] + "…"
	}
	ty.mu.Lock()
	ty.errs[key]++
	ty.mu.Unlock()
}

// answered records the id of an answer and reports whether it came
// before.
func (ty *tally) answered(id string) (dup bool) {
	ty.mu.Lock()
	defer ty.mu.Unlock()
	if ty.seen[id] {
		ty.dup++
		return true
	}
	ty.seen[id] = true
	return false
}

// percentile returns the q-th quantile of the latencies of right answers.
func (ty *tally) percentile(q float64) time.Duration {
	if len(ty.latencies) == 0 {
		return 0
	}
	l := slices.Clone(ty.latencies)
	slices.Sort(l)
	return l[min(len(l)-1, int(q*float64(len(l))))]
}

// classify says how a call ended by its error: right stands for any
// answer.
func classify(err error) class {
	var rpcErr *jsonrpc.Error
	switch {
	case err == nil:
		return right
	case errors.As(err, &rpcErr):
		return answerErr
	case errors.Is(err, jsonrpc.ErrClosed):
		return closed
	case errors.Is(err, context.DeadlineExceeded):
		return deadline
	default:
		return transport
	}
}

// load is what drives a run: calls calls of "echo" over workers workers,
// started in waves of workers calls at once, the waves spread evenly over
// at least span, so that a run lasts past the first faults and shows
// whether the callers carry on.
type load struct {
	calls, workers int
	span           time.Duration
	seed           uint64
}

// drive makes ld.calls calls through c, each with a deadline of its own,
// and tallies how each ended. A call that does not return in time is
// counted as hung and left behind; drive waits for those at the end, up
// to stopTimeout after c is closed.
func drive(c caller, tx toxic, ld load) *tally {
	ty := &tally{seen: make(map[string]bool), errs: make(map[string]int), deadline: tx.deadline}
	var next atomic.Int64
	var failed atomic.Bool // a call has failed on its connection
	waves := (ld.calls + ld.workers - 1) / ld.workers
	var workers, stragglers sync.WaitGroup
	start := time.Now()
	for w := range ld.workers {
		workers.Go(func() {
			r := rand.New(rand.NewPCG(ld.seed, uint64(1<<32+w)))
			for {
				n := int(next.Add(1)) - 1
				if n >= ld.calls {
					return
				}
				time.Sleep(time.Until(start.Add(ld.span * time.Duration(n/ld.workers) / time.Duration(waves))))
				p := echo{ID: callID(n), Data: payload(ld.seed, n)}
				after := failed.Load()
				d := time.Duration(float64(tx.deadline) * (0.75 + 0.5*r.Float64()))
				type outcome struct {
					err      error
					got      echo
					redialed bool
				}
				done := make(chan outcome, 1)
				began := time.Now()
				stragglers.Go(func() {
					ctx, cancel := context.WithTimeout(context.Background(), d)
					defer cancel()
					var o outcome
					o.err, o.redialed = c.call(ctx, w, p, &o.got)
					done <- o
				})
				timer := time.NewTimer(d + hungMargin)
				select {
				case o := <-done:
					timer.Stop()
					took := time.Since(began)
					if o.err != nil {
						ty.note(o.err)
						c := classify(o.err)
						if c == closed || c == transport {
							failed.Store(true)
						}
						ty.add(c, took, o.redialed, after)
						continue
					}
					dup := ty.answered(o.got.ID)
					if o.got != p || dup {
						ty.add(wrong, took, o.redialed, after)
						continue
					}
					ty.add(right, took, o.redialed, after)
				case <-timer.C:
					ty.add(hung, 0, false, after)
				}
			}
		})
	}
	workers.Wait()
	ty.elapsed = time.Since(start)
	ty.dials = c.dials()
	ty.abandoned = c.abandoned()
	c.close()
	if !waitFor(&stragglers, stopTimeout) {
		ty.mu.Lock()
		ty.errs["calls still running after the callers closed (hung)"]++
		ty.by[hung]++
		ty.mu.Unlock()
	}
	return ty
}

// waitFor waits for wg, up to d, and reports whether it ended.
func waitFor(wg *sync.WaitGroup, d time.Duration) bool {
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
		return true
	case <-time.After(d):
		return false
	}
}

// libraryGoroutines returns the stacks of the goroutines running code of
// package jsonrpc.
func libraryGoroutines() []string {
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			buf = buf[:n]
			break
		}
		buf = make([]byte, 2*len(buf))
	}
	var ours []string
	for _, g := range strings.Split(string(buf), "\n\n") {
		if strings.Contains(g, "github.com/ndjsonrpc/jsonrpc.") {
			ours = append(ours, g)
		}
	}
	return ours
}
