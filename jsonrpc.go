// Package jsonrpc implements JSON-RPC 2.0 over newline-delimited JSON
// streams: one message per line, over any io.Reader and io.Writer, such as
// the standard input and output of a child process, a socket or a pipe.
//
// # Overview
//
// A [Handler] answers requests. [Mux] dispatches them by method name to
// handlers registered with [Mux.Handle]; [Func] turns a typed function
// into a handler, decoding the params into its argument; [Stream] turns a
// function that produces a sequence into a handler whose items go out as
// they come. [Method] names a method with its types once for both sides:
// it registers the handler and makes typed calls.
//
// A [Conn] is one end of a connection: it calls the peer and serves the
// peer's requests with its [Options.Handler]. [Server] serves many
// connections (streams, sockets, HTTP) with the same [Options]. A
// [Caller] calls: a Conn, an [HTTPClient], an [InProcess] handler, and
// a handler's own peer ([Peer]) all are one. [Interceptor]s wrap the calls
// a Caller makes, as middleware given to [Mux.Use] wraps handlers.
//
//	mux := new(jsonrpc.Mux)
//	mux.Handle("subtract", jsonrpc.Func(func(ctx context.Context, p [2]int) (int, error) {
//		return p[0] - p[1], nil
//	}))
//	err := jsonrpc.Serve(ctx, os.Stdin, os.Stdout, mux)
//
// # Wire format
//
// Messages follow the JSON-RPC 2.0 specification exactly. A request whose
// id is absent is a notification and is never answered, not even with an
// error; "id": null is a request like any other, answered with "id": null.
// Ids are kept as the JSON text they arrived with and written back byte for
// byte. Decoding is strict: "jsonrpc" must be "2.0", member names are
// case-sensitive, a member that appears twice makes the request invalid,
// and unknown members are ignored. A line that is not valid JSON (strings
// must be valid UTF-8) gets a Parse error (-32700) with a null id; valid
// JSON that is not a valid request gets an Invalid Request error (-32600),
// which echoes the request's id when that id is itself valid.
//
// A valid Response object that reaches a connection goes to the call it
// answers, made with [Conn.Call] or through [Peer]; one that
// answers no call is logged at Debug and dropped (or given to
// OnUnknownResponse), alone or inside a batch, and never answered.
//
// Batches are supported: an array of requests gets an array of responses,
// one per request that is not a notification, in the order of the
// requests; a batch of notifications only gets no output at all, and an
// empty array gets a single Invalid Request error.
//
// # Params and results
//
// [Func] and [Stream] decode params, and [Conn.Call] and the other calls
// decode results, with encoding/json, but by the rules that
// encoding/json/v2 applies by default to member names, at every depth: a
// name matches a field only exactly, so {"NAME":"x"} leaves a field
// tagged "name" alone (an unknown member, ignored like any other); and a
// name given twice in one object is refused, also inside a
// json.RawMessage, an any or a type with its own UnmarshalJSON. Params
// with a duplicate get an Invalid params error (-32602) whose data names
// the member and where it is, as a JSON Pointer into the params:
// {"reason":"duplicate member","member":"name","path":"/user/name"}; a
// result with one makes the call fail with an error wrapping
// [ErrDuplicateMember]. A check that reads a member before the handler
// (a proxy, a policy) thus reads what the handler reads; encoding/json's
// own rules, which match names whatever their case and keep the last of
// a duplicate, let the two disagree. [LaxParams] restores them for a
// handler that needs them.
//
// The params of a call are written as json.Marshal writes them, and a
// result or a stream's item as a json.Encoder with SetEscapeHTML(false)
// does (a "<" stays as it is), over a connection or in process. Values of the usual shapes, structs, pointers, slices,
// arrays and maps with string keys of bools, numbers and strings, and
// interfaces holding these (positional params as a []any, an MCP result
// as a map[string]any, or with its content behind an interface with
// methods), are written the same, byte for byte, by a plan made once for
// each type: without reflection, but for the entries of a map. A type
// with a MarshalJSON or MarshalText method or a map with keys of another
// kind goes to encoding/json, and so does a value holding one.
//
// # Two-way connections
//
// The protocols run over JSON-RPC on stdio call in both directions: an MCP
// server asks its client for roots/list, an LSP server asks the editor for
// workspace/configuration. A handler does so through [Peer] with its own
// context, and waits:
//
//	mux.Handle("tools/call", jsonrpc.Func(func(ctx context.Context, p callParams) (result, error) {
//		var roots struct {
//			Roots []struct {
//				URI string `json:"uri"`
//			} `json:"roots"`
//		}
//		if err := jsonrpc.Peer(ctx).Call(ctx, "roots/list", nil, &roots); err != nil {
//			return result{}, err
//		}
//		...
//	}))
//
// The answer is routed to the call by the read loop, which reads and
// delivers responses whatever the handlers do: handlers waiting on the
// peer never keep its answers out, however many wait. If the handler's
// request is cancelled, its calls are cancelled too and the peer is told.
// [RequestFromContext] gives a handler (or middleware, see [Mux.Use]) the
// id and method it serves, which MCP's progress notifications need.
//
// Each protocol has its own cancel notification: [Cancellation] names its
// method, the member of its params that holds the id, and whether a
// cancelled request is answered. The zero value is LSP's; MCP's is
// Cancellation{Method: "notifications/cancelled", IDMember: "requestId",
// Unanswered: true}.
//
// # Framing
//
// Each message is one line ended by "\n". A trailing "\r" and blank lines
// are tolerated. A last line that lacks its newline is read like any
// other: a whole message is served, and one cut short by the end of the
// input gets a Parse error. Lines may be of any length up to a configurable maximum
// (64 MiB by default); a longer line is discarded as it
// is read, without being held in memory, answered with an Invalid Request
// error, and reading goes on at the next line.
//
// Other framings plug in through [Framing]: [HeaderFraming] is LSP's base
// protocol (a Content-Length header, a blank line, then the body), set
// with [Options.Framing].
//
// Some media delimit messages themselves: WebSocket, an in-memory pipe, a
// test double. A [Transport] carries such whole messages, one JSON message
// or batch each, read with ReadMessage and sent with WriteMessage, never
// split or joined; [NewTransportConn] and [Server.ServeTransport] run a
// connection over one, with the limits, answers, order and lifecycle of a
// stream. Nothing is framed or rewritten, so a message may span lines; a
// message over the size limit is refused whatever the transport returns.
//
// # Sockets and HTTP
//
// [Server.ServeListener] serves every connection accepted from a
// net.Listener (TCP, a Unix socket), each as Serve serves a stream, with
// a limit on open connections and an idle timeout; [Dial] connects to
// one. A Server is also an http.Handler ([Server.ServeHTTP]):
// the body of a POST is one message or one batch, answered in the
// response, where a handler's notifications go out first as server-sent
// events when the client asks for them. [HTTPClient] calls such an
// endpoint with the methods of [Conn].
//
// # Errors
//
// An [Error] is the wire error object, and implements error. A handler
// that returns an *Error, or an error wrapping one, sends it as it is. Any
// other error becomes -32603 "Internal error" with data
// {"exception": "<Go type>", "detail": "<text>"}; [Options.HideErrorDetail]
// withholds the detail. A handler that panics gets -32603 too, the panic
// is logged with its stack, and the server keeps serving. Errors match
// under [errors.Is] by code: errors.Is(err, ErrMethodNotFound) holds for
// any *Error with code -32601.
//
// # Order and concurrency
//
// Each notification from the peer is handled alone: after the handlers of
// every message that arrived before it have returned, and before any
// message that arrives after it is handled. The requests between two
// notifications run concurrently, up to [Options.MaxInFlight] at a time on
// each connection, so their responses may come in any order (the client
// matches them by id). So a request sees the effects of exactly the
// notifications before it: an editor's didOpen and didChange before the
// hover that follows them. [Order] changes this per method or for the
// whole connection (every request in order too), and a notification that
// the Mux has no handler for holds nothing up. The same order holds on
// every transport: streams, sockets, [Conn], and the entries of a batch, which are handled one at a time.
//
// What is handled in order holds up the handling of what comes after it,
// not its reading: responses to this side's calls and cancel
// notifications take effect as they arrive. More requests wait in a
// queue, bounded in bytes by [Options.MaxPendingBytes], while reading goes
// on. A handler starts on the reading goroutine; if it runs for more than
// about a millisecond, reading moves to a fresh goroutine, so a slow
// handler never stops reading and a cancel can always arrive. A handler
// that waits for the peer (through [Peer]) gives up its slot meanwhile.
//
// # Cancellation
//
// The notification {"jsonrpc":"2.0","method":"$/cancelRequest",
// "params":{"id":X}} (or the one that [Cancellation] names; a connection
// may accept several, see [Options.AcceptCancel]) cancels the context of
// request X, whenever it comes, with a [*CancelError] as its cause
// ([context.Cause]), which carries the notification's params. A handler
// that returns an error because of that is answered with
// [CodeRequestCancelled] (-32800), or not at all under MCP's convention; a
// request still waiting when its cancel arrives never runs, and one the
// cancel finds running, or as its handler is being called, runs with its
// context cancelled ([Options.OnCancel] tells the two apart). Every cancel,
// also one of a request already answered or never sent, is reported to
// [Options.OnCancel]. A handler's context also ends when the handler
// returns and when the connection stops, with [ErrPeerClosed] or
// [ErrClosed] in its cause.
//
// # Request lifetime
//
// The *Request a handler gets, and the bytes of its Params, belong to the
// connection: they are valid until the handler returns, and must be
// copied to be kept (json.RawMessage(append([]byte(nil), req.Params...))).
// Its ID and Method are values (an [ID] holds a string): a handler may keep
// them, for example to match a later cancel or progress notification. The
// handler's context ends when the handler returns; a goroutine that
// outlives the handler needs a context of its own (context.WithoutCancel
// keeps its values), and [RequestFromContext] returns nil then.
//
// # Shutdown
//
// At the end of its input (the peer closed its end, or reading failed),
// a connection gives the handlers in flight [Options.StopGrace] to
// finish, then cancels their contexts with a cause that wraps
// [ErrPeerClosed] and the read error (io.EOF for a clean end), and gives
// them as long again to return; Serve then returns nil, once their
// responses are written, or an error wrapping [ErrClosed] if a handler had
// to be abandoned. The same rule holds for a [Conn]. [Server.Shutdown]
// and [Conn.Shutdown] stop gracefully: they wait for the work in flight,
// for as long as their context allows, while reading goes on so that
// nothing is dropped without a word: each request that arrives meanwhile
// is answered at once with [ErrNotRun] (code -32091, data
// {"reason":"stopping"}: not run, send it elsewhere), notifications for
// the handler are dropped, and responses still reach the calls awaiting
// them. Once the work is done, and 100 ms later whatever the peer still
// sends, the connection ends. Over HTTP, a request after Shutdown gets
// 503 with Retry-After and Connection: close. [Server.Close] also cancels
// the handlers' contexts, stops reading at once, and Serve then waits no
// longer than [Options.StopGrace] for a handler that ignores its context.
//
// [MayHaveRun] tells a caller whether a call that failed may have run:
// not when it was never sent or was answered [ErrNotRun],
// [ErrOverloaded] or another error that says the handler never started;
// every [Caller] classifies its errors alike, and wraps [ErrClosed] for a
// connection that ended, an HTTP transport failure included.
//
// # Streaming
//
// A handler made by [Stream] sends each item as the notification
// {"jsonrpc":"2.0","method":"$/stream","params":{"id":X,"item":V}}, where X
// is the id of the request, and then the one response to the request,
// whose result is the number of items. Any handler can send notifications
// of its own, such as progress, through [Peer]; every notification a
// handler sends before it returns is written before its response.
package jsonrpc

