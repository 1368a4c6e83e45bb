package jsonrpc

// This file holds the delivery of what the peer sends to this side's
// calls awaiting answers: responses and stream items to the calls in the
// table (calltable.go), decoded into their destinations, and the cancel
// sent for a call given up on.
// It depends on the connection's state and writer (conn.go) and on
// calltable.go; route (unit.go) and the outgoing calls (call.go, batch.go)
// use it.

import (
	"bytes"
	"encoding/json"
	"errors"
	"log/slog"
	"reflect"
	"strconv"
	"unsafe"
)

// StreamItemMethod is the notification that carries one item of a streaming
// handler: {"jsonrpc":"2.0","method":"$/stream","params":{"id":X,"item":V}},
// where X is the id of the request the item belongs to.
const StreamItemMethod = "$/stream"

// abandon gives up waiting for the call with id, whose context ended. If
// the call was still pending, it is forgotten, the peer is told, and
// abandon reports true; if its response was already being delivered, it
// waits for that delivery to end and reports false.
func (c *conn) abandon(id int64, p *pending) bool {
	if c.drop(id) {
		c.sendCancel(id)
		c.checkDrain() // a Shutdown may wait for this call
		return true
	}
	<-p.done
	return false
}

// sendCancel tells the peer that the call with id is cancelled, without
// making the caller wait for the write. The notice goes behind what is
// buffered, even past the high-water mark, up to cancelRoom more; only a
// peer that has stopped reading for good loses it.
func (c *conn) sendCancel(id int64) {
	if c.noCancel {
		return
	}
	added := c.out.tryAppend(func(b []byte) []byte {
		b = append(b, `{"jsonrpc":"2.0","method":`...)
		b = appendString(b, c.cancelConv.method())
		b = append(b, `,"params":{`...)
		b = appendString(b, c.cancelConv.idMember())
		b = append(b, ':')
		b = strconv.AppendInt(b, id, 10)
		return append(b, "}}"...)
	})
	if added {
		c.flushAsync()
	} else {
		c.log.Debug("jsonrpc: dropped a cancel notification: the peer is not reading", slog.Int64("id", id))
	}
}

// deliver hands a response to the call it answers.
func (c *conn) deliver(e *envelope) {
	resp, why := e.response()
	if why != "" {
		c.log.Debug("jsonrpc: dropped an invalid response", slog.String("reason", why))
		return
	}
	p := c.takePending(e.id)
	if p == nil {
		if c.onUnknown != nil {
			// A copy, so that only this rare path makes resp escape.
			unknown := resp
			unknown.ID = ID{raw: string(e.id)}
			if unknown.Result != nil {
				unknown.Result = append(json.RawMessage(nil), unknown.Result...)
			}
			c.onUnknown(&unknown)
		} else {
			c.log.Debug("jsonrpc: dropped a response with an unknown id", slog.String("id", string(e.id)))
		}
		return
	}
	// The caller waits for done, so its result is ours to fill.
	p.err = decodeAnswer(resp, p.dest)
	p.done <- struct{}{}
}

// takePending takes the call that a response with id answers out of the
// table, and returns it, or nil if no call awaits that answer.
func (c *conn) takePending(raw []byte) *pending {
	id, ok := parseID(raw)
	if !ok {
		return nil
	}
	return c.takeID(id)
}

// lookup returns the call with id, left in the table, or nil if no call
// with id awaits an answer.
func (c *conn) lookup(id int64) *pending {
	c.pmu.Lock()
	p := c.pending[id]
	c.pmu.Unlock()
	return p
}

// takeID takes the call with id out of the table, and returns it, or nil
// if no call with id awaits an answer.
func (c *conn) takeID(id int64) *pending {
	c.pmu.Lock()
	p := c.pending[id]
	c.remove(id)
	c.pmu.Unlock()
	return p
}

