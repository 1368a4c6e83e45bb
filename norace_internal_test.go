//go:build !race

package jsonrpc

const raceBuild = false
