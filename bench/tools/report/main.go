// Command report reads Go benchmark output (from go test -bench and from
// procbench), takes the median of each figure over its runs, and prints one
// table in which every figure is also shown as a ratio to the floor (×F)
// and to the fastest of the three peer libraries (×P), then the check of
// the performance targets for our library, one line each: PASS, MISS, n/a
// (its figures are missing) or SKIP (not checked).
//
//	report [-check] [-md FILE] [-targets FILE] [-baseline FILE] [-charts DIR] FILE...
//
// The plain-text table and the checks go to standard output; -md also
// writes the table as Markdown, -targets the checks as a Markdown table,
// and -charts the main figures as SVG charts into DIR. -baseline names
// the results of an earlier run (the same kind of output), against which
// the target "every figure within 5% of before" is checked; without it
// that target is skipped. With -check, report fails if a figure is
// missing: every implementation in the input must have, for every
// workload it supports, its whole-process figures (if the input holds
// any) and its in-process ones (likewise), and every target must have its
// figures. A missed target does not fail it.
package main

import (
	"bufio"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"github.com/ndjsonrpc/jsonrpc/bench/suite"
)

// samples maps benchmark name (without "Benchmark" and the -N suffix) and
// unit to the values read.
type samples map[string]map[string][]float64

var procSuffix = regexp.MustCompile(`-\d+$`)

func parse(r io.Reader, s samples) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 4 || !strings.HasPrefix(f[0], "Benchmark") {
			continue
		}
		if _, err := strconv.Atoi(f[1]); err != nil {
			continue
		}
		name := procSuffix.ReplaceAllString(strings.TrimPrefix(f[0], "Benchmark"), "")
		for i := 2; i+1 < len(f); i += 2 {
			v, err := strconv.ParseFloat(f[i], 64)
			if err != nil {
				continue
			}
			if s[name] == nil {
				s[name] = map[string][]float64{}
			}
			s[name][f[i+1]] = append(s[name][f[i+1]], v)
		}
	}
	return sc.Err()
}

func median(v []float64) (float64, bool) {
	if len(v) == 0 {
		return 0, false
	}
	c := append([]float64(nil), v...)
	sort.Float64s(c)
	n := len(c)
	if n%2 == 1 {
		return c[n/2], true
	}
	return (c[n/2-1] + c[n/2]) / 2, true
}

// row is one line of the table: one figure of one benchmark for every
// implementation. Lower is better for every figure shown but rates.
type row struct {
	group string
	label string
	bench string  // benchmark name without the implementation
	unit  string  // unit as reported
	scale float64 // display value = value * scale
	show  string  // unit as displayed
}

// higher reports whether a higher value of r's figure is better: true for
// rates (MB/s, from b.SetBytes).
func (r row) higher() bool { return r.unit == "MB/s" }

// better reports whether v is a better value of r's figure than w.
func (r row) better(v, w float64) bool {
	if r.higher() {
		return v > w
	}
	return v < w
}

func rows() []row {
	var rs []row
	for _, w := range suite.Workloads {
		rs = append(rs, row{"whole process", w.Name + " wall", "Process/" + w.Name, "ns/op", 1e-6, "ms"})
	}
	for _, w := range suite.Workloads {
		rs = append(rs, row{"whole process", w.Name + " CPU (user+sys)", "Process/" + w.Name, "cpu-ms", 1, "ms"})
	}
	// The server's own peak RSS (procbench's maxrss-MiB), for every workload.
	for _, w := range suite.Workloads {
		rs = append(rs, row{"whole process", w.Name + " peak RSS", "Process/" + w.Name, "maxrss-MiB", 1, "MiB"})
	}
	for _, w := range suite.Workloads {
		rs = append(rs, row{"in process, server", w.Name + " time", "Server/" + w.Name, "ns/req", 1, "ns/req"})
	}
	for _, w := range suite.Workloads {
		rs = append(rs, row{"in process, server", w.Name + " allocs", "Server/" + w.Name, "allocs/req", 1, "allocs/req"})
	}
	rs = append(rs, row{"in process, server", "W5big peak heap", "Server/W5big", "peak-heap-MiB", 1, "MiB"})
	for _, m := range []struct{ name, label string }{{"seq", "sequential"}, {"par64", "64 callers"}} {
		rs = append(rs,
			row{"round trip (io.Pipe)", m.label + " time", "RoundTrip/" + m.name, "ns/call", 1, "ns/call"},
			row{"round trip (io.Pipe)", m.label + " allocs", "RoundTrip/" + m.name, "allocs/call", 1, "allocs/call"},
		)
	}
	// The Scan rows come last, so that the rows above keep their places.
	for _, in := range suite.ScanInputs {
		for _, size := range suite.ScanSizes {
			name := in.BenchName(size)
			rs = append(rs, row{"in process, one line with one long string (higher is better)", name + " rate", "Server/" + name, "MB/s", 1, "MB/s"})
		}
	}
	return rs
}

