// Package demo holds the methods of cmd/jsonrpc-demo, so that other
// programs of the repository (examples/openrpc) serve and describe the
// same methods: NewMux registers them all, and the typed ones are named
// by the Method values below.
package demo

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"strconv"
	"time"

	"github.com/ndjsonrpc/jsonrpc"
)

// SubtractParams accepts [minuend, subtrahend] or
// {"minuend": a, "subtrahend": b}, both numbers. Member names are matched
// exactly and may not repeat; other members are ignored, as encoding/json
// ignores them. Any other shape is refused.
type SubtractParams struct {
	Minuend, Subtrahend float64
	set                 bool
}

// UnmarshalJSON decodes either form.
func (p *SubtractParams) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	if p.simple(b) {
		return nil
	}
	if len(b) > 0 && b[0] == '[' {
		var a []json.RawMessage
		if err := json.Unmarshal(b, &a); err != nil {
			return err
		}
		if len(a) != 2 {
			return fmt.Errorf("want [minuend, subtrahend], got %d values", len(a))
		}
		return p.set2(a[0], a[1])
	}
	var o map[string]json.RawMessage
	if err := json.Unmarshal(b, &o); err != nil {
		return err
	}
	m, okM := o["minuend"]
	s, okS := o["subtrahend"]
	if !okM || !okS {
		return errors.New(`want {"minuend": a, "subtrahend": b}`)
	}
	return p.set2(m, s)
}

// simple decodes the usual form, {"minuend": a, "subtrahend": b} in either
// order with plain numbers, without allocating, and reports whether b had
// that form; anything else is left to the general decoder.
func (p *SubtractParams) simple(b []byte) bool {
	var m, s []byte
	rest, ok := cut(b, '{')
	for ok {
		var name, value []byte
		if name, rest, ok = quoted(rest); !ok {
			return false
		}
		if rest, ok = cut(rest, ':'); !ok {
			return false
		}
		if value, rest, ok = numberToken(rest); !ok {
			return false
		}
		switch string(name) {
		case "minuend":
			if m != nil {
				return false
			}
			m = value
		case "subtrahend":
			if s != nil {
				return false
			}
			s = value
		default:
			return false
		}
		if rest, ok = cut(rest, ','); !ok {
			if _, ok = cut(rest, '}'); !ok || m == nil || s == nil {
				return false
			}
			return p.set2(m, s) == nil
		}
	}
	return false
}

// skipSpace returns b without its leading JSON whitespace.
func skipSpace(b []byte) []byte {
	for len(b) > 0 && (b[0] == ' ' || b[0] == '\t' || b[0] == '\r' || b[0] == '\n') {
		b = b[1:]
	}
	return b
}

// cut skips whitespace and then the byte tok; without tok, it returns b
// past the whitespace and false.
func cut(b []byte, tok byte) ([]byte, bool) {
	b = skipSpace(b)
	if len(b) == 0 || b[0] != tok {
		return b, false
	}
	return b[1:], true
}

// quoted takes a string without escapes.
func quoted(b []byte) (s, rest []byte, ok bool) {
	b, ok = cut(b, '"')
	if !ok {
		return nil, nil, false
	}
	for i, c := range b {
		switch c {
		case '"':
			return b[:i], b[i+1:], true
		case '\\':
			return nil, nil, false
		}
	}
	return nil, nil, false
}

// numberToken takes the bytes of a number, which set2 then checks.
func numberToken(b []byte) (tok, rest []byte, ok bool) {
	b = skipSpace(b)
	i := 0
	for i < len(b) && (b[i] >= '0' && b[i] <= '9' || b[i] == '-' || b[i] == '+' || b[i] == '.' || b[i] == 'e' || b[i] == 'E') {
		i++
	}
	return b[:i], b[i:], i > 0
}

// set2 sets both operands, which must be JSON numbers.
func (p *SubtractParams) set2(m, s json.RawMessage) error {
	var err error
	if p.Minuend, err = number(m); err != nil {
		return err
	}
	if p.Subtrahend, err = number(s); err != nil {
		return err
	}
	p.set = true
	return nil
}

