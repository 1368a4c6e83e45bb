package jsonrpc

// This file serves JSON-RPC 2.0 over HTTP POST: one message or one batch
// per request body, answered in the response, which may stream the
// handler's notifications first.

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"
)

// The media types of the HTTP transport.
const (
	contentJSON   = "application/json"
	contentSSE    = "text/event-stream"
	contentNDJSON = "application/x-ndjson"
)

// errHTTPCall is why a handler serving an HTTP request cannot call the
// client: nothing carries the answer back.
var errHTTPCall = fmt.Errorf("%w: an HTTP request cannot carry calls to the client", ErrNoConnection)

// ServeHTTP serves JSON-RPC 2.0 over HTTP, with the Server's Handler and
// limits and the same strictness as Serve: the body of a POST is one
// message or one batch, and the response carries its answer.
//
// The request must be a POST (otherwise 405 Method Not Allowed, with
// "Allow: POST") with Content-Type application/json (otherwise 415
// Unsupported Media Type). A body over MaxMessageSize is refused with 413
// Content Too Large, without being read past the limit. Every JSON-RPC
// answer, a Parse error or an Invalid Request included, comes with status
// 200 and Content-Type application/json. A body that gets no answer (a
// notification, or a batch of them) gets 202 Accepted and no body, and
// the notifications its handlers send are dropped. The
// body's whitespace, newlines included, is free, as JSON allows.
//
// Streaming: the notifications a handler sends while it runs ([Peer],
// the items of a [Stream] handler) go out before the answer when the
// request's Accept header names a streaming type at a quality no lower
// than that of application/json:
//   - text/event-stream: each message is a server-sent event "message"
//     whose data is the message, the answer last;
//   - application/x-ndjson: each message is a line, the answer last.
//
// A wildcard never selects a streaming type. When application/json is as
// acceptable as the streaming type (as in "application/json,
// text/event-stream"), the response is a stream only if a notification
// comes before the answer; otherwise it is plain JSON. With plain JSON,
// the handler's notifications are dropped (Notify returns nil).
//
// The handler's context is the request's: it is cancelled when the client
// goes away, since no one is left to read the answer. [HTTPRequestFromContext]
// returns the *http.Request, for its headers. A handler cannot call the
// client (a call through [Peer] fails at once with an error wrapping [ErrNoConnection]),
// nor does the cancel notification apply: the client cancels a call by
// dropping its request. The 202 of a body of notifications is sent once
// their handlers have returned.
//
// Requests count as connections for Shutdown and Close: Shutdown lets
// those in flight finish, Close cancels them (a request whose answer was
// dropped so gets 500 Internal Server Error, if nothing was sent yet). Once
// the server is shut down or closed, a new request is not run: it gets
// 503 Service Unavailable with "Retry-After: 1" and "Connection: close",
// and, when its body holds calls and the client takes application/json,
// a JSON body that answers each call with [ErrNotRun] (see
// [Server.Shutdown]).
//
// After Close, or once the client has gone away, ServeHTTP returns when
// the handlers have returned or StopGrace has passed, whichever comes
// first; a handler still running is abandoned, and what it sends later
// goes nowhere. A write of the response still blocked then, on a client
// that does not read, is ended by a write deadline set to that moment
// (see [http.ResponseController]); with a ResponseWriter that has no
// write deadlines, ServeHTTP returns when that write does. Close also
// ends at once the read of a body that the client sends slower than it
// announced, or never, with a read deadline (the request gets 503 and
// did not run), and gives the body of a request that comes after Close
// StopGrace to arrive.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		closeUnread(w, r)
		http.Error(w, "JSON-RPC requests must be POSTed", http.StatusMethodNotAllowed)
		return
	}
	if !isJSONType(r.Header.Get("Content-Type")) {
		closeUnread(w, r)
		http.Error(w, "Content-Type must be application/json", http.StatusUnsupportedMediaType)
		return
	}
	limit := orDefault(s.MaxMessageSize, defaultMaxMessageSize)
	mem := s.memory()
	x := new(httpRequestState)
	out := &x.out
	*out = httpOut{w: w, frame: httpFraming{accept: negotiate(r.Header.Values("Accept"))}}
	s.trackRead(x)
	body, charged, err := readBody(r.Body, r.ContentLength, limit, mem)
	defer mem.give(charged)
	if err != nil {
		if s.untrackRead(x) {
			refuseHTTP(w, r, nil, s.MaxBatch) // Close ended the read
		} else if err == errBodyShed {
			shedHTTP(w, r)
		} else if errors.Is(err, ErrMessageTooLarge) {
			closeUnread(w, r) // the rest of the body is not read
			http.Error(w, "body larger than the server's message limit", http.StatusRequestEntityTooLarge)
		} else {
			http.Error(w, "cannot read the body", http.StatusBadRequest)
		}
		return
	}

	if out.frame.accept.stream != framePlain {
		// A body that calls nothing gets 202 and no body, even when its
		// handlers send notifications.
		out.frame.mute = !hasID(body, s.MaxBatch)
	}
	x.in.initWhole(body)
	x.in.charged = charged // the body's bytes are the request's own
	var cfg config
	s.configInto(&cfg)
	cfg.framing = &out.frame
	cfg.in = &x.in
	cfg.drainGrace = false // the body is all read
	x.ctx = httpContext{Context: r.Context(), r: r}
	ctx := &x.ctx
	initFramedWriter(&x.lw, cfg.framing, out)
	x.lw.buf, x.lw.scratch = x.wbuf[:0], x.scratch[:0]
	c := &x.c
	initConn(c, &x.lw, &cfg, ctx, nil, out)
	c.callErr = errHTTPCall
	x.rs.slab, x.rs.slabSize = x.ctxs[:], len(x.ctxs)
	x.rs.unit.tasks = x.tasks[:0]
	c.firstRS = &x.rs
	if !s.trackServe(x) {
		refuseHTTP(w, r, body, s.MaxBatch)
		return
	}
	defer s.untrack(c)
	_ = c.serve(ctx)
	// A handler abandoned after StopGrace must not write once this
	// returns.
	out.mu.Lock()
	out.done = true
	switch {
	case out.started:
	case c.isAborted():
		// Close, or the client went away: the answer was dropped. Not
		// 503, which says the request did not run (see MayHaveRun).
		http.Error(w, "request abandoned", http.StatusInternalServerError)
	default:
		w.WriteHeader(http.StatusAccepted)
	}
	out.mu.Unlock()
}

