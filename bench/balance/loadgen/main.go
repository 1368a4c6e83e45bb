// Command loadgen drives JSON-RPC servers built on package jsonrpc, one
// backend directly or several behind a load balancer, with a fixed number
// of concurrent callers making a fixed count of calls, and reports calls/s,
// latency, errors and how the calls spread over the backends. It can kill
// one backend in the middle of a run and check what the callers saw.
//
// Every call is "subtract" with params unique to the call, and its result
// is checked. Over HTTP each call is one POST through [jsonrpc.HTTPClient];
// the backend that answered is read from the X-Backend response header the
// balancer adds (a backend reached directly sends none, and the one backend
// named by -backends is assumed). Over TCP each caller holds one connection
// made by [jsonrpc.Dial] and asks it "backend" once after dialling; a TCP
// balancer keeps a connection on one backend, so every call on it is
// counted for that backend. A caller whose connection ends dials again.
//
// A run without a kill must have no error at all, and every backend must
// answer some calls. With -kill-pid, the loadgen itself sends SIGKILL (or
// with -kill-signal TERM, SIGTERM, for a graceful stop; with -drain, after
// telling HAProxy to send that backend no new work) to that backend once
// -kill-at of the calls are done, and the run fails
// unless every failed call was on that backend, came with an error before
// its deadline, and started before the kill had settled (-settle), and
// every caller and every other backend went on after the kill (see
// checkKill). Over HTTP a call that gets no answer carries no X-Backend
// header: -lb-log names the balancer's log of every request, which says
// where each call went.
//
// Each failed call is classified with [jsonrpc.MayHaveRun]: "not run"
// (never sent, or answered that it did not run: the "not run" error of
// a graceful stop, an HTTP 503) or "may have run"; of the latter, those
// that got no answer at all (the connection ended after the request was
// written, or the deadline passed) are "dropped silently", which a
// graceful stop must not do. A TCP caller answered "not run" dials again,
// as it would to send the call elsewhere.
//
// With -control it makes a rolling-restart run instead, with reconnecting
// clients (-reconnect), while run.sh restarts every backend in turn; its
// calls are checked against the backends' own counts (see rolling.go).
//
// Usage:
//
//	loadgen -mode http|tcp -addr HOST:PORT -backends b1,b2,b3 [flags]
//	loadgen freeports N    prints N free loopback TCP ports
//	loadgen waitup ADMIN BACKEND/SERVER...
//	                       waits until HAProxy, on its admin socket ADMIN
//	                       (host:port or unix:PATH), says each server is UP
//	loadgen ready ADMIN BACKEND/SERVER...
//	                       sets each server back to ready (out of drain)
//
// It exits 1 when a check fails (a wrong answer, an error where none is
// allowed, a run that does not end in time) and 2 on bad usage.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/ndjsonrpc/jsonrpc"
)

