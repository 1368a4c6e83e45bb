//go:build jsonrpc_scansteps

package jsonrpc

// The strict check's work per input byte, counted by countSteps as the
// scanner's is: run with
//
//	go test -tags jsonrpc_scansteps -run TestStrictSteps .

import (
	"bytes"
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
)

// strictStepsPerByte bounds the strict check's work, with stepsPerCall:
// at most this many steps for each byte of the input.
//
// The bytes themselves cost what they cost the scanner (which checks the
// params of an in-process call first, up to 8 steps a byte), and a quick
// pass over a flat struct's object may read them once more before the
// checker does. Beyond that, a member costs at most maxLinearNames
// comparisons with the names before it in its object and, in an object
// decoded into a struct, maxLinearFields comparisons with the fields'
// names and as many with their folded forms: 48 steps for a member of at
// least 4 bytes ("":0 and its comma), 12 a byte. 24 leaves room above the
// sum, and far below what comparing each name with every name before it
// costs, which grows with the number of members.
const strictStepsPerByte = 24

// stepsFields is a struct with many fields, whose plan has maps.
type stepsFields struct {
	F0, F1, F2, F3, F4, F5, F6, F7, F8, F9, F10, F11, F12, F13, F14, F15, F16, F17, F18, F19 int
}

// stepsPlans are the types the inputs are decoded into.
var stepsPlans = []struct {
	name string
	typ  reflect.Type
}{
	{"any", reflect.TypeFor[any]()},
	{"flat struct", reflect.TypeFor[fzUser]()},
	{"nested struct", reflect.TypeFor[fzNested]()},
	{"map of structs", reflect.TypeFor[map[string]fzUser]()},
	{"integer map", reflect.TypeFor[map[int]any]()},
	{"many fields", reflect.TypeFor[stepsFields]()},
	{"list of structs", reflect.TypeFor[[]fzUser]()},
}

// members returns an object of about n bytes of members made by member(i).
func members(n int, member func(i int) string) []byte {
	var b bytes.Buffer
	b.WriteString("{")
	for i := 0; b.Len() < n; i++ {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(member(i))
	}
	b.WriteString("}")
	return b.Bytes()
}

// strictFamilies are the adversarial inputs of the strict check.
var strictFamilies = []struct {
	name string
	gen  func(n int) []byte
}{
	{"distinct names", func(n int) []byte { return members(n, func(i int) string { return `"k` + strconv.Itoa(i) + `":0` }) }},
	{"distinct names, then a duplicate", func(n int) []byte {
		b := members(n, func(i int) string { return `"k` + strconv.Itoa(i) + `":0` })
		return append(b[:len(b)-1], `,"k0":1}`...)
	}},
	{"short names", func(n int) []byte {
		return members(n, func(i int) string { return strconv.Quote(string(rune(0x100+i))) + `:0` })
	}},
	{"names with a long prefix", func(n int) []byte {
		return members(n, func(i int) string { return `"` + strings.Repeat("p", 200) + strconv.Itoa(i) + `":0` })
	}},
	{"names by case", func(n int) []byte {
		return members(n, func(i int) string {
			return `"` + strings.ToUpper(fmt.Sprintf("f%d", i%20)) + strconv.Itoa(i/20) + `":0`
		})
	}},
	{"field names by case", func(n int) []byte {
		return members(n, func(i int) string {
			return `"` + [...]string{"NAME", "Admin", "iD", "f3", "PLAIN"}[i%5] + strings.Repeat("\\u0020", i/5%2) + strconv.Itoa(i) + `":0`
		})
	}},
	{"escaped names", func(n int) []byte {
		return members(n, func(i int) string { return `"\u0069d` + strconv.Itoa(i) + `":0` })
	}},
	{"integer keys", func(n int) []byte { return members(n, func(i int) string { return `"0` + strconv.Itoa(i) + `":0` }) }},
	{"objects of 17 members", func(n int) []byte {
		var b bytes.Buffer
		b.WriteString("[")
		for b.Len() < n {
			b.WriteString("{")
			for i := range 17 {
				fmt.Fprintf(&b, `"m%d":[],`, i)
			}
			b.WriteString(`"end":0},`)
		}
		b.WriteString("{}]")
		return b.Bytes()
	}},
	{"flat struct then one unknown member", func(n int) []byte {
		return members(n, func(i int) string {
			if i%4 == 3 {
				return `"x` + strconv.Itoa(i) + `":0`
			}
			return [...]string{`"name":"x"`, `"admin":true`, `"id":1`}[i%4]
		})
	}},
	{"nested objects", func(n int) []byte {
		return []byte(strings.Repeat(`{"user":`, n/8) + "1" + strings.Repeat(`}`, n/8))
	}},
	{"nested arrays", func(n int) []byte { return []byte(strings.Repeat(`[`, n/2) + strings.Repeat(`]`, n/2)) }},
	{"nested past the limit", func(n int) []byte {
		return []byte(strings.Repeat(`[{"a":`, n/6) + "1" + strings.Repeat(`}]`, n/6))
	}},
	{"long strings with escapes", func(n int) []byte {
		return members(n, func(i int) string { return `"s` + strconv.Itoa(i) + `":"` + strings.Repeat(`ab\"\\`, 50) + `"` })
	}},
	{"a long name with escaped quotes", func(n int) []byte {
		return []byte(`{"` + strings.Repeat(`\"`, n/2) + `":1}`)
	}},
	{"list of objects", func(n int) []byte {
		return repeatTo(n, `[`, `{"name":"a","Name":"b","ADMIN":true,"id":1,"x":[{"y":1}]},`, `{}]`)
	}},
}

// TestStrictSteps checks that the strict check never does more than a
// constant amount of work per input byte, into each type of stepsPlans,
// on adversarial inputs from 1 KiB to 1 MiB (see stepsSizes): as a server
// calls it, on params it validated, and as a handler called in process
// does, which validates them first. It guards against comparing each name
// of a large object with every name before it, and against any other cost
// that grows faster than the input.
func TestStrictSteps(t *testing.T) {
	var worst stepsWorst
	for _, f := range strictFamilies {
		for _, n := range stepsSizes() {
			b := f.gen(n)
			for _, p := range stepsPlans {
				pl := planFor(p.typ)
				name := f.name + "/" + strconv.Itoa(n) + "/" + p.name
				t.Run(name, func(t *testing.T) {
					bound := int64(strictStepsPerByte*len(b) + stepsPerCall)
					for _, valid := range []bool{true, false} {
						steps := measureSteps(func() { strictInput(b, pl, valid, nil) })
						worst.note(fmt.Sprintf("%s (valid %v)", name, valid), steps, len(b))
						assert.LessOrEqual(t, steps, bound, "valid %v: %d bytes (%q…): %d steps, %.2f a byte",
							valid, len(b), b[:min(len(b), 40)], steps, float64(steps)/float64(len(b)))
					}
				})
			}
		}
	}
	t.Logf("worst: %.2f steps a byte (%s); the bound is %d", worst.ratio, worst.what, strictStepsPerByte)
}
