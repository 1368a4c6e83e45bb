package main

// This file holds the rolling-restart run (-control DIR): the callers go
// on calling while run.sh restarts every backend in turn, and what they saw
// is checked against what the backends say they ran.
//
// The loadgen and run.sh meet through files in DIR:
//
//	calling   written by the loadgen once every caller has had a call answered
//	stop      written by run.sh once the restarts are done: the callers stop
//	stopped   written by the loadgen once no call is in flight any more
//	counts    written by run.sh once it has stopped every backend process
//	          that served the run: one line per process, "NAME LOGFILE",
//	          where LOGFILE holds the line of cmd/jsonrpc-demo -count
//
// The calls take the methods of -methods in turn (subtract and sum, whose
// results are checked alike), and -idempotent names those declared safe
// to repeat. The run fails unless
//   - no call of an idempotent method failed;
//   - every failed call is classified: "not run" (jsonrpc.MayHaveRun
//     false; of those, the "not run" answers match errors.Is ErrNotRun,
//     an HTTP 503 too) or "may have run", none of them a wrong answer or a
//     call that waited out its deadline;
//   - for each method, the backends ran at least as many calls as were
//     answered, and for a method not declared idempotent, at most as many
//     as were answered plus those that may have run (a call answered "not
//     run" never ran; one that may have run did or did not);
//   - every backend process that was running at the start ran calls of
//     the run before it was restarted.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ndjsonrpc/jsonrpc"
)

// method returns the method of call i.
func (c *config) method(i int64) string {
	if len(c.methods) == 0 {
		return "subtract"
	}
	return c.methods[i%int64(len(c.methods))]
}

// callMethod makes call i of method, subtract or sum, on c and checks its
// result: both give want(i).
func callMethod(ctx context.Context, c jsonrpc.Caller, method string, i int64) error {
	var p any = params(i)
	if method == "sum" {
		p = []int64{1_000_000 + 7*i, -3 * i}
	}
	var got int64
	err := c.Call(ctx, method, p, &got)
	if err == nil && got != want(i) {
		err = fmt.Errorf("%w: %s #%d gave %d, want %d", errCheck, method, i, got, want(i))
	}
	return err
}

// redialCaller calls through a jsonrpc.Redialer whose Dial goes through
// the balancer, and knows the backend of its latest connection.
type redialCaller struct {
	cfg     *config
	r       *jsonrpc.Redialer
	backend atomic.Pointer[string]
	dials   atomic.Int64
}

func newRedialCaller(cfg *config) *redialCaller {
	c := &redialCaller{cfg: cfg}
	c.r = &jsonrpc.Redialer{
		Dial: func(ctx context.Context) (*jsonrpc.Conn, error) {
			ctx, cancel := context.WithTimeout(ctx, cfg.callTimeout)
			defer cancel()
			return jsonrpc.Dial(ctx, "tcp", cfg.addr, nil)
		},
		// Each new connection asks its backend's name before any call
		// goes through it: a connection the balancer accepted but could
		// not take to a backend fails here, and is dialled again.
		OnConnect: func(ctx context.Context, conn *jsonrpc.Conn) error {
			ctx, cancel := context.WithTimeout(ctx, cfg.callTimeout)
			defer cancel()
			var name string
			if err := conn.Call(ctx, "backend", nil, &name); err != nil {
				return err
			}
			c.backend.Store(&name)
			c.dials.Add(1)
			return nil
		},
		// The balancer is always there: its dials fail only while no
		// backend is up, so the pauses are short.
		MinBackoff: 10 * time.Millisecond,
		MaxBackoff: 500 * time.Millisecond,
	}
	if len(cfg.idempotent) > 0 {
		c.r.Retry = func(method string) bool { return slices.Contains(cfg.idempotent, method) }
	}
	return c
}

