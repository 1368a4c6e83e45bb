// Package faults runs package jsonrpc's clients and servers through
// Shopify's toxiproxy, in this process, over TCP sockets and HTTP: latency
// with jitter, a slow link, a link that cuts writes into small pieces, and
// links that end connections after some bytes, reset them, or black-hole
// them. Whatever the fault, every call must end within its deadline,
// answered with its own answer or failed with an error that says why:
// never a wrong answer, never one answer twice.
//
// go test runs a short version; -faults.long runs the full one, and
// -faults.report writes its figures as Markdown (faults/run.sh writes
// them into bench/FAULTS.md).
package faults

import (
	"cmp"
	"context"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ndjsonrpc/jsonrpc"
)

var (
	long   = flag.Bool("faults.long", false, "run the full fault run (several minutes) instead of the short one")
	report = flag.String("faults.report", "", "write the figures of the run as Markdown to this file")
)

// The toxics, each on both directions of every connection. reset_peer and
// timeout let no byte through where they apply, so they apply to half of
// the connections in each direction: a quarter of the connections work,
// and the callers find them by dialing again. The chance that not one of
// n connections works is 0.75ⁿ: 10% for 8, which is why the black hole,
// whose Conns end only after SilenceTimeout, runs over more Conns and
// long enough to dial again (see its entry).
var toxics = []toxic{
	{
		name: "none (the proxy alone)", deadline: 2 * time.Second, passes: true,
	},
	{
		name: "latency 50 ms ± 20 ms", kind: "latency",
		attrs:    map[string]any{"latency": 50, "jitter": 20},
		toxicity: 1, deadline: 2 * time.Second, passes: true,
	},
	{
		name: "bandwidth 64 KB/s", kind: "bandwidth",
		attrs:    map[string]any{"rate": 64},
		toxicity: 1, deadline: 5 * time.Second, passes: true,
	},
	{
		name: "slicer 1-63 B pieces, 50 µs apart", kind: "slicer",
		attrs:    map[string]any{"average_size": 32, "size_variation": 31, "delay": 50},
		toxicity: 1, deadline: 5 * time.Second, passes: true,
	},
	{
		name: "limit_data 32 KiB, then close", kind: "limit_data",
		attrs:    map[string]any{"bytes": 32 << 10},
		toxicity: 1, deadline: 2 * time.Second, passes: true, closes: true, everyConn: true,
	},
	{
		name: "reset_peer 100 ms (half)", kind: "reset_peer",
		attrs:    map[string]any{"timeout": 100},
		toxicity: 0.5, deadline: 2 * time.Second, passes: true, closes: true,
	},
	{
		// toxiproxy's timeout starts its 1 s again with each piece of
		// data it swallows: it closes a connection once the caller has
		// sent nothing for 1 s, which a caller that goes on calling never
		// does; the Conn ends by itself once its calls have waited
		// SilenceTimeout for a byte (see tcpCaller). So the first call
		// to fail on its connection fails after 2 to 2.5 s, and the
		// short run lasts 5 s, that calls made after it may be answered
		// (over a Conn that works, or one dialed again); over 24 Conns,
		// one for each worker, since each works with a chance of a
		// quarter: the chance that none of them and none of those
		// dialed again in place of the others works is about 0.75⁴²
		// (6e-6), where 8 Conns over 2 s failed a few runs in a hundred.
		name: "timeout: black hole, closed after 1 s without data (half)", kind: "timeout",
		attrs:    map[string]any{"timeout": 1000},
		toxicity: 0.5, deadline: time.Second, passes: true, closes: true,
		shortSpan: 5 * time.Second, tcpConns: callers,
	},
}

// The callers of each transport: TCP spreads them over tcpConns Dial'd
// Conns, HTTP shares one HTTPClient among them.
const (
	tcpConns   = 8
	perTCPConn = 3
	callers    = tcpConns * perTCPConn
)

// result is one row of the report.
type result struct {
	transport, toxic string
	ty               *tally
}

