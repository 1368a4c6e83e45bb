package bench_test

// In-process benchmarks. Every implementation runs the same code as its
// whole-process server (package floor and the packages under impl/), fed
// from memory:
//
//   BenchmarkServer/<workload>/<impl>   server throughput over one slice of
//                                       a workload (suite.Workload.InProc lines)
//   BenchmarkServer/Scan<input><size>/<impl>
//                                       one line holding one long string
//                                       (suite.ScanInputs), in bytes/s
//   BenchmarkRoundTrip/seq/<impl>       one caller, one call at a time
//   BenchmarkRoundTrip/par64/<impl>     64 goroutines calling at once
//
// Client and server of a round trip are joined by two io.Pipes.

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"testing"
	"time"

	"github.com/ndjsonrpc/jsonrpc/bench/floor"
	"github.com/ndjsonrpc/jsonrpc/bench/impl/jrpc2impl"
	"github.com/ndjsonrpc/jsonrpc/bench/impl/sourcegraphimpl"
	"github.com/ndjsonrpc/jsonrpc/bench/impl/xexpimpl"
	"github.com/ndjsonrpc/jsonrpc/bench/suite"
)

type client interface {
	Subtract(ctx context.Context, a, b int) (int, error)
	Close() error
}

type serveFunc func(ctx context.Context, r io.Reader, w io.WriteCloser) error

type impl struct {
	suite.Impl
	serve     serveFunc
	newClient func(r io.Reader, w io.WriteCloser) client
	// serveHand serves the HandJSON workload (see suite.Workload.HandJSON);
	// nil: serve does.
	serveHand serveFunc
}

// serveFor returns the server im runs on w.
func (im *impl) serveFor(w suite.Workload) serveFunc {
	if w.HandJSON && im.serveHand != nil {
		return im.serveHand
	}
	return im.serve
}

var registered = map[string]*impl{}

func register(name string, serve func(context.Context, io.Reader, io.WriteCloser) error, newClient func(io.Reader, io.WriteCloser) client) {
	info, ok := suite.LookupImpl(name)
	if !ok {
		panic("unknown implementation " + name)
	}
	registered[name] = &impl{Impl: info, serve: serve, newClient: newClient}
}

func init() {
	register("floor",
		func(_ context.Context, r io.Reader, w io.WriteCloser) error { return floor.Serve(r, w) },
		func(r io.Reader, w io.WriteCloser) client { return floor.NewClient(r, w) })
	register("jrpc2", jrpc2impl.Serve,
		func(r io.Reader, w io.WriteCloser) client { return jrpc2impl.NewClient(r, w) })
	register("sourcegraph", sourcegraphimpl.Serve,
		func(r io.Reader, w io.WriteCloser) client { return sourcegraphimpl.NewClient(r, w) })
	register("xexp", xexpimpl.Serve,
		func(r io.Reader, w io.WriteCloser) client { return xexpimpl.NewClient(r, w) })
}

// impls returns the registered implementations in table order.
func impls() []*impl { return inTableOrder(registered) }

// inTableOrder returns the entries of a registry by implementation name in
// the order of suite.Impls.
func inTableOrder[T any](reg map[string]*T) []*T {
	var out []*T
	for _, info := range suite.Impls {
		if im := reg[info.Name]; im != nil {
			out = append(out, im)
		}
	}
	return out
}

// holdReader reads r and then, instead of reporting the end of the input
// at once, waits until hold is closed (every expected response has been
// written) or a timeout passes. A real client keeps its connection open
// until it has its answers, and some libraries (jrpc2) abandon queued
// requests as soon as their input ends.
type holdReader struct {
	r    io.Reader
	hold <-chan struct{}
}

func (h *holdReader) Read(p []byte) (int, error) {
	n, err := h.r.Read(p)
	if err == io.EOF && n == 0 {
		select {
		case <-h.hold:
		case <-time.After(time.Minute):
		}
	}
	return n, err
}

