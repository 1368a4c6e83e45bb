//go:build !goexperiment.jsonv2

// The direct encoder is off under GOEXPERIMENT=jsonv2 (jsonv2_off.go).

package jsonrpc

import (
	"encoding/json"
	"fmt"
	"reflect"
	"sync"
	"testing"
)

type (
	AnyNamed      interface{}
	AnyAlias      = any
	anyUnexported interface{}
)

type embedsAny struct {
	AnyNamed
	AnyAlias `json:"alias,omitempty"`
	anyUnexported
	X int
}

type ptrTextInner struct{ S string }

func (*ptrTextInner) MarshalText() ([]byte, error) { return []byte("T"), nil }

type holdsPtrText struct {
	In ptrTextInner
	A  any
}

type zeroStruct struct{}

// TestDirectEncoderAnyShapes holds odd values in an any, by value and
// through a pointer, to encoding/json's bytes or to a refusal.
func TestDirectEncoderAnyShapes(t *testing.T) {
	n := 3
	pn := &n
	ppn := &pn
	var nilp *int
	var anyv any = &n
	inner := flatAny{V: []any{1, flatAny{V: "x"}}}
	vals := []any{
		embedsAny{AnyNamed: 1, AnyAlias: "a", anyUnexported: 2, X: 3},
		embedsAny{},
		flatAny{V: struct{}{}}, flatAny{V: [0]int{}}, flatAny{V: &struct{}{}}, flatAny{V: zeroStruct{}},
		flatAny{V: [0]map[string]int{}}, flatAny{V: [0]any{}}, flatAny{V: []struct{}{{}, {}}},
		flatAny{V: ppn}, flatAny{V: &ppn}, flatAny{V: &nilp}, flatAny{V: (**int)(nil)},
		flatAny{V: &anyv}, flatAny{V: (*any)(nil)}, flatAny{V: new(any)},
		flatAny{V: [3]any{1, nil, [1]any{&inner}}}, flatAny{V: inner}, flatAny{V: &inner},
		flatAny{V: holdsPtrText{A: 1}}, flatAny{V: &holdsPtrText{A: 1}},
		[]any{holdsPtrText{}}, []any{&holdsPtrText{}},
		flatAny{V: ptrMarshaler(1)}, flatAny{V: new(ptrMarshaler)},
		flatAny{V: AnyNamed(5)}, flatAny{V: []AnyNamed{1, nil}},
		flatAny{V: uintptr(7)}, flatAny{V: int8(-1)}, flatAny{V: float32(0.1)}, flatAny{V: myInt(4)},
		flatAny{V: fmt.Errorf("e")}, flatAny{V: reflect.ValueOf(1)},
	}
	for _, v := range vals {
		p := reflect.New(reflect.TypeOf(v))
		p.Elem().Set(reflect.ValueOf(v))
		for _, x := range []any{v, p.Interface()} {
			var es encoders
			checkWrittenAsEncodingJSON(t, x, &es)
		}
	}
}

// TestDirectEncoderAnyConcurrent builds plans for what interfaces hold
// from several goroutines at once (go test -race).
func TestDirectEncoderAnyConcurrent(t *testing.T) {
	type a struct{ A any }
	type b struct{ B []any }
	type c struct {
		C *[2]any
		N int
	}
	// Each kind of value is written while other goroutines write it:
	// interfaces with methods (their itabs' entries, made in parallel
	// when this test runs first in the process) and maps (their pooled
	// buffers) too.
	type d struct {
		S []shape
		M map[string]any
	}
	vals := []any{a{A: b{B: []any{c{C: &[2]any{1, "x"}}}}}, b{B: []any{a{A: 1.5}, &c{}}}, c{C: &[2]any{a{}, b{}}},
		d{S: []shape{square{1}, &circle{2}}, M: map[string]any{"m": map[string]any{"k": []any{1, "v"}}, "n": nil}},
		d{M: map[string]any{"s": d{S: []shape{&circle{3}}}}}}
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			for i := range 200 {
				v := vals[(g+i)%len(vals)]
				want, _ := json.Marshal(v)
				got, ok := encodeDirect(nil, v, true)
				if !ok || string(got) != string(want) {
					t.Errorf("%T: %s %v, want %s", v, got, ok, want)
					return
				}
			}
		})
	}
	wg.Wait()
}
