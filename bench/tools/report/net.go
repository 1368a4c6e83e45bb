package main

// The network round trips (BenchmarkHTTP and BenchmarkSocket of
// net_test.go) get tables of their own: their columns are not the stream
// implementations of the main table (go-ethereum's rpc package is a peer
// over HTTP only; ours runs over TCP and over io.Pipe), and their targets
// are checked here.

import (
	"fmt"
	"io"
	"math"
)

// netTable is one table of network round trips: benchmark prefix, columns
// in order, the floor's column and the peers' columns.
type netTable struct {
	title  string
	bench  string // e.g. "HTTP"
	cols   []string
	floor  string
	peers  []string
	legend string
}

var netTables = []netTable{
	{
		title: "HTTP round trip (loopback, keep-alive)",
		bench: "HTTP",
		cols:  []string{"floor", "ours", "jrpc2", "geth"},
		floor: "floor",
		peers: []string{"jrpc2", "geth"},
		legend: "floor: a hand-written net/http handler and client (bench/httpfloor); ours: Server.ServeHTTP and HTTPClient; " +
			"jrpc2: jhttp.Bridge and jhttp.Channel; geth: go-ethereum's rpc package (Server.ServeHTTP, DialOptions over HTTP). " +
			"×F: value ÷ floor's, ×P: value ÷ fastest peer's (jrpc2, geth). For calls/s higher is better, so ×P there is how many " +
			"times the fastest peer's rate ours reaches. CPU: the whole process's user+sys time per call (client, server, kernel, " +
			"collector), which the load of other processes moves less than the time. Allocations and bytes are those of client and server together.",
	},
	{
		title: "Socket round trip (one loopback TCP connection)",
		bench: "Socket",
		cols:  []string{"ours-pipe", "ours", "ours-conn", "floor-pipe", "floor", "jrpc2", "sourcegraph", "xexp"},
		floor: "floor",
		peers: []string{"jrpc2", "sourcegraph", "xexp"},
		legend: "ours: jsonrpc.Dial to Server.ServeListener over TCP; ours-conn: Server.Serve and NewClient on the two ends of one TCP " +
			"connection (no listener code); ours-pipe: the same over two io.Pipes, no network; floor-pipe: the floor over two io.Pipes. The floor and the peers run their " +
			"stream server and client on a TCP connection. ×F: value ÷ floor's (over TCP), ×P: value ÷ fastest peer's (jrpc2, " +
			"sourcegraph, xexp, over TCP).",
	},
}

// netFigure is one row of a network table.
type netFigure struct {
	label, unit, show string
	scale             float64
	higher            bool
}

var netFigures = []netFigure{
	{"time", "ns/call", "µs/call", 1e-3, false},
	{"rate", "calls/s", "calls/s", 1, true},
	{"CPU", "cpu-ns/call", "µs/call", 1e-3, false},
	{"allocs", "allocs/call", "allocs/call", 1, false},
	{"bytes", "B/call", "B/call", 1, false},
}

var netModes = []struct{ name, label string }{{"seq", "one caller"}, {"par64", "64 callers"}}

// netMedian returns the median of unit for bench/mode/impl.
func netMedian(s samples, bench, mode, impl, unit string) (float64, bool) {
	return median(s[bench+"/"+mode+"/"+impl][unit])
}

// printNet writes the network tables and the check of their targets, as
// plain text or Markdown, if the input has any of their results.
func printNet(w io.Writer, s samples, md bool) {
	printed := false
	for _, t := range netTables {
		var header []string
		var table [][]string
		var groups []string
		var cols []string
		for _, c := range t.cols {
			for _, m := range netModes {
				if _, ok := s[t.bench+"/"+m.name+"/"+c]; ok {
					cols = append(cols, c)
					break
				}
			}
		}
		if len(cols) == 0 {
			continue
		}
		header = append([]string{"measurement"}, cols...)
		for _, m := range netModes {
			for _, f := range netFigures {
				vals := map[string]float64{}
				for _, c := range cols {
					if v, ok := netMedian(s, t.bench, m.name, c, f.unit); ok {
						vals[c] = v
					}
				}
				if len(vals) == 0 {
					continue
				}
				floorV, floorOK := vals[t.floor]
				best, bestOK := 0.0, false
				for _, p := range t.peers {
					if v, ok := vals[p]; ok && (!bestOK || (f.higher && v > best) || (!f.higher && v < best)) {
						best, bestOK = v, true
					}
				}
				line := []string{m.label + " " + f.label + " (" + f.show + ")"}
				for _, c := range cols {
					v, ok := vals[c]
					if !ok {
						line = append(line, "n/a")
						continue
					}
					line = append(line, fmt.Sprintf("%s (%s×F, %s×P)", num(v*f.scale), ratio(v, floorV, floorOK), ratio(v, best, bestOK)))
				}
				table = append(table, line)
				groups = append(groups, m.label)
			}
		}
		if printed || !md {
			fmt.Fprintln(w)
		}
		printed = true
		if md {
			fmt.Fprintf(w, "### %s\n\n", t.title)
			printMarkdown(w, header, table, groups)
		} else {
			fmt.Fprintln(w, "== "+t.title)
			printText(w, header, table, groups)
		}
		fmt.Fprintln(w)
		fmt.Fprintln(w, "Medians over the runs. "+t.legend)
	}
	if printed {
		printNetTargets(w, s, md)
	}
}