// number parses raw, which must be a JSON number.
func number(raw json.RawMessage) (float64, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || (raw[0] != '-' && (raw[0] < '0' || raw[0] > '9')) {
		return 0, fmt.Errorf("want a number, not %s", raw)
	}
	return strconv.ParseFloat(string(raw), 64)
}

func null(context.Context, *jsonrpc.Request) (any, error) { return nil, nil }

// The params of progress, count and sleep.
type (
	// ProgressParams are progress's: how many notifications to send.
	ProgressParams struct {
		Count int `json:"count"`
	}
	// CountParams are count's: how many items to stream.
	CountParams struct {
		N int `json:"n"`
	}
	// SleepParams are sleep's: how long to sleep.
	SleepParams struct {
		MS int `json:"ms"`
	}
)

// The demo's typed methods: each names a method with its params and
// result, for the handler registered here and for any Go caller.
var (
	Subtract = jsonrpc.NewMethod[SubtractParams, float64]("subtract")
	Sum      = jsonrpc.NewMethod[[]float64, float64]("sum")
	Progress = jsonrpc.NewMethod[ProgressParams, string]("progress")
	Count    = jsonrpc.NewStreamMethod[CountParams, map[string]int]("count")
	Sleep    = jsonrpc.NewMethod[SleepParams, string]("sleep")
)

// NewMux returns a Mux with every method of the demo registered (see
// cmd/jsonrpc-demo for what each does).
func NewMux() *jsonrpc.Mux {
	mux := new(jsonrpc.Mux)
	Subtract.Register(mux, func(_ context.Context, p SubtractParams) (float64, error) {
		if !p.set {
			return 0, jsonrpc.Errorf(jsonrpc.CodeInvalidParams, "Invalid params: want [minuend, subtrahend] or {\"minuend\": a, \"subtrahend\": b}")
		}
		return p.Minuend - p.Subtrahend, nil
	})
	Sum.Register(mux, func(_ context.Context, nums []float64) (float64, error) {
		var s float64
		for _, n := range nums {
			s += n
		}
		return s, nil
	})
	mux.HandleFunc("get_data", func(context.Context, *jsonrpc.Request) (any, error) {
		return []any{"hello", 5}, nil
	})
	mux.HandleFunc("update", null)
	mux.HandleFunc("notify_hello", null)
	mux.HandleFunc("notify_sum", null)
	mux.Handle("echo", jsonrpc.RawHandlerFunc(func(_ context.Context, req *jsonrpc.Request) (json.RawMessage, error) {
		return req.Params, nil // as a RawHandlerFunc, not boxed in an interface
	}))
	Progress.Register(mux, func(ctx context.Context, p ProgressParams) (string, error) {
		for i := 1; i <= p.Count; i++ {
			err := jsonrpc.Peer(ctx).Notify(ctx, "progress", map[string]int{"done": i, "total": p.Count})
			if err != nil {
				return "", err
			}
		}
		return "done", nil
	})
	Count.Register(mux, func(ctx context.Context, p CountParams) iter.Seq2[map[string]int, error] {
		return func(yield func(map[string]int, error) bool) {
			for i := range p.N {
				if !yield(map[string]int{"index": i}, nil) {
					return
				}
			}
		}
	})
	mux.HandleFunc("fail", func(context.Context, *jsonrpc.Request) (any, error) {
		return nil, jsonrpc.NewError(-32001, "custom failure").WithData(map[string]string{"reason": "demo"})
	})
	mux.HandleFunc("internal", func(context.Context, *jsonrpc.Request) (any, error) {
		return nil, errors.New("boom")
	})
	mux.HandleFunc("panic", func(context.Context, *jsonrpc.Request) (any, error) {
		panic("demo panic")
	})
	Sleep.Register(mux, func(ctx context.Context, p SleepParams) (string, error) {
		t := time.NewTimer(time.Duration(p.MS) * time.Millisecond)
		defer t.Stop()
		select {
		case <-t.C:
			return "slept", nil
		case <-ctx.Done():
			return "", ctx.Err()
		}
	})
	return mux
}
