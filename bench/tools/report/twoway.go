package main

// The two-way table: BenchmarkTwoWay's figures (see twoway_test.go), in a
// table of their own, since the floor has no two-way side to compare with.
// Each cell is the median and its ratio to the fastest peer.

import (
	"fmt"
	"io"

	"github.com/ndjsonrpc/jsonrpc/bench/suite"
)

const twoWayGroup = "two-way (io.Pipe): A calls outer on B, whose handler calls inner back on A"

func twoWayRows() []row {
	var rs []row
	for _, m := range []struct{ name, label string }{{"seq", "sequential"}, {"par64", "64 callers"}} {
		rs = append(rs,
			row{twoWayGroup, m.label + " time", "TwoWay/" + m.name, "ns/call", 1, "ns/outer call"},
			row{twoWayGroup, m.label + " allocs", "TwoWay/" + m.name, "allocs/call", 1, "allocs/outer call"},
		)
	}
	return rs
}

// twoWayTable builds the two-way table from s, with a column for every
// implementation that ran it; it returns no rows if none did.
func twoWayTable(s samples) (header []string, table [][]string, groups []string) {
	var impls []suite.Impl
	for _, im := range suite.Impls {
		if _, ok := s["TwoWay/seq/"+im.Name]; ok {
			impls = append(impls, im)
		} else if _, ok := s["TwoWay/par64/"+im.Name]; ok {
			impls = append(impls, im)
		}
	}
	header = []string{"measurement"}
	for _, im := range impls {
		header = append(header, im.Name)
	}
	for _, r := range twoWayRows() {
		vals := map[string]float64{}
		for _, im := range impls {
			if m, ok := median(s[r.bench+"/"+im.Name][r.unit]); ok {
				vals[im.Name] = m
			}
		}
		if len(vals) == 0 {
			continue
		}
		best, ok := 0.0, false
		for _, im := range impls {
			if v, has := vals[im.Name]; has && im.Peer && (!ok || v < best) {
				best, ok = v, true
			}
		}
		line := []string{r.label + " (" + r.show + ")"}
		for _, im := range impls {
			v, has := vals[im.Name]
			if !has {
				line = append(line, "n/a")
				continue
			}
			line = append(line, fmt.Sprintf("%s (%s×P)", num(v*r.scale), ratio(v, best, ok)))
		}
		table = append(table, line)
		groups = append(groups, r.group)
	}
	return header, table, groups
}

const twoWayLegend = "Each cell: median over the runs, then value ÷ fastest peer (×P); lower is better. " +
	"One outer call is two round trips on one connection: outer from A to B and, inside its handler, inner from B to A. " +
	"x/exp/jsonrpc2 serves outer calls one at a time (see impl/xexpimpl/twoway.go)."

// printTwoWay prints the two-way table, if there is one, as text or as
// Markdown.
func printTwoWay(w io.Writer, s samples, markdown bool) {
	header, table, groups := twoWayTable(s)
	if len(table) == 0 {
		return
	}
	fmt.Fprintln(w)
	if markdown {
		printMarkdown(w, header, table, groups)
	} else {
		printText(w, header, table, groups)
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, twoWayLegend)
}
