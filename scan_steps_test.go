//go:build jsonrpc_scansteps

package jsonrpc

// The scanner's work per input byte, counted by countSteps: run with
//
//	go test -tags jsonrpc_scansteps -run TestScanSteps .

import (
	"bytes"
	"fmt"
	"math"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
)

// The bound on the scanner's work: at most stepsPerByte steps for each
// byte of the input, plus stepsPerCall.
//
// A byte is looked at a bounded number of times: once byte by byte, or
// once by the search for the next quote and up to three times in bulk (the
// backslash search, the control and high-bit check, utf8.Valid), so at
// most four steps inside a string; punctuation costs about two steps a
// byte (the value, then the whitespace skipped after it), and a short
// member name may be tried against a known one of up to 10 bytes before
// the general path takes it, which on a 6-byte member like "j":1, makes
// three steps a byte. Eight leaves room above all of those, and far below
// what a search repeated from every escape costs, which grows with the
// length of the string. stepsPerCall covers the fixed work of a call and
// the literals that are counted whole at the end of a short input.
const (
	stepsPerByte = 8
	stepsPerCall = 64
)

// stepsSizes returns the approximate sizes of each family of inputs: a
// quadratic cost shows as a ratio of steps to bytes that grows with them
// (with the search for the quote repeated after every escape, 28 steps a
// byte at 1 KiB and 3,600 at 128 KiB). Under -short or the race detector
// (which makes each step, an atomic add, some ten times dearer), the
// largest is 128 KiB rather than 1 MiB.
func stepsSizes() []int {
	if testing.Short() || raceOn {
		return []int{1 << 10, 1 << 14, 1 << 17}
	}
	return []int{1 << 10, 1 << 14, 1 << 17, 1 << 20}
}

// repeatTo returns prefix, then unit repeated to make about n bytes in
// all, then suffix.
func repeatTo(n int, prefix, unit, suffix string) []byte {
	k := max((n-len(prefix)-len(suffix))/len(unit), 1)
	return []byte(prefix + strings.Repeat(unit, k) + suffix)
}

