package jsonrpc

// This file holds the invoking of a task's handler: the check for a
// cancel, the recovery from a panic, and the encoding of the result.

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"runtime/debug"
)

// invoke runs the handler for t and encodes its result. It returns
// ok=false when the request was already answered, having been cancelled
// while it waited for a slot.
//
// A task run inline was registered for cancels, if at all, only by a
// handoff, which marks it flagStarted: cancelFrom counts it as running,
// so it runs even if the cancel came before its handler did, and sees its
// context cancelled. Before that, only a cancel in its own batch, read by
// this goroutine, reaches it, and counts it as queued: it does not run.
// Any other task arbitrates with cancelFrom through flagStarted as it
// starts.
func (c *conn) invoke(t *task, inline bool) (result []byte, werr *Error, ok bool) {
	if t.preErr != nil {
		return nil, t.preErr, true
	}
	rc := t.ctx
	var old uint32
	if !inline {
		old = rc.flags.Or(flagStarted) & (flagPeerCancelled | flagAnswered)
	} else if f := rc.flags.Load(); f&(flagPeerCancelled|flagStarted) == flagPeerCancelled {
		old = flagPeerCancelled
	}
	if old != 0 {
		rc.end()
		if old&flagAnswered != 0 || rc.flags.Load()&flagUnanswered != 0 {
			return nil, nil, false
		}
		return nil, ErrRequestCancelled, true
	}
	if !inline && c.overParked() && !t.req.ID.IsZero() {
		// (A notification is not refused: it could only be lost. Queued,
		// it holds nothing more for running.)
		rc.end()
		return nil, errParkedFull, true
	}
	defer func() {
		if v := recover(); v != nil {
			c.log.Error("jsonrpc: handler panicked",
				slog.String("method", t.req.Method),
				slog.Any("panic", v),
				slog.String("stack", string(debug.Stack())))
			result, werr, ok = nil, internalError("panic", fmt.Sprint(v), c.hideDetail), true
		}
		if a := rc.end(); a != nil {
			c.endSlot(a) // a call the handler's work still makes may have its slot
		}
	}()
	h := c.handler
	if c.mux != nil {
		if h = t.handler; h == nil {
			h = t.method.handler(c.mux)
		}
		if h == nil {
			if h = c.mux.missing(); h == nil {
				return nil, ErrMethodNotFound, true
			}
			rc.flags.Or(flagNoHandler)
		}
	}
	// A RawHandlerFunc is called directly, and a handler made by Func
	// encodes the common results itself, so that the result is not boxed
	// in an interface.
	var v any
	var err error
	var encoded []byte
	f, isRaw := h.(RawHandlerFunc)
	var raw json.RawMessage
	if isRaw {
		raw, err = f(rc, &t.req)
	} else {
		if th, ok := h.(typedHandler); ok {
			encoded, t.enc, v, err = th.serveTo(rc, &t.req, t.scratch[:0], c.encoders)
		} else {
			v, err = h.ServeJSONRPC(rc, &t.req)
		}
		raw, isRaw = v.(json.RawMessage)
	}
	if rc.flags.Load()&flagUnanswered != 0 {
		return nil, nil, false // cancelled by the peer, which wants no answer
	}
	if err != nil {
		if t.req.ID.IsZero() {
			c.log.Debug("jsonrpc: notification handler failed",
				slog.String("method", t.req.Method), slog.Any("error", err))
		}
		return nil, toWireError(err, rc.flags.Load()&flagPeerCancelled != 0, c.hideDetail), true
	}
	if t.req.ID.IsZero() {
		return nil, nil, true
	}
	if encoded != nil {
		return encoded, nil, true
	}
	if isRaw {
		if sameBytes(raw, t.params) {
			return raw, nil, true // the request's own params, validated as read
		}
		if raw, err = encodeRaw(raw); err != nil {
			return nil, internalError(fmt.Sprintf("%T", err), "cannot encode result: "+err.Error(), c.hideDetail), true
		}
		return raw, nil, true
	}
	raw, enc, err := c.encoders.encode(v)
	if err != nil {
		return nil, internalError(fmt.Sprintf("%T", err), "cannot encode result: "+err.Error(), c.hideDetail), true
	}
	t.enc = enc
	return raw, nil, true
}
