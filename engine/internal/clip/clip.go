// Package clip shortens text for messages and answers without splitting a
// character.
package clip

import (
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"
)

// String shortens s to at most n bytes without splitting a rune, marking a
// cut with "…".
func String(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}

// Quoted is ss quoted and comma-separated, the first max of them, then
// "and N more".
func Quoted(ss []string, max int) string {
	parts := make([]string, 0, min(len(ss), max+1))
	for n, s := range ss {
		if n == max {
			parts = append(parts, fmt.Sprintf("and %d more", len(ss)-max))
			break
		}
		parts = append(parts, strconv.Quote(s))
	}
	return strings.Join(parts, ", ")
}

// Prefix is the longest start of s of at most n bytes that does not split
// a rune (s itself when it is short enough); unlike String it adds nothing.
func Prefix(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}