// peakHeap runs run once with the collector set to run almost continuously
// (GOGC=1), so that garbage hardly accumulates, and returns the largest
// number of bytes in heap objects (what MemStats.HeapAlloc reports, read
// through runtime/metrics, which does not stop the world) seen during the
// run, sampled every 100µs, above the figure before it. Under the default
// GOGC the same figure mostly shows how much garbage the pacer lets pile
// up, not what the server holds.
func peakHeap(run func() error) (uint64, error) {
	const metric = "/memory/classes/heap/objects:bytes"
	old := debug.SetGCPercent(1)
	defer debug.SetGCPercent(old)
	runtime.GC()
	s := []metrics.Sample{{Name: metric}}
	metrics.Read(s)
	base := s[0].Value.Uint64()
	stop := make(chan struct{})
	peak := make(chan uint64)
	go func() {
		s := []metrics.Sample{{Name: metric}}
		high := base
		t := time.NewTicker(100 * time.Microsecond)
		defer t.Stop()
		for {
			metrics.Read(s)
			high = max(high, s[0].Value.Uint64())
			select {
			case <-stop:
				peak <- high
				return
			case <-t.C:
			}
		}
	}()
	err := run()
	close(stop)
	return <-peak - base, err
}

// perOp reports per-request (or per-call) figures for n requests per
// iteration, from the allocation counters read before and after the loop.
func perOp(b *testing.B, n int, unit string, before, after *runtime.MemStats) {
	total := float64(b.N) * float64(n)
	if total == 0 {
		return
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/total, "ns/"+unit)
	b.ReportMetric(float64(after.Mallocs-before.Mallocs)/total, "allocs/"+unit)
	b.ReportMetric(float64(after.TotalAlloc-before.TotalAlloc)/total, "B/"+unit)
}

// scanScale multiplies the string lengths of the Scan benchmarks, which
// keep their names (run.sh --quick sets it to 0.01, as it scales the
// other workloads).
var scanScale = flag.Float64("scanscale", 1, "multiply the string lengths of the Scan benchmarks by `f`")

func BenchmarkServer(b *testing.B) {
	for _, full := range suite.Workloads {
		w := full.InProcess()
		for _, im := range impls() {
			if !im.Supports(w) {
				continue
			}
			b.Run(w.Name+"/"+im.Name, func(b *testing.B) { benchServer(b, im, w) })
		}
	}
	for _, in := range suite.ScanInputs {
		for _, size := range suite.ScanSizes {
			n := size.Scaled(*scanScale).N
			for _, im := range impls() {
				if !im.SupportsScan(in) {
					continue
				}
				b.Run(in.BenchName(size)+"/"+im.Name, func(b *testing.B) { benchScan(b, im, in, n) })
			}
		}
	}
}

