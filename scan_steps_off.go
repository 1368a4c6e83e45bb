//go:build !jsonrpc_scansteps

package jsonrpc

// countSteps records n units of work done by the scanner on its input. It
// does nothing, and costs nothing once inlined, unless the package is built
// with the jsonrpc_scansteps tag, under which a test checks that scanning
// never does more than a constant amount of work per input byte.
func countSteps(int) {}