func main() {
	if len(os.Args) == 3 && os.Args[1] == "freeports" {
		if err := freePorts(os.Args[2]); err != nil {
			fmt.Fprintln(os.Stderr, "loadgen:", err)
			os.Exit(1)
		}
		return
	}
	if len(os.Args) >= 4 && (os.Args[1] == "waitup" || os.Args[1] == "ready") {
		do := waitUp
		if os.Args[1] == "ready" {
			do = ready
		}
		if err := do(os.Args[2], os.Args[3:]); err != nil {
			fmt.Fprintln(os.Stderr, "loadgen:", err)
			os.Exit(1)
		}
		return
	}
	var cfg config
	flag.StringVar(&cfg.mode, "mode", "http", "`transport`: http (one POST per call) or tcp (newline-delimited, one connection per caller)")
	flag.StringVar(&cfg.addr, "addr", "", "the server's loopback `host:port`")
	flag.StringVar(&cfg.label, "label", "", "a `name` for this run in the report")
	backends := flag.String("backends", "", "comma-separated `names` of the backends expected to answer")
	flag.IntVar(&cfg.callers, "callers", 32, "concurrent callers")
	flag.IntVar(&cfg.calls, "calls", 20000, "calls in all, shared by the callers")
	flag.DurationVar(&cfg.callTimeout, "call-timeout", 5*time.Second, "deadline of each call (and of each dial)")
	flag.DurationVar(&cfg.maxTime, "max-time", 60*time.Second, "the run fails if it has not ended by then")
	flag.DurationVar(&cfg.wait, "wait", 15*time.Second, "how long to wait, before the run, for every backend to answer")
	flag.IntVar(&cfg.killPID, "kill-pid", 0, "send -kill-signal to this `pid` (a backend) once -kill-at of the calls are done")
	signal := flag.String("kill-signal", "KILL", "the `signal` for -kill-pid: KILL, or TERM for a graceful stop")
	flag.StringVar(&cfg.killName, "kill-name", "", "the backend `name` of -kill-pid")
	flag.Float64Var(&cfg.killAt, "kill-at", 0.4, "the `fraction` of the calls done when -kill-pid is killed")
	flag.StringVar(&cfg.drain, "drain", "", "before -kill-signal, set -drain-server to drain through the HAProxy admin socket at `address` (host:port or unix:PATH), and wait -drain-wait")
	flag.StringVar(&cfg.drainServer, "drain-server", "", "the HAProxy `backend/server` to drain, such as http_backends/b2")
	flag.DurationVar(&cfg.drainWait, "drain-wait", time.Second, "how long to wait between draining and the signal")
	flag.IntVar(&cfg.maxErrors, "max-errors", -1, "with -kill-pid, fail if more calls than this fail (-1: no limit)")
	flag.DurationVar(&cfg.settle, "settle", 300*time.Millisecond, "after a kill, calls started later than this must all succeed")
	flag.StringVar(&cfg.lbLog, "lb-log", "", "the balancer's log `file`, with a line for every HTTP request (see run.sh), read after the run to find the backend of calls that got no answer")
	flag.StringVar(&cfg.mdFile, "md", "", "append a Markdown table row for this run to `file`")
	flag.StringVar(&cfg.control, "control", "", "a rolling-restart run, driven through files in `dir` (see rolling.go): calls go on until dir/stop exists, and are checked against the backends' counts listed in dir/counts")
	flag.BoolVar(&cfg.reconnect, "reconnect", false, "with -control: over TCP, each caller calls through a jsonrpc.Redialer; over HTTP, the HTTPClient retries (its Retry: -idempotent)")
	methods := flag.String("methods", "subtract,sum", "with -control: the `methods` that calls take in turn")
	idempotent := flag.String("idempotent", "subtract", "with -control: the `methods` declared safe to repeat (the Retry of the Redialer and the HTTPClient); none if empty")
	flag.Parse()
	switch *signal {
	case "KILL", "SIGKILL":
		cfg.killSignal = syscall.SIGKILL
	case "TERM", "SIGTERM":
		cfg.killSignal = syscall.SIGTERM
	default:
		fmt.Fprintf(os.Stderr, "loadgen: -kill-signal must be KILL or TERM, not %q\n", *signal)
		os.Exit(2)
	}
	if *backends != "" {
		cfg.backends = strings.Split(*backends, ",")
	}
	if cfg.control != "" {
		cfg.methods = strings.Split(*methods, ",")
		if *idempotent != "" {
			cfg.idempotent = strings.Split(*idempotent, ",")
		}
	}
	if err := cfg.validate(); err != nil {
		fmt.Fprintln(os.Stderr, "loadgen:", err)
		flag.Usage()
		os.Exit(2)
	}
	runner := run
	if cfg.control != "" {
		runner = runRolling
	}
	if err := runner(&cfg); err != nil {
		fmt.Fprintln(os.Stderr, "loadgen: FAIL:", err)
		os.Exit(1)
	}
}

type config struct {
	mode, addr, label string
	backends          []string
	callers, calls    int
	callTimeout       time.Duration
	maxTime, wait     time.Duration
	killPID           int
	killSignal        syscall.Signal
	drain             string
	drainServer       string
	drainWait         time.Duration
	maxErrors         int
	killName          string
	killAt            float64
	settle            time.Duration
	lbLog, mdFile     string
	control           string   // -control: a rolling-restart run
	reconnect         bool     // -reconnect
	methods           []string // -methods, with -control; else only subtract
	idempotent        []string // -idempotent, with -control
}

func (c *config) validate() error {
	switch {
	case c.mode != "http" && c.mode != "tcp":
		return fmt.Errorf("-mode must be http or tcp, not %q", c.mode)
	case c.addr == "":
		return errors.New("-addr is required")
	case len(c.backends) == 0:
		return errors.New("-backends is required")
	case c.callers < 1 || c.calls < c.callers:
		return errors.New("need -callers >= 1 and -calls >= -callers")
	case c.killPID != 0 && !slices.Contains(c.backends, c.killName):
		return errors.New("-kill-name must be one of -backends")
	case c.killPID != 0 && (c.killAt <= 0 || c.killAt >= 1):
		return errors.New("-kill-at must be between 0 and 1")
	case c.drain != "" && (c.killPID == 0 || c.drainServer == ""):
		return errors.New("-drain needs -kill-pid and -drain-server")
	case c.control != "" && c.killPID != 0:
		return errors.New("-control and -kill-pid do not go together")
	case c.reconnect && c.control == "":
		return errors.New("-reconnect needs -control")
	}
	for _, m := range c.methods {
		if m != "subtract" && m != "sum" {
			return fmt.Errorf("-methods: %q is neither subtract nor sum", m)
		}
	}
	host, _, err := net.SplitHostPort(c.addr)
	if err != nil {
		return err
	}
	if ip := net.ParseIP(host); host != "localhost" && (ip == nil || !ip.IsLoopback()) {
		return fmt.Errorf("-addr %s is not a loopback address", c.addr)
	}
	return nil
}

// A sample is the outcome of one call.
type sample struct {
	i       int64         // the call's number
	method  string        // set by a rolling-restart run; "" is subtract
	start   time.Duration // since the start of the run
	latency time.Duration
	backend string // "" when unknown
	kind    string // "" for a success, else the kind of failure
	err     error
	lbLog   string // what the balancer logged of the call, if it failed
	silent  bool   // failed without an answer, and the balancer logged nothing
	notRun  bool   // failed, and surely did not run (jsonrpc.MayHaveRun)
	dropped bool   // failed without an answer or a "not run" error
}

