package jsonrpc

import (
	"bytes"
	"strings"
	"testing"
)

// BenchmarkScan measures the scanner's throughput on one request line to
// echo whose one param is a long string: plain text, text full of \n
// escapes and with no quote, and plain text with a raw 0x01 byte near its
// end and no closing quote (an invalid line). Throughput is in bytes of
// the line a second; a scan quadratic in the length of the string shows as
// a throughput that falls from 1 MiB to 16 MiB.
func BenchmarkScan(b *testing.B) {
	const head = `{"jsonrpc":"2.0","id":1,"method":"echo","params":["`
	kinds := []struct {
		name string
		line func(n int) []byte
		want lineKind
	}{
		{"plain", func(n int) []byte {
			return []byte(head + strings.Repeat("abcdefghijklmnopqrstuvwxyz012345", n/32) + `"]}`)
		}, lineObject},
		{"escapes", func(n int) []byte {
			const text = `0123456789abcdef\n`
			return []byte(head + strings.Repeat(text, n/len(text)) + `"]}`)
		}, lineObject},
		{"invalidtail", func(n int) []byte {
			return []byte(head + strings.Repeat("a", n-16) + "\x01" + strings.Repeat("a", 15))
		}, lineInvalidJSON},
	}
	for _, k := range kinds {
		for _, size := range []struct {
			name string
			n    int
		}{{"1MiB", 1 << 20}, {"16MiB", 16 << 20}} {
			b.Run(k.name+"/"+size.name, func(b *testing.B) {
				line := k.line(size.n)
				if bytes.IndexByte(line, '\n') >= 0 {
					b.Fatal("the line holds a newline")
				}
				var one envelope
				var batch []envelope
				b.SetBytes(int64(len(line)))
				b.ReportAllocs()
				for b.Loop() {
					var kind lineKind
					kind, batch = scanLine(line, &one, batch, defaultMaxBatch)
					if kind != k.want {
						b.Fatalf("scanLine = %s, want %s", kindName(kind), kindName(k.want))
					}
				}
			})
		}
	}
}