// failTooLarge fails the call that a message too large to read was for,
// err being its error, if the message's head shows it: a response (see
// responseHeadID), or an item of a stream (see streamHeadID), which ends
// the stream as an overflow does. It reports whether the head showed
// either, so that the message goes unanswered. The caller gets an error
// wrapping ErrMessageTooLarge, and may know that the call ran.
func (c *conn) failTooLarge(err error) bool {
	var tl *tooLargeError
	if !errors.As(err, &tl) {
		return false
	}
	if id := responseHeadID(tl.head); id != nil {
		p := c.takePending(id)
		if p == nil {
			c.log.Debug("jsonrpc: dropped a response too large to read, with an unknown id", slog.String("id", string(id)))
			return true
		}
		p.err = sent(&tooLargeError{limit: tl.limit})
		p.done <- struct{}{}
		return true
	}
	if first, ok := batchHeadID(tl.head); ok {
		// The answers to a batch of ours come in one array: all of them
		// are lost with it.
		if !c.failBatch(first, sent(&tooLargeError{limit: tl.limit})) {
			c.log.Debug("jsonrpc: dropped a batch of responses too large to read, with an unknown id", slog.Int64("id", first))
		}
		return true
	}
	id, ok := parseID(streamHeadID(tl.head))
	if !ok || id <= 0 || id > c.ids.n.Load() {
		return false // not an item for a call of ours
	}
	p := c.lookup(id)
	if p != nil && p.stream {
		c.endStream(id, p, &tooLargeError{limit: tl.limit})
	}
	return true
}

// failBatch fails every call of the batch of ours whose answers begin
// with the answer to call first, with err, and reports whether first was
// a call of such a batch.
func (c *conn) failBatch(first int64, err error) bool {
	p := c.lookup(first)
	if p == nil || p.batchFirst == 0 {
		return false
	}
	for id := p.batchFirst; id <= p.batchLast; id++ {
		if p := c.takeID(id); p != nil {
			p.err = err
			p.done <- struct{}{}
		}
	}
	return true
}

// errAnswersTooLong fails the calls of a batch of ours whose answers came
// in an array longer than MaxBatch: they were sent, and may have run.
var errAnswersTooLong = errors.New("jsonrpc: the answers to a batch came in an array longer than MaxBatch")

// dropLongAnswers reports whether line, a batch longer than MaxBatch, is
// one of responses, as its first entry shows: such an array is not
// answered, and if it answers a batch of ours, every call of that batch
// fails with errAnswersTooLong.
func (c *conn) dropLongAnswers(line []byte) bool {
	id := batchHead(line)
	if id == nil {
		return false
	}
	if first, ok := parseID(id); !ok || !c.failBatch(first, sent(errAnswersTooLong)) {
		c.log.Debug("jsonrpc: dropped a batch of responses longer than MaxBatch, with an unknown id", slog.String("id", string(id)))
	}
	return true
}

// endStream ends p, the stream of call id, with err, and tells the peer,
// unless the call has ended already.
func (c *conn) endStream(id int64, p *pending, err error) {
	if c.drop(id) {
		c.sendCancel(id)
		p.err = sent(err)
		p.done <- struct{}{}
	}
}

// headEnd says how headMembers ended.
type headEnd uint8

const (
	headCut    headEnd = iota // head ran out, or f stopped the walk
	headClosed                // the object ended in head
	headBad                   // head does not start an object as JSON writes one
)

// headMembers walks the members of the object that head, the first bytes
// of a message, starts: it calls f with each member's name (decoded),
// its value, and whether the value is whole in head, until f returns
// false or a value is not whole (its part in head is passed). A name that
// head cuts short ends the walk unseen.
func headMembers(head []byte, f func(name, value []byte, whole bool) bool) headEnd {
	i := skipSpace(head, 0)
	if i >= len(head) || head[i] != '{' {
		return headBad
	}
	i = skipSpace(head, i+1)
	if i < len(head) && head[i] == '}' {
		return headClosed
	}
	for {
		if i >= len(head) {
			return headCut
		}
		if head[i] != '"' {
			return headBad
		}
		kend, escaped, ok := scanString(head, i)
		if !ok {
			return headCut // cut short, or bad: nothing is sure
		}
		name := head[i+1 : kend-1]
		if escaped {
			name = unescapeKey(head[i:kend])
		}
		i = skipSpace(head, kend)
		if i >= len(head) {
			return headCut
		}
		if head[i] != ':' {
			return headBad
		}
		vstart := skipSpace(head, i+1)
		vend, ok := scanValue(head, vstart)
		i = skipSpace(head, vend)
		if !ok || i >= len(head) {
			// The value may go on past head (a number too).
			f(name, head[vstart:], false)
			return headCut
		}
		if !f(name, head[vstart:vend], true) {
			return headCut
		}
		switch head[i] {
		case ',':
			i = skipSpace(head, i+1)
		case '}':
			return headClosed
		default:
			return headBad
		}
	}
}