// dropped reports whether a call that failed with err got neither an
// answer (a JSON-RPC error, a wrong result) nor word that it did not run.
func droppedSilently(err error) bool {
	var re *jsonrpc.Error
	return jsonrpc.MayHaveRun(err) && !errors.As(err, &re) && !errors.Is(err, errCheck)
}

// Kinds of failure.
const (
	kindCheck   = "wrong answer"
	kindTimeout = "deadline"
	kindConn    = "connection"
	kindHTTP    = "http status"
	kindRPC     = "rpc error"
)

// classify names the kind of a call's error.
func classify(err error) string {
	var he *jsonrpc.HTTPError
	var re *jsonrpc.Error
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		return kindTimeout
	case errors.As(err, &he):
		return kindHTTP
	case errors.As(err, &re):
		return kindRPC
	case errors.Is(err, errCheck):
		return kindCheck
	}
	return kindConn
}

var errCheck = errors.New("wrong answer")

// subtractParams are the params of call i; want gives its answer.
type subtractParams struct {
	Minuend    int64 `json:"minuend"`
	Subtrahend int64 `json:"subtrahend"`
}

func params(i int64) subtractParams { return subtractParams{1_000_000 + 7*i, 3 * i} }
func want(i int64) int64            { return 1_000_000 + 4*i }

// A caller makes calls one after the other; each of the run's callers has
// its own.
type caller interface {
	// call makes call i and reports the backend that answered it, if
	// known; an error means the call failed.
	call(ctx context.Context, i int64) (backend string, err error)
	close()
}

// A callTag, in a call's context, names the call to the balancer and
// receives the backend the balancer says answered it.
type callTag struct {
	id       string // the X-Call header, unique to the call
	backend  string // the X-Backend header of the response
	attempts int    // requests sent for the call (HTTPClient retries it)
}

type callTagKey struct{}

// httpTagger is the http.RoundTripper under the HTTPClient: it sends the
// call's X-Call header, which the balancer logs for a request that fails,
// and reads the X-Backend header by which the balancer names the backend
// that answered.
type httpTagger struct{ base http.RoundTripper }

func (t httpTagger) RoundTrip(r *http.Request) (*http.Response, error) {
	tag, _ := r.Context().Value(callTagKey{}).(*callTag)
	if tag != nil && tag.id != "" {
		r = r.Clone(r.Context())
		r.Header.Set("X-Call", tag.id)
	}
	if tag != nil {
		tag.attempts++
	}
	resp, err := t.base.RoundTrip(r)
	if resp != nil && tag != nil {
		tag.backend = resp.Header.Get("X-Backend")
	}
	return resp, err
}

// runID tells this run's X-Call headers from those of other runs in the
// balancer's log.
var runID = strconv.Itoa(os.Getpid())

func callID(i int64) string { return runID + "-" + strconv.FormatInt(i, 10) }

// newHTTPClient returns the client shared by the HTTP callers: keep-alive
// connections, as many idle ones kept as there are callers.
func newHTTPClient(cfg *config) *jsonrpc.HTTPClient {
	tr := &http.Transport{
		DialContext:         (&net.Dialer{Timeout: cfg.callTimeout}).DialContext,
		MaxIdleConns:        cfg.callers,
		MaxIdleConnsPerHost: cfg.callers,
		IdleConnTimeout:     30 * time.Second,
		DisableCompression:  true,
	}
	return &jsonrpc.HTTPClient{
		URL:  "http://" + cfg.addr + "/",
		HTTP: &http.Client{Transport: httpTagger{tr}},
	}
}

type httpCaller struct {
	cfg    *config
	hc     *jsonrpc.HTTPClient
	direct string // the backend, when there is only one
	again  int    // requests sent again by the HTTPClient's retries (-reconnect)
}

func (c *httpCaller) call(ctx context.Context, i int64) (string, error) {
	tag := &callTag{id: callID(i)}
	ctx = context.WithValue(ctx, callTagKey{}, tag)
	method := c.cfg.method(i)
	err := callMethod(ctx, c.hc, method, i)
	if tag.attempts > 1 {
		c.again += tag.attempts - 1
	}
	backend := tag.backend
	if backend == "" {
		backend = c.direct
	}
	return backend, err
}

func (c *httpCaller) close() {}

// tcpCaller holds one connection through the balancer and knows the
// backend at its other end.
type tcpCaller struct {
	cfg     *config
	c       *jsonrpc.Conn
	backend string
	dials   int // connections made, the first one included
	failed  int // dials or "backend" calls that failed
}

// connect dials until a connection names its backend or ctx ends.
func (c *tcpCaller) connect(ctx context.Context) error {
	pause := 10 * time.Millisecond
	for {
		err := c.dial(ctx)
		if err == nil {
			return nil
		}
		c.failed++
		select {
		case <-ctx.Done():
			return fmt.Errorf("dial: %w (last: %v)", ctx.Err(), err)
		case <-time.After(pause):
		}
		pause = min(2*pause, 200*time.Millisecond)
	}
}

