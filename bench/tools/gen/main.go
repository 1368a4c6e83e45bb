// Command gen writes the benchmark workloads into a directory, one
// newline-delimited JSON file per workload (<name>.ndjson), and a
// manifest.json recording the line counts, which procbench reads back.
//
//	gen -dir DIR [-scale F] [-workloads W1echo,W5big]
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/ndjsonrpc/jsonrpc/bench/suite"
)

func main() {
	dir := flag.String("dir", "", "directory to write the workloads into (required)")
	scale := flag.Float64("scale", 1, "multiply every workload's line count by this factor")
	only := flag.String("workloads", "", "comma-separated workload names (default: all)")
	flag.Parse()
	if *dir == "" {
		flag.Usage()
		os.Exit(2)
	}
	if err := run(*dir, *scale, *only); err != nil {
		fmt.Fprintln(os.Stderr, "gen:", err)
		os.Exit(1)
	}
}

func run(dir string, scale float64, only string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	var written []suite.Workload
	for _, w := range suite.Workloads {
		if only != "" && !contains(only, w.Name) {
			continue
		}
		w = w.Scaled(scale)
		f, err := os.Create(filepath.Join(dir, w.Name+".ndjson"))
		if err != nil {
			return err
		}
		if err := w.Write(f); err != nil {
			f.Close()
			return err
		}
		if err := f.Close(); err != nil {
			return err
		}
		written = append(written, w)
	}
	data, err := json.MarshalIndent(written, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, "manifest.json"), append(data, '\n'), 0o644)
}

func contains(list, name string) bool {
	for _, s := range strings.Split(list, ",") {
		if strings.TrimSpace(s) == name {
			return true
		}
	}
	return false
}
