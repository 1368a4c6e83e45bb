package suite

import (
	"bytes"
	"encoding/json"
	"fmt"
	"hash/maphash"
	"sort"
)

// seed is shared by every Digest of the process, so that digests of runs
// made by the same process can be compared (and only those).
var seed = maphash.MakeSeed()

// Sum is an order-independent digest of a stream of responses: the number
// of responses and the sum (mod 2^64) of a 64-bit hash of each.
type Sum struct {
	N   int
	Sum uint64
}

// String reports the count and the digest, in hexadecimal.
func (s Sum) String() string { return fmt.Sprintf("%d responses, digest %016x", s.N, s.Sum) }

// Digest is an io.Writer that hashes each response written to it (a line
// when the output is newline-delimited, else one top-level JSON value) and
// adds the hashes up, so that the result does not depend on the order of
// the responses. The raw digest hashes the bytes of each response as they
// are (for a line, without its newline); it keeps nothing and costs about
// one pass of maphash over the output. With canonical set, it also keeps
// each response and hashes its canonical form (see Canonical), which
// costs a decode and an encode of every response.
type Digest struct {
	lines     bool
	canonical bool
	h         maphash.Hash
	sc        valueScanner
	inValue   bool // value mode: inside a value
	pending   bool // lines mode: bytes of an unfinished line were added
	msg       []byte
	raw       Sum
	canon     Sum
	err       error
}

// NewDigest returns a Digest; lines selects newline framing.
func NewDigest(lines, canonical bool) *Digest {
	d := &Digest{lines: lines, canonical: canonical}
	d.h.SetSeed(seed)
	return d
}

func (d *Digest) add(p []byte) {
	d.h.Write(p)
	if d.canonical {
		d.msg = append(d.msg, p...)
	}
}

func (d *Digest) end() {
	d.raw.N++
	d.raw.Sum += d.h.Sum64()
	d.h.Reset()
	if d.canonical {
		c, err := Canonical(d.msg)
		if err != nil && d.err == nil {
			d.err = fmt.Errorf("response %d: %v", d.raw.N, err)
		}
		d.canon.N++
		d.canon.Sum += maphash.Bytes(seed, c)
		d.msg = d.msg[:0]
	}
}

// Write implements io.Writer.
func (d *Digest) Write(p []byte) (int, error) {
	n := len(p)
	if d.lines {
		for len(p) > 0 {
			i := bytes.IndexByte(p, '\n')
			if i < 0 {
				d.add(p)
				d.pending = true
				break
			}
			d.add(p[:i])
			d.pending = false
			d.end()
			p = p[i+1:]
		}
		return n, nil
	}
	for len(p) > 0 {
		if !d.inValue {
			i := bytes.IndexAny(p, "{[")
			if i < 0 {
				break // white space between values
			}
			p = p[i:]
			d.inValue = true
			d.sc = valueScanner{}
		}
		e := d.sc.until(p)
		if e < 0 {
			d.add(p)
			break
		}
		d.add(p[:e])
		d.end()
		d.inValue = false
		p = p[e:]
	}
	return n, nil
}

// Sums returns the raw digest, the canonical one (zero without
// canonical), and the first error met in canonicalising a response. An
// unfinished last line or value counts as one more response.
func (d *Digest) Sums() (raw, canon Sum, err error) {
	if d.pending || d.inValue {
		d.end()
		d.pending, d.inValue = false, false
	}
	return d.raw, d.canon, d.err
}

// until scans p, which starts inside (or at the start of) a top-level
// value, and returns the index just past the end of that value, or -1 if
// it does not end within p.
func (s *valueScanner) until(p []byte) int {
	i := 0
	for i < len(p) {
		if s.inStr {
			if s.esc {
				s.esc = false
				i++
				continue
			}
			j := bytes.IndexAny(p[i:], "\"\\")
			if j < 0 {
				return -1
			}
			i += j
			if p[i] == '\\' {
				s.esc = true
			} else {
				s.inStr = false
			}
			i++
			continue
		}
		switch p[i] {
		case '"':
			s.inStr = true
		case '{', '[':
			s.depth++
		case '}', ']':
			s.depth--
			if s.depth == 0 {
				return i + 1
			}
		}
		i++
	}
	return -1
}

// Canonical returns a canonical form of one response (or batch of
// responses): decoded (numbers kept as written) and encoded again with
// encoding/json, which sorts object keys and drops white space; the
// elements of a batch are sorted, since a batch's responses may come in
// any order.
func Canonical(msg []byte) ([]byte, error) {
	dec := json.NewDecoder(bytes.NewReader(msg))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	arr, ok := v.([]any)
	if !ok {
		return json.Marshal(v)
	}
	parts := make([]string, len(arr))
	for i, e := range arr {
		b, err := json.Marshal(e)
		if err != nil {
			return nil, err
		}
		parts[i] = string(b)
	}
	sort.Strings(parts)
	var out bytes.Buffer
	out.WriteByte('[')
	for i, s := range parts {
		if i > 0 {
			out.WriteByte(',')
		}
		out.WriteString(s)
	}
	out.WriteByte(']')
	return out.Bytes(), nil
}
