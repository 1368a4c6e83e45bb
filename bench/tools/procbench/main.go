// Command procbench runs the whole-process benchmarks: each implementation
// is a stdio server binary, given a workload file on stdin through a pipe
// while procbench reads its stdout through another pipe and counts the
// responses. It prints one line per timed run in Go benchmark format:
//
//	BenchmarkProcess/<workload>/<impl>-<ncpu> 1 <wall ns> ns/op <cpu> cpu-ms <rss> maxrss-MiB ...
//
// The request stream is closed only once every expected response has
// arrived, as a client would, because some libraries (jrpc2) drop queued
// requests when their input ends.
//
// Before the timed runs, each implementation runs every workload untimed,
// on the same input as the timed runs: once with its whole output checked
// (every id answered once, with the right result) and once more, both
// runs recording an order-independent digest of the responses (see
// suite.Digest). Every timed run computes the digest of its output as it
// reads it and must match the checked run's, or procbench fails. The
// digest hashes each response's raw bytes; if the two untimed runs
// disagree on it (an implementation whose bytes vary from run to run, e.g.
// with map order), the responses are hashed in canonical form instead,
// in the timed runs too, and procbench says so on stderr.
//
// maxrss-MiB is the server's own peak RSS; see peakRSS.
//
// The binary of an implementation is named after it (suite.Impl.Binary),
// but for the row of our library's hand-tuned params decoding, which runs
// cmd/jsonrpc-demo, built as jsonrpc-demo.
//
//	procbench -bin DIR -data DIR [-impls a,b] [-workloads a,b] [-reps N] [-bigreps N]
package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/ndjsonrpc/jsonrpc/bench/suite"
)

func main() {
	binDir := flag.String("bin", "", "directory holding one server binary per implementation, named after it (required)")
	dataDir := flag.String("data", "", "directory written by gen (required)")
	implList := flag.String("impls", "", "comma-separated implementations (default: all)")
	workList := flag.String("workloads", "", "comma-separated workloads (default: all in the manifest)")
	reps := flag.Int("reps", 5, "timed runs per implementation and workload")
	bigReps := flag.Int("bigreps", 0, "timed runs for the big-message workload (default: -reps)")
	validate := flag.Bool("validate", true, "check every response in an untimed run first, and every timed run's output against its digest")
	timeout := flag.Duration("timeout", 2*time.Minute, "limit for one run")
	flag.Parse()
	if *binDir == "" || *dataDir == "" {
		flag.Usage()
		os.Exit(2)
	}
	if *bigReps <= 0 {
		*bigReps = *reps
	}
	cfg := config{binDir: *binDir, dataDir: *dataDir, reps: *reps, bigReps: *bigReps, validate: *validate, timeout: *timeout}
	if err := run(cfg, *implList, *workList); err != nil {
		fmt.Fprintln(os.Stderr, "procbench:", err)
		os.Exit(1)
	}
}

func split(list string) []string {
	var out []string
	for _, s := range strings.Split(list, ",") {
		if s = strings.TrimSpace(s); s != "" {
			out = append(out, s)
		}
	}
	return out
}

type config struct {
	binDir, dataDir string
	reps, bigReps   int
	validate        bool
	timeout         time.Duration
}

func readManifest(dir string) ([]suite.Workload, error) {
	data, err := os.ReadFile(filepath.Join(dir, "manifest.json"))
	if err != nil {
		return nil, err
	}
	var works []suite.Workload
	if err := json.Unmarshal(data, &works); err != nil {
		return nil, fmt.Errorf("%s: %v", filepath.Join(dir, "manifest.json"), err)
	}
	return works, nil
}

