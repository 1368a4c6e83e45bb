//go:build jsonrpc_scansteps

package jsonrpc

import "sync/atomic"

// scanSteps counts the scanner's work when the package is built with the
// jsonrpc_scansteps tag, for the test that bounds it per input byte. It is
// the package's only variable of this kind and exists only in that build.
var scanSteps atomic.Int64

// countSteps records n units of work done by the scanner on its input.
func countSteps(n int) { scanSteps.Add(int64(n)) }
