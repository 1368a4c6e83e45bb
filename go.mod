module github.com/ndjsonrpc/jsonrpc

go 1.26