func run(cfg config, implList, workList string) error {
	works, err := readManifest(cfg.dataDir)
	if err != nil {
		return err
	}
	if names := split(workList); len(names) > 0 {
		var keep []suite.Workload
		for _, n := range names {
			found := false
			for _, w := range works {
				if w.Name == n {
					keep = append(keep, w)
					found = true
				}
			}
			if !found {
				return fmt.Errorf("workload %q is not in the manifest", n)
			}
		}
		works = keep
	}
	var impls []suite.Impl
	if names := split(implList); len(names) > 0 {
		for _, n := range names {
			im, ok := suite.LookupImpl(n)
			if !ok {
				return fmt.Errorf("unknown implementation %q", n)
			}
			impls = append(impls, im)
		}
	} else {
		impls = suite.Impls
	}
	for _, im := range impls {
		for _, w := range works {
			if !im.Supports(w) {
				continue
			}
			if _, err := os.Stat(filepath.Join(cfg.binDir, im.Binary(w))); err != nil {
				return fmt.Errorf("binary for %s on %s: %v", im.Name, w.Name, err)
			}
		}
	}

	fmt.Printf("goos: %s\ngoarch: %s\npkg: github.com/ndjsonrpc/jsonrpc/bench/tools/procbench\n", runtime.GOOS, runtime.GOARCH)
	suffix := fmt.Sprintf("-%d", runtime.NumCPU())
	var failed []string
	for _, w := range works {
		input := filepath.Join(cfg.dataDir, w.Name+".ndjson")
		reps := cfg.reps
		if w.Big > 0 {
			reps = cfg.bigReps
		}
		var runnable []suite.Impl
		refs := map[string]reference{}
		for _, im := range impls {
			if !im.Supports(w) {
				fmt.Fprintf(os.Stderr, "%s/%s: skipped (%s)\n", w.Name, im.Name, im.Unsupported(w))
				continue
			}
			if cfg.validate {
				ref, err := checkRuns(filepath.Join(cfg.binDir, im.Binary(w)), input, w, im, cfg.timeout)
				if err != nil {
					fmt.Fprintf(os.Stderr, "%s/%s: FAILED check: %v\n", w.Name, im.Name, err)
					failed = append(failed, w.Name+"/"+im.Name)
					continue
				}
				refs[im.Name] = ref
			}
			runnable = append(runnable, im)
		}
		for rep := range reps {
			// Rotate the order each repetition so that no implementation
			// always runs right after the same neighbour.
			for k := range runnable {
				im := runnable[(k+rep)%len(runnable)]
				ref, checked := refs[im.Name]
				res, err := runOnce(filepath.Join(cfg.binDir, im.Binary(w)), input, w, im, runOpts{digest: checked, canonical: ref.canonical}, cfg.timeout)
				if err == nil && checked {
					got := res.raw
					if ref.canonical {
						got = res.canon
					}
					if got != ref.want {
						err = fmt.Errorf("output differs from the checked untimed run: %v, want %v", got, ref.want)
					}
				}
				if err != nil {
					fmt.Fprintf(os.Stderr, "%s/%s: FAILED run %d: %v\n", w.Name, im.Name, rep+1, err)
					failed = append(failed, w.Name+"/"+im.Name)
					continue
				}
				fmt.Printf("BenchmarkProcess/%s/%s%s\t1\t%d ns/op\t%.2f cpu-ms\t%.2f maxrss-MiB\t%d responses\t%d out-B\n",
					w.Name, im.Name, suffix, res.wall.Nanoseconds(),
					float64(res.cpu)/float64(time.Millisecond), float64(res.maxRSS)/1024, res.responses, res.outBytes)
			}
		}
	}
	if len(failed) > 0 {
		return fmt.Errorf("failed: %s", strings.Join(failed, ", "))
	}
	return nil
}

// reference is what the timed runs of one implementation on one workload
// are compared with: the digest of its checked untimed run.
type reference struct {
	want      suite.Sum
	canonical bool // want is the canonical digest (the raw one was unstable)
}