func num(v float64) string {
	a := math.Abs(v)
	switch {
	case a == 0:
		return "0"
	case a >= 100:
		return strconv.FormatFloat(v, 'f', 0, 64)
	case a >= 10:
		return strconv.FormatFloat(v, 'f', 1, 64)
	case a >= 0.01:
		return strconv.FormatFloat(v, 'f', 2, 64)
	default:
		return strconv.FormatFloat(v, 'g', 1, 64)
	}
}

func ratio(v, base float64, ok bool) string {
	if !ok || base == 0 {
		return "–"
	}
	r := v / base
	switch {
	case r >= 100:
		return strconv.FormatFloat(r, 'f', 0, 64)
	case r >= 10:
		return strconv.FormatFloat(r, 'f', 1, 64)
	default:
		return strconv.FormatFloat(r, 'f', 2, 64)
	}
}

func main() {
	mdPath := flag.String("md", "", "also write the table as Markdown to this file")
	targetsPath := flag.String("targets", "", "also write the check of the performance targets as Markdown to this file")
	baselinePath := flag.String("baseline", "", "results of an earlier run, for the target that every figure stays within 5% of before")
	chartsDir := flag.String("charts", "", "also draw the main figures as SVG charts into this directory")
	check := flag.Bool("check", false, "fail if an implementation lacks the figures of a workload it supports")
	flag.Parse()
	s := samples{}
	for _, path := range flag.Args() {
		f, err := os.Open(path)
		if err != nil {
			fatal(err)
		}
		err = parse(f, s)
		f.Close()
		if err != nil {
			fatal(err)
		}
	}

	// Columns: every implementation that appears anywhere in the input.
	var impls []suite.Impl
	for _, im := range suite.Impls {
		for name := range s {
			if strings.HasSuffix(name, "/"+im.Name) {
				impls = append(impls, im)
				break
			}
		}
	}
	if len(impls) == 0 {
		fatal(fmt.Errorf("no benchmark results in the input"))
	}
	if *check {
		if err := checkComplete(s, impls); err != nil {
			fatal(err)
		}
	}

	header := []string{"measurement"}
	for _, im := range impls {
		header = append(header, im.Name)
	}
	var table [][]string
	var groups []string
	maxRuns := 0
	for _, r := range rows() {
		vals := map[string]float64{}
		for _, im := range impls {
			v := s[r.bench+"/"+im.Name][r.unit]
			maxRuns = max(maxRuns, len(v))
			if m, ok := median(v); ok {
				vals[im.Name] = m
			}
		}
		if len(vals) == 0 {
			continue
		}
		floorV, floorOK := vals["floor"]
		bestPeer, peerOK := 0.0, false
		for _, im := range impls {
			if v, ok := vals[im.Name]; ok && im.Peer && (!peerOK || r.better(v, bestPeer)) {
				bestPeer, peerOK = v, true
			}
		}
		line := []string{r.label + " (" + r.show + ")"}
		for _, im := range impls {
			v, ok := vals[im.Name]
			if !ok {
				line = append(line, "n/a")
				continue
			}
			line = append(line, fmt.Sprintf("%s (%s×F, %s×P)", num(v*r.scale), ratio(v, floorV, floorOK), ratio(v, bestPeer, peerOK)))
		}
		table = append(table, line)
		groups = append(groups, r.group)
	}

	legend := fmt.Sprintf("Each cell: median over the runs (up to %d per figure), then (value ÷ floor ×F, value ÷ fastest peer ×P); lower is better everywhere "+
		"except in the rates (MB/s of input), where higher is better and the fastest peer is the one with the highest rate. "+
		"Peers: jrpc2, sourcegraph, xexp. n/a: not run (no batch support; for W2handUnmarshalJSON, no hand-tuned params decoding, a row of ours against the floor; "+
		"for ScanInvalidTail, no Parse error answer to invalid JSON). "+
		"–: ratio undefined (zero).", maxRuns)

	printText(os.Stdout, header, table, groups)
	fmt.Println()
	fmt.Println(legend)
	printTwoWay(os.Stdout, s, false)
	printNet(os.Stdout, s, false)
	if *chartsDir != "" {
		if err := drawCharts(*chartsDir, s); err != nil {
			fatal(err)
		}
	}
	c := &checker{s: s, base: samples{}}
	if *baselinePath != "" {
		f, err := os.Open(*baselinePath)
		if err != nil {
			fatal(err)
		}
		err = parse(f, c.base)
		f.Close()
		if err != nil {
			fatal(err)
		}
	}
	hasOurs := false
	for _, im := range impls {
		hasOurs = hasOurs || im.Name == "ours"
	}
	if hasOurs {
		c.check()
	}
	if *mdPath != "" {
		f, err := os.Create(*mdPath)
		if err != nil {
			fatal(err)
		}
		printMarkdown(f, header, table, groups)
		fmt.Fprintln(f)
		fmt.Fprintln(f, legend)
		printTwoWay(f, s, true)
		printNet(f, s, true)
		if err := f.Close(); err != nil {
			fatal(err)
		}
	}
	if *targetsPath != "" {
		if err := writeChecksMarkdown(*targetsPath, c.out); err != nil {
			fatal(err)
		}
	}
	fmt.Println()
	if !hasOurs {
		fmt.Println("== Targets: not checked, the input has no figures of ours")
		return
	}
	fmt.Println("== Targets")
	printChecks(os.Stdout, c.out)
	n := summary(c.out)
	fmt.Printf("%d PASS, %d MISS, %d n/a, %d SKIP\n", n["PASS"], n["MISS"], n["n/a"], n["SKIP"])
	if *check && n["n/a"] > 0 {
		fatal(fmt.Errorf("%d targets lack their figures", n["n/a"]))
	}
}

