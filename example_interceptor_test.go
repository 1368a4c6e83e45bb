package jsonrpc_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/ndjsonrpc/jsonrpc"
)

// An interceptor that counts the calls and notifications of each method,
// those that failed, and the time they took, as a metrics interceptor
// would. Each entry of a batch passes through it on its own.
func ExampleInterceptor() {
	mux := new(jsonrpc.Mux)
	mux.Handle("add", jsonrpc.Func(func(_ context.Context, p [2]int) (int, error) {
		return p[0] + p[1], nil
	}))
	mux.HandleFunc("log", func(context.Context, *jsonrpc.Request) (any, error) { return nil, nil })
	serverIn, clientOut := io.Pipe()
	clientIn, serverOut := io.Pipe()
	served := make(chan error, 1)
	go func() {
		served <- jsonrpc.Serve(context.Background(), serverIn, serverOut, mux)
		serverOut.Close()
	}()

	var (
		mu     sync.Mutex
		calls  = map[string]int{}
		failed = map[string]int{}
		took   time.Duration
	)
	count := func(next jsonrpc.SendFunc) jsonrpc.SendFunc {
		return func(ctx context.Context, req *jsonrpc.Request) (json.RawMessage, error) {
			start := time.Now()
			result, err := next(ctx, req)
			mu.Lock()
			defer mu.Unlock()
			calls[req.Method]++
			if err != nil {
				failed[req.Method]++
			}
			took += time.Since(start)
			return result, err
		}
	}
	client := jsonrpc.NewConn(clientIn, clientOut, &jsonrpc.Options{
		Interceptors: []jsonrpc.Interceptor{count},
	})

	ctx := context.Background()
	var sum int
	_ = client.Call(ctx, "add", []int{1, 2}, &sum)
	_ = client.Call(ctx, "add", []int{3, 4}, &sum)
	_ = client.Call(ctx, "missing", nil, nil)
	_ = client.Notify(ctx, "log", []string{"done"})
	_ = client.Batch(ctx,
		&jsonrpc.BatchCall{Method: "add", Params: []int{5, 6}, Result: &sum},
		&jsonrpc.BatchCall{Method: "missing"},
	)
	for _, method := range slices.Sorted(maps.Keys(calls)) {
		fmt.Printf("%s: %d sent, %d failed\n", method, calls[method], failed[method])
	}
	fmt.Println("timed:", took > 0)

	clientOut.Close() // the server sees EOF
	fmt.Println(<-served)
	client.Close()
	// Output:
	// add: 3 sent, 0 failed
	// log: 1 sent, 0 failed
	// missing: 2 sent, 2 failed
	// timed: true
	// <nil>
}
