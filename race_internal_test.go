//go:build race

package jsonrpc

// raceOn says that the race detector is on: its instrumentation moves
// some values of the package's generic code to the heap, so tests of
// allocations leave them out.
const raceOn = true
