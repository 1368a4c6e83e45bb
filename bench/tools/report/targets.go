package main

// The targets of the performance issues for our library, each checked
// against the medians of one run: a line PASS or MISS with the figure and
// the target, on standard output and (with -targets) as a Markdown table.
// A target whose figures are missing reads n/a, and fails the report when
// -check is set: a check that cannot be made has rotted.

import (
	"fmt"
	"io"
	"math"
	"os"
	"sort"
	"strconv"
	"strings"

	"github.com/ndjsonrpc/jsonrpc/bench/suite"
)

// result is the outcome of one check.
type result struct {
	issue string // the issue that set the target
	what  string
	limit string // the target, as it reads
	got   string // the figure, with what it was compared to
	state string // "PASS", "MISS", "n/a" (figures missing) or "SKIP" (not checked)
}

// checker evaluates the targets against s; base, if not empty, is an
// earlier run's samples, for the target that figures stay within 5% of
// before.
type checker struct {
	s, base samples
	out     []result
}

func (c *checker) add(issue, what, limit, got string, pass bool) {
	state := "MISS"
	if pass {
		state = "PASS"
	}
	c.out = append(c.out, result{issue, what, limit, got, state})
}

func (c *checker) na(issue, what, limit, why string) {
	c.out = append(c.out, result{issue, what, limit, why, "n/a"})
}

// med returns the median of unit for bench/impl.
func (c *checker) med(bench, impl, unit string) (float64, bool) {
	return median(c.s[bench+"/"+impl][unit])
}

// bestPeer returns the best median of unit among peers (the lowest, or the
// highest if higher is set) and its implementation's name.
func (c *checker) bestPeer(bench, unit string, peers []string, higher bool) (float64, string, bool) {
	best, name := 0.0, ""
	for _, p := range peers {
		v, ok := c.med(bench, p, unit)
		if ok && (name == "" || (higher && v > best) || (!higher && v < best)) {
			best, name = v, p
		}
	}
	return best, name, name != ""
}

// streamPeers are the peers of the stream benchmarks.
func streamPeers() []string {
	var ps []string
	for _, im := range suite.Impls {
		if im.Peer {
			ps = append(ps, im.Name)
		}
	}
	return ps
}

// floorRatio checks that ours ÷ floor of unit in bench is at most limit.
func (c *checker) floorRatio(issue, what, bench, unit string, limit float64) {
	show := "≤ " + strconv.FormatFloat(limit, 'g', -1, 64) + "×F"
	ours, ok1 := c.med(bench, "ours", unit)
	floor, ok2 := c.med(bench, "floor", unit)
	if !ok1 || !ok2 || floor == 0 {
		c.na(issue, what, show, "figures missing")
		return
	}
	c.add(issue, what, show, ratio(ours, floor, true)+"×F", ours <= limit*floor)
}

// atMost checks that ours' median of unit in bench is at most limit.
func (c *checker) atMost(issue, what, bench, unit string, limit float64) {
	show := "≤ " + strconv.FormatFloat(limit, 'g', -1, 64)
	ours, ok := c.med(bench, "ours", unit)
	if !ok {
		c.na(issue, what, show, "figure missing")
		return
	}
	c.add(issue, what, show, exact(ours), within(ours, limit, unit))
}

// aboveFloor checks that ours exceeds the floor's figure of bench in unit
// by at most limit, the excess shown by show.
func (c *checker) aboveFloor(issue, what, bench, unit string, limit float64, show func(float64) string) {
	lim := "≤ " + strconv.FormatFloat(limit, 'g', -1, 64)
	ours, ok1 := c.med(bench, "ours", unit)
	floor, ok2 := c.med(bench, "floor", unit)
	if !ok1 || !ok2 {
		c.na(issue, what, lim, "figures missing")
		return
	}
	c.add(issue, what, lim, fmt.Sprintf("%s (%s against %s)", show(ours-floor), num(ours), num(floor)), within(ours-floor, limit, unit))
}

// allocSlack is the part of a limit on allocations per request or per
// call that a figure may exceed it by: the loop's one-time allocations
// (a buffer grown, a pool filled), spread over its iterations, make 4 per
// call read 4.005.
const allocSlack = 0.005

// within reports whether v is at most limit, with allocSlack for
// allocation counts.
func within(v, limit float64, unit string) bool {
	if strings.HasPrefix(unit, "allocs/") {
		return v <= limit*(1+allocSlack)
	}
	return v <= limit
}

// exact formats v with four significant digits, so that a figure just
// over a limit such as 0.01 or 4 does not read as the limit itself.
func exact(v float64) string {
	return strconv.FormatFloat(v, 'g', 4, 64)
}

