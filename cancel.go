package jsonrpc

// This file holds the cancel conventions: cancel notifications from the
// peer, what they reach, and how a handler and the application learn of
// them.

import (
	"context"
	"encoding/json"
	"log/slog"
	"strings"
	"unicode/utf16"
	"unicode/utf8"
)

// A Cancellation is a convention for cancelling requests: the notification
// that cancels a request, and what becomes of the request. A connection
// sends one when the context of one of its calls ends, and accepts one or
// more from the peer. The zero Cancellation is the Language Server Protocol's
// {"jsonrpc":"2.0","method":"$/cancelRequest","params":{"id":X}}, with the
// cancelled request answered [CodeRequestCancelled]. The Model Context
// Protocol's is
//
//	jsonrpc.Cancellation{Method: "notifications/cancelled", IDMember: "requestId", Unanswered: true}
//
// A cancel from the peer takes effect whenever it comes: a request still
// waiting never runs, and a running one has its context cancelled, with a
// [*CancelError] as the cause. It reaches every request in flight whose
// id has the value it names: a string id as decoded, whatever escapes
// either side wrote ("\u0061" names "a"; only an escaped lone surrogate,
// which stands for no character, is compared as written), and a number
// as written.
type Cancellation struct {
	// Method is the cancel notification's method; "" means
	// "$/cancelRequest".
	Method string
	// IDMember is the member of the notification's params that holds the
	// id of the request to cancel; "" means "id".
	IDMember string
	// Unanswered makes a request that the peer cancelled get no response
	// at all, whatever its handler returns, as MCP asks; otherwise it is
	// answered, with CodeRequestCancelled if its handler fails.
	Unanswered bool
}

func (cc Cancellation) method() string {
	if cc.Method == "" {
		return cancelMethod
	}
	return cc.Method
}

func (cc Cancellation) idMember() string {
	if cc.IDMember == "" {
		return "id"
	}
	return cc.IDMember
}

// A CancelError is the cancel notification by which the peer cancelled a
// request. It is the cause of the context of the request's handler (see
// [context.Cause]), and matches [context.Canceled] under errors.Is, so that
// a handler tells a cancel of the peer's from the end of the connection
// (whose cause wraps [ErrPeerClosed] or [ErrClosed]) and can read why:
//
//	var ce *jsonrpc.CancelError
//	if errors.As(context.Cause(ctx), &ce) {
//		log.Printf("cancelled by the client: %s", ce.Reason())
//	}
//
// A CancelError must not be changed.
type CancelError struct {
	// Method is the method of the cancel notification, such as
	// "$/cancelRequest" or "notifications/cancelled".
	Method string
	// ID is the id of the request it cancels.
	ID ID
	// Params are the notification's params, as sent.
	Params json.RawMessage
}

// Error says which request the peer cancelled, and why if it said.
func (e *CancelError) Error() string {
	msg := "jsonrpc: request " + e.ID.String() + " cancelled by the peer"
	if r := e.Reason(); r != "" {
		msg += ": " + r
	}
	return msg
}

// Unwrap returns [context.Canceled].
func (e *CancelError) Unwrap() error { return context.Canceled }

// Reason returns the "reason" member of the notification's params when it
// is a string, as in MCP's notifications/cancelled, and "" otherwise.
func (e *CancelError) Reason() string {
	raw := memberValue(e.Params, "reason")
	if len(raw) < 2 || raw[0] != '"' {
		return ""
	}
	var r string
	if json.Unmarshal(raw, &r) != nil {
		return ""
	}
	return r
}

// incomingCancel is a cancel notification that a connection accepts.
type incomingCancel struct {
	quoted string // the method as a JSON string
	conv   Cancellation
}

// incomingCancels returns the cancel notifications a connection accepts:
// those of in, or else that of out.
func incomingCancels(out Cancellation, in []Cancellation) []incomingCancel {
	if len(in) == 0 {
		if out == (Cancellation{}) {
			return lspCancelIn[:] // shared, never changed: no allocation per connection
		}
		in = []Cancellation{out}
	}
	ics := make([]incomingCancel, len(in))
	for i, cc := range in {
		ics[i] = incomingCancel{quoted: string(appendString(nil, cc.method())), conv: cc}
	}
	return ics
}

