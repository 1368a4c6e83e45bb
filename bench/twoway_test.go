package bench_test

// The two-way workload (suite/twoway.go), in process:
//
//   BenchmarkTwoWay/seq/<impl>     one caller on side A, one outer call at a time
//   BenchmarkTwoWay/par64/<impl>   64 goroutines on side A calling at once
//
// Side A calls outer on side B; B's handler calls inner back on A over the
// same connection before it answers. A and B are joined by two io.Pipes,
// with each library's framing of the other benchmarks. Figures are per
// outer call, which is two round trips: outer and, inside it, inner.

import (
	"context"
	"errors"
	"io"
	"runtime"
	"sync"
	"testing"

	"github.com/ndjsonrpc/jsonrpc/bench/impl/jrpc2impl"
	"github.com/ndjsonrpc/jsonrpc/bench/impl/sourcegraphimpl"
	"github.com/ndjsonrpc/jsonrpc/bench/impl/xexpimpl"
	"github.com/ndjsonrpc/jsonrpc/bench/suite"
)

// twoWayCaller is side A: it calls outer and answers inner.
type twoWayCaller interface {
	Outer(ctx context.Context, a, b int) (int, error)
	Close() error
}

// twoWayImpl is one implementation of both sides of the two-way workload.
type twoWayImpl struct {
	name  string
	serve func(ctx context.Context, r io.Reader, w io.WriteCloser) error // side B
	dial  func(r io.Reader, w io.WriteCloser) twoWayCaller               // side A
}

var twoWayRegistered = map[string]*twoWayImpl{}

func registerTwoWay(name string, serve func(context.Context, io.Reader, io.WriteCloser) error, dial func(io.Reader, io.WriteCloser) twoWayCaller) {
	if _, ok := suite.LookupImpl(name); !ok {
		panic("unknown implementation " + name)
	}
	twoWayRegistered[name] = &twoWayImpl{name: name, serve: serve, dial: dial}
}

func init() {
	registerTwoWay("jrpc2", jrpc2impl.ServeTwoWay,
		func(r io.Reader, w io.WriteCloser) twoWayCaller { return jrpc2impl.NewTwoWayClient(r, w) })
	registerTwoWay("sourcegraph", sourcegraphimpl.ServeTwoWay,
		func(r io.Reader, w io.WriteCloser) twoWayCaller { return sourcegraphimpl.NewTwoWayClient(r, w) })
	registerTwoWay("xexp", xexpimpl.ServeTwoWay,
		func(r io.Reader, w io.WriteCloser) twoWayCaller { return xexpimpl.NewTwoWayClient(r, w) })
}

// twoWayImpls returns the registered two-way implementations in table order.
func twoWayImpls() []*twoWayImpl { return inTableOrder(twoWayRegistered) }

// twoWayPair joins side A (the client) and side B (the server) of im by
// two io.Pipes. stop ends B's input, waits for B to return and closes A.
func twoWayPair(tb testing.TB, im *twoWayImpl) (a twoWayCaller, stop func()) {
	return pipePair(tb, im.name, im.serve, im.dial)
}

// checkOuter calls outer(x, 3) on a and checks the answer.
func checkOuter(ctx context.Context, a twoWayCaller, x int) error {
	want := suite.TwoWayOuterResult(suite.TwoWayInnerResult(suite.TwoWayParams{A: x, B: 3}))
	v, err := a.Outer(ctx, x, 3)
	if err != nil {
		return err
	}
	if v != want {
		return errors.New("wrong answer")
	}
	return nil
}

// outerCalls makes par goroutines call outer calls times each, all at once,
// every answer checked; the first failure is returned.
func outerCalls(ctx context.Context, a twoWayCaller, par, calls int) error {
	var wg sync.WaitGroup
	errs := make(chan error, par)
	for g := range par {
		wg.Go(func() {
			for k := range calls {
				x := g*1000 + k
				if err := checkOuter(ctx, a, x); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	return <-errs
}

// TestTwoWay checks every implementation of the two-way workload, one
// caller and 64 at once.
func TestTwoWay(t *testing.T) {
	for _, im := range twoWayImpls() {
		t.Run(im.name, func(t *testing.T) {
			a, stop := twoWayPair(t, im)
			defer stop()
			ctx := context.Background()
			for x := range 10 {
				if err := checkOuter(ctx, a, x); err != nil {
					t.Fatalf("outer(%d, 3): %v", x, err)
				}
			}
			if err := outerCalls(ctx, a, 64, 4); err != nil {
				t.Fatalf("64 callers: %v", err)
			}
		})
	}
}

func BenchmarkTwoWay(b *testing.B) {
	for _, mode := range []struct {
		name string
		par  int
	}{{"seq", 1}, {"par64", 64}} {
		for _, im := range twoWayImpls() {
			b.Run(mode.name+"/"+im.name, func(b *testing.B) { benchTwoWay(b, im, mode.par) })
		}
	}
}

func benchTwoWay(b *testing.B, im *twoWayImpl, par int) {
	ctx := context.Background()
	a, stop := twoWayPair(b, im)
	defer stop()
	if err := checkOuter(ctx, a, 10); err != nil {
		b.Fatalf("outer(10, 3): %v", err)
	}

	b.ReportAllocs()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	n := 0
	if par == 1 {
		n = 1
		x := 0
		for b.Loop() {
			x++
			if err := checkOuter(ctx, a, x); err != nil {
				b.Fatalf("outer(%d, 3): %v", x, err)
			}
		}
	} else {
		n = par * callsPerGoroutine
		for b.Loop() {
			if err := outerCalls(ctx, a, par, callsPerGoroutine); err != nil {
				b.Fatal(err)
			}
		}
	}
	runtime.ReadMemStats(&after)
	perOp(b, n, "call", &before, &after)
}