// check evaluates every target.
func (c *checker) check() {
	// Issue 20: the smallest footprint of any peer.
	for _, w := range []string{"W1echo", "W2typed", "W3batch", "W4notify"} {
		bench := "Process/" + w
		ours, ok := c.med(bench, "ours", "maxrss-MiB")
		what := w + ", whole process: peak RSS below every peer's"
		best, name, okP := c.bestPeer(bench, "maxrss-MiB", streamPeers(), false)
		if !ok || !okP {
			c.na("20", what, "< 1×P", "figures missing")
		} else {
			c.add("20", what, "< 1×P", fmt.Sprintf("%s MiB, %s× %s's %s", num(ours), ratio(ours, best, true), name, num(best)), ours < best)
		}
		what = w + ", whole process: peak RSS at most 2× the floor's"
		floor, okF := c.med(bench, "floor", "maxrss-MiB")
		if !ok || !okF || floor == 0 {
			c.na("20", what, "≤ 2×F", "figures missing")
		} else {
			c.add("20", what, "≤ 2×F", fmt.Sprintf("%s MiB, %s×F (%s)", num(ours), ratio(ours, floor, true), num(floor)), ours <= 2*floor)
		}
	}
	c.floorRatio("20", "W1 echo, whole process: time", "Process/W1echo", "ns/op", 1.6)
	c.floorRatio("20", "W4 notifications, whole process: time", "Process/W4notify", "ns/op", 2.5)
	c.atMost("20", "W1 echo, in process: allocations per request", "Server/W1echo", "allocs/req", 0.01)
	c.atMost("20", "W4 notifications, in process: allocations per request", "Server/W4notify", "allocs/req", 0.01)
	c.floorRatio("20", "W2 typed through Func (encoding/json), in process: time", "Server/W2typed", "ns/req", 4)
	c.floorRatio("20", "round trip, one caller: time per call", "RoundTrip/seq", "ns/call", 1.5)
	c.floorRatio("20", "round trip, 64 callers: time per call", "RoundTrip/par64", "ns/call", 1)
	c.atMost("20", "round trip, one caller: allocations per call", "RoundTrip/seq", "allocs/call", 4)
	// The 64 callers' goroutines are the benchmark's own, and allocate
	// for ours as they do for the floor, which allocates nothing else:
	// the floor's figure is taken off.
	c.aboveFloor("20", "round trip, 64 callers: allocations per call, beyond the floor's (the benchmark's goroutines)",
		"RoundTrip/par64", "allocs/call", 4, exact)
	for _, m := range netModes {
		bench := "HTTP/" + m.name
		c.aboveFloor("20", "HTTP, "+m.label+": the library's allocations per call above the net/http floor's",
			bench, "allocs/call", 20, num)
		what := "HTTP, " + m.label + ": calls/s of ours ÷ geth's"
		ours, ok1 := c.med(bench, "ours", "calls/s")
		geth, ok2 := c.med(bench, "geth", "calls/s")
		if !ok1 || !ok2 || geth == 0 {
			c.na("20", what, "≥ 1.6×", "figures missing")
		} else {
			c.add("20", what, "≥ 1.6×", fmt.Sprintf("%s× (%s against %s)", ratio(ours, geth, true), num(ours), num(geth)), ours >= 1.6*geth)
		}
	}
	c.before()

	// Earlier issues' targets that issue 20 leaves standing.
	c.floorRatio("earlier", "W3 batch, whole process: time", "Process/W3batch", "ns/op", 2)
	c.floorRatio("earlier", "W5 big, whole process: time", "Process/W5big", "ns/op", 2)
	c.floorRatio("earlier", "W5 big, in process: time", "Server/W5big", "ns/req", 2)
	c.atMost("earlier", "W5 big, in process: peak heap in MiB (3× the 256 KiB message)", "Server/W5big", "peak-heap-MiB", 0.75)
	{
		what := "round trip, 64 callers: time per call ÷ the fastest peer's"
		ours, ok := c.med("RoundTrip/par64", "ours", "ns/call")
		best, name, okP := c.bestPeer("RoundTrip/par64", "ns/call", streamPeers(), false)
		if !ok || !okP || best == 0 {
			c.na("earlier", what, "≤ 1/3×P", "figures missing")
		} else {
			c.add("earlier", what, "≤ 1/3×P", fmt.Sprintf("%s×P (%s)", ratio(ours, best, true), name), 3*ours <= best)
		}
	}
	small, large := suite.ScanSizes[0], suite.ScanSizes[len(suite.ScanSizes)-1]
	for _, in := range suite.ScanInputs {
		what := fmt.Sprintf("Scan%s, in process: time per byte at %s ÷ at %s", in.Name, large.Name, small.Name)
		a, ok1 := c.med("Server/"+in.BenchName(small), "ours", "MB/s")
		b, ok2 := c.med("Server/"+in.BenchName(large), "ours", "MB/s")
		if !ok1 || !ok2 || b == 0 {
			c.na("earlier", what, "≤ 2×", "figures missing")
			continue
		}
		c.add("earlier", what, "≤ 2×", fmt.Sprintf("%s× (%s → %s MB/s)", ratio(a, b, true), num(a), num(b)), a <= 2*b)
	}
	for _, m := range netModes {
		what := "socket, " + m.label + ": time per call over TCP ÷ over io.Pipe"
		tcp, ok1 := c.med("Socket/"+m.name, "ours", "ns/call")
		pipe, ok2 := c.med("Socket/"+m.name, "ours-pipe", "ns/call")
		if !ok1 || !ok2 || pipe == 0 {
			c.na("earlier", what, "≤ 1.2×", "figures missing")
			continue
		}
		got := ratio(tcp, pipe, true) + "×"
		// The floor's own ratio is what the network costs a call.
		ftcp, ok1 := c.med("Socket/"+m.name, "floor", "ns/call")
		fpipe, ok2 := c.med("Socket/"+m.name, "floor-pipe", "ns/call")
		if ok1 && ok2 && fpipe > 0 {
			got += " (the floor's: " + ratio(ftcp, fpipe, true) + "×)"
		}
		c.add("earlier", what, "≤ 1.2×", got, tcp <= 1.2*pipe)
	}
}