func (c *tcpCaller) dial(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, c.cfg.callTimeout)
	defer cancel()
	cl, err := jsonrpc.Dial(ctx, "tcp", c.cfg.addr, nil)
	if err != nil {
		return err
	}
	c.dials++
	var name string
	if err := cl.Call(ctx, "backend", nil, &name); err != nil {
		_ = cl.Close()
		return err
	}
	c.c, c.backend = cl, name
	return nil
}

func (c *tcpCaller) call(ctx context.Context, i int64) (string, error) {
	backend := c.backend
	err := callMethod(ctx, c.c, c.cfg.method(i), i)
	if err != nil && (classify(err) == kindConn || errors.Is(err, jsonrpc.ErrNotRun)) {
		// The connection is gone (its backend died, or the balancer
		// closed it), or its backend is stopping: the next call dials
		// again.
		_ = c.c.Close()
		c.c, c.backend = nil, ""
	}
	return backend, err
}

func (c *tcpCaller) close() {
	if c.c != nil {
		_ = c.c.Close()
	}
}

// waitBackends calls "backend" until every expected backend has answered,
// and checks on the way that the balancer's X-Backend header names the
// backend that answered.
func waitBackends(ctx context.Context, cfg *config, hc *jsonrpc.HTTPClient) error {
	ctx, cancel := context.WithTimeout(ctx, cfg.wait)
	defer cancel()
	seen := map[string]bool{}
	var last error
	for len(seen) < len(cfg.backends) {
		if ctx.Err() != nil {
			return fmt.Errorf("backends seen after %v: %v of %v (last error: %v)", cfg.wait, keys(seen), cfg.backends, last)
		}
		name, err := probe(ctx, cfg, hc)
		if err != nil {
			last = err
			time.Sleep(50 * time.Millisecond)
			continue
		}
		if !slices.Contains(cfg.backends, name) {
			return fmt.Errorf("an unexpected backend answered: %q", name)
		}
		seen[name] = true
	}
	return nil
}

// probe asks one backend its name: one POST, or one new connection.
func probe(ctx context.Context, cfg *config, hc *jsonrpc.HTTPClient) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, cfg.callTimeout)
	defer cancel()
	var name string
	if cfg.mode == "http" {
		tag := new(callTag)
		err := hc.Call(context.WithValue(ctx, callTagKey{}, tag), "backend", nil, &name)
		if err != nil {
			return "", err
		}
		header := tag.backend
		if header != "" && header != name {
			return "", fmt.Errorf("X-Backend says %q, but %q answered", header, name)
		}
		if header == "" && len(cfg.backends) > 1 {
			return "", errors.New("no X-Backend header: is this the balancer?")
		}
		return name, nil
	}
	c := &tcpCaller{cfg: cfg}
	if err := c.dial(ctx); err != nil {
		return "", err
	}
	c.close()
	return c.backend, nil
}

// A killRecord says when the backend was killed.
type killRecord struct {
	at       time.Duration // since the start of the run
	drained  time.Duration // when the backend was set to drain, if it was
	inFlight int64         // calls in flight at that moment, all backends
	done     int64         // calls finished by then
}

// startRun returns the HTTPClient of an HTTP run (nil over TCP) once the
// backends answer.
func startRun(ctx context.Context, cfg *config) (*jsonrpc.HTTPClient, error) {
	var hc *jsonrpc.HTTPClient
	if cfg.mode == "http" {
		hc = newHTTPClient(cfg)
	}
	return hc, waitBackends(ctx, cfg, hc)
}

// dialCaller returns a TCP caller connected within cfg.wait.
func dialCaller(ctx context.Context, cfg *config) (*tcpCaller, error) {
	tc := &tcpCaller{cfg: cfg}
	dctx, cancel := context.WithTimeout(ctx, cfg.wait)
	defer cancel()
	return tc, tc.connect(dctx)
}

