package jsonrpc

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"math/bits"
	"unicode/utf8"
)

// This file holds the scanning of JSON values that the scanner of messages
// (scan.go) builds on: whitespace, strings, numbers, literals and nested
// containers, each validated and skipped over without being decoded, and
// the look-up of one member of an object.
//
// The scanner is iterative: nesting depth costs one bit of stack per level,
// never a Go stack frame, so deeply nested input cannot exhaust the stack.

// isSpace reports whether c is JSON whitespace.
func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\r' || c == '\n' }

func skipSpace(b []byte, i int) int {
	start := i
	for i < len(b) && b[i] <= ' ' && isSpace(b[i]) {
		i++
	}
	countSteps(i - start + 1)
	return i
}

// trimSpace returns b without the JSON whitespace around it.
func trimSpace(b []byte) []byte {
	i, j := skipSpace(b, 0), len(b)
	for j > i && isSpace(b[j-1]) {
		j--
	}
	return b[i:j]
}

// scanString validates the string that starts at b[i] (which must be '"')
// and returns the index just past its closing quote, whether it contains
// escapes, and ok=false if it is not a valid JSON string.
//
// Every byte is looked at a bounded number of times whatever the input:
// the search for the next quote starts where the last one stopped, and the
// bulk path is only ever handed text up to that quote, so a long string
// full of escapes and with no quote costs time linear in its length.
func scanString(b []byte, i int) (end int, escaped, ok bool) {
	i++         // opening quote
	quote := -1 // index of the next '"' at or past i once searched for; len(b) if none
	run := 0
	for i < len(b) {
		c := b[i]
		if c >= 0x20 && c != '"' && c != '\\' && c < utf8.RuneSelf {
			if i+8 <= len(b) {
				// Eight bytes at once: up to the first that is not
				// plain ASCII text, which the next turn looks at.
				if k := plainBytes(binary.LittleEndian.Uint64(b[i:])); k < 8 {
					i += k
					countSteps(k)
					continue
				}
				i += 8
				countSteps(8)
				run += 8
			} else {
				i++
				countSteps(1)
				run++
			}
			if run >= 16 {
				// A long string: take the rest of the run in bulk.
				if quote < i {
					quote = bytes.IndexByte(b[i:], '"')
					if quote < 0 {
						countSteps(len(b) - i)
						quote = len(b)
					} else {
						countSteps(quote + 1)
						quote += i
					}
				}
				n, valid := plainRun(b[i:quote])
				if !valid {
					return 0, false, false
				}
				i += n
				run = 0
			}
			continue
		}
		countSteps(1)
		switch {
		case c == '"':
			return i + 1, escaped, true
		case c == '\\':
			escaped = true
			if i+1 >= len(b) {
				return 0, false, false
			}
			switch b[i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				i += 2
			case 'u':
				if i+6 > len(b) {
					return 0, false, false
				}
				for _, h := range b[i+2 : i+6] {
					if !isHex(h) {
						return 0, false, false
					}
				}
				i += 6
			default:
				return 0, false, false
			}
		case c < 0x20:
			return 0, false, false
		default:
			r, size := utf8.DecodeRune(b[i:])
			if r == utf8.RuneError && size == 1 {
				return 0, false, false
			}
			i += size
		}
	}
	return 0, false, false
}

// plainBytes returns how many of the eight bytes of x (in memory order,
// little-endian) come before the first that is a quote, a backslash, a
// control character or not ASCII; 8 if none is.
//
// Each test below flags the byte it is about in its high bit; a borrow
// can flag a byte wrongly only above one flagged rightly, so the lowest
// flag is exact.
func plainBytes(x uint64) int {
	const ones, highs = 0x0101010101010101, 0x8080808080808080
	q := x ^ (ones * '"')
	s := x ^ (ones * '\\')
	m := ((q-ones)&^q | (s-ones)&^s | (x-ones*0x20)&^x | x) & highs
	return bits.TrailingZeros64(m) >> 3
}