func benchServer(b *testing.B, im *impl, w suite.Workload) {
	input := w.Bytes()
	ctx := context.Background()
	serve := im.serveFor(w)
	serveOnce := func() error {
		out := suite.NewCounter(im.Lines, w.Responses())
		in := &holdReader{r: bytes.NewReader(input), hold: out.Done()}
		if err := serve(ctx, in, out); err != nil {
			return err
		}
		if n, _ := out.Count(); n != w.Responses() {
			return fmt.Errorf("%d responses, want %d", n, w.Responses())
		}
		return nil
	}
	// Check the output once, outside the measurement.
	out := new(bytes.Buffer)
	counter := suite.NewCounter(im.Lines, w.Responses())
	if err := serve(ctx, &holdReader{r: bytes.NewReader(input), hold: counter.Done()}, nopCloser{io.MultiWriter(out, counter)}); err != nil {
		b.Fatal(err)
	}
	if _, err := w.Validate(out); err != nil {
		b.Fatal(err)
	}
	out = nil

	var peak uint64
	if w.Big > 0 {
		b.SetBytes(int64(len(input)))
		var err error
		if peak, err = peakHeap(serveOnce); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportAllocs()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for b.Loop() {
		if err := serveOnce(); err != nil {
			b.Fatal(err)
		}
	}
	runtime.ReadMemStats(&after)
	perOp(b, w.Requests(), "req", &before, &after)
	b.ReportMetric(float64(b.N)*float64(w.Requests())/b.Elapsed().Seconds(), "req/s")
	if w.Big > 0 {
		b.ReportMetric(float64(peak)/(1<<20), "peak-heap-MiB")
	}
}

// serveScan serves line, a Scan input, through im into out and counter,
// holding the end of the input until counter has seen the one response.
func serveScan(im *impl, line []byte, out io.Writer, counter *suite.Counter) error {
	in := &holdReader{r: bytes.NewReader(line), hold: counter.Done()}
	return im.serve(context.Background(), in, nopCloser{out})
}

// benchScan measures im serving the one line of the Scan input in with a
// string of n bytes, in bytes of input per second. The answer of one
// untimed run is checked in full (the echoed string comes back exactly,
// or the error is a Parse error with a null id); the timed runs check
// that they wrote one response of the same length.
func benchScan(b *testing.B, im *impl, in suite.ScanInput, n int) {
	line := in.Line(n)
	var want []byte
	if !in.Invalid {
		want = in.Params(n)
	}
	out := new(bytes.Buffer)
	counter := suite.NewCounter(im.Lines, 1)
	if err := serveScan(im, line, io.MultiWriter(out, counter), counter); err != nil {
		b.Fatal(err)
	}
	if err := in.ValidateScan(out, want); err != nil {
		b.Fatal(err)
	}
	_, size := counter.Count()
	out, want = nil, nil

	b.SetBytes(int64(len(line)))
	b.ReportAllocs()
	for b.Loop() {
		counter := suite.NewCounter(im.Lines, 1)
		if err := serveScan(im, line, counter, counter); err != nil {
			b.Fatal(err)
		}
		if got, m := counter.Count(); got != 1 || m != size {
			b.Fatalf("%d responses of %d bytes in all, want 1 of %d", got, m, size)
		}
	}
}

type nopCloser struct{ io.Writer }

func (nopCloser) Close() error { return nil }

func BenchmarkRoundTrip(b *testing.B) {
	for _, mode := range netModes {
		for _, im := range impls() {
			if im.newClient == nil {
				continue
			}
			b.Run(mode.name+"/"+im.Name, func(b *testing.B) {
				c, stop := dialPipe(b, im)
				defer stop()
				runCalls(b, c, mode)
			})
		}
	}
}

// callsPerGoroutine is how many calls each of the concurrent callers makes
// per iteration of the par64 benchmarks.
const callsPerGoroutine = 16

// pipePair joins a server and its client by two io.Pipes. stop ends the
// client's requests, waits for the server to return and closes the
// client, each for at most 30 s.
func pipePair[C interface{ Close() error }](tb testing.TB, name string, serve serveFunc, dial func(io.Reader, io.WriteCloser) C) (C, func()) {
	sr, cw := io.Pipe() // client to server
	cr, sw := io.Pipe() // server to client
	served := make(chan error, 1)
	go func() {
		err := serve(context.Background(), sr, sw)
		sw.Close()
		served <- err
	}()
	c := dial(cr, cw)
	return c, func() {
		cw.Close()
		closed := make(chan struct{})
		go func() { c.Close(); close(closed) }()
		timeout := time.After(30 * time.Second)
		select {
		case err := <-served:
			if err != nil && !errors.Is(err, io.ErrClosedPipe) {
				tb.Errorf("%s server: %v", name, err)
			}
		case <-timeout:
			tb.Errorf("%s server did not stop", name)
		}
		select {
		case <-closed:
		case <-timeout:
			tb.Errorf("%s client did not close", name)
		}
		sr.Close()
		cr.Close()
	}
}