import (
	"context"
	"encoding/json"
)

// Version is the JSON-RPC version this package speaks.
const Version = "2.0"

// A Handler answers JSON-RPC requests.
//
// ServeJSONRPC returns the result of req, or an error. Returning means the
// request is finished: the result is encoded and sent (a nil result is
// sent as null), and an error is sent as described in the package
// documentation. For a notification, the result is dropped and an error
// is only logged. A panic is recovered and answered with an Internal
// error.
//
// The context is cancelled when ServeJSONRPC returns, when the peer
// cancels the request, and when the connection stops. req and its Params
// must not be kept after ServeJSONRPC returns.
type Handler interface {
	ServeJSONRPC(ctx context.Context, req *Request) (result any, err error)
}

// HandlerFunc is an adapter to allow the use of ordinary functions as
// handlers.
type HandlerFunc func(ctx context.Context, req *Request) (any, error)

// ServeJSONRPC calls f(ctx, req).
func (f HandlerFunc) ServeJSONRPC(ctx context.Context, req *Request) (any, error) {
	return f(ctx, req)
}

var _ Handler = HandlerFunc(nil)

// RawHandlerFunc is an adapter, like [HandlerFunc], for a function whose
// result is JSON already. A server treats its result as it treats a
// json.RawMessage that a [HandlerFunc] returns: written as it is once
// checked to be valid JSON (the request's own params, checked as they were
// read, are not checked again), and nil is sent as null. It differs in
// cost only: the server calls f directly, so the result is never boxed in
// an interface, and a handler that returns its params, or bytes it owns,
// costs no allocation per request.
type RawHandlerFunc func(ctx context.Context, req *Request) (json.RawMessage, error)

// ServeJSONRPC calls f(ctx, req) and returns its result as a
// json.RawMessage.
func (f RawHandlerFunc) ServeJSONRPC(ctx context.Context, req *Request) (any, error) {
	raw, err := f(ctx, req)
	if err != nil {
		return nil, err
	}
	return raw, nil
}

var _ Handler = RawHandlerFunc(nil)
