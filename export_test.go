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
