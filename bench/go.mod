module github.com/ndjsonrpc/jsonrpc/bench

go 1.26.0

replace github.com/ndjsonrpc/jsonrpc => ../

require (
	github.com/creachadair/jrpc2 v1.3.6
	github.com/ndjsonrpc/jsonrpc v0.0.0-00010101000000-000000000000
	github.com/sourcegraph/jsonrpc2 v0.2.3
	golang.org/x/exp/jsonrpc2 v0.0.0-20260709172345-9ea1abe57597
)

require (
	github.com/creachadair/mds v0.31.0 // indirect
	golang.org/x/exp/event v0.0.0-20260611194520-c48552f49976 // indirect
	golang.org/x/sync v0.24.0 // indirect
	golang.org/x/xerrors v0.0.0-20240903120638-7835f813f4da // indirect
)