// checkRuns makes the two untimed runs of im on w: the first with every
// response validated and both digests recorded, the second with the raw
// digest only (and the canonical one if the raw digests differ, in a third
// run).
func checkRuns(bin, input string, w suite.Workload, im suite.Impl, timeout time.Duration) (reference, error) {
	start := time.Now()
	first, err := runOnce(bin, input, w, im, runOpts{validate: true, digest: true, canonical: true}, timeout)
	if err != nil {
		return reference{}, err
	}
	second, err := runOnce(bin, input, w, im, runOpts{digest: true}, timeout)
	if err != nil {
		return reference{}, fmt.Errorf("second untimed run: %v", err)
	}
	if second.raw == first.raw {
		fmt.Fprintf(os.Stderr, "%s/%s: output checked, %d lines, %v (%v)\n", w.Name, im.Name, w.Lines, first.raw, time.Since(start).Round(time.Millisecond))
		return reference{want: first.raw}, nil
	}
	third, err := runOnce(bin, input, w, im, runOpts{digest: true, canonical: true}, timeout)
	if err != nil {
		return reference{}, fmt.Errorf("third untimed run: %v", err)
	}
	if third.canon != first.canon {
		return reference{}, fmt.Errorf("output not deterministic even in canonical form: %v, then %v", first.canon, third.canon)
	}
	fmt.Fprintf(os.Stderr, "%s/%s: output checked, %d lines; its bytes vary from run to run (%v, then %v), so the timed runs are checked by canonical digest %v, which costs the parent a decode and encode of each response (%v)\n",
		w.Name, im.Name, w.Lines, first.raw, second.raw, first.canon, time.Since(start).Round(time.Millisecond))
	return reference{want: first.canon, canonical: true}, nil
}

type result struct {
	wall       time.Duration
	cpu        time.Duration
	maxRSS     int64 // KiB, the server's own peak (see peakRSS)
	responses  int
	outBytes   int64
	raw, canon suite.Sum
}

// runOpts says what runOnce does with the output besides counting it.
type runOpts struct {
	validate  bool // decode and check every response
	digest    bool // compute the raw digest
	canonical bool // compute the canonical digest as well (implies digest)
}

// runOnce runs bin with the workload file on its stdin and reads its
// stdout, counting the responses and, as opts says, validating them and
// computing their digests as they arrive.
func runOnce(bin, input string, w suite.Workload, im suite.Impl, opts runOpts, timeout time.Duration) (result, error) {
	in, err := os.Open(input)
	if err != nil {
		return result{}, err
	}
	defer in.Close()
	childIn, toChild, err := os.Pipe()
	if err != nil {
		return result{}, err
	}
	fromChild, childOut, err := os.Pipe()
	if err != nil {
		childIn.Close()
		toChild.Close()
		return result{}, err
	}
	var stderr limitedBuffer
	cmd := exec.Command(bin)
	cmd.Stdin = childIn
	cmd.Stdout = childOut
	cmd.Stderr = &stderr

	counter := suite.NewCounter(im.Lines, w.Responses())
	var sink io.Writer = counter
	var digest *suite.Digest
	if opts.digest || opts.canonical {
		digest = suite.NewDigest(im.Lines, opts.canonical)
		sink = io.MultiWriter(counter, digest)
	}
	start := time.Now()
	if err := cmd.Start(); err != nil {
		childIn.Close()
		toChild.Close()
		fromChild.Close()
		childOut.Close()
		return result{}, err
	}
	childIn.Close()
	childOut.Close()

	// Read the responses until the server closes its output.
	readDone := make(chan error, 1)
	go func() {
		if opts.validate {
			_, err := w.Validate(io.TeeReader(fromChild, sink))
			io.Copy(sink, fromChild) // anything after an error
			readDone <- err
			return
		}
		buf := make([]byte, 256<<10)
		for {
			n, err := fromChild.Read(buf)
			sink.Write(buf[:n])
			if err == io.EOF {
				readDone <- nil
				return
			}
			if err != nil {
				readDone <- err
				return
			}
		}
	}()

	// Write the requests, then keep the stream open until every response
	// has arrived (or the server has stopped writing).
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	writeDone := make(chan error, 1)
	go func() {
		buf := make([]byte, 1<<20)
		_, err := io.CopyBuffer(onlyWriter{toChild}, onlyReader{in}, buf)
		writeDone <- err
	}()
	var writeErr, readErr error
	var timedOut bool
	select {
	case writeErr = <-writeDone:
	case <-timer.C:
		timedOut = true
	}
	readFinished := false
	if !timedOut {
		select {
		case <-counter.Done():
		case readErr = <-readDone:
			readFinished = true
		case <-timer.C:
			timedOut = true
		}
	}
	// Every response has arrived (or the server has stopped writing):
	// read the server's peak RSS so far, before its input is closed.
	sampled := int64(-1)
	if !timedOut {
		sampled = vmHWM(fmt.Sprintf("/proc/%d/status", cmd.Process.Pid))
	}
	toChild.Close()
	if !readFinished && !timedOut {
		select {
		case readErr = <-readDone:
			readFinished = true
		case <-timer.C:
			timedOut = true
		}
	}
	if timedOut {
		cmd.Process.Kill()
		if !readFinished {
			readErr = <-readDone
		}
	}
	fromChild.Close()
	waitErr := cmd.Wait()
	wall := time.Since(start)

	n, outBytes := counter.Count()
	res := result{wall: wall, responses: n, outBytes: outBytes}
	var rssErr error
	if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
		res.cpu = time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
		res.maxRSS, rssErr = peakRSS(ru.Maxrss, sampled)
	}
	if digest != nil {
		var err error
		res.raw, res.canon, err = digest.Sums()
		if err != nil && readErr == nil {
			readErr = err
		}
	}
	switch {
	case timedOut:
		return res, fmt.Errorf("timed out after %v with %d of %d responses", timeout, n, w.Responses())
	case waitErr != nil:
		return res, fmt.Errorf("%v: %s", waitErr, stderr.String())
	case readErr != nil:
		return res, readErr
	case writeErr != nil && !errors.Is(writeErr, syscall.EPIPE):
		return res, writeErr
	case n != w.Responses():
		return res, fmt.Errorf("%d responses, want %d; stderr: %s", n, w.Responses(), stderr.String())
	case rssErr != nil:
		return res, rssErr
	}
	return res, nil
}

