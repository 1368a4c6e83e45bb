module github.com/ndjsonrpc/jsonrpc/openrpc

go 1.26.0

replace github.com/ndjsonrpc/jsonrpc => ../

require (
	github.com/google/jsonschema-go v0.4.3
	github.com/ndjsonrpc/jsonrpc v0.0.0-00010101000000-000000000000
	github.com/stretchr/testify v1.12.1
	go.uber.org/goleak v1.3.0
)

require go.yaml.in/yaml/v3 v3.0.5 // indirect