// lspCancelIn is what a connection with the zero Cancellation accepts.
var lspCancelIn = [1]incomingCancel{{quoted: `"` + cancelMethod + `"`}}

// cancelIn returns the convention whose cancel notification has the
// method name (as a JSON string), or nil.
func (c *conn) cancelIn(name []byte) *incomingCancel {
	for i := range c.cancelIns {
		if string(name) == c.cancelIns[i].quoted {
			return &c.cancelIns[i]
		}
	}
	return nil
}

// cancelFrom handles the params of a cancel notification of convention in:
// it cancels the context of every request in flight with that id, with a
// *CancelError as the cause. A request that has not started yet will not
// run; unless it is part of a batch or the convention leaves it
// unanswered, it is answered with CodeRequestCancelled at once. OnCancel
// then learns what the cancel reached. own holds, by key (see activeKey),
// the requests of the batch that carried the cancel, which are not in the
// table yet (see cancelDeferred); nil outside a batch. With again set,
// the cancel was handled once already, for a batch now built again: it
// reaches only own, and OnCancel is not told a second time.
func (c *conn) cancelFrom(rs *readState, in *incomingCancel, params []byte, own map[string][]*reqCtx, again bool) {
	if len(params) == 0 || params[0] != '{' {
		return
	}
	// Params that give a member twice cancel nothing: which id they name
	// would depend on the reader (encoding/json takes the last).
	e := &rs.cancel
	e.reset()
	_, ok := scanObject(params, 0, e)
	if e.seen != nil {
		e.forgetNames()
	}
	if !ok || e.dup {
		return
	}
	id := e.id
	if member := in.conv.idMember(); member != "id" {
		id = memberValue(params, member)
	}
	if id == nil || !validID(id) {
		return
	}
	key := activeKey(string(id))
	var list []*reqCtx
	if !again {
		c.mu.Lock()
		list = c.takeActiveLocked(key)
		c.mu.Unlock()
	}
	if mine := own[key]; len(mine) > 0 {
		list = append(list, mine...)
		delete(own, key)
	}
	cause := &CancelError{Method: in.conv.method(), ID: ID{raw: string(id)}, Params: append(json.RawMessage(nil), params...)}
	mark := uint32(flagPeerCancelled)
	if in.conv.Unanswered {
		mark |= flagUnanswered
	}
	// The list is out of the table and every request in it settled, so
	// it is this goroutine's.
	running, queued := 0, 0
	for _, rc := range list {
		old := rc.flags.Or(mark)
		if old&flagPeerCancelled != 0 {
			continue // cancelled already
		}
		switch {
		case old&flagStarted != 0:
			running++
		case old&flagInBatch != 0:
			queued++ // answered when its batch comes to it
		case rc.flags.Or(flagAnswered)&flagStarted == 0:
			queued++
			if !in.conv.Unanswered {
				c.writeError([]byte(rc.id), ErrRequestCancelled)
			}
		default:
			running++ // it started meanwhile
		}
		rc.cancel(cause)
	}
	if again {
		return
	}
	if running+queued == 0 {
		c.log.Debug("jsonrpc: a cancel reached no request: none in flight, or all cancelled already", slog.String("id", string(id)))
	}
	if c.onCancel != nil {
		c.onCancel(cause, running, queued)
	}
}

// The table of requests a cancel may reach.

func (c *conn) register(rc *reqCtx) {
	c.mu.Lock()
	c.registerLocked(rc)
	c.mu.Unlock()
}

// settle takes a finished request out of reach of cancels.
func (c *conn) settle(rc *reqCtx) {
	if rc == nil {
		return
	}
	c.mu.Lock()
	if rc.pos > 0 {
		c.unregisterLocked(rc)
	}
	rc.pos = posSettled
	c.mu.Unlock()
}