// plainRun looks at s, string content that holds no quote, up to its first
// backslash, and returns the length of that span; valid is false if the
// span holds a control character or invalid UTF-8, which makes the string
// invalid (a span ends at an ASCII byte or the end of the line, so it never
// cuts a valid character in two).
func plainRun(s []byte) (n int, valid bool) {
	n = bytes.IndexByte(s, '\\')
	if n < 0 {
		n = len(s)
	}
	countSteps(2 * n)
	const ones, highs = 0x0101010101010101, 0x8080808080808080
	var control, high uint64
	k := 0
	for ; k+32 <= n; k += 32 {
		w := s[k : k+32 : k+32]
		x0 := binary.LittleEndian.Uint64(w[0:])
		x1 := binary.LittleEndian.Uint64(w[8:])
		x2 := binary.LittleEndian.Uint64(w[16:])
		x3 := binary.LittleEndian.Uint64(w[24:])
		control |= (x0-ones*0x20)&^x0 | (x1-ones*0x20)&^x1 | (x2-ones*0x20)&^x2 | (x3-ones*0x20)&^x3
		high |= x0 | x1 | x2 | x3
	}
	for ; k+8 <= n; k += 8 {
		x := binary.LittleEndian.Uint64(s[k:])
		control |= (x - ones*0x20) &^ x
		high |= x
	}
	for ; k < n; k++ {
		if s[k] < 0x20 {
			return 0, false
		}
		high |= uint64(s[k])
	}
	if control&highs != 0 {
		return 0, false
	}
	if high&highs != 0 {
		countSteps(n)
		if !utf8.Valid(s[:n]) {
			return 0, false
		}
	}
	return n, true
}

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

func isDigit(c byte) bool { return '0' <= c && c <= '9' }

// scanNumber validates the number that starts at b[i].
func scanNumber(b []byte, i int) (int, bool) {
	end, ok := number(b, i)
	countSteps(max(end-i, 0) + 1)
	return end, ok
}

// number is scanNumber without the count of steps.
func number(b []byte, i int) (int, bool) {
	if i < len(b) && b[i] == '-' {
		i++
	}
	switch {
	case i < len(b) && b[i] == '0':
		i++
	case i < len(b) && '1' <= b[i] && b[i] <= '9':
		for i < len(b) && isDigit(b[i]) {
			i++
		}
	default:
		return 0, false
	}
	if i >= len(b) || b[i] != '.' && b[i]|0x20 != 'e' {
		return i, true // an integer, the usual number
	}
	if b[i] == '.' {
		i++
		if i >= len(b) || !isDigit(b[i]) {
			return 0, false
		}
		for i < len(b) && isDigit(b[i]) {
			i++
		}
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		if i >= len(b) || !isDigit(b[i]) {
			return 0, false
		}
		for i < len(b) && isDigit(b[i]) {
			i++
		}
	}
	return i, true
}

// bitStack records, for each open container, whether it is an object.
// The first 256 levels live in the struct; deeper input spills to the heap.
type bitStack struct {
	depth int
	low   [4]uint64
	high  []uint64
}

// The depths are unsigned below, so that the divisions are shifts and
// the index into low needs no check.

func (s *bitStack) push(object bool) {
	d := uint(s.depth)
	s.depth++
	var w *uint64
	if d < 256 {
		w = &s.low[d/64]
	} else {
		k := int((d - 256) / 64)
		if k == len(s.high) {
			s.high = append(s.high, 0)
		}
		w = &s.high[k]
	}
	bit := uint64(1) << (d % 64)
	if object {
		*w |= bit
	} else {
		*w &^= bit
	}
}

func (s *bitStack) top() (object bool) {
	d := uint(s.depth - 1)
	if d < 256 {
		return s.low[d/64]&(1<<(d%64)) != 0
	}
	return s.high[(d-256)/64]&(1<<(d%64)) != 0
}

