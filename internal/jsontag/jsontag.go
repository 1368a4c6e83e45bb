// Package jsontag holds the rules of encoding/json's struct tags that
// both the jsonrpc package and its openrpc module follow.
package jsontag

import (
	"strings"
	"unicode"
)

// ValidName reports whether the default encoding/json takes name, from a
// json tag, as a field's name: letters, digits, and punctuation other
// than quotes, backslash and comma. A name it does not take is ignored,
// and the field keeps its Go name.
func ValidName(name string) bool {
	if name == "" {
		return false
	}
	for _, r := range name {
		if !unicode.IsLetter(r) && !unicode.IsDigit(r) && !strings.ContainsRune(" !#$%&()*+-./:;<=>?@[]^_{|}~", r) {
			return false
		}
	}
	return true
}