// call makes call i and reports the backend of the connection it went
// through, as far as the caller knows.
func (c *redialCaller) call(ctx context.Context, i int64) (string, error) {
	err := callMethod(ctx, c.r, c.cfg.method(i), i)
	backend := ""
	if b := c.backend.Load(); b != nil {
		backend = *b
	}
	return backend, err
}

func (c *redialCaller) close() { _ = c.r.Close() }

// waitFile waits until dir/name exists, or ctx ends.
func waitFile(ctx context.Context, dir, name string) error {
	t := time.NewTicker(10 * time.Millisecond)
	defer t.Stop()
	for {
		if _, err := os.Stat(filepath.Join(dir, name)); err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for %s: %w", name, ctx.Err())
		case <-t.C:
		}
	}
}

func touch(dir, name string) error {
	return os.WriteFile(filepath.Join(dir, name), nil, 0o644)
}

func runRolling(cfg *config) error {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	hc, err := startRun(ctx, cfg)
	if err != nil {
		return err
	}
	if hc != nil && cfg.reconnect {
		// The HTTPClient's own retries: what surely did not run (a 503
		// of a stopping backend or of the balancer, a connection
		// refused) is sent again, and what may have run only for the
		// idempotent methods, as the Redialer does over TCP; pauses
		// of 2-4 ms doubling to 100 ms (a 503's Retry-After of 1 s is
		// longer, so it is not waited).
		hc.Retry = func(method string) bool { return slices.Contains(cfg.idempotent, method) }
		hc.MinBackoff, hc.MaxBackoff = 4*time.Millisecond, 100*time.Millisecond
	}
	callers := make([]caller, cfg.callers)
	for k := range callers {
		switch {
		case cfg.mode == "http":
			callers[k] = &httpCaller{cfg: cfg, hc: hc}
		case cfg.reconnect:
			callers[k] = newRedialCaller(cfg)
		default:
			tc, err := dialCaller(ctx, cfg)
			if err != nil {
				return fmt.Errorf("caller %d: %w", k, err)
			}
			callers[k] = tc
		}
	}
	closed := false
	closeAll := func() {
		if !closed {
			closed = true
			for _, c := range callers {
				c.close()
			}
		}
	}
	defer closeAll()

	runCtx, runCancel := context.WithTimeout(ctx, cfg.maxTime)
	defer runCancel()
	var (
		next      atomic.Int64
		stopping  atomic.Bool
		answered  atomic.Int64 // callers with a call answered
		callingOK = make(chan struct{})
		once      sync.Once
	)
	go func() {
		if waitFile(runCtx, cfg.control, "stop") == nil {
			stopping.Store(true)
		}
	}()
	samples := make([][]sample, cfg.callers)
	start := time.Now()
	var wg sync.WaitGroup
	for k, c := range callers {
		wg.Go(func() {
			var own []sample
			first := true
			for !stopping.Load() && runCtx.Err() == nil {
				i := next.Add(1) - 1
				if tc, ok := c.(*tcpCaller); ok && tc.c == nil {
					if err := tc.connect(runCtx); err != nil {
						own = append(own, sample{i: i, method: cfg.method(i), start: time.Since(start), kind: kindConn, err: err, notRun: true})
						break
					}
				}
				cctx, ccancel := context.WithTimeout(runCtx, cfg.callTimeout)
				t0 := time.Now()
				backend, err := c.call(cctx, i)
				lat := time.Since(t0)
				ccancel()
				s := sample{i: i, method: cfg.method(i), start: t0.Sub(start), latency: lat, backend: backend}
				if err != nil {
					s.kind, s.err = classify(err), err
					s.notRun, s.dropped = !jsonrpc.MayHaveRun(err), droppedSilently(err)
				} else if first {
					first = false
					if answered.Add(1) == int64(cfg.callers) {
						once.Do(func() { close(callingOK) })
					}
				}
				own = append(own, s)
			}
			samples[k] = own
		})
	}
	finished := make(chan struct{})
	go func() { wg.Wait(); close(finished) }()
	select {
	case <-callingOK:
		if err := touch(cfg.control, "calling"); err != nil {
			return err
		}
	case <-finished:
	}
	select {
	case <-finished:
	case <-time.After(cfg.maxTime + 2*cfg.callTimeout + time.Second):
		return fmt.Errorf("HANG: callers still running %v after the start", time.Since(start).Round(time.Millisecond))
	}
	wall := time.Since(start)
	timedOut := !stopping.Load()
	var dials int64
	for _, c := range callers {
		if rc, ok := c.(*redialCaller); ok {
			dials += rc.dials.Load()
		}
	}
	again := 0
	for _, c := range callers {
		if h, ok := c.(*httpCaller); ok {
			again += h.again
		}
	}
	closeAll()
	if err := touch(cfg.control, "stopped"); err != nil {
		return err
	}

	cfg.calls = 0
	for _, own := range samples {
		cfg.calls += len(own)
	}
	rep := report(cfg, samples, callers, wall, timedOut) // timedOut: no dir/stop within -max-time
	cctx, ccancel := context.WithTimeout(ctx, 60*time.Second)
	defer ccancel()
	var counts []processCount
	err = waitFile(cctx, cfg.control, "counts")
	if err == nil {
		counts, err = readCounts(filepath.Join(cfg.control, "counts"))
	}
	if err != nil {
		rep.fail("the backends' counts: %v", err)
	}
	roll := checkRolling(cfg, rep, samples, counts)
	if cfg.mode == "tcp" && cfg.reconnect {
		rep.dials = int(dials) // connections that named their backend
	}
	if cfg.mode == "http" && cfg.reconnect {
		rep.lines = append(rep.lines, fmt.Sprintf("retry: %d requests sent again by the HTTPClient's retries", again))
		roll.again = strconv.Itoa(again)
	}
	rep.print(cfg)
	if cfg.mdFile != "" {
		if err := roll.appendRow(cfg, rep); err != nil {
			return err
		}
	}
	if len(rep.failures) > 0 {
		return fmt.Errorf("%d check(s) failed: %s", len(rep.failures), strings.Join(rep.failures, "; "))
	}
	return nil
}

