// Package text holds the string helpers several packages share: cutting a
// message to a byte budget without splitting a UTF-8 sequence.
package text

import "unicode/utf8"

// Truncate returns the longest prefix of s of at most n bytes that does not
// end inside a UTF-8 sequence: s itself when it is n bytes or shorter, ""
// when n ≤ 0.
func Truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	if n <= 0 {
		return ""
	}
	cut := n
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut]
}

// Elide is Truncate followed by "…" when s was cut, so a reader sees that
// something is missing (the result is then up to n+3 bytes long).
func Elide(s string, n int) string {
	if t := Truncate(s, n); len(t) < len(s) {
		return t + "…"
	}
	return s
}
