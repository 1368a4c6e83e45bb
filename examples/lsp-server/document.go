package main

import (
	"strings"
	"unicode/utf16"
	"unicode/utf8"
)

// A document is the text of an open document, as the editor last sent it.
type document struct {
	text    string
	version int // the editor's, which diagnostics would quote back
}

// position is LSP's Position: a line, counted from 0, and a character
// offset in that line, counted in UTF-16 code units.
type position struct {
	Line      int `json:"line"`
	Character int `json:"character"`
}

// textRange is LSP's Range, from Start up to End, which it excludes.
type textRange struct {
	Start position `json:"start"`
	End   position `json:"end"`
}

// contentChange is LSP's TextDocumentContentChangeEvent: Text replaces
// Range, or the whole text if Range is absent.
type contentChange struct {
	Range *textRange `json:"range"`
	Text  string     `json:"text"`
}

// A document's text is a string, and each change copies it whole, so a
// didChange costs about its changes times the text's size. An editor
// sends a few changes at a time, but a peer could send thousands against
// a large text: maxDocument bounds a text and maxEditWork the bytes that
// the changes of one didChange may move. Past either bound the document
// is dropped (and logged), and the server answers nothing about it until
// the editor opens it again. (A rope or a piece table would make a
// change cost its own size; this example keeps to strings.)
const (
	maxDocument = 8 << 20
	maxEditWork = 256 << 20
)

// maxHeld bounds the URIs and texts of all the open documents together,
// since an editor may open any number of them: a didOpen past it is not
// served (and logged), and a didChange past it drops its document.
var maxHeld = 256 << 20

// applyAll returns text with changes made in order, or ok false if that
// passes maxDocument or maxEditWork.
func applyAll(text string, changes []contentChange) (_ string, ok bool) {
	work := 0
	for _, c := range changes {
		work += len(text) + len(c.Text)
		if work > maxEditWork {
			return "", false
		}
		if text = apply(text, c); len(text) > maxDocument {
			return "", false
		}
	}
	return text, true
}

// quote returns at most max bytes of s, cut at the start of a rune, with
// "…" added where it was cut.
func quote(s string, max int) string {
	if len(s) <= max {
		return s
	}
	for max > 0 && !utf8.RuneStart(s[max]) {
		max--
	}
	return s[:max] + "…"
}

// apply returns text with c made. The ends of c's range are found as
// offset finds them; a range whose end comes before its start is taken
// the right way round.
func apply(text string, c contentChange) string {
	if c.Range == nil {
		return c.Text
	}
	start, end := offset(text, c.Range.Start), offset(text, c.Range.End)
	if end < start {
		start, end = end, start
	}
	return text[:start] + c.Text + text[end:]
}

// offset returns the byte offset of p in text. A line past the last one
// means the end of the text, and a character past the end of its line the
// end of that line (before its line break), as LSP says. A character
// between the two halves of a surrogate pair means the start of the pair.
// Negative numbers, which LSP does not allow, count as 0.
func offset(text string, p position) int {
	start, end, ok := line(text, p.Line)
	if !ok {
		return len(text)
	}
	i := start
	for units := p.Character; units > 0 && i < end; {
		r, size := utf8.DecodeRuneInString(text[i:end])
		n := utf16.RuneLen(r) // 2 for a rune past U+FFFF, else 1
		if n > units {
			break
		}
		units -= n
		i += size
	}
	return i
}

// line returns where line n of text starts and ends, without its line
// break, or ok false if text has no line n. A line ends at "\n", "\r\n"
// or "\r", as in LSP, so "a\n" has two lines, the second one empty.
func line(text string, n int) (start, end int, ok bool) {
	// A byte at a time: strings.IndexAny costs a call per line, which is
	// many times the cost of a byte when the lines are short.
	for ; n > 0; n-- {
		for start < len(text) && text[start] != '\n' && text[start] != '\r' {
			start++
		}
		if start == len(text) {
			return 0, 0, false
		}
		start++
		if text[start-1] == '\r' && start < len(text) && text[start] == '\n' {
			start++
		}
	}
	end = len(text)
	if i := strings.IndexAny(text[start:], "\r\n"); i >= 0 {
		end = start + i
	}
	return start, end, true
}
