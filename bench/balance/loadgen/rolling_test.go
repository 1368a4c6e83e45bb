package main

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ndjsonrpc/jsonrpc"
)

// errSentClosed is the error of a call whose request was written before
// its connection broke: it may have run.
func errSentClosed(t *testing.T) error {
	t.Helper()
	a, b := net.Pipe()
	c := jsonrpc.NewConn(a, a, nil)
	defer c.Close()
	go func() {
		// The peer reads the request, then closes without an answer.
		_, _ = bufio.NewReader(b).ReadString('\n')
		_ = b.Close()
	}()
	err := c.Call(context.Background(), "sum", []int{1}, nil)
	if err == nil || !jsonrpc.MayHaveRun(err) {
		t.Fatalf("the call failed with %v, want an error that may have run", err)
	}
	return err
}

// TestCheckRolling checks the checks of a rolling-restart run on made-up
// outcomes: each broken rule must fail the run, and a run that keeps them
// must pass.
func TestCheckRolling(t *testing.T) {
	notRun := jsonrpc.ErrNotRun.WithData(map[string]string{"reason": "stopping"})
	sent := errSentClosed(t)
	cfg := &config{mode: "tcp", backends: []string{"b1", "b2", "b3"}, methods: []string{"subtract", "sum"}, idempotent: []string{"subtract"}}
	// Calls 0 to 9: subtract on even numbers, sum on odd ones; ok unless
	// a failure is given for the call.
	outcome := func(failures map[int64]error) [][]sample {
		var own []sample
		for i := range int64(10) {
			x := sample{i: i, method: cfg.method(i), backend: "b1"}
			if err := failures[i]; err != nil {
				x.kind, x.err, x.notRun = classify(err), err, !jsonrpc.MayHaveRun(err)
			}
			own = append(own, x)
		}
		return [][]sample{own}
	}
	// counts: the old b1 ran subtract and sum as given, the others one
	// call each so that they ran calls before their restart.
	counts := func(subtract, sum int) []processCount {
		return []processCount{
			{name: "b1", ran: map[string]int{"subtract": subtract - 2, "sum": sum - 2}},
			{name: "b2", ran: map[string]int{"subtract": 1, "sum": 1}},
			{name: "b3", ran: map[string]int{"subtract": 1, "sum": 1}},
			{name: "b1", ran: map[string]int{}},
		}
	}
	for _, tc := range []struct {
		name     string
		failures map[int64]error
		counts   []processCount
		want     string // in a failure; "" for none
	}{
		{"all answered", nil, counts(5, 5), ""},
		{"sum not run, or refused", map[int64]error{1: notRun, 3: jsonrpc.ErrOverloaded}, counts(5, 3), ""},
		{"an HTTP 500 may have run", map[int64]error{1: &jsonrpc.HTTPError{StatusCode: 500}}, counts(5, 4), ""},
		{"sum may have run, and did", map[int64]error{1: sent}, counts(5, 5), ""},
		{"sum may have run, and did not", map[int64]error{1: sent}, counts(5, 4), ""},
		{"idempotent subtract made twice", nil, counts(7, 5), ""},
		{"an idempotent call failed", map[int64]error{0: notRun}, counts(4, 5), "idempotent method subtract failed"},
		{"a not-run sum ran", map[int64]error{1: notRun}, counts(5, 5), "a call said not to have run ran"},
		{"more sums ran than were made", nil, counts(5, 6), "more than the 5 answered"},
		{"fewer ran than answered", nil, counts(5, 4), "fewer than the 5 answered"},
		{"a wrong answer", map[int64]error{1: fmt.Errorf("%w: sum", errCheck)}, counts(5, 4), "unclassified"},
		{"a deadline", map[int64]error{1: fmt.Errorf("%w", context.DeadlineExceeded)}, counts(5, 4), "unclassified"},
		{"an old process ran nothing", nil, append(counts(5, 5)[:1:1], processCount{name: "b2", ran: map[string]int{}}, processCount{name: "b3", ran: map[string]int{"sum": 2, "subtract": 2}}), "ran no call before its restart"},
		{"a backend without a count", nil, counts(5, 5)[:2], "no count for backend b3"},
	} {
		s := &summary{}
		checkRolling(cfg, s, outcome(tc.failures), tc.counts)
		got := strings.Join(s.failures, "; ")
		switch {
		case tc.want == "" && got != "":
			t.Errorf("%s: failures %q, want none", tc.name, got)
		case tc.want != "" && !strings.Contains(got, tc.want):
			t.Errorf("%s: failures %q, want one saying %q", tc.name, got, tc.want)
		}
	}
}

// TestReadCounts reads the counts file of run.sh and the -count lines of
// cmd/jsonrpc-demo.
func TestReadCounts(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string) string {
		t.Helper()
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	b1 := write("b1-1.log", "some line\njsonrpc-demo: ran backend=3 subtract=10 sum=7\n")
	b2 := write("b2-2.log", "jsonrpc-demo: ran nothing\n")
	list := write("counts", "b1 "+b1+"\nb2 "+b2+"\n")
	got, err := readCounts(list)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0].name != "b1" || got[0].ran["subtract"] != 10 || got[0].ran["sum"] != 7 || len(got[1].ran) != 0 {
		t.Errorf("readCounts = %+v", got)
	}

	// A process that did not exit cleanly has no count line: that fails.
	b3 := write("b3-3.log", "killed\n")
	if _, err := readCounts(write("counts2", "b3 "+b3+"\n")); err == nil {
		t.Error("readCounts of a log without a count line: no error")
	}
	if _, err := readCounts(write("counts3", "")); err == nil {
		t.Error("readCounts of an empty list: no error")
	}
}