// scanValue validates the JSON value that starts at b[i], which must not be
// whitespace, and returns the index just past it.
func scanValue(b []byte, i int) (int, bool) {
	// Fast paths for the scalars that make up most ids and params.
	if i < len(b) {
		switch c := b[i]; {
		case c == '"':
			end, _, ok := scanString(b, i)
			return end, ok
		case c == '-' || isDigit(c):
			return scanNumber(b, i)
		}
	}
	var st bitStack
	for {
		// A value is expected at b[i].
		countSteps(1)
		if i >= len(b) {
			return 0, false
		}
		ok := true
		switch c := b[i]; c {
		case '{':
			i = skipSpace(b, i+1)
			if i < len(b) && b[i] == '}' {
				i++
				break
			}
			st.push(true)
			if i, ok = scanKey(b, i); !ok {
				return 0, false
			}
			continue
		case '[':
			i = skipSpace(b, i+1)
			if i < len(b) && b[i] == ']' {
				i++
				break
			}
			st.push(false)
			continue
		case '"':
			i, _, ok = scanString(b, i)
		case 't':
			i, ok = scanLiteral(b, i, "true")
		case 'f':
			i, ok = scanLiteral(b, i, "false")
		case 'n':
			i, ok = scanLiteral(b, i, "null")
		default:
			i, ok = scanNumber(b, i)
		}
		if !ok {
			return 0, false
		}
		// A value has ended: close containers as far as possible.
		for {
			if st.depth == 0 {
				return i, true
			}
			i = skipSpace(b, i)
			if i >= len(b) {
				return 0, false
			}
			if st.top() {
				switch b[i] {
				case ',':
					if i, ok = scanKey(b, skipSpace(b, i+1)); !ok {
						return 0, false
					}
				case '}':
					i++
					st.depth--
					continue
				default:
					return 0, false
				}
			} else {
				switch b[i] {
				case ',':
					i = skipSpace(b, i+1)
				case ']':
					i++
					st.depth--
					continue
				default:
					return 0, false
				}
			}
			break
		}
	}
}

// scanKey validates an object key and its colon at b[i] and returns the
// index of the member's value, past any whitespace.
func scanKey(b []byte, i int) (int, bool) {
	if i >= len(b) || b[i] != '"' {
		return 0, false
	}
	i, _, ok := scanString(b, i)
	if !ok {
		return 0, false
	}
	i = skipSpace(b, i)
	if i >= len(b) || b[i] != ':' {
		return 0, false
	}
	return skipSpace(b, i+1), true
}

func scanLiteral(b []byte, i int, lit string) (int, bool) {
	if hasLiteral(b, i, lit) {
		return i + len(lit), true
	}
	return 0, false
}

// hasLiteral reports whether b holds lit at i.
func hasLiteral(b []byte, i int, lit string) bool {
	countSteps(len(lit))
	return len(b)-i >= len(lit) && string(b[i:i+len(lit)]) == lit
}

// validJSON reports whether b holds exactly one JSON value, with optional
// whitespace around it, and every string in it is valid UTF-8.
func validJSON(b []byte) bool {
	i := skipSpace(b, 0)
	end, ok := scanValue(b, i)
	return ok && skipSpace(b, end) == len(b)
}

// unescapeKey decodes a valid JSON string that contains escapes.
func unescapeKey(quoted []byte) []byte {
	var s string
	if json.Unmarshal(quoted, &s) != nil {
		return nil
	}
	return []byte(s)
}

// memberValue returns the value of the member called name in obj, a valid
// JSON object, or nil if it has none (or obj is not an object). Names are
// compared as decoded.
func memberValue(obj []byte, name string) []byte {
	i := skipSpace(obj, 0)
	if i >= len(obj) || obj[i] != '{' {
		return nil
	}
	i = skipSpace(obj, i+1)
	for i < len(obj) && obj[i] == '"' {
		kend, escaped, ok := scanString(obj, i)
		if !ok {
			return nil
		}
		key := obj[i+1 : kend-1]
		if escaped {
			key = unescapeKey(obj[i:kend])
		}
		i = skipSpace(obj, kend)
		if i >= len(obj) || obj[i] != ':' {
			return nil
		}
		vstart := skipSpace(obj, i+1)
		vend, ok := scanValue(obj, vstart)
		if !ok {
			return nil
		}
		if string(key) == name {
			return obj[vstart:vend]
		}
		i = skipSpace(obj, vend)
		if i >= len(obj) || obj[i] != ',' {
			return nil
		}
		i = skipSpace(obj, i+1)
	}
	return nil
}
