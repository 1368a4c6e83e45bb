//go:build !goexperiment.jsonv2

package jsonrpc

// jsonV2 says that encoding/json is built on encoding/json/v2
// (GOEXPERIMENT=jsonv2), whose Marshal writes some values otherwise than
// the default encoding/json does: an invalid UTF-8 byte in a string as
// the character U+FFFD rather than the escape \ufffd, and the keys of a
// map whose key type has a MarshalText method by that method, even when
// the keys are strings. The package matches whichever encoding/json it
// is built with: under the experiment, the direct encoder gives every
// value to encoding/json, and strings are written with U+FFFD.
const jsonV2 = false