func run(cfg *config) error {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	hc, err := startRun(ctx, cfg)
	if err != nil {
		return err
	}

	callers := make([]caller, cfg.callers)
	for k := range callers {
		if cfg.mode == "http" {
			callers[k] = &httpCaller{cfg: cfg, hc: hc}
			if len(cfg.backends) == 1 {
				callers[k].(*httpCaller).direct = cfg.backends[0]
			}
			continue
		}
		tc, err := dialCaller(ctx, cfg)
		if err != nil {
			return fmt.Errorf("caller %d: %w", k, err)
		}
		callers[k] = tc
	}
	defer func() {
		for _, c := range callers {
			c.close()
		}
	}()

	var (
		next, done, inFlight atomic.Int64
		kill                 killRecord
		killed               = make(chan struct{})
		killErr              error
	)
	samples := make([][]sample, cfg.callers)
	runCtx, runCancel := context.WithTimeout(ctx, cfg.maxTime)
	defer runCancel()
	start := time.Now()

	if cfg.killPID != 0 {
		go func() {
			defer close(killed)
			threshold := int64(float64(cfg.calls) * cfg.killAt)
			t := time.NewTicker(time.Millisecond)
			defer t.Stop()
			for done.Load() < threshold {
				select {
				case <-runCtx.Done():
					killErr = errors.New("the run ended before the kill")
					return
				case <-t.C:
				}
			}
			var drained time.Duration
			if cfg.drain != "" {
				drained = time.Since(start)
				if killErr = drain(cfg); killErr != nil {
					return
				}
				time.Sleep(cfg.drainWait)
			}
			kill = killRecord{at: time.Since(start), drained: drained, inFlight: inFlight.Load(), done: done.Load()}
			killErr = syscall.Kill(cfg.killPID, cfg.killSignal)
		}()
	}

	var wg sync.WaitGroup
	for k, c := range callers {
		wg.Go(func() {
			var own []sample
			for {
				i := next.Add(1) - 1
				if i >= int64(cfg.calls) || runCtx.Err() != nil {
					break
				}
				if tc, ok := c.(*tcpCaller); ok && tc.c == nil {
					if err := tc.connect(runCtx); err != nil {
						own = append(own, sample{i: i, start: time.Since(start), kind: kindConn, err: err, notRun: true})
						break
					}
				}
				cctx, ccancel := context.WithTimeout(runCtx, cfg.callTimeout)
				t0 := time.Now()
				inFlight.Add(1)
				backend, err := c.call(cctx, i)
				inFlight.Add(-1)
				lat := time.Since(t0)
				ccancel()
				s := sample{i: i, start: t0.Sub(start), latency: lat, backend: backend}
				if err != nil {
					s.kind, s.err = classify(err), err
					s.notRun, s.dropped = !jsonrpc.MayHaveRun(err), droppedSilently(err)
				}
				own = append(own, s)
				done.Add(1)
			}
			samples[k] = own
		})
	}
	finished := make(chan struct{})
	go func() { wg.Wait(); close(finished) }()
	select {
	case <-finished:
	case <-time.After(cfg.maxTime + 2*cfg.callTimeout + time.Second):
		return fmt.Errorf("HANG: callers still running %v after the start (%d of %d calls done, %d in flight)",
			time.Since(start).Round(time.Millisecond), done.Load(), cfg.calls, inFlight.Load())
	}
	wall := time.Since(start)
	if cfg.killPID != 0 {
		<-killed
	}
	var logLines, logFailures []string
	if cfg.lbLog != "" && cfg.mode == "http" {
		var err error
		if logLines, logFailures, err = readBalancerLog(cfg.lbLog, samples); err != nil {
			return err
		}
	}
	rep := report(cfg, samples, callers, wall, runCtx.Err() != nil)
	rep.lines = append(rep.lines, logLines...)
	rep.failures = append(rep.failures, logFailures...)
	if cfg.killPID != 0 {
		if killErr != nil {
			rep.fail("kill: %v", killErr)
		} else {
			checkKill(cfg, rep, samples, kill)
		}
	} else {
		rep.checkPlain(cfg)
	}
	rep.print(cfg)
	if cfg.mdFile != "" {
		if err := rep.appendRow(cfg); err != nil {
			return err
		}
	}
	if len(rep.failures) > 0 {
		return fmt.Errorf("%d check(s) failed: %s", len(rep.failures), strings.Join(rep.failures, "; "))
	}
	return nil
}

// drain tells HAProxy, on its admin socket, to send no new work to
// cfg.drainServer.
func drain(cfg *config) error {
	network, address := "tcp", cfg.drain
	if path, ok := strings.CutPrefix(cfg.drain, "unix:"); ok {
		network, address = "unix", path
	}
	conn, err := net.DialTimeout(network, address, time.Second)
	if err != nil {
		return fmt.Errorf("drain: %w", err)
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(2 * time.Second))
	if _, err := fmt.Fprintf(conn, "set server %s state drain\n", cfg.drainServer); err != nil {
		return fmt.Errorf("drain: %w", err)
	}
	// HAProxy answers an empty line when the command worked, and a
	// message otherwise, then closes the connection.
	reply, err := io.ReadAll(conn)
	if err != nil {
		return fmt.Errorf("drain: %w", err)
	}
	if msg := strings.TrimSpace(string(reply)); msg != "" {
		return fmt.Errorf("drain: HAProxy says %q", msg)
	}
	return nil
}

// A logEntry is what the balancer logged of one request: a line such as
// "call={ID} backend=b2 status=200 term=---- retries=0".
type logEntry struct {
	backend, line string
	retried       bool // "retries=+N": sent to another backend after a failed connection
}

