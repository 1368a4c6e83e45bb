package jsonrpc_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"iter"
	"os"
	"os/exec"
	"strings"

	"github.com/ndjsonrpc/jsonrpc"
)

// Register methods on a Mux and dispatch a request to it in process.
func ExampleMux_Handle() {
	mux := new(jsonrpc.Mux)
	mux.Handle("subtract", jsonrpc.Func(func(ctx context.Context, p [2]int) (int, error) {
		return p[0] - p[1], nil
	}))

	result, err := mux.ServeJSONRPC(context.Background(), &jsonrpc.Request{
		ID:     jsonrpc.Int64ID(1),
		Method: "subtract",
		Params: []byte(`[42, 23]`),
	})
	fmt.Println(result, err)

	_, err = mux.ServeJSONRPC(context.Background(), &jsonrpc.Request{Method: "nope"})
	fmt.Println(errors.Is(err, jsonrpc.ErrMethodNotFound))
	// Output:
	// 19 <nil>
	// true
}

// Serve a session from a buffer: a valid request, a broken line, a
// notification (which gets no answer) and a batch.
func ExampleServer_Serve() {
	mux := new(jsonrpc.Mux)
	mux.Handle("add", jsonrpc.Func(func(ctx context.Context, p []int) (int, error) {
		sum := 0
		for _, n := range p {
			sum += n
		}
		return sum, nil
	}))
	input := strings.Join([]string{
		`{"jsonrpc":"2.0","id":1,"method":"add","params":[1,2,3]}`,
		`{"jsonrpc":"2.0","id":2,"method":"add","params":[1,`,
		`{"jsonrpc":"2.0","method":"add","params":[4]}`,
		`[{"jsonrpc":"2.0","id":"a","method":"add","params":[5]},{"jsonrpc":"2.0","id":"b","method":"sub"}]`,
	}, "\n")

	var out bytes.Buffer
	srv := &jsonrpc.Server{Options: jsonrpc.Options{Handler: mux}}
	if err := srv.Serve(context.Background(), strings.NewReader(input), &out); err != nil {
		fmt.Println(err)
	}
	fmt.Print(out.String())
	// Output:
	// {"jsonrpc":"2.0","id":1,"result":6}
	// {"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Parse error"}}
	// [{"jsonrpc":"2.0","id":"a","result":5},{"jsonrpc":"2.0","id":"b","error":{"code":-32601,"message":"Method not found"}}]
}

// A handler sends progress notifications on its connection before it
// returns its result; they are written before the response.
func ExamplePeer() {
	mux := new(jsonrpc.Mux)
	mux.HandleFunc("build", func(ctx context.Context, req *jsonrpc.Request) (any, error) {
		for step := 1; step <= 2; step++ {
			if err := jsonrpc.Peer(ctx).Notify(ctx, "progress", map[string]int{"step": step}); err != nil {
				return nil, err
			}
		}
		return "built", nil
	})
	var out bytes.Buffer
	in := strings.NewReader(`{"jsonrpc":"2.0","id":7,"method":"build"}`)
	if err := jsonrpc.Serve(context.Background(), in, &out, mux); err != nil {
		fmt.Println(err)
	}
	fmt.Print(out.String())
	// Output:
	// {"jsonrpc":"2.0","method":"progress","params":{"step":1}}
	// {"jsonrpc":"2.0","method":"progress","params":{"step":2}}
	// {"jsonrpc":"2.0","id":7,"result":"built"}
}

// countUpToParams are the params of the "count" method.
type countUpToParams struct {
	N int `json:"n"`
}

// countUpTo yields 1..n; it is the producer behind a streaming method.
func countUpTo(ctx context.Context, p countUpToParams) iter.Seq2[int, error] {
	return func(yield func(int, error) bool) {
		for i := 1; i <= p.N; i++ {
			if !yield(i, nil) {
				return
			}
		}
	}
}