// registerInlineLocked puts rc, the request running (or about to run)
// inline on a reader whose role is handed off, in reach of cancels as a
// started request: a cancel counts it as running, and invoke runs it
// whenever the cancel came. One whose handler has returned stays out of
// reach.
func (c *conn) registerInlineLocked(rc *reqCtx) {
	if rc != nil && rc.flags.Load()&flagEnded == 0 {
		rc.flags.Or(flagStarted)
		c.registerLocked(rc)
	}
}

// registerLocked puts rc in reach of cancels, in the list of the requests
// in flight with its id. A request knows its place in the list, and
// leaves it by a swap with the last, so that adding and removing a
// request cost the same however many share its id.
func (c *conn) registerLocked(rc *reqCtx) {
	if rc == nil || rc.pos != 0 || rc.id == "" {
		return
	}
	if c.active == nil {
		c.active = make(map[string][]*reqCtx)
	}
	key := activeKey(rc.id)
	list := append(c.active[key], rc)
	c.active[key] = list
	rc.pos = int32(len(list))
}

func (c *conn) unregisterLocked(rc *reqCtx) {
	key := activeKey(rc.id)
	list := c.active[key]
	i, last := rc.pos-1, len(list)-1
	moved := list[last]
	list[i], moved.pos = moved, i+1
	list[last] = nil
	if last == 0 {
		delete(c.active, key)
	} else {
		c.active[key] = list[:last]
	}
	rc.pos = 0
}

// activeKey is the key of id, a request's id as the peer wrote it, in
// the table of requests a cancel may reach, so that a cancel names a
// request by the value of its id, whatever escapes each wrote in a
// string: the id itself, unless it is a string with escapes, which is
// written again with none but those JSON needs ('"', '\\' and the
// control characters). An escape of a lone surrogate, which stands for
// no character, keeps the id's bytes as they are. Numbers are compared
// as written.
func activeKey(id string) string {
	if len(id) < 2 || id[0] != '"' || strings.IndexByte(id, '\\') < 0 {
		return id
	}
	raw := []byte(id)
	b := make([]byte, 0, len(id))
	b = append(b, '"')
	for i := 1; i < len(id)-1; i++ {
		c := id[i]
		if c != '\\' {
			b = append(b, c)
			continue
		}
		i++
		switch id[i] {
		case 'b':
			c = '\b'
		case 'f':
			c = '\f'
		case 'n':
			c = '\n'
		case 'r':
			c = '\r'
		case 't':
			c = '\t'
		case 'u':
			r, ok := hex4(raw, i+1)
			i += 4
			if utf16.IsSurrogate(r) {
				lo, ok2 := rune(0), false
				if i+6 < len(id) && id[i+1] == '\\' && id[i+2] == 'u' {
					lo, ok2 = hex4(raw, i+3)
				}
				r = utf16.DecodeRune(r, lo)
				if !ok || !ok2 || r == utf8.RuneError {
					return id // a lone surrogate
				}
				i += 6
			}
			if !ok {
				return id
			}
			if r >= utf8.RuneSelf {
				b = utf8.AppendRune(b, r)
				continue
			}
			c = byte(r)
		default: // '"', '\\' or '/'
			c = id[i]
		}
		switch {
		case c == '"' || c == '\\':
			b = append(b, '\\', c)
		case c < 0x20:
			b = append(b, `\u00`...)
			b = append(b, hexDigits[c>>4], hexDigits[c&0xf])
		default:
			b = append(b, c)
		}
	}
	return string(append(b, '"'))
}

// takeActiveLocked takes every request in flight with id out of reach of
// later cancels, and returns them. A cancel reaches each request once:
// later cancels of the same id cost nothing for it.
func (c *conn) takeActiveLocked(id string) []*reqCtx {
	list := c.active[id]
	delete(c.active, id)
	for _, rc := range list {
		rc.pos = posSettled
	}
	return list
}

// cancelMethod is the notification that cancels a request in flight:
// {"jsonrpc":"2.0","method":"$/cancelRequest","params":{"id":X}}.
const cancelMethod = "$/cancelRequest"
