package main

// This file serves MCP's Streamable HTTP transport in its stateless form:
// every message from the client is a POST of its own, answered in the
// response, and nothing is kept between requests, so no session id is
// issued.

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/ndjsonrpc/jsonrpc"
)

// endpoint is the path of the MCP endpoint; other paths are 404.
const endpoint = "/mcp"

// requestTimeout bounds the work of one POST, all the calls of a batch
// together; the response's WriteTimeout is a little longer.
var requestTimeout = 55 * time.Second

// deadlineKey is the context key of the time by which the tools of an
// HTTP request must have ended.
type deadlineKey struct{}

// serveHTTP serves srv as an MCP endpoint on the TCP address addr until ctx
// ends. Once it listens it prints the endpoint's URL, followed by a
// newline, to out. Then it stops accepting and gives the requests in
// flight five seconds before cancelling them.
//
// Server.ServeHTTP does the transport's work: a POSTed request is answered
// with application/json, or with text/event-stream when the tool sends
// progress before its result (the client's Accept names both at the same
// quality); a POSTed notification gets 202 Accepted with no body; GET and
// DELETE get 405 Method Not Allowed, which tells the client that there is
// no standalone event stream and no session to end. In front of it,
// checkHeaders refuses foreign origins and unknown protocol versions.
func serveHTTP(ctx context.Context, srv *jsonrpc.Server, addr string, out io.Writer) error {
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	if ap, err := netip.ParseAddrPort(l.Addr().String()); err != nil || !ap.Addr().IsLoopback() {
		logger.Warn("listening beyond loopback: put authentication in front of this server", "addr", l.Addr())
	}
	mux := http.NewServeMux()
	mux.Handle(endpoint, checkHeaders(srv))
	// The bounds SECURITY.md asks of an HTTP endpoint. WriteTimeout
	// bounds a whole response, progress included, so it is above
	// requestTimeout, which bounds the tools of one POST (a single call's
	// longest, count's 1000 steps of 20 ms, takes 20 s).
	hs := &http.Server{
		Handler:           mux,
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       30 * time.Second,
		WriteTimeout:      requestTimeout + 5*time.Second,
		IdleTimeout:       2 * time.Minute,
		MaxHeaderBytes:    64 << 10,
	}
	u := "http://" + l.Addr().String() + endpoint
	if _, err := fmt.Fprintln(out, u); err != nil {
		l.Close()
		return err
	}
	logger.Info("serving MCP over stateless Streamable HTTP", "url", u)

	errc := make(chan error, 1)
	go func() { errc <- hs.Serve(l) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	stop, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := hs.Shutdown(stop); err != nil {
		_ = srv.Close() // cancels the tools still running
		_ = hs.Close()
	}
	return nil
}

// checkHeaders refuses, before h sees them, the requests the transport
// says a server must refuse:
//   - an Origin header that is not a loopback origin gets 403 Forbidden.
//     A web page that DNS rebinding has pointed at this port sends its own
//     origin, so it cannot drive a local server. A client that is not a
//     browser sends no Origin and is let through.
//   - an MCP-Protocol-Version header that names a version this server does
//     not speak gets 400 Bad Request. Without the header the client may be
//     older than it (2025-03-26), which this server speaks too.
func checkHeaders(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if origin := r.Header.Get("Origin"); origin != "" && !loopbackOrigin(origin) {
			refuse(w, http.StatusForbidden, fmt.Sprintf("origin %q is not allowed", origin))
			return
		}
		if v := r.Header.Get("MCP-Protocol-Version"); v != "" && !slices.Contains(versions, v) {
			refuse(w, http.StatusBadRequest, fmt.Sprintf("unsupported MCP-Protocol-Version %q", v))
			return
		}
		// MCP answers a request with application/json or
		// text/event-stream only: hide application/x-ndjson, which
		// Server.ServeHTTP would otherwise stream.
		if accept := r.Header.Values("Accept"); len(accept) > 0 {
			var kept []string
			for _, v := range accept {
				for _, part := range strings.Split(v, ",") {
					mt, _, _ := strings.Cut(part, ";")
					if !strings.EqualFold(strings.TrimSpace(mt), "application/x-ndjson") {
						kept = append(kept, strings.TrimSpace(part))
					}
				}
			}
			r.Header["Accept"] = []string{strings.Join(kept, ", ")}
		}
		// The tools of one POST (a batch runs its calls one after the
		// other) must end before the response's WriteTimeout: callTool
		// stops them at this deadline.
		ctx := context.WithValue(r.Context(), deadlineKey{}, time.Now().Add(requestTimeout))
		h.ServeHTTP(w, r.WithContext(ctx))
	})
}

// loopbackOrigin reports whether origin is an http or https origin on
// localhost or a loopback address.
func loopbackOrigin(origin string) bool {
	u, err := url.Parse(origin)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") {
		return false
	}
	if u.Hostname() == "localhost" {
		return true
	}
	ip, err := netip.ParseAddr(u.Hostname())
	return err == nil && ip.IsLoopback()
}

// refuse answers with status and, as the transport allows, a JSON-RPC
// error response without an id.
func refuse(w http.ResponseWriter, status int, message string) {
	body, _ := json.Marshal(struct {
		JSONRPC string         `json:"jsonrpc"`
		Error   *jsonrpc.Error `json:"error"`
	}{"2.0", jsonrpc.NewError(jsonrpc.CodeInvalidRequest, message)})
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(status)
	w.Write(body)
}
