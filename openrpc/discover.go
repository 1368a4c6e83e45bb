package openrpc

// This file answers rpc.discover.

import (
	"context"
	"encoding/json"

	"github.com/ndjsonrpc/jsonrpc"
)

// Middleware returns middleware for [jsonrpc.Mux.Use] that answers the
// method rpc.discover with d, encoded once, now: changes to d after the
// call are not seen. Every other request goes to the handler as before,
// and an unknown method, "rpc." or not, is still answered with
// [jsonrpc.ErrMethodNotFound].
//
// A Mux refuses to register methods whose names start with "rpc.", so
// rpc.discover reaches the Mux's answer for unknown methods, which
// Mux.Use wraps too; that is where the middleware answers it. It wraps
// the registered handlers as well, at the cost of a comparison of the
// method's name per call, and of the fast path of handlers made by
// [jsonrpc.Func], which then return their result boxed rather than
// encoding it themselves.
//
// Middleware panics if d does not encode as JSON (an example value
// that JSON cannot hold, two types of one name that contain themselves
// in its methods), a programming error.
func (d *Document) Middleware() func(jsonrpc.Handler) jsonrpc.Handler {
	b, err := json.Marshal(d)
	if err != nil {
		panic("openrpc: Document.Middleware: " + err.Error())
	}
	return func(next jsonrpc.Handler) jsonrpc.Handler {
		return discoverer{next: next, doc: b}
	}
}

// discoverer answers rpc.discover with doc and passes the rest to next.
type discoverer struct {
	next jsonrpc.Handler
	doc  json.RawMessage
}

func (h discoverer) ServeJSONRPC(ctx context.Context, req *jsonrpc.Request) (any, error) {
	if req.Method == DiscoverMethod {
		return h.doc, nil
	}
	return h.next.ServeJSONRPC(ctx, req)
}
