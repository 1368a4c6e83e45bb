//go:build race

package jsonrpc_test

// raceEnabled reports whether the race detector is on, so that long tests
// can run a smaller count under it.
const raceEnabled = true
