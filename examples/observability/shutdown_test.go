package main

import (
	"bufio"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestInterruptWithAClientThatDoesNotRead runs the example, posts a
// large echo whose answer its client never reads, and interrupts the
// process once: it must exit within its bounds (5 s for the work in
// flight, then the grace of a Close), not wait for the client for ever.
func TestInterruptWithAClientThatDoesNotRead(t *testing.T) {
	addr := freeAddr(t)
	e := startExample(t, buildExample(t), "-http", addr, "-listen", "", "-spans=false")
	c := dialListening(t, addr)
	body := `{"jsonrpc":"2.0","id":1,"method":"echo","params":["` + strings.Repeat("x", 16<<20) + `"]}`
	_, err := fmt.Fprintf(c, "POST / HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s", len(body), body)
	require.NoError(t, err)
	time.Sleep(500 * time.Millisecond) // let the answer fill the socket's buffers

	require.NoError(t, e.cmd.Process.Signal(os.Interrupt))
	select {
	case <-e.exited:
	case <-time.After(40 * time.Second):
		t.Fatal("the example still runs 40 s after an interrupt, with a client that does not read")
	}
}

// TestSignalLetsAnswersFinish runs the example, calls echo with a large
// answer over the TCP socket or over HTTP, and signals the process once
// the answer has begun: the answer must arrive whole, since the calls in
// flight get 5 s to finish, and the process must then exit.
func TestSignalLetsAnswersFinish(t *testing.T) {
	bin := buildExample(t)
	pad := strings.Repeat("x", 16<<20) // more than the sockets' buffers hold
	call := `{"jsonrpc":"2.0","id":1,"method":"echo","params":["` + pad + `"]}`
	answer := `{"jsonrpc":"2.0","id":1,"result":["` + pad + `"]}`
	for _, tc := range []struct {
		name string
		http bool
		sig  os.Signal
	}{
		{"tcp/SIGINT", false, os.Interrupt},
		{"tcp/SIGTERM", false, syscall.SIGTERM},
		{"http/SIGINT", true, os.Interrupt},
	} {
		t.Run(tc.name, func(t *testing.T) {
			httpAddr, tcpAddr := freeAddr(t), freeAddr(t)
			e := startExample(t, bin, "-http", httpAddr, "-listen", tcpAddr, "-spans=false")
			addr := tcpAddr
			if tc.http {
				addr = httpAddr
			}
			c := dialListening(t, addr)
			var err error
			if tc.http {
				_, err = fmt.Fprintf(c, "POST / HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s", len(call), call)
			} else {
				_, err = fmt.Fprintf(c, "%s\n", call)
			}
			require.NoError(t, err)
			require.NoError(t, c.SetReadDeadline(time.Now().Add(20*time.Second)))
			r := bufio.NewReaderSize(c, 64<<10)
			_, err = r.Peek(1) // the answer has begun
			require.NoError(t, err)

			require.NoError(t, e.cmd.Process.Signal(tc.sig))
			if tc.http {
				resp, err := http.ReadResponse(r, nil)
				require.NoError(t, err)
				defer resp.Body.Close()
				r = bufio.NewReader(resp.Body)
			}
			line, err := r.ReadString('\n')
			assert.NoError(t, err)
			assert.Equal(t, len(answer)+1, len(line), "bytes of the answer in flight")
			select {
			case <-e.exited:
			case <-time.After(20 * time.Second):
				t.Fatal("the example still runs 20 s after the signal")
			}
		})
	}
}

// buildExample builds the example, and returns the path of its binary.
func buildExample(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "observability")
	out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput()
	require.NoError(t, err, "%s", out)
	return bin
}

// A runningExample is the example's process, started by startExample;
// exited is closed once it has exited.
type runningExample struct {
	cmd    *exec.Cmd
	exited chan struct{}
}

// startExample starts bin with args; the cleanup kills the process, if it
// still runs, and waits for it.
func startExample(t *testing.T, bin string, args ...string) *runningExample {
	t.Helper()
	e := &runningExample{cmd: exec.Command(bin, args...), exited: make(chan struct{})}
	require.NoError(t, e.cmd.Start())
	go func() {
		_ = e.cmd.Wait()
		close(e.exited)
	}()
	t.Cleanup(func() {
		_ = e.cmd.Process.Kill()
		<-e.exited
	})
	return e
}

// freeAddr returns a loopback address with a port free to listen on.
func freeAddr(t *testing.T) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer l.Close()
	return l.Addr().String()
}

// dialListening connects to addr once the example listens there, within
// 20 seconds; the cleanup closes the connection.
func dialListening(t *testing.T, addr string) net.Conn {
	t.Helper()
	for start := time.Now(); ; time.Sleep(20 * time.Millisecond) {
		c, err := net.Dial("tcp", addr)
		if err == nil {
			t.Cleanup(func() { _ = c.Close() })
			return c
		}
		require.Less(t, time.Since(start), 20*time.Second, "the example did not listen: %v", err)
	}
}

// TestInterruptWithSlowCollector: a collector that takes the spans' POST
// and never answers must not keep the process past its 5 s bound after
// one interrupt (the last spans were sent without a deadline, which kept
// it 30 s: the exporter's own timeouts).
func TestInterruptWithSlowCollector(t *testing.T) {
	release := make(chan struct{})
	col := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	defer col.Close()
	defer close(release)
	bin := buildExample(t)
	addr := freeAddr(t)
	cmd := exec.Command(bin, "-http", addr, "-listen", "")
	cmd.Env = append(os.Environ(), "OTEL_EXPORTER_OTLP_ENDPOINT="+col.URL)
	require.NoError(t, cmd.Start())
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	t.Cleanup(func() { _ = cmd.Process.Kill(); <-exited })
	c := dialListening(t, addr)
	body := `{"jsonrpc":"2.0","id":1,"method":"add","params":[1,2]}`
	fmt.Fprintf(c, "POST / HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s", len(body), body)
	buf := make([]byte, 4096)
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	n, err := c.Read(buf)
	require.NoError(t, err)
	require.True(t, strings.Contains(string(buf[:n]), `"result":3`), "%s", buf[:n])
	start := time.Now()
	require.NoError(t, cmd.Process.Signal(os.Interrupt))
	select {
	case <-exited:
		t.Logf("exited %v after the interrupt", time.Since(start))
	case <-time.After(8 * time.Second):
		t.Fatalf("still running 8 s after one interrupt, with no call in flight (the bound is 5 s)")
	}
}
