package redact

import "strings"

// ScriptStrings is JavaScript source with the text of every string
// literal ('…', "…", `…` including its ${…} parts) replaced by REDACTED,
// quotes kept: what `config check` shows of an inline forward transform,
// whose literals may be a credential it sets (an Authorization header).
// Comments and code stay; a literal left open runs to the end.
func ScriptStrings(src string) string {
	var b strings.Builder
	for i := 0; i < len(src); {
		c := src[i]
		switch {
		case c == '/' && strings.HasPrefix(src[i:], "//"):
			end := strings.IndexByte(src[i:], '\n')
			if end < 0 {
				end = len(src) - i
			}
			b.WriteString(src[i : i+end])
			i += end
		case c == '/' && strings.HasPrefix(src[i:], "/*"):
			end := strings.Index(src[i+2:], "*/")
			if end < 0 {
				end = len(src) - i - 2
			} else {
				end += 2
			}
			b.WriteString(src[i : i+2+end])
			i += 2 + end
		case c == '\'' || c == '"' || c == '`':
			j := i + 1
			for j < len(src) && src[j] != c {
				if src[j] == '\\' {
					j++
				}
				j++
			}
			b.WriteByte(c)
			if j > i+1 {
				b.WriteString(redactedValue)
			}
			if j < len(src) {
				b.WriteByte(c)
			}
			i = j + 1
		default:
			b.WriteByte(c)
			i++
		}
	}
	return b.String()
}