func TestFaults(t *testing.T) {
	calls, span := 240, 2*time.Second
	if *long {
		calls, span = 3000, 20*time.Second
	}
	var (
		mu      sync.Mutex
		results []result
	)
	t.Run("group", func(t *testing.T) {
		for i, tx := range toxics {
			for _, transport := range []string{"tcp", "http"} {
				t.Run(transport+"/"+cmp.Or(tx.kind, "none"), func(t *testing.T) {
					t.Parallel()
					seed := uint64(time.Now().UnixNano())
					t.Logf("seed %d", seed)
					ld := load{calls: calls, workers: callers, span: span, seed: seed}
					if !*long && tx.shortSpan > 0 {
						ld.span = tx.shortSpan
					}
					ty := runFault(t, transport, tx, ld)
					checkFault(t, tx, ld, ty)
					mu.Lock()
					results = append(results, result{transport, toxics[i].name, ty})
					mu.Unlock()
				})
			}
		}
	})

	// Every call has returned and every server has stopped: no goroutine
	// of the library may be left.
	var left []string
	for deadline := time.Now().Add(stopTimeout); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if left = libraryGoroutines(); len(left) == 0 {
			break
		}
	}
	assert.Empty(t, left, "goroutines of package jsonrpc still running %v after every connection was closed (hung)", stopTimeout)

	slices.SortFunc(results, func(a, b result) int {
		return rowIndex(a) - rowIndex(b)
	})
	md := markdown(results)
	t.Log("\n" + md)
	if *report != "" {
		require.NoError(t, os.WriteFile(*report, []byte(md), 0o644))
	}
}

// rowIndex orders the rows by toxic, then TCP before HTTP.
func rowIndex(r result) int {
	i := slices.IndexFunc(toxics, func(tx toxic) bool { return tx.name == r.toxic })
	if r.transport == "http" {
		return 2*i + 1
	}
	return 2 * i
}

// runFault serves echo on transport behind a toxiproxy proxy with tx,
// drives ld through it, stops everything, and returns the tally.
func runFault(t *testing.T, transport string, tx toxic, ld load) *tally {
	es := newEchoServer(ld.seed)
	srv := &jsonrpc.Server{Options: jsonrpc.Options{Handler: es.mux()}}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)

	served := make(chan error, 1)
	var stopServer func()
	switch transport {
	case "tcp":
		ctx, cancel := context.WithCancel(context.Background())
		go func() { served <- srv.ServeListener(ctx, l) }()
		stopServer = cancel
	case "http":
		hs := &http.Server{Handler: srv}
		go func() { served <- hs.Serve(l) }()
		stopServer = func() {
			_ = hs.Close()
			_ = srv.Close()
		}
	}

	addr := startProxy(t, t.Name(), l.Addr().String(), tx)
	var c caller
	switch transport {
	case "tcp":
		conns := cmp.Or(tx.tcpConns, tcpConns)
		c = newTCPCaller(t, addr, conns, ld.workers/conns)
	case "http":
		c = newHTTPCaller(addr, ld.workers)
	}
	ty := drive(c, tx, ld)

	stopServer()
	select {
	case err := <-served:
		if transport == "tcp" {
			assert.ErrorIs(t, err, context.Canceled, "ServeListener")
		} else {
			assert.ErrorIs(t, err, http.ErrServerClosed, "http.Server.Serve")
		}
	case <-time.After(stopTimeout):
		t.Errorf("the server did not stop within %v (hung)", stopTimeout)
	}
	ty.ranTwice = es.ranTwice()
	es.mu.Lock()
	ty.stray, ty.bent = es.stray, es.bent
	es.mu.Unlock()
	return ty
}

