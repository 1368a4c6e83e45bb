package main

import (
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// change is a contentChange with a range from (l1, c1) to (l2, c2).
func change(l1, c1, l2, c2 int, text string) contentChange {
	return contentChange{Range: &textRange{Start: position{l1, c1}, End: position{l2, c2}}, Text: text}
}

func TestApply(t *testing.T) {
	for _, tc := range []struct {
		name   string
		text   string
		change contentChange
		want   string
	}{
		{"insert", "hello world", change(0, 5, 0, 5, ","), "hello, world"},
		{"insert at the start", "abc", change(0, 0, 0, 0, ">"), ">abc"},
		{"insert at the end", "abc\n", change(1, 0, 1, 0, "d"), "abc\nd"},
		{"insert into an empty text", "", change(0, 0, 0, 0, "x"), "x"},
		{"insert lines", "ab", change(0, 1, 0, 1, "\n-\n"), "a\n-\nb"},
		{"delete", "hello world", change(0, 5, 0, 11, ""), "hello"},
		{"delete a line break", "ab\ncd", change(0, 2, 1, 0, ""), "abcd"},
		{"replace across lines", "one\ntwo\nthree", change(0, 1, 2, 3, "ops\nt"), "oops\ntee"},
		{"replace a whole line", "a\nb\nc", change(1, 0, 2, 0, "B\n"), "a\nB\nc"},
		{"full replace", "old\ntext", contentChange{Text: "new"}, "new"},
		{"full replace with nothing", "old", contentChange{}, ""},

		// A character is a UTF-16 code unit: é is one, 😀 two.
		{"after é", "café au lait", change(0, 4, 0, 4, "!"), "café! au lait"},
		{"replace é", "café", change(0, 3, 0, 4, "e"), "cafe"},
		{"after a surrogate pair", "a😀b", change(0, 3, 0, 3, "|"), "a😀|b"},
		{"delete a surrogate pair", "a😀b", change(0, 1, 0, 3, ""), "ab"},
		{"on the second line of non-ASCII", "é😀\né😀x", change(1, 3, 1, 4, "y"), "é😀\né😀y"},
		{"inside a surrogate pair means its start", "a😀b", change(0, 2, 0, 2, "|"), "a|😀b"},

		// A line ends at "\n", "\r\n" or "\r".
		{"CRLF", "ab\r\ncd", change(1, 1, 1, 1, "|"), "ab\r\nc|d"},
		{"CRLF: the end of a line is before its line break", "ab\r\ncd", change(0, 9, 0, 9, "|"), "ab|\r\ncd"},
		{"CRLF: delete a line break", "ab\r\ncd", change(0, 2, 1, 0, ""), "abcd"},
		{"CR", "ab\rcd\ref", change(2, 0, 2, 1, "E"), "ab\rcd\rEf"},
		{"LF CR is two line breaks", "a\n\rb", change(2, 0, 2, 0, "|"), "a\n\r|b"},

		// Positions past the end are clamped; a reversed range is turned round.
		{"past the end of a line", "ab\ncd", change(0, 10, 0, 10, "|"), "ab|\ncd"},
		{"past the last line", "ab\ncd", change(5, 0, 9, 9, "|"), "ab\ncd|"},
		{"to past the last line", "ab\ncd", change(0, 1, 9, 0, ""), "a"},
		{"reversed range", "hello world", change(0, 11, 0, 5, ""), "hello"},
		{"negative", "abc", change(-1, -1, 0, 1, ""), "bc"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, apply(tc.text, tc.change))
		})
	}
}

func TestApplyInOrder(t *testing.T) {
	text := "one\ntwo"
	for _, c := range []contentChange{
		change(1, 0, 1, 3, "2"),  // one\n2
		change(0, 0, 0, 3, "1"),  // 1\n2
		change(1, 1, 1, 1, "\n"), // 1\n2\n
		change(2, 0, 2, 0, "3"),  // 1\n2\n3
	} {
		text = apply(text, c)
	}
	assert.Equal(t, "1\n2\n3", text)
}

func TestLine(t *testing.T) {
	for _, tc := range []struct {
		name string
		text string
		n    int
		want string // "<none>" if text has no line n
	}{
		{"first", "a\nb", 0, "a"},
		{"last", "a\nb", 1, "b"},
		{"past the last", "a\nb", 2, "<none>"},
		{"empty last line", "a\n", 1, ""},
		{"empty text", "", 0, ""},
		{"CRLF", "a\r\nb\r\nc", 1, "b"},
		{"CR", "a\rb", 1, "b"},
		{"empty CRLF line", "a\r\n\r\nb", 1, ""},
		{"non-ASCII", "é\n😀 x\n", 1, "😀 x"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			start, end, ok := line(tc.text, tc.n)
			got := "<none>"
			if ok {
				got = tc.text[start:end]
			}
			assert.Equal(t, tc.want, got)
		})
	}
}

