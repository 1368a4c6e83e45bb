package jsonrpc

// This file holds the scalars of the direct decoder of params
// (fastparams.go): numbers stored into Go integers and floats of every
// size, and strings with escapes unquoted, each as encoding/json does it.

import (
	"math"
	"strconv"
	"unicode/utf16"
	"unicode/utf8"
	"unsafe"
)

// storeNumber stores the JSON number s into the value at p of d's type,
// as encoding/json does, and reports whether it could: the number must
// fit the type, and be an integer for an integer type.
func storeNumber(s []byte, d *direct, p unsafe.Pointer) bool {
	switch {
	case d.kind >= dirInt && d.kind <= dirInt64:
		n, ok := parseInt(s)
		if !ok {
			return false
		}
		return storeInt(n, d.kind, p)
	case d.kind >= dirUint && d.kind <= dirUintptr:
		if s[0] == '-' {
			return false // strconv.ParseUint refuses a sign, even "-0"
		}
		n, ok := parseInt(s)
		if !ok || n < 0 {
			u, err := strconv.ParseUint(unsafe.String(&s[0], len(s)), 10, 64)
			if err != nil {
				return false
			}
			return storeUint(u, d.kind, p)
		}
		return storeUint(uint64(n), d.kind, p)
	case d.kind == dirFloat64:
		f, err := strconv.ParseFloat(unsafe.String(&s[0], len(s)), 64)
		if err != nil {
			return false
		}
		*(*float64)(p) = f
		return true
	case d.kind == dirFloat32:
		f, err := strconv.ParseFloat(unsafe.String(&s[0], len(s)), 32)
		if err != nil || math.Abs(f) > math.MaxFloat32 {
			return false
		}
		*(*float32)(p) = float32(f)
		return true
	}
	return false
}

// parseInt parses s, a valid JSON number, as strconv.ParseInt does in
// base 10, and reports whether it is an integer that fits in an int64.
func parseInt(s []byte) (int64, bool) {
	neg := s[0] == '-'
	digits := s
	if neg {
		digits = s[1:]
	}
	if len(digits) > 18 {
		n, err := strconv.ParseInt(unsafe.String(&s[0], len(s)), 10, 64)
		return n, err == nil
	}
	var n int64
	for _, c := range digits {
		if c < '0' || c > '9' {
			return 0, false // a fraction or an exponent
		}
		n = n*10 + int64(c-'0')
	}
	if neg {
		n = -n
	}
	return n, true
}

func storeInt(n int64, k directKind, p unsafe.Pointer) bool {
	switch k {
	case dirInt:
		*(*int)(p) = int(n)
		return int64(int(n)) == n
	case dirInt8:
		*(*int8)(p) = int8(n)
		return int64(int8(n)) == n
	case dirInt16:
		*(*int16)(p) = int16(n)
		return int64(int16(n)) == n
	case dirInt32:
		*(*int32)(p) = int32(n)
		return int64(int32(n)) == n
	}
	*(*int64)(p) = n
	return true
}

func storeUint(n uint64, k directKind, p unsafe.Pointer) bool {
	switch k {
	case dirUint:
		*(*uint)(p) = uint(n)
		return uint64(uint(n)) == n
	case dirUint8:
		*(*uint8)(p) = uint8(n)
		return uint64(uint8(n)) == n
	case dirUint16:
		*(*uint16)(p) = uint16(n)
		return uint64(uint16(n)) == n
	case dirUint32:
		*(*uint32)(p) = uint32(n)
		return uint64(uint32(n)) == n
	case dirUintptr:
		*(*uintptr)(p) = uintptr(n)
		return uint64(uintptr(n)) == n
	}
	*(*uint64)(p) = n
	return true
}

// unquoteDirect decodes the contents of a valid JSON string that holds
// escapes, as encoding/json does: an escaped surrogate that is not half
// of a pair becomes U+FFFD.
func unquoteDirect(s []byte) (string, bool) {
	out := make([]byte, 0, len(s))
	for i := 0; i < len(s); {
		c := s[i]
		if c != '\\' {
			out = append(out, c)
			i++
			continue
		}
		if i+1 >= len(s) {
			return "", false
		}
		switch e := s[i+1]; e {
		case '"', '\\', '/':
			out = append(out, e)
		case 'b':
			out = append(out, '\b')
		case 'f':
			out = append(out, '\f')
		case 'n':
			out = append(out, '\n')
		case 'r':
			out = append(out, '\r')
		case 't':
			out = append(out, '\t')
		case 'u':
			r, ok := hex4(s, i+2)
			if !ok {
				return "", false
			}
			i += 6
			if utf16.IsSurrogate(r) {
				if r2, ok := hex4(s, i+2); ok && i+1 < len(s) && s[i] == '\\' && s[i+1] == 'u' {
					if pair := utf16.DecodeRune(r, r2); pair != utf8.RuneError {
						out = utf8.AppendRune(out, pair)
						i += 6
						continue
					}
				}
				r = utf8.RuneError
			}
			out = utf8.AppendRune(out, r)
			continue
		default:
			return "", false
		}
		i += 2
	}
	return string(out), true
}

// hex4 returns the rune of the four hex digits at s[i:].
func hex4(s []byte, i int) (rune, bool) {
	if i+4 > len(s) {
		return 0, false
	}
	var r rune
	for _, c := range s[i : i+4] {
		switch {
		case '0' <= c && c <= '9':
			c -= '0'
		case 'a' <= c && c <= 'f':
			c -= 'a' - 10
		case 'A' <= c && c <= 'F':
			c -= 'A' - 10
		default:
			return 0, false
		}
		r = r<<4 | rune(c)
	}
	return r, true
}
