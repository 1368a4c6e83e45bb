package jsonrpc_test

import (
	"context"
	"fmt"
	"io"
	"iter"

	"github.com/ndjsonrpc/jsonrpc"
)

// The methods of a small API, each named once with its types. Server and
// client share these values, so both sides agree on the types at compile
// time.
var (
	add   = jsonrpc.NewMethod[[2]int, int]("add")
	count = jsonrpc.NewStreamMethod[upTo, int]("count")
)

type upTo struct {
	N int `json:"n"`
}

// One Method value registers the handler and makes the typed calls, here
// over a connection and in process through the same Caller interface.
func ExampleMethod() {
	mux := new(jsonrpc.Mux)
	add.Register(mux, func(ctx context.Context, p [2]int) (int, error) {
		return p[0] + p[1], nil
	})
	count.Register(mux, func(ctx context.Context, p upTo) iter.Seq2[int, error] {
		return func(yield func(int, error) bool) {
			for i := 1; i <= p.N; i++ {
				if !yield(i, nil) {
					return
				}
			}
		}
	})

	// A server on one end of a pipe, a Conn on the other.
	serverIn, clientOut := io.Pipe()
	clientIn, serverOut := io.Pipe()
	go func() {
		_ = jsonrpc.Serve(context.Background(), serverIn, serverOut, mux)
		serverOut.Close()
	}()
	conn := jsonrpc.NewConn(clientIn, clientOut, nil)
	defer conn.Close()

	for _, c := range []jsonrpc.Caller{conn, &jsonrpc.InProcess{Handler: mux}} {
		sum, err := add.Call(context.Background(), c, [2]int{2, 3})
		fmt.Println(sum, err)
		var items []int
		for n, err := range count.Call(context.Background(), c, upTo{N: 3}) {
			if err != nil {
				fmt.Println("error:", err)
				break
			}
			items = append(items, n)
		}
		fmt.Println(items)
	}
	// Output:
	// 5 <nil>
	// [1 2 3]
	// 5 <nil>
	// [1 2 3]
}