// readBalancerLog reads the balancer's log, which must have a line for
// every request of the run, and matches it with the calls: an answered
// call must be there with the backend of its X-Backend header, and a call
// that failed without an answer gets the backend the log names, if the
// log has it. It returns what it found, for the report.
func readBalancerLog(file string, samples [][]sample) (lines []string, failures []string, err error) {
	// The balancer writes its log as requests end: read it again while
	// answered calls are missing, for a few seconds.
	var logged map[string]logEntry
	for range 20 {
		time.Sleep(200 * time.Millisecond)
		if logged, err = parseBalancerLog(file); err != nil {
			return nil, nil, err
		}
		if missing(logged, samples) == "" {
			break
		}
	}
	var okLogged, okMissing, okWrong, okRetried, failLogged, failSilent int
	for _, own := range samples {
		for k := range own {
			x := &own[k]
			e, ok := logged[callID(x.i)]
			switch {
			case x.kind == "" && !ok:
				okMissing++
			case x.kind == "" && e.backend != x.backend:
				okWrong++
			case x.kind == "":
				okLogged++
				if e.retried {
					okRetried++
				}
			case ok:
				failLogged++
				x.lbLog = e.line
				if x.backend == "" {
					x.backend = e.backend
				}
			case x.backend == "" && x.kind == kindConn:
				failSilent++
				x.lbLog = "no line"
				x.silent = true
			}
		}
	}
	if okMissing > 0 {
		failures = append(failures, fmt.Sprintf("the balancer's log misses %d answered calls (such as %s): it cannot tell where the others went", okMissing, missing(logged, samples)))
	}
	if okWrong > 0 {
		failures = append(failures, fmt.Sprintf("the balancer's log names another backend than X-Backend for %d calls", okWrong))
	}
	lines = append(lines, fmt.Sprintf("balancer's log: %d answered calls, each with the backend of its X-Backend header (%d of them redispatched after a refused connection); failed calls: %d logged, %d without a line",
		okLogged, okRetried, failLogged, failSilent))
	if failSilent > 0 {
		lines = append(lines, "balancer's log: when a backend's connection closes before it answers a request that came on a"+
			" kept-alive client connection, HAProxy closes the client's connection instead of answering, and logs nothing"+
			" (so that the client may retry if it can)")
	}
	return lines, failures, nil
}

// missing names an answered call that is not in the log, or returns "".
func missing(logged map[string]logEntry, samples [][]sample) string {
	for _, own := range samples {
		for _, x := range own {
			if _, ok := logged[callID(x.i)]; x.kind == "" && !ok {
				return callID(x.i)
			}
		}
	}
	return ""
}

// parseBalancerLog reads the lines of this run from the balancer's log.
func parseBalancerLog(file string) (map[string]logEntry, error) {
	data, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	logged := map[string]logEntry{}
	for line := range strings.Lines(string(data)) {
		line = strings.TrimSpace(line)
		rest, ok := strings.CutPrefix(line, "call={")
		if !ok {
			continue
		}
		id, rest, ok := strings.Cut(rest, "} ")
		if !ok || !strings.HasPrefix(id, runID+"-") {
			continue
		}
		e := logEntry{line: rest}
		for f := range strings.FieldsSeq(rest) {
			if b, ok := strings.CutPrefix(f, "backend="); ok {
				e.backend = b
			}
			if strings.HasPrefix(f, "retries=+") {
				e.retried = true
			}
		}
		logged[id] = e
	}
	return logged, nil
}

// A summary holds the figures of a run and the checks that failed.
type summary struct {
	calls, ok, errs int
	notRun, dropped int // failed calls surely not run; failed without an answer or a "not run"
	byKind          map[string]int
	byBackend       map[string]int // calls answered, per backend
	errByBackend    map[string]int
	wall            time.Duration
	p50, p99, max   time.Duration
	dials, dialErrs int
	timedOut        bool
	lines           []string // extra lines of the report
	failures        []string
	examples        []string
}

func (s *summary) fail(format string, args ...any) {
	s.failures = append(s.failures, fmt.Sprintf(format, args...))
}

func report(cfg *config, samples [][]sample, callers []caller, wall time.Duration, timedOut bool) *summary {
	s := &summary{byKind: map[string]int{}, byBackend: map[string]int{}, errByBackend: map[string]int{}, wall: wall, timedOut: timedOut}
	var lats []time.Duration
	shown := map[string]int{}
	for _, own := range samples {
		for _, x := range own {
			s.calls++
			if x.kind == "" {
				s.ok++
				s.byBackend[x.backend]++
				lats = append(lats, x.latency)
				continue
			}
			s.errs++
			s.byKind[x.kind]++
			if x.notRun {
				s.notRun++
			}
			if x.dropped {
				s.dropped++
			}
			if x.silent {
				s.errByBackend["closed by the balancer"]++
			} else {
				s.errByBackend[x.backend]++
			}
			// Up to two examples of each kind of failure.
			class := fmt.Sprint(x.kind, x.silent)
			if shown[class] < 2 {
				shown[class]++
				on := "on " + x.backend
				switch {
				case x.silent:
					on = "closed by the balancer without an answer"
				case x.backend == "":
					on = "on an unknown backend"
				}
				e := fmt.Sprintf("call %s: %s %s after %v: %v", callID(x.i), x.kind, on, x.latency.Round(time.Microsecond), x.err)
				if x.lbLog != "" {
					e += " (balancer's log: " + x.lbLog + ")"
				}
				s.examples = append(s.examples, e)
			}
		}
	}
	slices.Sort(lats)
	if n := len(lats); n > 0 {
		s.p50, s.p99, s.max = lats[n/2], lats[min(n-1, n*99/100)], lats[n-1]
	}
	for _, c := range callers {
		if tc, ok := c.(*tcpCaller); ok {
			s.dials += tc.dials
			s.dialErrs += tc.failed
		}
	}
	if timedOut {
		s.fail("the run was cut off by -max-time %v", cfg.maxTime)
	}
	if s.calls != cfg.calls {
		s.fail("%d calls made, want %d", s.calls, cfg.calls)
	}
	if n := s.byKind[kindCheck]; n > 0 {
		s.fail("%d wrong answers", n)
	}
	for b := range s.byBackend {
		if !slices.Contains(cfg.backends, b) {
			s.fail("%d calls answered by unexpected backend %q", s.byBackend[b], b)
		}
	}
	return s
}