// A processCount is what one backend process said it ran.
type processCount struct {
	name, log string
	ran       map[string]int // per method
}

// readCounts reads the counts file that run.sh writes, and the -count
// line of each process's log.
func readCounts(file string) ([]processCount, error) {
	data, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	var out []processCount
	for line := range strings.Lines(string(data)) {
		name, log, ok := strings.Cut(strings.TrimSpace(line), " ")
		if !ok {
			continue
		}
		pc := processCount{name: name, log: filepath.Base(log), ran: map[string]int{}}
		text, err := os.ReadFile(log)
		if err != nil {
			return nil, err
		}
		var found []string
		for l := range strings.Lines(string(text)) {
			if rest, ok := strings.CutPrefix(strings.TrimSpace(l), "jsonrpc-demo: ran "); ok {
				found = append(found, rest)
			}
		}
		if len(found) != 1 {
			return nil, fmt.Errorf("%s: want one line \"jsonrpc-demo: ran ...\", found %d: did it exit cleanly?", pc.log, len(found))
		}
		for f := range strings.FieldsSeq(found[0]) {
			if f == "nothing" {
				continue
			}
			m, v, ok := strings.Cut(f, "=")
			n, err := strconv.Atoi(v)
			if !ok || err != nil {
				return nil, fmt.Errorf("%s: bad count %q", pc.log, f)
			}
			pc.ran[m] = n
		}
		out = append(out, pc)
	}
	if len(out) == 0 {
		return nil, errors.New("no process listed")
	}
	return out, nil
}

// A rollRow is what the rolling-restart table shows of a run.
type rollRow struct {
	perMethod []string // per method: calls, failed, not run / may have run, ran
	again     string
}