// trackRead notes that ServeHTTP reads the body of x's request, so that
// Close can end the read: a client that sends its body slower than it
// announced, or never, must not keep ServeHTTP past the grace. Once Close
// was called, the read of a new request's body is given StopGrace.
func (s *Server) trackRead(x *httpRequestState) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stopped {
		grace := orDefault(s.StopGrace, defaultStopGrace)
		_ = http.NewResponseController(x.out.w).SetReadDeadline(time.Now().Add(grace))
		return
	}
	x.readNext = s.reads
	if s.reads != nil {
		s.reads.readPrev = x
	}
	s.reads = x
}

// unlinkRead takes x out of the bodies being read, if it is there; s.mu
// is held.
func (s *Server) unlinkRead(x *httpRequestState) {
	if x.readPrev != nil {
		x.readPrev.readNext = x.readNext
	} else if s.reads == x {
		s.reads = x.readNext
	}
	if x.readNext != nil {
		x.readNext.readPrev = x.readPrev
	}
	x.readPrev, x.readNext = nil, nil
}

// untrackRead notes that the read of x's body failed; it reports whether
// Close was called meanwhile (and may have ended it).
func (s *Server) untrackRead(x *httpRequestState) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.unlinkRead(x)
	return s.stopped
}

// trackServe notes that x's body is read and its connection is to be
// served, as track does; it reports false, and tracks nothing, once the
// server is shut down or closed.
func (s *Server) trackServe(x *httpRequestState) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.unlinkRead(x)
	return s.addConn(&x.c)
}

// endReads marks s stopped and ends the reads of the bodies that
// ServeHTTP is reading, with a read deadline set to now (see
// [http.ResponseController]); a ResponseWriter without read deadlines
// is left alone.
func (s *Server) endReads() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.stopped = true
	for x := s.reads; x != nil; x = x.readNext {
		_ = http.NewResponseController(x.out.w).SetReadDeadline(time.Now())
	}
}

// acceptsJSON reports whether Accept headers take application/json: they
// are absent, or give it a quality above 0 (see qualities).
func acceptsJSON(accept []string) bool {
	qJSON, _, _ := qualities(accept)
	return qJSON > 0
}