// peakRSS returns the server's own peak RSS in KiB, from ru_maxrss (its
// rusage after wait4, in KiB) and sampled, its VmHWM read from
// /proc/PID/status once every response had arrived and before its input
// was closed (-1 if that failed).
//
// ru_maxrss alone is not the server's figure. Go starts a child with
// vfork semantics (clone with CLONE_VM|CLONE_VFORK), so until it execs,
// the child runs in procbench's own address space, and Linux, on exec,
// keeps the high-water RSS of the address space being left in the
// process's maxrss (fs/exec.c, exec_mmap: setmax_mm_hiwater_rss). Every
// server's ru_maxrss is therefore at least procbench's own peak RSS, which
// only grows from run to run: that is why W5big once read 10.2 MiB for
// every implementation. So: if ru_maxrss is above procbench's peak RSS
// (read after the wait, so at least what it was at the exec), it can only
// be the server's own and is exact; otherwise the server's own peak is
// not above that, and the figure is the sampled VmHWM, which counts the
// server's address space only (from its exec on) and misses nothing but
// what the server may add while shutting down.
func peakRSS(maxrss, sampled int64) (int64, error) {
	parent := vmHWM("/proc/self/status")
	switch {
	case parent >= 0 && maxrss > parent:
		return max(maxrss, sampled), nil
	case sampled >= 0:
		return sampled, nil
	}
	return 0, fmt.Errorf("cannot tell the server's peak RSS: ru_maxrss %d KiB is not above procbench's own peak (%d KiB), and its /proc status could not be read before its input was closed", maxrss, parent)
}

// vmHWM returns the VmHWM field (peak RSS, KiB) of a /proc/PID/status
// file, or -1 if it cannot be read (no such process, or a zombie).
func vmHWM(path string) int64 {
	data, err := os.ReadFile(path)
	if err != nil {
		return -1
	}
	for line := range strings.Lines(string(data)) {
		if rest, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			f := strings.Fields(rest)
			if len(f) == 0 {
				return -1
			}
			v, err := strconv.ParseInt(f[0], 10, 64)
			if err != nil {
				return -1
			}
			return v
		}
	}
	return -1
}

// onlyWriter and onlyReader hide the files' ReadFrom and WriteTo methods
// so that the copy uses the 1 MiB buffer it is given.
type onlyWriter struct{ w io.Writer }

func (o onlyWriter) Write(p []byte) (int, error) { return o.w.Write(p) }

type onlyReader struct{ r io.Reader }

func (o onlyReader) Read(p []byte) (int, error) { return o.r.Read(p) }

// limitedBuffer keeps the first 4 KiB written to it.
type limitedBuffer struct{ bytes.Buffer }

func (b *limitedBuffer) Write(p []byte) (int, error) {
	if room := 4096 - b.Len(); room > 0 {
		b.Buffer.Write(p[:min(room, len(p))])
	}
	return len(p), nil
}
