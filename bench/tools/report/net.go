package main

// The network round trips (BenchmarkHTTP and BenchmarkSocket of
// net_test.go) get tables of their own: their columns are not the stream
// implementations of the main table (go-ethereum's rpc package is a peer
// over HTTP only; ours runs over TCP and over io.Pipe). Their targets are
// checked with the others (targets.go).

import (
	"fmt"
	"io"
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

// printNet writes the network tables, as plain text or Markdown, if the
// input has any of their results.
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
}
