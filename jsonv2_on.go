//go:build goexperiment.jsonv2

package jsonrpc

// jsonV2: see jsonv2_off.go.
const jsonV2 = true
