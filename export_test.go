package jsonrpc

// Names the external tests reach that the package does not export.

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