// stepsFamilies are the adversarial inputs, each made at a given size.
var stepsFamilies = []struct {
	name string
	gen  func(n int) []byte
}{
	// Long strings: escapes without quotes, escaped quotes, invalid tails.
	{"escapes/unclosed", func(n int) []byte { return repeatTo(n, `"`, `0123456789abcdef\n`, ``) }},
	{"escapes/closed", func(n int) []byte { return repeatTo(n, `"`, `0123456789abcdef\n`, `"`) }},
	{"escapes/short runs", func(n int) []byte { return repeatTo(n, `"`, `a\n`, ``) }},
	{"escapes/in a request", func(n int) []byte {
		return repeatTo(n, `{"jsonrpc":"2.0","id":1,"method":"echo","params":["`, `0123456789abcdef\n`, `"]}`)
	}},
	{"escapes/in a batch", func(n int) []byte {
		return repeatTo(n, `[{"jsonrpc":"2.0","id":1,"method":"echo","params":["`, `0123456789abcdef\t`, `"]}]`)
	}},
	{"escapes/invalid tail", func(n int) []byte { return repeatTo(n, `"`, `0123456789abcdef\n`, "\x01aaaaaaaaaaaaaaaaaaaa") }},
	{"escaped quotes/only", func(n int) []byte { return repeatTo(n, `"`, `\"`, `"`) }},
	{"escaped quotes/unclosed", func(n int) []byte { return repeatTo(n, `"`, `\"`, ``) }},
	{"escaped quotes/after runs", func(n int) []byte { return repeatTo(n, `"`, `0123456789abcdef\"`, ``) }},
	{"escaped quotes/after long runs", func(n int) []byte {
		return repeatTo(n, `"`, strings.Repeat("x", 100)+`\"`, `"`)
	}},
	{"plain/closed", func(n int) []byte { return repeatTo(n, `"`, `a`, `"`) }},
	{"plain/control at end", func(n int) []byte { return repeatTo(n, `"`, `a`, "\x01") }},
	{"plain/control near end", func(n int) []byte { return repeatTo(n, `"`, `a`, "\x01aaaaaaaaaaaaaaa") }},
	{"plain/bad UTF-8 at end", func(n int) []byte { return repeatTo(n, `"`, `a`, "\xff") }},
	{"plain/UTF-8 runs", func(n int) []byte { return repeatTo(n, `"`, "0123456789abcdé€😀", ``) }},
	{"plain/UTF-8 then bad byte", func(n int) []byte { return repeatTo(n, `"`, "0123456789abcdé€😀", "\xc3") }},
	{"plain/many strings", func(n int) []byte { return repeatTo(n, `[`, `"0123456789abcdefghij",`, `""]`) }},
	{"unicode escapes/only", func(n int) []byte { return repeatTo(n, `"`, `\u00e9`, `"`) }},
	{"unicode escapes/after runs", func(n int) []byte { return repeatTo(n, `"`, `0123456789abcdef\u0041`, `"`) }},
	{"unicode escapes/bad at end", func(n int) []byte { return repeatTo(n, `"`, `\u00e9`, `\u00z`) }},
	{"unicode escapes/cut at end", func(n int) []byte { return repeatTo(n, `"`, `\ud83d\ude00`, `\u00`) }},

	// Nesting.
	{"nesting/arrays", func(n int) []byte {
		return []byte(strings.Repeat("[", n/2) + strings.Repeat("]", n/2))
	}},
	{"nesting/arrays unclosed", func(n int) []byte { return repeatTo(n, ``, `[`, ``) }},
	{"nesting/arrays one short", func(n int) []byte {
		return []byte(strings.Repeat("[", n/2) + strings.Repeat("]", n/2-1))
	}},
	{"nesting/objects", func(n int) []byte {
		return []byte(strings.Repeat(`{"a":`, n/6) + "1" + strings.Repeat("}", n/6))
	}},
	{"nesting/mixed with space", func(n int) []byte {
		return []byte(strings.Repeat(`[ { "a" : `, n/12) + "null" + strings.Repeat(" } ]", n/12))
	}},

	// Long arrays.
	{"arrays/ones", func(n int) []byte { return repeatTo(n, `[`, `1,`, `1]`) }},
	{"arrays/ones then garbage", func(n int) []byte { return repeatTo(n, `[`, `1,`, `x]`) }},
	{"arrays/ones unclosed", func(n int) []byte { return repeatTo(n, `[`, `1,`, `1`) }},
	{"arrays/long numbers", func(n int) []byte { return repeatTo(n, `[`, `-1234567890.125e-10,`, `0]`) }},
	{"arrays/spaced", func(n int) []byte { return repeatTo(n, ` [ `, "1 ,\t\r\n ", "1 ] ") }},
	{"arrays/literals", func(n int) []byte { return repeatTo(n, `[`, `true,false,null,`, `nul]`) }},
	{"arrays/empty containers", func(n int) []byte { return repeatTo(n, `[`, `[],{},[ ],{ },`, `[]]`) }},
	{"arrays/requests", func(n int) []byte {
		return repeatTo(n, `[`, `{"jsonrpc":"2.0","method":"m","params":[1],"id":1},`, `{}]`)
	}},
	{"arrays/responses", func(n int) []byte {
		return repeatTo(n, `[`, `{"jsonrpc":"2.0","result":{"a":[1,2]},"error":null,"id":"x"},`, `1]`)
	}},

	// Objects with many members.
	{"members/repeated id", func(n int) []byte { return repeatTo(n, `{`, `"id":1,`, `"id":1}`) }},
	{"members/repeated other", func(n int) []byte { return repeatTo(n, `{`, `"x":1,`, `"x":1}`) }},
	{"members/near known names", func(n int) []byte { return repeatTo(n, `{`, `"j":1,"e":1,"m":1,"p":1,"r":1,"i":1,`, `"j":1}`) }},
	{"members/escaped names", func(n int) []byte { return repeatTo(n, `{`, `"\u0069d":1,`, `"x":1}`) }},
	{"members/distinct", func(n int) []byte {
		var b bytes.Buffer
		b.WriteString("{")
		for i := 0; b.Len() < n; i++ {
			fmt.Fprintf(&b, `"k%d":%d,`, i, i)
		}
		b.WriteString(`"last":0}`)
		return b.Bytes()
	}},
	{"members/unclosed", func(n int) []byte { return repeatTo(n, `{`, `"jsonrpc":"2.0",`, `"jsonrpc"`) }},

	// Whitespace around a scalar: the line is read again as lineOther.
	{"whitespace/around a string", func(n int) []byte {
		return []byte(strings.Repeat(" ", n/2) + `"x"` + strings.Repeat("\t", n/2))
	}},

	// A deterministic pseudo-random mix of JSON-ish bytes, and of tokens.
	{"random/bytes", func(n int) []byte {
		const alphabet = "[]{}[]{}\"\"\"\\\\,,::  01-.eE+tfnulrsau\t\n\x01\xc3\xa9\xff"
		r := rand.New(rand.NewPCG(1, uint64(n)))
		b := make([]byte, n)
		for i := range b {
			b[i] = alphabet[r.IntN(len(alphabet))]
		}
		return b
	}},
	{"random/tokens in a string", func(n int) []byte { return randomTokens(n) }},
	{"random/values", func(n int) []byte { return randomValues(n, false) }},
	{"random/values with a flaw", func(n int) []byte { return randomValues(n, true) }},
}