// checkRolling makes the checks of a rolling-restart run (see the top of
// this file) and adds their lines to s.
func checkRolling(cfg *config, s *summary, samples [][]sample, counts []processCount) rollRow {
	type tally struct{ calls, ok, notRun, notRunAnswer, mayHaveRun, unclassified int }
	by := map[string]*tally{}
	for _, m := range cfg.methods {
		by[m] = new(tally)
	}
	var unclassified []string
	for _, own := range samples {
		for _, x := range own {
			t := by[x.method]
			t.calls++
			if x.kind == "" {
				t.ok++
				continue
			}
			// An HTTPClient's 503 wraps ErrNotRun too.
			isNotRun := errors.Is(x.err, jsonrpc.ErrNotRun)
			switch {
			case x.kind == kindCheck, x.kind == kindTimeout, isNotRun && !x.notRun:
				t.unclassified++
				if len(unclassified) < 3 {
					unclassified = append(unclassified, fmt.Sprintf("call %s (%s): %s: %v", callID(x.i), x.method, x.kind, x.err))
				}
			case x.notRun:
				t.notRun++
				if isNotRun {
					t.notRunAnswer++
				}
			default:
				t.mayHaveRun++
			}
		}
	}
	ran := map[string]int{}
	var procs []string
	for _, pc := range counts {
		for m, n := range pc.ran {
			ran[m] += n
		}
		var parts []string
		for _, m := range cfg.methods {
			parts = append(parts, fmt.Sprintf("%s %d", m, pc.ran[m]))
		}
		procs = append(procs, fmt.Sprintf("%s (%s): %s", pc.name, pc.log, strings.Join(parts, ", ")))
	}
	// The processes running at the start are the first listed for each
	// backend; each must have run calls of the run before its restart.
	seen := map[string]bool{}
	for _, pc := range counts {
		if seen[pc.name] {
			continue
		}
		seen[pc.name] = true
		total := 0
		for _, m := range cfg.methods {
			total += pc.ran[m]
		}
		if total == 0 {
			s.fail("backend process %s (%s) ran no call before its restart: the restart tested nothing", pc.name, pc.log)
		}
	}
	for _, b := range cfg.backends {
		if len(counts) > 0 && !seen[b] {
			s.fail("no count for backend %s", b)
		}
	}
	if len(unclassified) > 0 {
		s.fail("unclassified failures (wrong answers, deadlines, a \"not run\" answer said to have maybe run): %s", strings.Join(unclassified, "; "))
	}
	var row rollRow
	for _, m := range cfg.methods {
		t := by[m]
		idem := slices.Contains(cfg.idempotent, m)
		kind := "not idempotent"
		if idem {
			kind = "idempotent"
		}
		failed := t.calls - t.ok
		line := fmt.Sprintf("%s (%s): %d calls, %d answered, %d failed: %d not run (%d of them answered so), %d may have run, %d unclassified",
			m, kind, t.calls, t.ok, failed, t.notRun, t.notRunAnswer, t.mayHaveRun, t.unclassified)
		if idem && failed > 0 {
			s.fail("%d calls of the idempotent method %s failed, want 0", failed, m)
		}
		cell := fmt.Sprintf("%d calls, %d failed", t.calls, failed)
		if failed > 0 {
			cell += fmt.Sprintf(" (%d not run, %d may have run)", t.notRun, t.mayHaveRun)
		}
		if len(counts) > 0 {
			r := ran[m]
			line += fmt.Sprintf("; the backends ran %d", r)
			switch {
			case r < t.ok:
				s.fail("%s: the backends ran %d calls, fewer than the %d answered", m, r, t.ok)
			case !idem && r > t.ok+t.mayHaveRun:
				s.fail("%s: the backends ran %d calls, more than the %d answered plus the %d that may have run: a call said not to have run ran",
					m, r, t.ok, t.mayHaveRun)
			case idem:
				line += fmt.Sprintf(" (%d more than answered: calls made again after they may have run)", r-t.ok)
			default:
				line += fmt.Sprintf(" = %d answered + %d of the %d that may have run", t.ok, r-t.ok, t.mayHaveRun)
			}
			cell += fmt.Sprintf("; ran %d", r)
		}
		s.lines = append(s.lines, line)
		row.perMethod = append(row.perMethod, cell)
	}
	for _, p := range procs {
		s.lines = append(s.lines, "ran: "+p)
	}
	return row
}

