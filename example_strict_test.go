package jsonrpc_test

import (
	"bytes"
	"context"
	"fmt"
	"strings"

	"github.com/ndjsonrpc/jsonrpc"
)

// Func decodes params strictly: a member whose name matches a field only
// by case is ignored, and one given twice is answered with Invalid params
// that say which and where.
func ExampleFunc() {
	type grant struct {
		User  string `json:"user"`
		Admin bool   `json:"admin"`
	}
	mux := new(jsonrpc.Mux)
	mux.Handle("grant", jsonrpc.Func(func(ctx context.Context, p grant) (string, error) {
		return fmt.Sprintf("%s admin=%v", p.User, p.Admin), nil
	}))
	input := strings.Join([]string{
		`{"jsonrpc":"2.0","id":1,"method":"grant","params":{"user":"ann","admin":true}}`,
		`{"jsonrpc":"2.0","id":2,"method":"grant","params":{"user":"bob","ADMIN":true}}`,
		`{"jsonrpc":"2.0","id":3,"method":"grant","params":{"user":"eve","admin":false,"admin":true}}`,
	}, "\n")

	var out bytes.Buffer
	srv := &jsonrpc.Server{Options: jsonrpc.Options{Handler: mux, MaxInFlight: 1}}
	if err := srv.Serve(context.Background(), strings.NewReader(input), &out); err != nil {
		fmt.Println(err)
	}
	fmt.Print(out.String())
	// Output:
	// {"jsonrpc":"2.0","id":1,"result":"ann admin=true"}
	// {"jsonrpc":"2.0","id":2,"result":"bob admin=false"}
	// {"jsonrpc":"2.0","id":3,"error":{"code":-32602,"message":"Invalid params: duplicate member \"admin\" at /admin","data":{"reason":"duplicate member","member":"admin","path":"/admin"}}}
}

// LaxParams restores encoding/json's rules for a handler whose peers rely
// on them: names match whatever their case, and the last of a duplicate
// wins.
func ExampleLaxParams() {
	type point struct{ X, Y int }
	h := jsonrpc.Func(func(ctx context.Context, p point) (int, error) {
		return p.X + p.Y, nil
	}, jsonrpc.LaxParams)
	sum, err := h.ServeJSONRPC(context.Background(), &jsonrpc.Request{
		ID:     jsonrpc.Int64ID(1),
		Method: "add",
		Params: []byte(`{"x":1,"y":2,"y":40}`),
	})
	fmt.Println(sum, err)
	// Output:
	// 41 <nil>
}
