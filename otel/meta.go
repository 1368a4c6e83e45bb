package jsonrpcotel

// This file carries the trace context in the params' _meta object, as
// MCP's SEP-414 proposes.

import (
	"bytes"
	"encoding/json"

	"go.opentelemetry.io/otel/propagation"
)

// isObject reports whether raw JSON is an object.
func isObject(raw json.RawMessage) bool {
	raw = bytes.TrimLeft(raw, " \t\r\n")
	return len(raw) > 0 && raw[0] == '{'
}

// metaCarrier returns the string members of the _meta object in params,
// or nil if there are none.
func metaCarrier(params json.RawMessage) propagation.MapCarrier {
	if !isObject(params) {
		return nil
	}
	// A map, not a struct field tagged "_meta": encoding/json matches
	// field names without regard to case, and would take "_META" or
	// "_Meta" for _meta (merging them into it).
	var obj map[string]json.RawMessage
	if json.Unmarshal(params, &obj) != nil {
		return nil
	}
	raw, ok := obj["_meta"]
	if !ok || !isObject(raw) {
		return nil
	}
	var meta map[string]any
	if json.Unmarshal(raw, &meta) != nil {
		return nil
	}
	var mc propagation.MapCarrier
	for k, v := range meta {
		if s, ok := v.(string); ok {
			if mc == nil {
				mc = make(propagation.MapCarrier, len(meta))
			}
			mc[k] = s
		}
	}
	return mc
}

// withMeta returns params, a JSON object, with the members of mc set in
// its _meta object (made if absent), and reports whether it did: params
// that are not an object, or whose _meta is not one, are left as they
// are.
func withMeta(params json.RawMessage, mc propagation.MapCarrier) (json.RawMessage, bool) {
	if len(mc) == 0 || !isObject(params) {
		return nil, false
	}
	var obj map[string]json.RawMessage
	if json.Unmarshal(params, &obj) != nil {
		return nil, false
	}
	meta := make(map[string]json.RawMessage, len(mc))
	if m, ok := obj["_meta"]; ok {
		if !isObject(m) || json.Unmarshal(m, &meta) != nil {
			return nil, false
		}
	}
	for k, v := range mc {
		b, err := marshal(v)
		if err != nil {
			return nil, false
		}
		meta[k] = b
	}
	b, err := marshal(meta)
	if err != nil {
		return nil, false
	}
	obj["_meta"] = b
	if b, err = marshal(obj); err != nil {
		return nil, false
	}
	return b, true
}

// marshal encodes v as encoding/json does, but leaves <, > and & as they
// are, as they were sent.
func marshal(v any) (json.RawMessage, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}