// responseHeadID reads head, the first bytes of a message over the limit
// (or all of it, when the limit is under the head's size), and returns
// the id of the response it starts: a single object whose members whole
// in head hold the id, once, and a "result" or "error" (whose value may
// go on past head), but no "method". It returns nil for anything else:
// when the id, or the result or error, lies past head, nothing is sure.
func responseHeadID(head []byte) []byte {
	var id []byte
	response, bad := false, false
	end := headMembers(head, func(name, value []byte, whole bool) bool {
		switch string(name) {
		case "method":
			bad = true
		case "result", "error":
			response = true
		case "id":
			bad = !whole || id != nil // cut short, or given twice
			id = value
		}
		return !bad
	})
	if bad || end == headBad || !response {
		return nil
	}
	return id
}

// batchHeadID reads head as responseHeadID does, and returns the id of
// the first response of the array it starts, if that is a response to a
// call of ours as far as head shows.
func batchHeadID(head []byte) (int64, bool) {
	return parseID(batchHead(head))
}

// batchHead returns the id of the response that the array head starts
// with, as responseHeadID reads it, or nil if head starts no array, or
// an array whose first entry is not a response as far as head shows.
func batchHead(head []byte) []byte {
	i := skipSpace(head, 0)
	if i >= len(head) || head[i] != '[' {
		return nil
	}
	return responseHeadID(head[skipSpace(head, i+1):])
}

// streamHeadID reads head as responseHeadID does, and returns the id of
// the call whose stream item it starts: a "$/stream" notification whose
// method, whole in head, comes before its params, and whose params (which
// may go on past head) hold the call's id, once, in members whole in
// head. It returns nil for anything else.
func streamHeadID(head []byte) []byte {
	var method, id []byte
	bad := false
	end := headMembers(head, func(name, value []byte, whole bool) bool {
		switch string(name) {
		case "id", "result", "error":
			bad = true // not a notification
		case "method":
			bad = !whole || method != nil || string(value) != `"`+StreamItemMethod+`"`
			method = value
		case "params":
			bad = method == nil
			if !bad {
				headMembers(value, func(name, value []byte, whole bool) bool {
					if string(name) == "id" {
						bad = bad || !whole || id != nil
						id = value
					}
					return !bad
				})
			}
		}
		return !bad
	})
	if bad || end == headBad || method == nil {
		return nil
	}
	return id
}

// streamItem delivers a "$/stream" notification to its call, and reports
// whether there was one.
//
// With act unset, it only reports whether the item is for a call of ours.
func (c *conn) streamItem(params []byte, act bool) bool {
	id, ok := streamTarget(params)
	if !ok || id <= 0 || id > c.ids.n.Load() {
		return false // the peer's own
	}
	if !act {
		return true
	}
	p := c.lookup(id)
	if p == nil || !p.stream {
		// An item for a call of ours that has ended (a stream stopped
		// early) is dropped.
		return true
	}
	item := itemOf(params)
	p.mu.Lock()
	overflow := p.size > 0 && p.size+len(item) > c.streamBuffer
	if !overflow {
		p.items = append(p.items, item)
		p.size += len(item)
	}
	p.mu.Unlock()
	if overflow {
		// The range has fallen too far behind: end the call, and tell
		// the peer, rather than hold its items without limit.
		c.endStream(id, p, &streamOverflowError{limit: c.streamBuffer})
		return true
	}
	select {
	case p.signal <- struct{}{}:
	default:
	}
	return true
}

// streamTarget returns the id of the call that stream params, those of a
// "$/stream" notification, carry an item for, if it is one of ours.
func streamTarget(params []byte) (int64, bool) {
	if len(params) == 0 || params[0] != '{' {
		return 0, false
	}
	return parseID(memberValue(params, "id"))
}

// itemOf returns a copy of the "item" member of stream params, or null if
// they have none.
func itemOf(params []byte) json.RawMessage {
	item := memberValue(params, "item")
	if item == nil {
		return json.RawMessage("null")
	}
	return append(json.RawMessage(nil), item...)
}

// parseID returns the number an id of ours was written as.
func parseID(raw []byte) (int64, bool) {
	if len(raw) == 0 || len(raw) > 18 {
		return 0, false
	}
	var n int64
	for _, d := range raw {
		if d < '0' || d > '9' {
			return 0, false
		}
		n = n*10 + int64(d-'0')
	}
	return n, true
}

// decodeAnswer returns the outcome of a call answered with r: the error r
// carries, or that of decoding its result into dest (nil to drop it).
func decodeAnswer(r Response, dest any) error {
	switch {
	case r.Error != nil:
		return r.Error
	case dest != nil:
		// The call ran: a result it cannot take is no reason to send
		// it again.
		return sent(decodeResult(r.Result, dest))
	}
	return nil
}

