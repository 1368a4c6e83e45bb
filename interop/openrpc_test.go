package interop

import (
	"context"
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestOpenRPC builds examples/openrpc, serves it with -http on a free
// loopback port, and runs node/openrpc_client.mjs against it: its
// rpc.discover document must validate against the OpenRPC meta-schema,
// and @open-rpc/test-coverage must pass every method with the document's
// own examples, each result equal to its example's; the notifications'
// examples and the methods documented by their errors are checked too.
// The test fails if any of that fails, with the script's output as its
// message; it is skipped if node is not on PATH.
func TestOpenRPC(t *testing.T) {
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("node is not on PATH")
	}
	installNodeModules(t)
	srv := startHTTPExample(t, buildExample(t, t.TempDir(), "openrpc"), "/")
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, "openrpc_client.mjs", srv.url)
	cmd.Dir = nodeDir
	cmd.Env = append(os.Environ(), "GORACE=atexit_sleep_ms=0")
	cmd.WaitDelay = 5 * time.Second
	out, err := cmd.CombinedOutput()
	require.NoErrorf(t, err, "node openrpc_client.mjs %s:\n%s\nserver:\n%s", srv.url, out, srv.stderr)
}