// checkComplete reports the figures missing from s: for each kind of
// benchmark present in s (whole process, in process), every
// implementation in impls must have run every workload it supports.
func checkComplete(s samples, impls []suite.Impl) error {
	var missing []string
	for _, kind := range []string{"Process/", "Server/"} {
		present := false
		for name := range s {
			if strings.HasPrefix(name, kind) {
				present = true
				break
			}
		}
		if !present {
			continue
		}
		for _, w := range suite.Workloads {
			for _, im := range impls {
				if name := kind + w.Name + "/" + im.Name; im.Supports(w) && len(s[name]) == 0 {
					missing = append(missing, name)
				}
			}
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("figures missing: %s", strings.Join(missing, ", "))
	}
	return nil
}

func printText(w io.Writer, header []string, table [][]string, groups []string) {
	width := make([]int, len(header))
	for i, h := range header {
		width[i] = len([]rune(h))
	}
	for _, line := range table {
		for i, c := range line {
			width[i] = max(width[i], len([]rune(c)))
		}
	}
	pr := func(cells []string) {
		for i, c := range cells {
			pad := width[i] - len([]rune(c))
			if i == 0 {
				fmt.Fprint(w, c, strings.Repeat(" ", pad))
			} else {
				fmt.Fprint(w, "  ", strings.Repeat(" ", pad), c)
			}
		}
		fmt.Fprintln(w)
	}
	pr(header)
	last := ""
	for k, line := range table {
		if groups[k] != last {
			fmt.Fprintln(w, "-- "+groups[k])
			last = groups[k]
		}
		pr(line)
	}
}

func printMarkdown(w io.Writer, header []string, table [][]string, groups []string) {
	fmt.Fprintln(w, "| "+strings.Join(header, " | ")+" |")
	seps := make([]string, len(header))
	for i := range seps {
		if i == 0 {
			seps[i] = "---"
		} else {
			seps[i] = "---:"
		}
	}
	fmt.Fprintln(w, "| "+strings.Join(seps, " | ")+" |")
	last := ""
	for k, line := range table {
		if groups[k] != last {
			cells := make([]string, len(header))
			cells[0] = "**" + groups[k] + "**"
			fmt.Fprintln(w, "| "+strings.Join(cells, " | ")+" |")
			last = groups[k]
		}
		fmt.Fprintln(w, "| "+strings.Join(line, " | ")+" |")
	}
}

func fatal(err error) {
	fmt.Fprintln(os.Stderr, "report:", err)
	os.Exit(1)
}