// decodeResult decodes a result that our scanner has read (valid JSON and
// valid UTF-8) into dest as json.Unmarshal would, but by the strict rules
// of strict.go: member names match fields exactly, and a name given twice
// in one object is an error wrapping ErrDuplicateMember. The commonest
// destinations with a plain value take a shorter way, a zero value of a
// type the direct decoder takes is decoded by it, and a json.RawMessage
// takes the result as it is; anything else, or anything unusual, goes to
// encoding/json.
func decodeResult(raw []byte, dest any) error { return decodeResultAs(raw, dest, true) }

// decodeUnscannedResult is decodeResult for a result that no scanner of
// ours has read: an in-process handler's, or one a Caller of the user's
// returned. It may be empty or not JSON, which gets encoding/json's syntax
// error, or hold invalid UTF-8, which goes to the strict check and
// encoding/json (it replaces each invalid byte with U+FFFD).
func decodeUnscannedResult(raw []byte, dest any) error { return decodeResultAs(raw, dest, false) }

func decodeResultAs(raw []byte, dest any, scanned bool) error {
	d, toRaw := dest.(*json.RawMessage)
	if !scanned && !validJSON(raw) {
		if !json.Valid(raw) {
			return json.Unmarshal(raw, dest) // its syntax error; dest is left alone
		}
		if !toRaw {
			return decodeResultJSON(raw, dest, true) // JSON but for its UTF-8
		}
		// A json.RawMessage keeps invalid UTF-8, as encoding/json's does.
	}
	if toRaw {
		if !scanned {
			raw = trimSpace(raw) // the value alone, as encoding/json hands it
		}
		*d = append((*d)[:0], raw...)
		return nil
	}
	switch d := dest.(type) {
	case *int:
		if n, err := strconv.ParseInt(string(raw), 10, strconv.IntSize); err == nil {
			*d = int(n)
			return nil
		}
	case *int64:
		if n, err := strconv.ParseInt(string(raw), 10, 64); err == nil {
			*d = n
			return nil
		}
	case *float64:
		if len(raw) > 0 && raw[0] != 'n' && raw[0] != '"' && raw[0] != 't' && raw[0] != 'f' {
			if f, err := strconv.ParseFloat(string(raw), 64); err == nil {
				*d = f
				return nil
			}
		}
	case *string:
		if len(raw) >= 2 && raw[0] == '"' && raw[len(raw)-1] == '"' && bytes.IndexByte(raw, '\\') < 0 {
			*d = string(raw[1 : len(raw)-1])
			return nil
		}
	case *bool:
		switch string(raw) {
		case "true":
			*d = true
			return nil
		case "false":
			*d = false
			return nil
		}
	}
	if decodeResultDirect(raw, dest) {
		return nil
	}
	return decodeResultJSON(raw, dest, false)
}

// decodeResultJSON decodes raw into dest by the strict check and
// encoding/json; badUTF8 is strictResult's.
func decodeResultJSON(raw []byte, dest any, badUTF8 bool) error {
	raw, err := strictResult(raw, dest, badUTF8)
	if err != nil {
		return err
	}
	return json.Unmarshal(raw, dest)
}

// decodeResultDirect decodes raw, which our scanner has read, into dest
// with the direct decoder of params (fastparams.go), and reports whether
// it did. It takes a pointer to a zero value only, as the direct decoder
// decodes into nothing else (json.Unmarshal merges into a value already
// set: that is left to it), and what that decoder takes it decodes as
// the strict check and encoding/json would; FuzzDirectParams holds
// results to that too. Where it gives up, dest is zero again.
func decodeResultDirect(raw []byte, dest any) bool {
	t := reflect.TypeOf(dest)
	if t == nil || t.Kind() != reflect.Pointer {
		return false
	}
	d := directFor(t.Elem())
	if d == nil {
		return false
	}
	v := reflect.ValueOf(dest)
	p := v.UnsafePointer()
	if p == nil || !zeroMemory(p, d.typ.Size()) {
		return false
	}
	if decodeDirect(raw, d, p) {
		return true
	}
	v.Elem().SetZero()
	return false
}

// zeroMemory reports whether the n bytes at p are all zero: a value of a
// type of that size whose bytes are all zero is that type's zero value.
func zeroMemory(p unsafe.Pointer, n uintptr) bool {
	for _, c := range unsafe.Slice((*byte)(p), n) {
		if c != 0 {
			return false
		}
	}
	return true
}
