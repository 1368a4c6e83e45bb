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

// HandedOff reports whether ctx is that of a handler run inline on a
// reader that reading has since moved on from: what marks its method slow.
func HandedOff(ctx context.Context) bool {
	rc, _ := ctx.Value(senderKey{}).(*reqCtx)
	return rc != nil && rc.reader != nil && rc.reader.state.Load()&stateHandedOff != 0
}