// A streaming handler: each item goes out as a "$/stream" notification
// that carries the request's id, then comes the one response.
func ExampleStream() {
	mux := new(jsonrpc.Mux)
	mux.Handle("count", jsonrpc.Stream(countUpTo))

	var out bytes.Buffer
	in := strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"count","params":{"n":3}}`)
	if err := jsonrpc.Serve(context.Background(), in, &out, mux); err != nil {
		fmt.Println(err)
	}
	fmt.Print(out.String())

	// In process, InProcess gives the items directly.
	local := &jsonrpc.InProcess{Handler: mux}
	for item, err := range local.Stream(context.Background(), "count", map[string]int{"n": 2}) {
		if err != nil {
			fmt.Println("error:", err)
			break
		}
		fmt.Println("item", string(item))
	}
	// Output:
	// {"jsonrpc":"2.0","method":"$/stream","params":{"id":1,"item":1}}
	// {"jsonrpc":"2.0","method":"$/stream","params":{"id":1,"item":2}}
	// {"jsonrpc":"2.0","method":"$/stream","params":{"id":1,"item":3}}
	// {"jsonrpc":"2.0","id":1,"result":3}
	// item 1
	// item 2
}

// A client and a server joined by io.Pipe.
func ExampleConn_Call() {
	mux := new(jsonrpc.Mux)
	mux.Handle("greet", jsonrpc.Func(func(ctx context.Context, p struct{ Name string }) (string, error) {
		return "hello, " + p.Name, nil
	}))
	serverIn, clientOut := io.Pipe()
	clientIn, serverOut := io.Pipe()
	served := make(chan error, 1)
	go func() {
		served <- jsonrpc.Serve(context.Background(), serverIn, serverOut, mux)
		serverOut.Close()
	}()

	client := jsonrpc.NewConn(clientIn, clientOut, nil)
	var greeting string
	err := client.Call(context.Background(), "greet", map[string]string{"Name": "gopher"}, &greeting)
	fmt.Println(greeting, err)

	err = client.Call(context.Background(), "missing", nil, nil)
	var rpcErr *jsonrpc.Error
	fmt.Println(errors.As(err, &rpcErr), int(rpcErr.Code), rpcErr.Message)

	clientOut.Close() // the server sees EOF
	fmt.Println(<-served)
	client.Close()
	// Output:
	// hello, gopher <nil>
	// true -32601 Method not found
	// <nil>
}

// Start a tool server as a child process and call it.
func ExampleStartProcess() {
	cmd := exec.Command("go", "run", "./cmd/jsonrpc-demo")
	cmd.Stderr = os.Stderr
	p, err := jsonrpc.StartProcess(context.Background(), cmd, &jsonrpc.Options{
		OnNotify: func(req *jsonrpc.Request) { fmt.Println(req.Method, string(req.Params)) },
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	var diff float64
	err = p.Call(context.Background(), "subtract", map[string]int{"minuend": 42, "subtrahend": 23}, &diff)
	fmt.Println(diff, err)

	var status string
	err = p.Call(context.Background(), "progress", map[string]int{"count": 2}, &status)
	fmt.Println(status, err)
	fmt.Println(p.Close())
	// Output:
	// 19 <nil>
	// progress {"done":1,"total":2}
	// progress {"done":2,"total":2}
	// done <nil>
	// <nil>
}

// A handler whose result is JSON already: an echo that returns its params
// as they came, which costs no allocation per request.
func ExampleRawHandlerFunc() {
	mux := new(jsonrpc.Mux)
	mux.Handle("echo", jsonrpc.RawHandlerFunc(func(ctx context.Context, req *jsonrpc.Request) (json.RawMessage, error) {
		return req.Params, nil
	}))
	mux.Handle("version", jsonrpc.RawHandlerFunc(func(ctx context.Context, req *jsonrpc.Request) (json.RawMessage, error) {
		return json.RawMessage(`{"name":"demo","version":"1.0"}`), nil
	}))
	input := `{"jsonrpc":"2.0","id":1,"method":"echo","params":[1, "two", {"three": 3}]}` + "\n" +
		`{"jsonrpc":"2.0","id":2,"method":"version"}` + "\n"

	var out bytes.Buffer
	srv := &jsonrpc.Server{Options: jsonrpc.Options{Handler: mux}}
	if err := srv.Serve(context.Background(), strings.NewReader(input), &out); err != nil {
		fmt.Println(err)
	}
	fmt.Print(out.String())
	// Output:
	// {"jsonrpc":"2.0","id":1,"result":[1, "two", {"three": 3}]}
	// {"jsonrpc":"2.0","id":2,"result":{"name":"demo","version":"1.0"}}
}