// randomTokens returns a string of about n bytes made of pieces that the
// string scanner treats differently, in a deterministic pseudo-random
// order.
func randomTokens(n int) []byte {
	tokens := []string{`\n`, `\"`, `\\`, `\/`, `\u00e9`, `\ud800`, `a`, `0123456789abcdef`, "é€", `'`, `{`, ` `}
	r := rand.New(rand.NewPCG(2, uint64(n)))
	b := []byte{'"'}
	for len(b) < n {
		b = append(b, tokens[r.IntN(len(tokens))]...)
	}
	return append(b, '"')
}

// randomValues returns an array of about n bytes of pseudo-random JSON
// values (strings with escapes and UTF-8, numbers, literals, nested arrays
// and objects with repeated names), deterministic for each n. With flaw,
// one byte in its last tenth is replaced by another JSON-ish byte, which
// usually makes it invalid far into the line.
func randomValues(n int, flaw bool) []byte {
	r := rand.New(rand.NewPCG(3, uint64(n)))
	b := []byte{'['}
	for len(b) < n {
		if len(b) > 1 {
			b = append(b, ',')
		}
		b = appendRandomValue(b, r, 0)
	}
	b = append(b, ']')
	if flaw {
		const alphabet = "[]{}\",:\\ 1e-.tnx\x01\xff"
		b[len(b)-1-r.IntN(len(b)/10)] = alphabet[r.IntN(len(alphabet))]
	}
	return b
}

func appendRandomValue(b []byte, r *rand.Rand, depth int) []byte {
	pieces := []string{`a`, `0123456789abcdef`, `\n`, `\"`, `\u00e9`, "é", "€😀", ` `}
	names := []string{`"id"`, `"jsonrpc"`, `"method"`, `"params"`, `"a"`, `"\u0069d"`, `"j"`}
	k := r.IntN(8)
	if depth >= 6 {
		k %= 5
	}
	switch k {
	case 0, 1:
		b = append(b, '"')
		for range r.IntN(40) {
			b = append(b, pieces[r.IntN(len(pieces))]...)
		}
		return append(b, '"')
	case 2:
		return strconv.AppendFloat(b, r.NormFloat64()*1e6, 'g', -1, 64)
	case 3:
		return strconv.AppendInt(b, r.Int64N(1e6)-5e5, 10)
	case 4:
		return append(b, []string{"true", "false", "null"}[r.IntN(3)]...)
	case 5, 6:
		b = append(b, '[')
		for i := range r.IntN(6) {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendRandomValue(b, r, depth+1)
		}
		return append(b, ']')
	default:
		b = append(b, '{')
		for i := range r.IntN(6) {
			if i > 0 {
				b = append(b, ',')
			}
			b = append(b, names[r.IntN(len(names))]...)
			b = append(b, ':')
			b = appendRandomValue(b, r, depth+1)
		}
		return append(b, '}')
	}
}

