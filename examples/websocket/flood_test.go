package main

import (
	"fmt"
	"runtime"
	"testing"
	"time"

	"github.com/coder/websocket"
)

// TestHelloFloodIsBounded sends 100,000 "hello"s, whose handlers each ask
// the page "whoami", and never answers: each such handler waits with its
// goroutine, and the connection's budget must count that, refusing the
// requests past it, rather than hold a goroutine for every 43-byte line.
func TestHelloFloodIsBounded(t *testing.T) {
	s := startServer(t)
	c := s.dial(t)
	ctx := t.Context()
	go func() { // read and drop the server's calls and answers
		for {
			if _, _, err := c.Read(ctx); err != nil {
				return
			}
		}
	}()
	runtime.GC()
	g0 := runtime.NumGoroutine()
	var m0 runtime.MemStats
	runtime.ReadMemStats(&m0)
	for i := range 100_000 {
		if err := c.Write(ctx, websocket.MessageText, fmt.Appendf(nil, `{"jsonrpc":"2.0","id":%d,"method":"hello"}`, i)); err != nil {
			t.Fatal(err)
		}
	}
	time.Sleep(time.Second) // let the last ones be read
	runtime.GC()
	var m1 runtime.MemStats
	runtime.ReadMemStats(&m1)
	held := int64(m1.HeapAlloc) - int64(m0.HeapAlloc) + int64(m1.StackInuse) - int64(m0.StackInuse)
	if n := runtime.NumGoroutine() - g0; n > 10_000 || held > 128<<20 {
		t.Errorf("100,000 unanswered hellos hold %d goroutines and %d MiB", n, held>>20)
	}
	_ = c.CloseNow()
}