// checkFault asserts what must hold whatever the fault.
func checkFault(t *testing.T, tx toxic, ld load, ty *tally) {
	t.Logf("%d calls in %v: %d right, %d wrong, %d duplicated, %d hung, %d *Error, %d closed, %d transport, %d deadline; %d connections dialed, %d ended by SilenceTimeout; right: %d after a failed call, %d over a connection dialed after one was dropped",
		ty.calls, ty.elapsed.Round(time.Millisecond), ty.by[right], ty.by[wrong], ty.dup, ty.by[hung], ty.by[answerErr], ty.by[closed], ty.by[transport], ty.by[deadline], ty.dials, ty.abandoned, ty.rightAfter, ty.rightRedial)
	for _, e := range sortedErrors(ty.errs) {
		t.Logf("  %6d × %s", ty.errs[e], e)
	}

	assert.Equal(t, ld.calls, ty.calls, "calls accounted for")
	assert.Zero(t, ty.by[wrong], "wrong answers: answered with what another call sent, or bent")
	assert.Zero(t, ty.dup, "answers that an earlier call already got")
	assert.Zero(t, ty.by[hung], "calls hung: not returned within their deadline and %v", hungMargin)
	assert.Zero(t, ty.by[answerErr], "calls answered with a *jsonrpc.Error: every call is valid")
	assert.Zero(t, ty.ranTwice, "calls that the server ran twice: nothing retries a call")
	assert.Zero(t, ty.stray, "requests the server got with an id that no call had")
	assert.Zero(t, ty.bent, "requests whose data the server got bent")
	if tx.passes {
		assert.Positive(t, ty.by[right], "right answers: the toxic lets data through, so calls must get through")
	}
	if !tx.closes {
		assert.Zero(t, ty.by[closed]+ty.by[transport], "calls failed on their connection, though the toxic ends none")
	} else {
		assert.Positive(t, ty.by[closed]+ty.by[transport], "calls failed on their connection: the toxic ends connections with calls in flight")
		assert.Positive(t, ty.rightAfter, "right answers to calls made after a call failed on its connection: the callers must carry on")
	}
	if tx.everyConn {
		assert.Positive(t, ty.rightRedial, "right answers over connections dialed after one was dropped")
	}
}

// sortedErrors returns the keys of errs, most frequent first.
func sortedErrors(errs map[string]int) []string {
	keys := make([]string, 0, len(errs))
	for k := range errs {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b string) int {
		if errs[a] != errs[b] {
			return errs[b] - errs[a]
		}
		return strings.Compare(a, b)
	})
	return keys
}

// markdown returns the report: a table of the runs' figures, then what
// the failed calls got, run by run.
func markdown(results []result) string {
	var b strings.Builder
	b.WriteString("| transport | toxic | calls | right | wrong | duplicated | hung | *Error | closed | transport error | deadline (±25%) | connections (ended by SilenceTimeout) | right after a failed call | right over a redialed connection | p50 right | p99 right | run took |\n")
	b.WriteString("|---|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|\n")
	for _, r := range results {
		ty := r.ty
		conns := fmt.Sprint(ty.dials)
		if r.transport == "tcp" {
			conns += fmt.Sprintf(" (%d)", ty.abandoned)
		}
		fmt.Fprintf(&b, "| %s | %s | %d | %d | %d | %d | %d | %d | %d | %d | %d (%v) | %s | %d | %d | %s | %s | %s |\n",
			strings.ToUpper(r.transport), r.toxic, ty.calls, ty.by[right], ty.by[wrong], ty.dup, ty.by[hung],
			ty.by[answerErr], ty.by[closed], ty.by[transport], ty.by[deadline], ty.deadline, conns, ty.rightAfter, ty.rightRedial,
			ms(ty.percentile(0.50)), ms(ty.percentile(0.99)), ty.elapsed.Round(100*time.Millisecond))
	}
	b.WriteString("\nThe errors of the failed calls, by type and message (at most five per run):\n\n")
	for _, r := range results {
		keys := sortedErrors(r.ty.errs)
		if len(keys) == 0 {
			continue
		}
		fmt.Fprintf(&b, "- %s, %s:\n", strings.ToUpper(r.transport), r.toxic)
		for _, k := range keys[:min(5, len(keys))] {
			fmt.Fprintf(&b, "  - %d × `%s`\n", r.ty.errs[k], strings.ReplaceAll(k, "`", "'"))
		}
	}
	return b.String()
}

func ms(d time.Duration) string {
	return fmt.Sprintf("%.0f ms", float64(d)/float64(time.Millisecond))
}
