module github.com/ndjsonrpc/jsonrpc/examples/mcp-server

go 1.26.0

replace (
	github.com/ndjsonrpc/jsonrpc => ../..
	github.com/ndjsonrpc/jsonrpc/openrpc => ../../openrpc
)

require (
	github.com/google/jsonschema-go v0.4.3
	github.com/ndjsonrpc/jsonrpc v0.0.0-00010101000000-000000000000
	github.com/ndjsonrpc/jsonrpc/openrpc v0.0.0-00010101000000-000000000000
)
