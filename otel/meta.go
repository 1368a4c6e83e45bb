package jsonrpcotel

// This file carries the trace context in the params' _meta object, as
// MCP's SEP-414 proposes. It finds the _meta member by scanning the
// params' top level, so that neither the server nor the client copies
// or re-encodes the rest of the params (an MCP tool's arguments may be
// a whole file).

import (
	"bytes"
	"encoding/json"

	"go.opentelemetry.io/otel/propagation"
)

const metaName = "_meta"

// metaCarrier returns the string members of the _meta object in params,
// or nil if there are none.
func metaCarrier(params json.RawMessage) propagation.MapCarrier {
	start, end, ok := findMember(params, metaName)
	if !ok || start == end || params[start] != '{' {
		return nil
	}
	var meta map[string]any
	if json.Unmarshal(params[start:end], &meta) != nil {
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
// are. The other members are kept as they were written, in their order.
func withMeta(params json.RawMessage, mc propagation.MapCarrier) (json.RawMessage, bool) {
	if len(mc) == 0 {
		return nil, false
	}
	start, end, ok := findMember(params, metaName)
	if !ok {
		return nil, false
	}
	meta := make(map[string]json.RawMessage, len(mc))
	if start != end {
		if params[start] != '{' || json.Unmarshal(params[start:end], &meta) != nil {
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
	out := make([]byte, 0, len(params)+len(b)+len(metaName)+4)
	if start != end { // replace the value of _meta
		out = append(out, params[:start]...)
		out = append(out, b...)
		return append(out, params[end:]...), true
	}
	// Add _meta as the first member, after the opening brace.
	open := bytes.IndexByte(params, '{') + 1
	out = append(out, params[:open]...)
	out = append(out, `"`+metaName+`":`...)
	out = append(out, b...)
	if rest := skipSpace(params, open); params[rest] != '}' {
		out = append(out, ',')
	}
	return append(out, params[open:]...), true
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

// findMember reports whether obj is a JSON object and, if so, where the
// value of its member called name is: obj[start:end], or start == end
// if it has none. Names are compared exactly (JSON's are case-sensitive),
// after decoding their escapes; of duplicate members the last counts, as
// encoding/json takes it. The scan reads the top level only, skipping
// each value without decoding or copying it. obj is not validated: the
// server's params have been already, and a malformed object either
// reports ok false or leaves its fault where it was.
func findMember(obj []byte, name string) (start, end int, ok bool) {
	i := skipSpace(obj, 0)
	if i == len(obj) || obj[i] != '{' {
		return 0, 0, false
	}
	i = skipSpace(obj, i+1)
	if i < len(obj) && obj[i] == '}' {
		return 0, 0, true
	}
	for i < len(obj) && obj[i] == '"' {
		kend := skipString(obj, i)
		if kend < 0 {
			return 0, 0, false
		}
		match := keyIs(obj[i:kend], name)
		i = skipSpace(obj, kend)
		if i == len(obj) || obj[i] != ':' {
			return 0, 0, false
		}
		vstart := skipSpace(obj, i+1)
		vend := skipValue(obj, vstart)
		if vend < 0 {
			return 0, 0, false
		}
		if match {
			start, end = vstart, vend
		}
		i = skipSpace(obj, vend)
		if i == len(obj) {
			break
		}
		switch obj[i] {
		case '}':
			return start, end, true
		case ',':
			i = skipSpace(obj, i+1)
			continue
		}
		break
	}
	return 0, 0, false
}

// keyIs reports whether the JSON string quoted is name.
func keyIs(quoted []byte, name string) bool {
	if bytes.IndexByte(quoted, '\\') < 0 {
		return string(quoted[1:len(quoted)-1]) == name
	}
	var s string
	return json.Unmarshal(quoted, &s) == nil && s == name
}

// skipSpace returns the index of the first byte of b at or after i that
// is not JSON whitespace.
func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// skipString returns the index just past the string that starts at
// b[i], a '"', or -1 if it does not end.
func skipString(b []byte, i int) int {
	for j := i + 1; ; {
		q := bytes.IndexByte(b[j:], '"')
		if q < 0 {
			return -1
		}
		j += q
		// The quote ends the string unless an odd number of
		// backslashes escapes it. Each run of backslashes is counted
		// once, so the scan stays linear.
		n := 0
		for k := j - 1; k > i && b[k] == '\\'; k-- {
			n++
		}
		j++
		if n%2 == 0 {
			return j
		}
	}
}

// skipValue returns the index just past the value that starts at b[i],
// or -1 if there is none: strings and containers are skipped whole
// (counting brackets outside strings), other values up to the next
// delimiter.
func skipValue(b []byte, i int) int {
	if i == len(b) {
		return -1
	}
	switch b[i] {
	case '"':
		return skipString(b, i)
	case '{', '[':
		depth := 0
		for j := i; j < len(b); j++ {
			switch b[j] {
			case '"':
				if j = skipString(b, j); j < 0 {
					return -1
				}
				j--
			case '{', '[':
				depth++
			case '}', ']':
				if depth--; depth == 0 {
					return j + 1
				}
			}
		}
		return -1
	}
	j := i
scalar:
	for ; j < len(b); j++ {
		switch b[j] {
		case ',', '}', ']', ' ', '\t', '\r', '\n':
			break scalar
		}
	}
	if j == i {
		return -1
	}
	return j
}