// checkPlain checks a run without a kill: no error at all, and every
// backend answered some calls.
func (s *summary) checkPlain(cfg *config) {
	if s.errs > 0 {
		s.fail("%d calls failed: %v", s.errs, s.byKind)
	}
	for _, b := range cfg.backends {
		if s.byBackend[b] == 0 {
			s.fail("backend %s answered no call", b)
		}
	}
}

// checkKill checks what the callers saw of the kill: only calls on the
// killed backend failed, each with an error and none by its deadline, at
// most one per caller, none started later than -settle after the kill;
// every caller went on after it, and the other backends answered the
// calls made since.
func checkKill(cfg *config, s *summary, samples [][]sample, k killRecord) {
	settle := k.at + cfg.settle
	var inFlightFailed, afterFailed, lateOK, lateOnKilled, beforeOnKilled, silent int
	var lastFail time.Duration
	var slowest sample
	lateByBackend := map[string]int{}
	for c, own := range samples {
		fails, wentOn := 0, false
		for _, x := range own {
			end := x.start + x.latency
			if x.kind == "" && x.latency > slowest.latency {
				slowest = x
			}
			if x.kind == "" {
				if x.backend == cfg.killName && x.start < k.at {
					beforeOnKilled++
				}
				if x.start > k.at {
					wentOn = true
				}
				if x.start >= settle {
					lateOK++
					lateByBackend[x.backend]++
					if x.backend == cfg.killName {
						lateOnKilled++
					}
				}
				continue
			}
			fails++
			lastFail = max(lastFail, end)
			if x.start <= k.at {
				inFlightFailed++
			} else {
				afterFailed++
			}
			switch {
			case end < k.at:
				s.fail("caller %d: a call failed before the kill: %v", c, x.err)
			case x.kind == kindTimeout:
				s.fail("caller %d: a call waited out its deadline (%v): %v", c, cfg.callTimeout, x.err)
			case x.silent:
				// No answer and no log: HAProxy does that only when
				// the backend's connection closed before it answered.
				silent++
			case x.backend != cfg.killName:
				s.fail("caller %d: a call failed on backend %q, not the killed %s: %s: %v", c, x.backend, cfg.killName, x.kind, x.err)
			case x.start >= settle:
				s.fail("caller %d: a call started %v after the kill failed: %v", c, (x.start - k.at).Round(time.Millisecond), x.err)
			}
		}
		// Over TCP a caller has its own connection, and dials again after
		// it fails; over HTTP the callers share a pool of connections,
		// several of which may lead to the killed backend.
		if fails > 1 && cfg.mode == "tcp" {
			s.fail("caller %d saw %d failed calls, want at most 1 (its call in flight)", c, fails)
		}
		if !wentOn {
			s.fail("caller %d made no successful call after the kill", c)
		}
	}
	if beforeOnKilled == 0 {
		s.fail("backend %s answered no call before the kill: the kill tested nothing", cfg.killName)
	}
	if lateOnKilled > 0 {
		s.fail("backend %s answered %d calls after it was killed", cfg.killName, lateOnKilled)
	}
	if lateOK == 0 {
		s.fail("no call succeeded more than %v after the kill", cfg.settle)
	}
	for _, b := range cfg.backends {
		if b != cfg.killName && lateByBackend[b] == 0 {
			s.fail("backend %s answered no call after the kill", b)
		}
	}
	if cfg.maxErrors >= 0 && s.errs > cfg.maxErrors {
		s.fail("%d calls failed, want at most %d", s.errs, cfg.maxErrors)
	}
	if cfg.drain != "" {
		s.lines = append(s.lines, fmt.Sprintf("kill: %s set to drain in HAProxy at %v, %v before the signal",
			cfg.drainServer, k.drained.Round(time.Millisecond), (k.at-k.drained).Round(time.Millisecond)))
	}
	line := fmt.Sprintf("kill: %s to %s (pid %d) at %v, after %d calls, with %d calls in flight on all backends",
		signalName(cfg.killSignal), cfg.killName, cfg.killPID, k.at.Round(time.Millisecond), k.done, k.inFlight)
	s.lines = append(s.lines, line)
	line = fmt.Sprintf("kill: %d calls failed: %d sent before the kill, %d after it (before %s's sockets were closed or its death seen)",
		s.errs, inFlightFailed, afterFailed, cfg.killName)
	if silent > 0 {
		line += fmt.Sprintf("; %d of them closed by the balancer without an answer", silent)
	}
	if s.errs > 0 {
		line += fmt.Sprintf("; the last failure came %v after the kill", (lastFail - k.at).Round(time.Millisecond))
	}
	s.lines = append(s.lines, line)
	s.lines = append(s.lines, fmt.Sprintf("kill: %d calls started more than %v after the kill, all answered: %s",
		lateOK, cfg.settle, spread(lateByBackend, cfg.backends)))
	when := fmt.Sprintf("%v after", (slowest.start - k.at).Round(time.Millisecond))
	if slowest.start < k.at {
		when = fmt.Sprintf("%v before", (k.at - slowest.start).Round(time.Millisecond))
	}
	s.lines = append(s.lines, fmt.Sprintf("kill: the slowest answered call took %v, on %s, started %s the kill",
		round(slowest.latency), slowest.backend, when))
}