// qualities reads Accept headers: the quality they give plain JSON, by
// the most specific range that matches it (application/json, else
// application/*, else */*, as RFC 9110 says), and those of
// text/event-stream and application/x-ndjson, which count only where
// named. A type that no range matches has quality -1, except that no
// header at all takes JSON at 1. An entry that does not parse, or whose
// q is not a number from 0 to 1, is skipped.
func qualities(accept []string) (qJSON, qSSE, qND float64) {
	if len(accept) == 0 {
		return 1, -1, -1
	}
	qJSON, qSSE, qND = -1, -1, -1
	qApp, qAny := -1.0, -1.0
	for _, h := range accept {
		for part := range strings.SplitSeq(h, ",") {
			mt, params, err := mime.ParseMediaType(strings.TrimSpace(part))
			if err != nil {
				continue
			}
			q := 1.0
			if v, ok := params["q"]; ok {
				if q, err = strconv.ParseFloat(v, 64); err != nil || !(q >= 0 && q <= 1) {
					continue
				}
			}
			switch mt {
			case contentJSON:
				qJSON = max(qJSON, q)
			case "application/*":
				qApp = max(qApp, q)
			case "*/*":
				qAny = max(qAny, q)
			case contentSSE:
				qSSE = max(qSSE, q)
			case contentNDJSON:
				qND = max(qND, q)
			}
		}
	}
	if qJSON < 0 {
		qJSON = qApp
	}
	if qJSON < 0 {
		qJSON = qAny
	}
	return qJSON, qSSE, qND
}

// httpRequestState is what ServeHTTP allocates for a request, in one
// piece: the connection that serves the body, its reader of the body and
// its writer of the response, the state of its reading role with room for
// one request (more, a batch, are allocated as they come), and room for
// the first bytes of the response. It is never reused: a handler may keep
// its context, which points into it.
type httpRequestState struct {
	c       conn
	out     httpOut
	in      lineReader
	lw      lineWriter
	rs      readState
	ctx     httpContext
	ctxs    [1]reqCtx
	tasks   [1]task
	wbuf    [512]byte
	scratch [256]byte

	// readPrev and readNext link the states whose bodies are being read,
	// from Server.reads, under the server's mu.
	readPrev, readNext *httpRequestState
}

// httpContext is the parent context of the handlers of an HTTP request:
// the request's own, which also holds the *http.Request, for
// HTTPRequestFromContext, as context.WithValue would, but as a field of
// the request's state.
type httpContext struct {
	context.Context
	r *http.Request
}

func (x *httpContext) Value(key any) any {
	if key == (httpRequestKey{}) {
		return x.r
	}
	return x.Context.Value(key)
}

// isJSONType reports whether a Content-Type is application/json, with any
// parameters (charset=utf-8), as mime.ParseMediaType would read it but
// without its allocations.
func isJSONType(ct string) bool {
	mt, params, _ := strings.Cut(ct, ";")
	if !strings.EqualFold(strings.TrimSpace(mt), contentJSON) {
		return false
	}
	if strings.TrimSpace(params) == "" {
		return true
	}
	_, _, err := mime.ParseMediaType(ct)
	return err == nil
}

// maxFirstBodyBuf is the most that readBody allocates for a body before
// its bytes arrive (with one byte more to see its end).
const maxFirstBodyBuf = 64 << 10

// readBody reads a body of at most limit bytes; size is its
// Content-Length, or -1. A size over the limit is refused at once, unread.
//
// Memory follows the bytes that arrive, not the size announced: a body
// announced at no more than maxFirstBodyBuf gets one buffer, of its size
// and one byte more to see its end; a larger one gets a first buffer of
// maxFirstBodyBuf and a byte, and one of unknown size one of 512 bytes,
// which doubles each time it fills, up to the size announced (and its
// byte) and never past the limit (and its byte).
func readBody(r io.Reader, size int64, limit int, mem *memBudget) (body []byte, charged int, err error) {
	return readBodyInto(nil, r, size, limit, mem)
}

