package interop

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/debug"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// nodeDir holds the Node.js clients that drive the programs in
// ../examples, with the package.json and package-lock.json that pin them.
const nodeDir = "node"

// TestExamples builds each program in ../examples and has the real clients
// of its field drive it over its standard input and output: the MCP
// TypeScript SDK's client drives examples/mcp-server, and vscode-jsonrpc,
// the JSON-RPC layer of VS Code's language clients, drives
// examples/lsp-server. Each script (node/*_client.mjs) starts the server
// itself, runs its checks in order with node:test and exits non-zero if
// any fails; its output, with the server's standard error, is the test's
// failure message. The examples are built with -race when this test is, so
// a data race the clients provoke fails it too.
//
// The npm packages are installed with npm ci from the lock file when
// node_modules is missing or older than package-lock.json. The test is
// skipped if node is not on PATH.
func TestExamples(t *testing.T) {
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("node is not on PATH")
	}
	installNodeModules(t)
	bin := t.TempDir()

	for _, tc := range []struct{ example, script string }{
		{"mcp-server", "mcp_client.mjs"},
		{"lsp-server", "lsp_client.mjs"},
	} {
		t.Run(tc.example, func(t *testing.T) {
			t.Parallel()
			exe := buildExample(t, bin, tc.example)
			ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
			defer cancel()
			cmd := exec.CommandContext(ctx, node, tc.script, exe)
			cmd.Dir = nodeDir
			// A program built with -race sleeps a second before it exits,
			// which the checks of how soon it exits would count.
			cmd.Env = append(os.Environ(), "GORACE=atexit_sleep_ms=0")
			cmd.WaitDelay = 5 * time.Second // bounds the wait for output once ctx has killed node
			out, err := cmd.CombinedOutput()
			require.NoErrorf(t, err, "node %s %s:\n%s", tc.script, tc.example, out)
		})
	}
}

// buildExample builds ../examples/name into dir, with the race detector if
// this test binary has it, and returns the path of the program. An
// example with a go.mod of its own is built in its module, the others in
// the library's.
func buildExample(t *testing.T, dir, name string) string {
	t.Helper()
	exe, err := filepath.Abs(filepath.Join(dir, name))
	require.NoError(t, err)
	args := []string{"build", "-o", exe}
	if raceEnabled() {
		args = append(args, "-race")
	}
	cmd := exec.CommandContext(t.Context(), "go", append(args, "./examples/"+name)...)
	cmd.Dir = ".."
	if _, err := os.Stat(filepath.Join("..", "examples", name, "go.mod")); err == nil {
		cmd = exec.CommandContext(t.Context(), "go", append(args, ".")...)
		cmd.Dir = filepath.Join("..", "examples", name)
	}
	out, err := cmd.CombinedOutput()
	require.NoErrorf(t, err, "go build %s:\n%s", name, out)
	return exe
}

// installNodeModules runs npm ci in nodeDir unless node_modules was
// installed from the current package-lock.json already: npm writes
// node_modules/.package-lock.json when it installs, so that file is newer
// than the lock it came from.
func installNodeModules(t *testing.T) {
	t.Helper()
	lock, err := os.Stat(filepath.Join(nodeDir, "package-lock.json"))
	require.NoError(t, err)
	installed, err := os.Stat(filepath.Join(nodeDir, "node_modules", ".package-lock.json"))
	if err == nil && !installed.ModTime().Before(lock.ModTime()) {
		return
	}
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "npm", "ci", "--no-audit", "--no-fund", "--ignore-scripts")
	cmd.Dir = nodeDir
	out, err := cmd.CombinedOutput()
	require.NoErrorf(t, err, "npm ci in interop/%s:\n%s", nodeDir, out)
}

// raceEnabled reports whether this test binary was built with -race.
func raceEnabled() bool {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return false
	}
	for _, s := range info.Settings {
		if s.Key == "-race" {
			return s.Value == "true"
		}
	}
	return false
}
