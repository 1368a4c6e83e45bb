package jsonrpc_test

import (
	"context"
	"fmt"
	"iter"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"time"

	"github.com/ndjsonrpc/jsonrpc"
)

// A daemon that local tools connect to: one Server serves every
// connection accepted on a socket, and a tool dials it.
func ExampleServer_ServeListener() {
	mux := new(jsonrpc.Mux)
	mux.Handle("sum", jsonrpc.Func(func(_ context.Context, nums []int) (int, error) {
		s := 0
		for _, n := range nums {
			s += n
		}
		return s, nil
	}))
	srv := &jsonrpc.Server{Options: jsonrpc.Options{Handler: mux}, IdleTimeout: 5 * time.Minute}
	l, err := net.Listen("tcp", "127.0.0.1:0") // or net.Listen("unix", path)
	if err != nil {
		log.Fatal(err)
	}
	go srv.ServeListener(context.Background(), l)

	client, err := jsonrpc.Dial(context.Background(), "tcp", l.Addr().String(), nil)
	if err != nil {
		log.Fatal(err)
	}
	var n int
	if err := client.Call(context.Background(), "sum", []int{1, 2, 3}, &n); err != nil {
		log.Fatal(err)
	}
	fmt.Println(n)
	client.Close()

	// Stop accepting, let the requests in flight finish, close every
	// connection; Close instead if that takes too long.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := srv.Shutdown(ctx); err != nil {
		srv.Close()
	}
	// Output: 6
}

// A Server is an http.Handler: mount it on any mux or server. A handler
// reads the HTTP request's headers through its context, and what it
// notifies while it runs reaches a client that accepts an event stream
// before the answer.
func ExampleServer_ServeHTTP() {
	mux := new(jsonrpc.Mux)
	mux.Handle("build", jsonrpc.Func(func(ctx context.Context, p struct{ Steps int }) (string, error) {
		if jsonrpc.HTTPRequestFromContext(ctx).Header.Get("Authorization") != "Bearer s3cret" {
			return "", jsonrpc.NewError(-32001, "unauthorized")
		}
		for i := 1; i <= p.Steps; i++ {
			if err := jsonrpc.Peer(ctx).Notify(ctx, "progress", map[string]int{"step": i}); err != nil {
				return "", err
			}
		}
		return "built", nil
	}))
	httpMux := http.NewServeMux()
	httpMux.Handle("POST /rpc", &jsonrpc.Server{Options: jsonrpc.Options{Handler: mux}})
	ts := httptest.NewServer(httpMux) // http.ListenAndServe(addr, httpMux) in a program
	defer ts.Close()

	client := &jsonrpc.HTTPClient{
		URL:      ts.URL + "/rpc",
		Header:   http.Header{"Authorization": {"Bearer s3cret"}},
		OnNotify: func(n *jsonrpc.Request) { fmt.Println(n.Method, string(n.Params)) },
	}
	var result string
	if err := client.Call(context.Background(), "build", map[string]int{"Steps": 2}, &result); err != nil {
		log.Fatal(err)
	}
	fmt.Println(result)

	client.Header = nil
	fmt.Println(client.Call(context.Background(), "build", map[string]int{"Steps": 2}, &result))
	// Output:
	// progress {"step":1}
	// progress {"step":2}
	// built
	// jsonrpc: code -32001: unauthorized
}

// Stream's items arrive over HTTP as server-sent events, one by one.
func ExampleHTTPClient_Stream() {
	mux := new(jsonrpc.Mux)
	mux.Handle("count", jsonrpc.Stream(func(_ context.Context, p struct{ N int }) iter.Seq2[int, error] {
		return func(yield func(int, error) bool) {
			for i := range p.N {
				if !yield(i*i, nil) {
					return
				}
			}
		}
	}))
	ts := httptest.NewServer(&jsonrpc.Server{Options: jsonrpc.Options{Handler: mux}})
	defer ts.Close()

	client := &jsonrpc.HTTPClient{URL: ts.URL}
	for item, err := range client.Stream(context.Background(), "count", map[string]int{"N": 4}) {
		if err != nil {
			log.Fatal(err)
		}
		fmt.Print(string(item), " ")
	}
	fmt.Println()
	// Output: 0 1 4 9
}

// A client of a backend that may restart: the Redialer dials when first
// needed and again whenever the connection breaks, and runs OnConnect on
// each new connection before calls go through.
func ExampleRedialer() {
	mux := new(jsonrpc.Mux)
	mux.Handle("hello", jsonrpc.Func(func(_ context.Context, _ struct{}) (string, error) { return "hello", nil }))
	srv := &jsonrpc.Server{Options: jsonrpc.Options{Handler: mux}}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		log.Fatal(err)
	}
	go srv.ServeListener(context.Background(), l)
	defer srv.Close()

	client := &jsonrpc.Redialer{
		Dial: func(ctx context.Context) (*jsonrpc.Conn, error) {
			return jsonrpc.Dial(ctx, "tcp", l.Addr().String(), nil)
		},
		OnConnect: func(ctx context.Context, c *jsonrpc.Conn) error {
			fmt.Println("connected")
			return nil // a protocol would initialize its session here
		},
		Retry: func(method string) bool { return method == "hello" }, // safe to repeat
	}
	defer client.Close()
	var greeting string
	if err := client.Call(context.Background(), "hello", nil, &greeting); err != nil {
		log.Fatal(err)
	}
	fmt.Println(greeting)
	// Output:
	// connected
	// hello
}
