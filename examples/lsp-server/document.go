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
	for ; n > 0; n-- {
		i := strings.IndexAny(text[start:], "\r\n")
		if i < 0 {
			return 0, 0, false
		}
		start += i + 1
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