// higherIsBetter lists the units of which a higher value is better.
var higherIsBetter = map[string]bool{"MB/s": true, "calls/s": true, "req/s": true}

// before checks issue 20's last target: every figure of ours (every
// benchmark whose implementation is ours, ours-pipe or ours-conn, every
// unit) within 5% of an earlier run's, or better. Allocation counts
// differ only by 0.05 or more. Without an earlier run it reads n/a.
func (c *checker) before() {
	const what = "every figure of ours within 5% of the baseline run's, or better"
	if len(c.base) == 0 {
		c.out = append(c.out, result{"20", what, "≤ 1.05×", "not checked: no baseline run given (BASELINE, see README)", "SKIP"})
		return
	}
	type worse struct {
		name string
		by   float64
	}
	var ws []worse
	n := 0
	for name, units := range c.s {
		impl := name[strings.LastIndexByte(name, '/')+1:]
		if impl != "ours" && impl != "ours-pipe" && impl != "ours-conn" {
			continue
		}
		for unit, vs := range units {
			now, ok1 := median(vs)
			was, ok2 := median(c.base[name][unit])
			if !ok1 || !ok2 || was == 0 || unit == "B/op" || unit == "allocs/op" {
				continue
			}
			n++
			r := now / was
			if higherIsBetter[unit] {
				r = was / now
			}
			if strings.HasPrefix(unit, "allocs/") && math.Abs(now-was) < 0.05 {
				continue
			}
			if r > 1.05 {
				ws = append(ws, worse{name + " " + unit, r})
			}
		}
	}
	if n == 0 {
		c.na("20", what, "≤ 1.05×", "no figure of ours in both runs")
		return
	}
	sort.Slice(ws, func(i, j int) bool { return ws[i].by > ws[j].by })
	got := fmt.Sprintf("%d of %d figures worse by more than 5%%", len(ws), n)
	for i, w := range ws {
		if i == 5 {
			got += ", …"
			break
		}
		sep := ": "
		if i > 0 {
			sep = ", "
		}
		got += fmt.Sprintf("%s%s %s×", sep, w.name, ratio(w.by, 1, true))
	}
	c.add("20", what, "≤ 1.05×", got, len(ws) == 0)
}

// printChecks writes the results as lines of text, the outcome first.
func printChecks(w io.Writer, rs []result) {
	for _, r := range rs {
		fmt.Fprintf(w, "%-4s  %s: %s (target %s, %s)\n", r.state, r.what, r.got, r.limit, issueName(r.issue))
	}
}

// writeChecksMarkdown writes the results as a Markdown table to path.
func writeChecksMarkdown(path string, rs []result) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	fmt.Fprintln(f, "| result | target | limit | ours | set by |")
	fmt.Fprintln(f, "| :---: | --- | --- | --- | --- |")
	for _, r := range rs {
		fmt.Fprintf(f, "| %s | %s | %s | %s | %s |\n", r.state, r.what, r.limit, r.got, issueName(r.issue))
	}
	return f.Close()
}

// issueName says which issue set a target.
func issueName(issue string) string {
	if issue == "earlier" {
		return "an earlier issue"
	}
	return "issue " + issue
}

// summary counts the results by state.
func summary(rs []result) map[string]int {
	n := map[string]int{}
	for _, r := range rs {
		n[r.state]++
	}
	return n
}