// printNetTargets writes the network targets of the issue for our library:
// over HTTP, at least 3× the calls/s of the fastest peer; over a socket,
// time per call within 1.2× that over io.Pipe.
func printNetTargets(w io.Writer, s samples, md bool) {
	type line struct{ what, limit, got, met string }
	var lines []line
	yes := func(ok bool) string {
		if ok {
			return "yes"
		}
		return "no"
	}
	for _, m := range netModes {
		ours, ok := netMedian(s, "HTTP", m.name, "ours", "calls/s")
		best, bestName := 0.0, ""
		for _, p := range netTables[0].peers {
			if v, ok := netMedian(s, "HTTP", m.name, p, "calls/s"); ok && v > best {
				best, bestName = v, p
			}
		}
		what := "HTTP, " + m.label + ": calls/s of ours ÷ the fastest peer's"
		if !ok || bestName == "" {
			lines = append(lines, line{what, "≥ 3×", "n/a", "–"})
			continue
		}
		got := fmt.Sprintf("%s× (%s against %s's %s)", ratio(ours, best, true), num(ours), bestName, num(best))
		// No library on net/http can do better than the floor.
		if floor, ok := netMedian(s, "HTTP", m.name, "floor", "calls/s"); ok {
			got += fmt.Sprintf("; the floor's: %s×", ratio(floor, best, true))
		}
		lines = append(lines, line{what, "≥ 3×", got, yes(ours >= 3*best)})
	}
	// The same goal in CPU time: the calls a second ours would make over
	// the peer's where the CPU, not the wait, is what limits them.
	for _, m := range netModes {
		ours, ok := netMedian(s, "HTTP", m.name, "ours", "cpu-ns/call")
		best, bestName := math.Inf(1), ""
		for _, p := range netTables[0].peers {
			if v, ok := netMedian(s, "HTTP", m.name, p, "cpu-ns/call"); ok && v < best {
				best, bestName = v, p
			}
		}
		if !ok || bestName == "" || ours == 0 {
			continue
		}
		what := "HTTP, " + m.label + ": CPU per call of the most frugal peer ÷ ours'"
		got := fmt.Sprintf("%s× (%s µs against %s's %s µs)", ratio(best, ours, true), num(ours*1e-3), bestName, num(best*1e-3))
		if floor, ok := netMedian(s, "HTTP", m.name, "floor", "cpu-ns/call"); ok && floor > 0 {
			got += fmt.Sprintf("; the floor's: %s×", ratio(best, floor, true))
		}
		lines = append(lines, line{what, "≥ 3×", got, yes(best >= 3*ours)})
	}
	for _, m := range netModes {
		tcp, ok1 := netMedian(s, "Socket", m.name, "ours", "ns/call")
		pipe, ok2 := netMedian(s, "Socket", m.name, "ours-pipe", "ns/call")
		what := "socket, " + m.label + ": time per call over TCP ÷ over io.Pipe"
		if !ok1 || !ok2 || pipe == 0 {
			lines = append(lines, line{what, "≤ 1.2×", "n/a", "–"})
			continue
		}
		got := fmt.Sprintf("%s× (%s µs against %s µs)", ratio(tcp, pipe, true), num(tcp*1e-3), num(pipe*1e-3))
		// The floor's own ratio is what the network costs a call.
		ftcp, ok1 := netMedian(s, "Socket", m.name, "floor", "ns/call")
		fpipe, ok2 := netMedian(s, "Socket", m.name, "floor-pipe", "ns/call")
		if ok1 && ok2 && fpipe > 0 {
			got += fmt.Sprintf("; the floor's: %s×", ratio(ftcp, fpipe, true))
		}
		lines = append(lines, line{what, "≤ 1.2×", got, yes(tcp <= 1.2*pipe)})
	}
	for _, m := range netModes {
		ours, ok1 := netMedian(s, "HTTP", m.name, "ours", "allocs/call")
		floor, ok2 := netMedian(s, "HTTP", m.name, "floor", "allocs/call")
		what := "HTTP, " + m.label + ": allocations per call, client and server (reported, no limit)"
		switch {
		case ok1 && ok2:
			lines = append(lines, line{what, "–", fmt.Sprintf("%s (floor %s, so %s above net/http's own)", num(ours), num(floor), num(math.Max(0, ours-floor))), "–"})
		case ok1:
			lines = append(lines, line{what, "–", num(ours), "–"})
		}
	}
	fmt.Fprintln(w)
	if md {
		fmt.Fprintln(w, "### Network targets")
		fmt.Fprintln(w)
		fmt.Fprintln(w, "| target | limit | ours | met |")
		fmt.Fprintln(w, "| --- | --- | ---: | :---: |")
		for _, l := range lines {
			fmt.Fprintf(w, "| %s | %s | %s | %s |\n", l.what, l.limit, l.got, l.met)
		}
		return
	}
	fmt.Fprintln(w, "== Network targets")
	for _, l := range lines {
		fmt.Fprintf(w, "%s: %s (limit %s, met: %s)\n", l.what, l.got, l.limit, l.met)
	}
}