// measureSteps returns the steps f counts.
func measureSteps(f func()) int64 {
	scanSteps.Store(0)
	f()
	return scanSteps.Load()
}

// stepsWorst records the worst ratio of steps to bytes seen, among inputs
// long enough that stepsPerCall does not hide it.
type stepsWorst struct {
	ratio float64
	what  string
}

func (w *stepsWorst) note(what string, steps int64, n int) {
	if n < 1<<10 {
		return
	}
	if r := float64(steps) / float64(n); r > w.ratio {
		w.ratio, w.what = r, what
	}
}

// checkSteps runs validJSON and scanLine, with the smallest batch limit
// and with none, on b, and checks the work each counts against the bound.
func checkSteps(t *testing.T, b []byte, one *envelope, batch *[]envelope, worst *stepsWorst, name string) {
	t.Helper()
	bound := int64(stepsPerByte*len(b) + stepsPerCall)
	calls := []struct {
		name string
		run  func()
	}{
		{"validJSON", func() { validJSON(b) }},
		{"scanLine(maxBatch 1)", func() { _, *batch = scanLine(b, one, *batch, 1) }},
		{"scanLine(no limit)", func() { _, *batch = scanLine(b, one, *batch, math.MaxInt) }},
	}
	for _, c := range calls {
		steps := measureSteps(c.run)
		worst.note(name+": "+c.name, steps, len(b))
		assert.LessOrEqual(t, steps, bound, "%s on %d bytes (%q…): %d steps, %.2f a byte",
			c.name, len(b), b[:min(len(b), 40)], steps, float64(steps)/float64(max(len(b), 1)))
	}
}

// TestScanSteps checks that the scanner never does more than a constant
// amount of work per input byte: on adversarial families of inputs at
// sizes from 1 KiB to 1 MiB (see stepsSizes) and on FuzzScan's seeds, validJSON and
// scanLine count at most stepsPerByte steps a byte plus stepsPerCall. It
// guards against a scan quadratic in the length of a string (a search for
// the closing quote repeated after every escape, a bulk path retried every
// 16 bytes up to an invalid byte at the end) or in any other dimension.
func TestScanSteps(t *testing.T) {
	var one envelope
	var batch []envelope
	var worst stepsWorst
	t.Run("seeds", func(t *testing.T) {
		for i, s := range scanSeeds {
			checkSteps(t, []byte(s), &one, &batch, &worst, "seed "+strconv.Itoa(i))
		}
	})
	for _, f := range stepsFamilies {
		for _, n := range stepsSizes() {
			name := f.name + "/" + strconv.Itoa(n)
			t.Run(name, func(t *testing.T) {
				checkSteps(t, f.gen(n), &one, &batch, &worst, name)
			})
		}
	}
	t.Logf("worst: %.2f steps a byte (%s); the bound is %d", worst.ratio, worst.what, stepsPerByte)
}

// FuzzScanSteps checks the bound of TestScanSteps on arbitrary input,
// starting from FuzzScan's seeds.
func FuzzScanSteps(f *testing.F) {
	for _, s := range scanSeeds {
		f.Add([]byte(s))
	}
	var one envelope
	var batch []envelope
	f.Fuzz(func(t *testing.T, b []byte) {
		var worst stepsWorst
		checkSteps(t, b, &one, &batch, &worst, "input")
	})
}
