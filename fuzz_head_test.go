package jsonrpc

import (
	"bytes"
	"encoding/json"
	"strconv"
	"testing"
)

// topMembers decodes msg, valid JSON, and returns the raw values of its
// members by name (decoded), in order, if it is an object; ok is false
// otherwise.
func topMembers(msg []byte) (members map[string][]json.RawMessage, ok bool) {
	d := json.NewDecoder(bytes.NewReader(msg))
	if tok, err := d.Token(); err != nil || tok != json.Delim('{') {
		return nil, false
	}
	members = make(map[string][]json.RawMessage)
	for d.More() {
		tok, err := d.Token()
		if err != nil {
			return nil, false
		}
		var v json.RawMessage
		if err := d.Decode(&v); err != nil {
			return nil, false
		}
		name := tok.(string)
		members[name] = append(members[name], v)
	}
	return members, true
}

// FuzzHeadIDs reads arbitrary heads, the first bytes of a message too
// large to read, as a connection does to tell which call the message was
// for. Nothing may panic, and where the whole message is valid JSON, an
// id read from any head of it must be one the whole message gives, at the
// top level of a response (which has a "result" or an "error") for
// responseHeadID, in the params of a "$/stream" notification for
// streamHeadID, in the first entry of a batch for batchHeadID. (What lies
// past the head can still make the message invalid, a "method" after the
// result say; the head reader goes by what it sees.)
func FuzzHeadIDs(f *testing.F) {
	for _, s := range []string{
		`{"jsonrpc":"2.0","id":7,"result":"yyy"}`,
		`{"jsonrpc":"2.0","result":[1,2],"id":7,"x":"yyy"}`,
		`{"\u0069d":7,"result":"yyy","id":8}`,
		`{"jsonrpc":"2.0","id":7,"result":1,"method":"m"}`,
		`{"jsonrpc":"2.0","method":"$/stream","params":{"id":3,"item":"yyy"}}`,
		`{"jsonrpc":"2.0","method":"$/stream","params":{"item":1,"id":3,"\u0069d":4}}`,
		`{"jsonrpc":"2.0","method":"$/stream","params":{"id":3},"id":1}`,
		`[{"jsonrpc":"2.0","id":7,"result":"yyy"},{"jsonrpc":"2.0","id":8,"result":1}]`,
		`[{"jsonrpc":"2.0","id":12345,"error":{"code":1,"message":"x"}}]`,
		`{"id":"a\"b","result":null}`,
	} {
		f.Add([]byte(s), uint16(len(s)/2))
	}
	f.Fuzz(func(t *testing.T, msg []byte, cut uint16) {
		head := msg
		if len(msg) > 0 {
			head = msg[:int(cut)%(len(msg)+1)]
		}
		resp, item := responseHeadID(head), streamHeadID(head)
		batch, batchOK := batchHeadID(head)
		if !json.Valid(msg) {
			return
		}
		if resp != nil {
			m, ok := topMembers(msg)
			if !ok || !holds(m["id"], resp) || m["result"] == nil && m["error"] == nil {
				t.Fatalf("responseHeadID(%q) = %s, but the whole message is %s", head, resp, msg)
			}
		}
		if item != nil {
			m, ok := topMembers(msg)
			if !ok || !holds(m["method"], []byte(`"`+StreamItemMethod+`"`)) || len(m["params"]) == 0 {
				t.Fatalf("streamHeadID(%q) = %s, but the whole message is %s", head, item, msg)
			}
			p, ok := topMembers(m["params"][0])
			if !ok || !holds(p["id"], item) {
				t.Fatalf("streamHeadID(%q) = %s, but the whole message is %s", head, item, msg)
			}
		}
		if batchOK {
			var entries []json.RawMessage
			if json.Unmarshal(msg, &entries) != nil || len(entries) == 0 {
				t.Fatalf("batchHeadID(%q) = %d, but the whole message is %s", head, batch, msg)
			}
			m, ok := topMembers(entries[0])
			if !ok || !holds(m["id"], []byte(strconv.FormatInt(batch, 10))) || m["result"] == nil && m["error"] == nil {
				t.Fatalf("batchHeadID(%q) = %d, but the whole message is %s", head, batch, msg)
			}
		}
	})
}

// holds reports whether values holds v, byte for byte.
func holds(values []json.RawMessage, v []byte) bool {
	for _, x := range values {
		if bytes.Equal(x, v) {
			return true
		}
	}
	return false
}
