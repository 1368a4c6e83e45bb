//go:build cgo && !goexperiment.jsonv2

package jsonrpc

import (
	"encoding/json"
	"runtime/cgo"
	"testing"

	"github.com/stretchr/testify/assert"
)

// notInHeap is a type the Go heap cannot hold, as cgo makes of an
// incomplete C struct: an interface does not hold a pointer to it in its
// data word but boxes the pointer, as it does a value of any other type.
type notInHeap struct {
	_ cgo.Incomplete
	X int
	Y [4]int
}

// TestDirectEncoderPointerNotInHeap: a pointer to a not-in-heap type is
// not stored in an interface's data word (the compiler's IsDirectIface
// wants a pointer word that the GC scans), so appendBoxed, which takes
// the data word of a pointer type for the pointer, reads the box as the
// pointed-to value: a nil pointer is written as an object, and the fields
// are read from past the one-word box.
func TestDirectEncoderPointerNotInHeap(t *testing.T) {
	var inc *cgo.Incomplete
	var nih *notInHeap
	for _, v := range []any{inc, nih, flatAny{V: inc}, flatAny{V: nih}, []any{nih}} {
		want, err := json.Marshal(v)
		assert.NoError(t, err)
		if got, ok := encodeDirect(nil, v, true); ok {
			assert.Equal(t, string(want), string(got), "%T", v)
		}
		var es encoders
		checkWrittenAsEncodingJSON(t, v, &es)
	}
}

func (*notInHeap) area() float64 { return 0 }

// TestDirectEncoderPointerNotInHeapShape: the same behind an interface
// with methods, whose data word is the box too.
func TestDirectEncoderPointerNotInHeapShape(t *testing.T) {
	var nih *notInHeap
	for _, v := range []any{withShape{S: nih}, withShape{O: nih}, []shape{nih, square{1}}, map[string]shape{"a": nih}} {
		var es encoders
		checkWrittenAsEncodingJSON(t, v, &es)
	}
}