// TestApplyAllBounds checks that the changes of one didChange are made in
// order, and that a didChange whose changes would move more than
// maxEditWork bytes, or make a text over maxDocument, is refused before
// its work is done.
func TestApplyAllBounds(t *testing.T) {
	got, ok := applyAll("abc", []contentChange{change(0, 3, 0, 3, "d"), change(0, 0, 0, 1, ""), {Text: "x"}, change(0, 1, 0, 1, "y")})
	assert.True(t, ok)
	assert.Equal(t, "xy", got)

	big := strings.Repeat("x", 512<<10)
	many := make([]contentChange, 4096) // 4096 times 512 KiB: 2 GiB to move
	for i := range many {
		many[i] = change(0, 0, 0, 0, "")
	}
	_, ok = applyAll(big, many)
	assert.False(t, ok, "4096 changes to a 512 KiB text")
	_, ok = applyAll(big, many[:16])
	assert.True(t, ok, "16 changes to a 512 KiB text")

	grow := []contentChange{change(0, 0, 0, 0, big), change(0, 0, 0, 0, strings.Repeat("y", maxDocument))}
	_, ok = applyAll("", grow)
	assert.False(t, ok, "a text grown past maxDocument")
}

// TestDidChangeTooCostly checks that a didChange refused by applyAll drops
// its document, and that an open too large is not kept.
func TestDidChangeTooCostly(t *testing.T) {
	s := &server{docs: map[string]document{"file:///a": {text: strings.Repeat("x", 512<<10)}}}
	many := make([]contentChange, 4096)
	for i := range many {
		many[i] = change(0, 0, 0, 0, "")
	}
	_, err := s.didChange(t.Context(), documentParams{TextDocument: textDocument{URI: "file:///a"}, ContentChanges: many})
	assert.NoError(t, err)
	assert.NotContains(t, s.docs, "file:///a")

	_, err = s.didOpen(t.Context(), documentParams{TextDocument: textDocument{URI: "file:///b", Text: strings.Repeat("x", maxDocument+1)}})
	assert.NoError(t, err)
	assert.NotContains(t, s.docs, "file:///b")
}

// TestHoverQuotesLittle checks that a hover on a long line quotes at most
// maxQuote bytes of it, cut between runes, so that a batch of hovers
// cannot make an answer many times its input.
func TestHoverQuotesLittle(t *testing.T) {
	line := "é" + strings.Repeat("€", 1<<18) // 2 bytes, then 768 KiB of 3-byte runes
	s := &server{docs: map[string]document{"file:///a": {text: line}}}
	res, err := s.hover(t.Context(), hoverParams{TextDocument: textDocument{URI: "file:///a"}})
	assert.NoError(t, err)
	value := res.(map[string]any)["contents"].(map[string]string)["value"]
	assert.Less(t, len(value), maxQuote+100)
	assert.True(t, utf8.ValidString(value), "cut between runes")
	assert.Equal(t, "ab", quote("ab", 2))
	assert.Equal(t, "a…", quote("aé", 2), "é does not fit: cut before it")
}

// TestDocumentsHeldBounded checks that the URIs and texts of the open
// documents together stay within maxHeld, whatever the editor opens, and
// that opening again, changing and closing keep the count right.
func TestDocumentsHeldBounded(t *testing.T) {
	old := maxHeld
	maxHeld = 1 << 20
	t.Cleanup(func() { maxHeld = old })
	s := &server{docs: make(map[string]document)}
	open := func(uri, text string) {
		_, err := s.didOpen(t.Context(), documentParams{TextDocument: textDocument{URI: uri, Text: text}})
		require.NoError(t, err)
	}
	held := func() int {
		n := 0
		for uri, d := range s.docs {
			n += len(uri) + len(d.text)
		}
		assert.Equal(t, n, s.held, "the count of what is held")
		return n
	}
	big := strings.Repeat("x", 300<<10)
	for i := range 3 {
		open(fmt.Sprint(i), big)
	}
	open("3", big) // does not fit
	assert.NotContains(t, s.docs, "3")
	assert.LessOrEqual(t, held(), maxHeld)
	open("0", "small") // opened again: replaces, and frees its room
	open("3", big)
	assert.Contains(t, s.docs, "3")
	held()

	// A URI counts as much as a text.
	open(strings.Repeat("u", 300<<10), "")
	assert.Len(t, s.docs, 4, "a URI of 300 KiB opened past maxHeld")
	assert.LessOrEqual(t, held(), maxHeld)

	_, err := s.didChange(t.Context(), documentParams{TextDocument: textDocument{URI: "0"}, ContentChanges: []contentChange{{Text: big}}})
	require.NoError(t, err)
	assert.NotContains(t, s.docs, "0", "grown past maxHeld")
	_, err = s.didChange(t.Context(), documentParams{TextDocument: textDocument{URI: "1"}, ContentChanges: []contentChange{{Text: "y"}}})
	require.NoError(t, err)
	assert.Equal(t, "y", s.docs["1"].text)
	held()
	for uri := range s.docs {
		_, err := s.didClose(t.Context(), documentParams{TextDocument: textDocument{URI: uri}})
		require.NoError(t, err)
	}
	assert.Zero(t, s.held)
}