// readBodyInto is readBody, with buf as the first buffer when the body
// fits in it.
func readBodyInto(buf []byte, r io.Reader, size int64, limit int, mem *memBudget) (body []byte, charged int, err error) {
	if size > int64(limit) {
		return nil, 0, &tooLargeError{limit: limit}
	}
	most := limit + 1 // room to see a body over the limit
	n := 512
	if size >= 0 {
		n = int(min(size, maxFirstBodyBuf)) + 1
	}
	n = min(n, most)
	if !mem.tryTake(n, 0) {
		return nil, 0, errBodyShed
	}
	charged = n
	if cap(buf) >= n {
		buf = buf[:0]
	} else {
		buf = make([]byte, 0, n)
	}
	for {
		if len(buf) == cap(buf) {
			n := 2 * cap(buf)
			if size >= int64(len(buf)) && size < int64(n) {
				n = int(size) + 1 // the rest announced, and a byte to see the end
			}
			n = min(n, most)
			if !mem.tryTake(n, charged) {
				return nil, charged, errBodyShed
			}
			charged += n
			nb := make([]byte, len(buf), n)
			copy(nb, buf)
			buf = nb
			mem.give(charged - n) // the old buffer is garbage now
			charged = n
		}
		m, err := r.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+m]
		if len(buf) > limit {
			return nil, charged, &tooLargeError{limit: limit}
		}
		if err == io.EOF {
			return buf, charged, nil
		}
		if err != nil {
			return nil, charged, err
		}
	}
}

// errBodyShed is why readBody stopped: the server's memory budget had no
// room for the body.
var errBodyShed = errors.New("jsonrpc: no room for the body in the server's memory budget")

// hasID reports whether body, one message or a batch, holds an object
// with an "id" member: only then may it get an answer that notifications
// can come before. (One without an id that is not a valid notification
// is answered with an error, but it runs no handler, which alone sends
// notifications.)
func hasID(body []byte, maxBatch int) bool {
	maxBatch = orDefault(maxBatch, defaultMaxBatch)
	var one envelope
	switch kind, batch := scanLine(body, &one, nil, maxBatch); kind {
	case lineObject:
		return one.id != nil
	case lineBatch:
		for i := range batch {
			if batch[i].id != nil {
				return true
			}
		}
	}
	return false
}

// httpRequestKey is the context key of the *http.Request being served.
type httpRequestKey struct{}

// HTTPRequestFromContext returns the HTTP request that carried the
// JSON-RPC request being served with ctx (see [Server.ServeHTTP]), or nil
// if it did not come over HTTP. A handler may read its headers, for
// authentication say, but not its body.
func HTTPRequestFromContext(ctx context.Context) *http.Request {
	r, _ := ctx.Value(httpRequestKey{}).(*http.Request)
	return r
}

// How a response is framed: chosen from the Accept header, and settled by
// the first message written.
const (
	framePlain  = iota // application/json: the answer alone
	frameSSE           // text/event-stream
	frameNDJSON        // application/x-ndjson
)

// httpAccept is what the Accept header allows: a streaming framing, and
// whether plain JSON is as good, which leaves the choice to the first
// message.
type httpAccept struct {
	stream int  // framePlain, frameSSE or frameNDJSON
	lazy   bool // plain JSON is as acceptable as the stream
}

// negotiate reads Accept headers. A streaming type is chosen only when it
// is named, at a quality at least that of application/json (see
// qualities).
func negotiate(accept []string) httpAccept {
	if len(accept) == 1 && accept[0] == contentJSON {
		return httpAccept{stream: framePlain} // the common case, without mime's allocations
	}
	qJSON, qSSE, qND := qualities(accept)
	best, q := framePlain, 0.0
	if qSSE > 0 && qSSE >= qND {
		best, q = frameSSE, qSSE
	} else if qND > 0 {
		best, q = frameNDJSON, qND
	}
	if best == framePlain || q < qJSON {
		return httpAccept{stream: framePlain}
	}
	return httpAccept{stream: best, lazy: q == qJSON}
}

// httpFraming frames the messages of one HTTP response. It is a Framing
// so that the connection's writer frames through it; its state is that
// one response's, guarded by the writer's lock.
type httpFraming struct {
	accept  httpAccept
	frame   int
	settled bool
	mute    bool // drop notifications: the body holds no call
}

// NewReader is never called: the body is read whole beforehand.
func (f *httpFraming) NewReader(r io.Reader, maxSize int) MessageReader {
	return newLineReader(r, maxSize)
}

