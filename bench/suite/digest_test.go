package suite

import "testing"

func digestOf(t *testing.T, lines, canonical bool, chunk int, s string) (Sum, Sum) {
	t.Helper()
	d := NewDigest(lines, canonical)
	p := []byte(s)
	for len(p) > 0 {
		n := min(chunk, len(p))
		d.Write(p[:n])
		p = p[n:]
	}
	raw, canon, err := d.Sums()
	if err != nil {
		t.Fatal(err)
	}
	return raw, canon
}

func TestDigest(t *testing.T) {
	a := `{"jsonrpc":"2.0","id":1,"result":[1,"a\"}"]}`
	b := `{"jsonrpc":"2.0","id":2,"result":[2,"b"]}`
	c := `[{"id":3,"result":3},{"id":4,"result":4}]`
	want, _ := digestOf(t, true, false, 1<<20, a+"\n"+b+"\n"+c+"\n")
	if want.N != 3 {
		t.Fatalf("N = %d, want 3", want.N)
	}
	for _, chunk := range []int{1, 3, 7, 1 << 20} {
		if got, _ := digestOf(t, true, false, chunk, c+"\n"+a+"\n"+b+"\n"); got != want {
			t.Errorf("lines, chunk %d: %v, want %v", chunk, got, want)
		}
		// Back-to-back values hash to the same as the same values in lines.
		if got, _ := digestOf(t, false, false, chunk, b+a+"\n"+c); got != want {
			t.Errorf("values, chunk %d: %v, want %v", chunk, got, want)
		}
	}
	if got, _ := digestOf(t, true, false, 5, a+"\n"+b+"\n"+`{"jsonrpc":"2.0","id":2,"result":[2,"c"]}`+"\n"); got == want {
		t.Errorf("a changed response did not change the digest")
	}
	// The canonical digest ignores key order, white space and the order
	// of a batch.
	_, c1 := digestOf(t, true, true, 4, a+"\n"+c+"\n")
	_, c2 := digestOf(t, true, true, 4, `{"result":[1, "a\"}"], "id":1, "jsonrpc":"2.0"}`+"\n"+`[{"result":4,"id":4},{"id":3,"result":3}]`+"\n")
	if c1 != c2 || c1.N != 2 {
		t.Errorf("canonical: %v != %v", c1, c2)
	}
}
