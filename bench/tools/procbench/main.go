// Command procbench runs the whole-process benchmarks: each implementation
// is a stdio server binary, given a workload file on stdin through a pipe
// while procbench reads its stdout through another pipe and counts the
// responses. It prints one line per timed run in Go benchmark format:
//
//	BenchmarkProcess/<workload>/<impl>-<ncpu> 1 <wall ns> ns/op <cpu> cpu-ms <rss> maxrss-MiB ...
//
// The request stream is closed only once every expected response has
// arrived, as a client would, because some libraries (jrpc2) drop queued
// requests when their input ends. Before the timed runs, each
// implementation runs every workload once untimed with its whole output
// checked (every id answered once, with the right result), on the copy of
// the workloads in -check (a smaller one, to save time). The timed runs
// count responses only.
//
//	procbench -bin DIR -data DIR [-check DIR] [-impls a,b] [-workloads a,b] [-reps N] [-bigreps N]
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
	checkDir := flag.String("check", "", "directory written by gen for the untimed checked runs (default: -data)")
	reps := flag.Int("reps", 5, "timed runs per implementation and workload")
	bigReps := flag.Int("bigreps", 0, "timed runs for the big-message workload (default: -reps)")
	validate := flag.Bool("validate", true, "check every response in one untimed run (on -check) first")
	timeout := flag.Duration("timeout", 2*time.Minute, "limit for one run")
	flag.Parse()
	if *binDir == "" || *dataDir == "" {
		flag.Usage()
		os.Exit(2)
	}
	if *checkDir == "" {
		*checkDir = *dataDir
	}
	if *bigReps <= 0 {
		*bigReps = *reps
	}
	cfg := config{binDir: *binDir, dataDir: *dataDir, checkDir: *checkDir, reps: *reps, bigReps: *bigReps, validate: *validate, timeout: *timeout}
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
	binDir, dataDir, checkDir string
	reps, bigReps             int
	validate                  bool
	timeout                   time.Duration
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
	checks, err := readManifest(cfg.checkDir)
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
		if _, err := os.Stat(filepath.Join(cfg.binDir, im.Name)); err != nil {
			return fmt.Errorf("binary for %s: %v", im.Name, err)
		}
	}

	fmt.Printf("goos: %s\ngoarch: %s\npkg: github.com/ndjsonrpc/jsonrpc/bench/tools/procbench\n", runtime.GOOS, runtime.GOARCH)
	suffix := fmt.Sprintf("-%d", runtime.NumCPU())
	var failed []string
	for _, w := range works {
		input := filepath.Join(cfg.dataDir, w.Name+".ndjson")
		check, checkInput := w, input
		if cfg.checkDir != cfg.dataDir {
			check, checkInput = suite.Workload{}, filepath.Join(cfg.checkDir, w.Name+".ndjson")
			for _, c := range checks {
				if c.Name == w.Name {
					check = c
				}
			}
			if check.Name == "" {
				return fmt.Errorf("workload %s is not in %s", w.Name, cfg.checkDir)
			}
		}
		reps := cfg.reps
		if w.Big > 0 {
			reps = cfg.bigReps
		}
		var runnable []suite.Impl
		for _, im := range impls {
			if !im.Supports(w) {
				fmt.Fprintf(os.Stderr, "%s/%s: skipped (no batch support)\n", w.Name, im.Name)
				continue
			}
			if cfg.validate {
				start := time.Now()
				if _, err := runOnce(filepath.Join(cfg.binDir, im.Name), checkInput, check, im, true, cfg.timeout); err != nil {
					fmt.Fprintf(os.Stderr, "%s/%s: FAILED check: %v\n", w.Name, im.Name, err)
					failed = append(failed, w.Name+"/"+im.Name)
					continue
				}
				fmt.Fprintf(os.Stderr, "%s/%s: output checked, %d lines (%v)\n", w.Name, im.Name, check.Lines, time.Since(start).Round(time.Millisecond))
			}
			runnable = append(runnable, im)
		}
		for rep := range reps {
			// Rotate the order each repetition so that no implementation
			// always runs right after the same neighbour.
			for k := range runnable {
				im := runnable[(k+rep)%len(runnable)]
				res, err := runOnce(filepath.Join(cfg.binDir, im.Name), input, w, im, false, cfg.timeout)
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

type result struct {
	wall      time.Duration
	cpu       time.Duration
	maxRSS    int64 // KiB
	responses int
	outBytes  int64
}

// runOnce runs bin with the workload file on its stdin and reads its
// stdout. With check set, the output is decoded and validated as it
// arrives; otherwise responses are only counted.
func runOnce(bin, input string, w suite.Workload, im suite.Impl, check bool, timeout time.Duration) (result, error) {
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
		if check {
			_, err := w.Validate(io.TeeReader(fromChild, counter))
			io.Copy(counter, fromChild) // anything after an error
			readDone <- err
			return
		}
		buf := make([]byte, 256<<10)
		for {
			n, err := fromChild.Read(buf)
			counter.Write(buf[:n])
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
	if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
		res.cpu = time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
		res.maxRSS = ru.Maxrss
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
	}
	return res, nil
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