// AppendFrame frames msg as the response's framing asks, settling it on
// the first message: a notification first makes a lazy response a stream.
func (f *httpFraming) AppendFrame(dst, msg []byte) []byte {
	note := isOurNotification(msg)
	if note && f.mute {
		return dst
	}
	if !f.settled {
		f.settled = true
		f.frame = f.accept.stream
		if f.accept.lazy && !note {
			f.frame = framePlain
		}
	}
	switch f.frame {
	case frameSSE:
		dst = append(dst, "event: message\ndata: "...)
		dst = appendFlat(dst, msg)
		return append(dst, "\n\n"...)
	case framePlain:
		if note {
			return dst // only the answer goes out
		}
		dst = append(dst, msg...)
		return append(dst, '\n')
	}
	dst = appendFlat(dst, msg)
	return append(dst, '\n')
}

// appendFlat appends msg, valid JSON, to dst with each line break in it
// made a space. A stream's message must be one line (an SSE data line
// ends at CR or LF), and msg may hold them as whitespace: a handler's raw
// result, or a request's params, which an HTTP body may spread over lines,
// given back as they are. In valid JSON a line break is never inside a
// string, so the message means the same.
func appendFlat(dst, msg []byte) []byte {
	start := len(dst)
	dst = append(dst, msg...)
	if bytes.IndexByte(msg, '\n') < 0 && bytes.IndexByte(msg, '\r') < 0 {
		return dst
	}
	for i, c := range dst[start:] {
		if c == '\n' || c == '\r' {
			dst[start+i] = ' '
		}
	}
	return dst
}

// isOurNotification reports whether msg, written by this package, is a
// request or a notification rather than a response: the package writes
// "method" right after the version.
func isOurNotification(msg []byte) bool {
	const prefix = `{"jsonrpc":"2.0","method"`
	return len(msg) >= len(prefix) && string(msg[:len(prefix)]) == prefix
}

// The values of the headers of a response, shared by all responses: each
// is put in a header as a slice whose capacity is its length, so that a
// value added to it (Header.Add) goes to a new array. Nothing changes
// them.
var (
	headerJSON    = [1]string{contentJSON}
	headerSSE     = [1]string{contentSSE}
	headerNDJSON  = [1]string{contentNDJSON}
	headerNoCache = [1]string{"no-cache"}
	headerNosniff = [1]string{"nosniff"}

	headerJSONOrSSE = [1]string{contentJSON + ", " + contentSSE} // an HTTPClient's Accept with OnNotify
)

// httpOut is the response writer of one HTTP request, for the connection's
// writer: it sets the headers on the first write and flushes each write of
// a stream. Write holds mu while it uses the ResponseWriter, so that
// ServeHTTP, which takes mu before it returns, never returns during a
// Write.
type httpOut struct {
	w     http.ResponseWriter
	frame httpFraming

	mu      sync.Mutex
	started bool
	done    bool // ServeHTTP has returned
}

func (o *httpOut) Write(p []byte) (int, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.done {
		return 0, ErrClosed
	}
	if len(p) == 0 {
		return 0, nil
	}
	if !o.started {
		o.started = true
		// The keys are canonical and the values shared, as net/http's
		// Header.Set would store them but without an allocation each.
		h := o.w.Header()
		switch o.frame.frame {
		case frameSSE:
			h["Content-Type"] = headerSSE[:1:1]
			h["Cache-Control"] = headerNoCache[:1:1]
		case frameNDJSON:
			h["Content-Type"] = headerNDJSON[:1:1]
		default:
			h["Content-Type"] = headerJSON[:1:1]
		}
		h["X-Content-Type-Options"] = headerNosniff[:1:1]
		o.w.WriteHeader(http.StatusOK)
	}
	n, err := o.w.Write(p)
	if err == nil && o.frame.frame != framePlain {
		err = http.NewResponseController(o.w).Flush()
	}
	return n, err
}

// Close ends a Write in flight that the client does not take: the
// connection calls it when a write is still blocked at the end of the
// grace period. It sets the response's write deadline to now, which makes
// net/http's Write fail at once and ends the response; it does not wait
// for mu, which that Write holds. A ResponseWriter without write
// deadlines (see [http.ResponseController]) is left alone.
func (o *httpOut) Close() error {
	_ = http.NewResponseController(o.w).SetWriteDeadline(time.Now())
	return nil
}