// appendRow adds the run's row to the rolling-restart table in
// cfg.mdFile.
func (r rollRow) appendRow(cfg *config, s *summary) error {
	f, err := os.OpenFile(cfg.mdFile, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	checks := "ok"
	if len(s.failures) > 0 {
		checks = "FAILED"
	}
	client := "Dial, dialled again by the loadgen"
	switch {
	case cfg.mode == "http" && cfg.reconnect:
		client = "HTTPClient with Retry (" + r.again + " sent again)"
	case cfg.mode == "http":
		client = "HTTPClient"
	case cfg.reconnect:
		client = "Redialer"
	}
	_, err = fmt.Fprintf(f, "| %s | %s | %s | %d | %.0f | %v | %s | %s |\n",
		cfg.label, cfg.mode, client, s.calls, s.rate(), round(s.p99), strings.Join(r.perMethod, " / "), checks)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// waitUp waits, for up to 15 seconds, until HAProxy says on its admin
// socket that each of servers ("backend/server") is UP: a restarted
// backend passed its health checks and takes new work.
func waitUp(admin string, servers []string) error {
	deadline := time.Now().Add(15 * time.Second)
	for {
		state, err := serverStates(admin)
		if err == nil {
			down := ""
			for _, sv := range servers {
				if state[sv] != "UP" {
					down = fmt.Sprintf("%s is %q", sv, state[sv])
					break
				}
			}
			if down == "" {
				return nil
			}
			err = errors.New(down)
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("waitup: %v", err)
		}
		time.Sleep(25 * time.Millisecond)
	}
}

// serverStates asks HAProxy for the status of every server, by
// "backend/server": "UP", "DOWN", "UP 1/2" (going up), "MAINT" and so on.
func serverStates(admin string) (map[string]string, error) {
	reply, err := adminCommand(admin, "show stat")
	if err != nil {
		return nil, err
	}
	// CSV: "# pxname,svname,...,status,...", then a line per proxy and server.
	lines := strings.Split(reply, "\n")
	if len(lines) == 0 || !strings.HasPrefix(lines[0], "# ") {
		return nil, fmt.Errorf("show stat: unexpected reply %q", reply)
	}
	col := slices.Index(strings.Split(strings.TrimPrefix(lines[0], "# "), ","), "status")
	if col < 0 {
		return nil, errors.New("show stat: no status column")
	}
	state := map[string]string{}
	for _, l := range lines[1:] {
		f := strings.Split(l, ",")
		if len(f) > col {
			state[f[0]+"/"+f[1]] = f[col]
		}
	}
	return state, nil
}

// adminCommand sends one command to HAProxy's admin socket at admin
// (host:port or unix:PATH) and returns its reply.
func adminCommand(admin, command string) (string, error) {
	network, address := "tcp", admin
	if path, ok := strings.CutPrefix(admin, "unix:"); ok {
		network, address = "unix", path
	}
	conn, err := net.DialTimeout(network, address, time.Second)
	if err != nil {
		return "", err
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(2 * time.Second))
	if _, err := io.WriteString(conn, command+"\n"); err != nil {
		return "", err
	}
	reply, err := io.ReadAll(conn)
	return string(reply), err
}

// ready sets each of servers ("backend/server") back to the ready state
// in HAProxy, out of drain or maintenance.
func ready(admin string, servers []string) error {
	for _, sv := range servers {
		reply, err := adminCommand(admin, "set server "+sv+" state ready")
		if err != nil {
			return err
		}
		if msg := strings.TrimSpace(reply); msg != "" {
			return fmt.Errorf("ready %s: HAProxy says %q", sv, msg)
		}
	}
	return nil
}
