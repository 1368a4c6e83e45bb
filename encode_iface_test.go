//go:build !goexperiment.jsonv2

// The direct encoder is off under GOEXPERIMENT=jsonv2 (jsonv2_off.go).

package jsonrpc

import (
	"errors"
	"fmt"
	"testing"
	"time"
)

// Dynamic types behind shape of each representation in an interface's
// data word: none (size zero), the value itself (one pointer-shaped word)
// and a pointer to it.
type zeroShape struct{}

func (zeroShape) area() float64 { return 0 }

type wordShape struct{ P *int }

func (wordShape) area() float64 { return 0 }

type mapShape map[string]int

func (mapShape) area() float64 { return 0 }

type intShape int

func (intShape) area() float64 { return 0 }

// ptrMarshalerShape has a MarshalJSON that encoding/json calls only
// through a pointer.
type ptrMarshalerShape struct{ A int }

func (ptrMarshalerShape) area() float64 { return 0 }

func (*ptrMarshalerShape) MarshalJSON() ([]byte, error) { return []byte(`"m"`), nil }

// ExpShape is an exported interface with methods, which encoding/json
// writes as a field of its own when embedded.
type ExpShape interface{ area() float64 }

type embedsExpShape struct {
	ExpShape
	X int
}

// embedsUnexpShape embeds interfaces of unexported names, which
// encoding/json skips.
type embedsUnexpShape struct {
	shape
	error
	X int
}

// listShape is a shape that holds shapes, and may hold itself.
type listShape struct {
	N    int
	Next shape
}

func (*listShape) area() float64 { return 0 }

// stringShape has the methods of two interfaces.
type stringShape struct{ V int }

func (stringShape) area() float64  { return 0 }
func (stringShape) String() string { return "s" }

type stringerShape interface {
	shape
	fmt.Stringer
}

// TestDirectEncoderInterfaceWithMethods holds interfaces with methods to
// encoding/json's bytes: each representation of the dynamic value, an
// itab found at run time by a type assertion, embedded interfaces, error
// and fmt.Stringer fields, a value whose pointer marshals itself, nested
// and cyclic values, and one dynamic type behind several interface types.
func TestDirectEncoderInterfaceWithMethods(t *testing.T) {
	n := 3
	cycle := &listShape{N: 1}
	cycle.Next = cycle
	var a any = square{7}
	asserted := a.(shape)
	vals := []any{
		withShape{S: zeroShape{}}, withShape{S: wordShape{P: &n}}, withShape{S: wordShape{}},
		withShape{S: mapShape{"a": 1}}, withShape{O: mapShape(nil)}, withShape{S: intShape(4)},
		withShape{S: asserted}, []shape{asserted, square{7}},
		embedsExpShape{ExpShape: square{2}, X: 1}, embedsExpShape{},
		embedsUnexpShape{shape: square{1}, error: errors.New("x"), X: 2},
		struct{ E error }{errors.New("e")}, struct{ E error }{fmt.Errorf("w: %w", errors.New("e"))},
		struct{ S fmt.Stringer }{time.Duration(5)}, struct{ S fmt.Stringer }{time.Unix(0, 0).UTC()},
		withShape{S: ptrMarshalerShape{1}}, &withShape{S: ptrMarshalerShape{1}}, withShape{S: &ptrMarshalerShape{1}},
		withShape{S: &listShape{N: 1, Next: &listShape{N: 2}}}, withShape{S: cycle},
		struct {
			T shape
			U stringerShape
			V fmt.Stringer
		}{stringShape{1}, stringShape{2}, stringShape{3}},
		map[string]stringerShape{"x": stringShape{2}, "y": nil},
		[]any{[]shape{square{1}}, map[string]shape{"a": zeroShape{}}},
	}
	var es encoders
	for _, v := range vals {
		checkWrittenAsEncodingJSON(t, v, &es)
	}
	// Those plans do write the direct ones.
	for _, v := range []any{withShape{S: wordShape{P: &n}}, withShape{S: asserted}, map[string]stringerShape{"x": stringShape{2}}} {
		if _, ok := encodeDirect(nil, v, true); !ok {
			t.Errorf("%T: not written directly", v)
		}
	}
}
