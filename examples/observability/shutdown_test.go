package main

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestInterruptWithAClientThatDoesNotRead runs the example, posts a
// large echo whose answer its client never reads, and interrupts the
// process once: it must exit within its bounds (5 s for the work in
// flight, then the grace of a Close), not wait for the client for ever.
func TestInterruptWithAClientThatDoesNotRead(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "observability")
	out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput()
	require.NoError(t, err, "%s", out)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := l.Addr().String()
	require.NoError(t, l.Close())

	cmd := exec.Command(bin, "-http", addr, "-listen", "", "-spans=false")
	require.NoError(t, cmd.Start())
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	defer func() {
		_ = cmd.Process.Kill()
		<-exited
	}()
	var c net.Conn
	for start := time.Now(); ; time.Sleep(20 * time.Millisecond) {
		if c, err = net.Dial("tcp", addr); err == nil {
			break
		}
		require.Less(t, time.Since(start), 20*time.Second, "the example did not listen: %v", err)
	}
	defer func() { _ = c.Close() }()
	body := `{"jsonrpc":"2.0","id":1,"method":"echo","params":["` + strings.Repeat("x", 16<<20) + `"]}`
	_, err = fmt.Fprintf(c, "POST / HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s", len(body), body)
	require.NoError(t, err)
	time.Sleep(500 * time.Millisecond) // let the answer fill the socket's buffers

	require.NoError(t, cmd.Process.Signal(os.Interrupt))
	select {
	case <-exited:
		exited <- nil // for the deferred Kill
	case <-time.After(40 * time.Second):
		t.Fatal("the example still runs 40 s after an interrupt, with a client that does not read")
	}
}
