package jsonrpcotel

import (
	"strings"
	"testing"

	"go.opentelemetry.io/otel/propagation"
)

// metaBenchParams are an MCP tools/call's params: a tool's arguments
// with a file's contents (size bytes of text), and a _meta with a trace
// context after them, or none.
func metaBenchParams(size int, meta bool) []byte {
	p := `{"name":"write_file","arguments":{"path":"/src/main.go","contents":"` +
		strings.Repeat(`func f() { return \"x\" }\n`, size/27) + `"}`
	if meta {
		p += `,"_meta":{"progressToken":7,"traceparent":"00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"}`
	}
	return []byte(p + "}")
}

// BenchmarkMeta reads the trace context from params as a server does
// (metaCarrier) and writes it as a client does (withMeta), for params
// of 1 KiB and 64 KiB.
func BenchmarkMeta(b *testing.B) {
	mc := propagation.MapCarrier{"traceparent": "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"}
	for _, size := range []int{1 << 10, 64 << 10} {
		with, without := metaBenchParams(size, true), metaBenchParams(size, false)
		name := "KiB=" + map[int]string{1 << 10: "1", 64 << 10: "64"}[size]
		b.Run("read/"+name, func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(with)))
			for b.Loop() {
				if metaCarrier(with) == nil {
					b.Fatal("no _meta found")
				}
			}
		})
		b.Run("write/"+name, func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(without)))
			for b.Loop() {
				if _, ok := withMeta(without, mc); !ok {
					b.Fatal("no _meta written")
				}
			}
		})
	}
}
