// Package clip shortens text for messages and answers without splitting a
// character.
package clip

import "unicode/utf8"

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