func signalName(sig syscall.Signal) string {
	if sig == syscall.SIGTERM {
		return "SIGTERM"
	}
	return "SIGKILL"
}

func (s *summary) rate() float64 { return float64(s.calls) / s.wall.Seconds() }

func (s *summary) errText() string {
	if s.errs == 0 {
		return "0"
	}
	var parts []string
	for _, k := range sortedKeys(s.byKind) {
		parts = append(parts, fmt.Sprintf("%d %s", s.byKind[k], k))
	}
	return fmt.Sprintf("%d (%s; %d not run, %d may have run, %d dropped silently)",
		s.errs, strings.Join(parts, ", "), s.notRun, s.errs-s.notRun, s.dropped)
}

func (s *summary) print(cfg *config) {
	fmt.Printf("== %s\n", cfg.label)
	fmt.Printf("   %s to %s, %d callers, %d calls in %v: %.0f calls/s, p50 %v, p99 %v, max %v (answered calls)\n",
		cfg.mode, cfg.addr, cfg.callers, s.calls, s.wall.Round(time.Millisecond), s.rate(),
		round(s.p50), round(s.p99), round(s.max))
	fmt.Printf("   answered %d, errors %s\n", s.ok, s.errText())
	fmt.Printf("   answered by: %s\n", spread(s.byBackend, cfg.backends))
	if s.errs > 0 {
		fmt.Printf("   failed on: %s\n", spread(s.errByBackend, cfg.backends))
	}
	if cfg.mode == "tcp" {
		fmt.Printf("   connections: %d dialled (%d by the callers at the start), %d dials or first calls failed\n",
			s.dials, cfg.callers, s.dialErrs)
	}
	for _, l := range s.lines {
		fmt.Printf("   %s\n", l)
	}
	for _, e := range s.examples {
		fmt.Printf("   error: %s\n", e)
	}
	if len(s.failures) == 0 {
		fmt.Println("   checks: ok")
	}
	for _, f := range s.failures {
		fmt.Printf("   CHECK FAILED: %s\n", f)
	}
}

// appendRow adds the run's row to the Markdown table in cfg.mdFile.
func (s *summary) appendRow(cfg *config) error {
	f, err := os.OpenFile(cfg.mdFile, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	checks := "ok"
	if len(s.failures) > 0 {
		checks = "FAILED"
	}
	_, err = fmt.Fprintf(f, "| %s | %s | %d | %d | %.0f | %v | %v | %s | %s | %s |\n",
		cfg.label, cfg.mode, cfg.callers, s.calls, s.rate(), round(s.p50), round(s.p99),
		s.errText(), spread(s.byBackend, cfg.backends), checks)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// spread shows how many calls each backend took, with shares.
func spread(m map[string]int, backends []string) string {
	total := 0
	for _, n := range m {
		total += n
	}
	if total == 0 {
		return "none"
	}
	names := slices.Clone(backends)
	for _, k := range sortedKeys(m) {
		if !slices.Contains(names, k) {
			names = append(names, k)
		}
	}
	var parts []string
	for _, b := range names {
		label := b
		if label == "" {
			label = "unknown"
		}
		parts = append(parts, fmt.Sprintf("%s %d (%.1f%%)", label, m[b], 100*float64(m[b])/float64(total)))
	}
	return strings.Join(parts, ", ")
}

func round(d time.Duration) time.Duration {
	if d > 10*time.Millisecond {
		return d.Round(100 * time.Microsecond)
	}
	return d.Round(time.Microsecond)
}

func sortedKeys[V any](m map[string]V) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	return ks
}

func keys(m map[string]bool) []string { return sortedKeys(m) }

// freePorts prints n TCP ports free on the loopback interface, on one
// line. They are free when it looks; the caller binds them soon after.
func freePorts(arg string) error {
	n, err := strconv.Atoi(arg)
	if err != nil || n < 1 {
		return fmt.Errorf("freeports: want a count, not %q", arg)
	}
	var ports []string
	var ls []net.Listener
	defer func() {
		for _, l := range ls {
			_ = l.Close()
		}
	}()
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return err
		}
		ls = append(ls, l)
		ports = append(ports, strconv.Itoa(l.Addr().(*net.TCPAddr).Port))
	}
	fmt.Println(strings.Join(ports, " "))
	return nil
}
