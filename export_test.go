package jsonrpc

// Names the external tests reach that the package does not export.

import "context"

type (
	LineReader = lineReader
	LineWriter = lineWriter
	IDSource   = idSource
)

var (
	NewLineReader = newLineReader
	NewLineWriter = newLineWriter
)

const (
	DefaultMaxBatch        = defaultMaxBatch
	DefaultMaxInFlight     = defaultMaxInFlight
	DefaultMaxMessageSize  = defaultMaxMessageSize
	DefaultMaxPendingBytes = defaultMaxPendingBytes
	DefaultMaxStreamBuffer = defaultMaxStreamBuffer
	DefaultStopGrace       = defaultStopGrace
	CancelMethod           = cancelMethod
	CodeServerErrorMin     = codeServerErrorMin
	CodeServerErrorMax     = codeServerErrorMax
)

// HoldsReader reports whether ctx is that of a handler that runs inline
// on the reading goroutine, reading not having moved on from it yet.
func HoldsReader(ctx context.Context) bool {
	rc, _ := ctx.Value(senderKey{}).(*reqCtx)
	return rc != nil && rc.reader != nil && rc.reader.state.Load()&stateHandedOff == 0
}
