package envelope

// appendCompact appends src, a JSON text already validated (storable),
// to dst as encoding/json writes a json.RawMessage: without the
// whitespace between tokens, and with <, >, & and the line and paragraph
// separators U+2028 and U+2029 escaped (\u003c, \u003e, \u0026, \u2028,
// \u2029). It is json.Marshal's work on the wrapped body in one pass and
// no allocation but dst's growth: encoding/json validated the body again
// and reflected over the envelope's struct (about a fifth of the
// receiver's CPU per delivery on the GitHub scheme, go test -bench
// ReceiverServeSchemes). TestAppendCompactIsEncodingJSONs and
// FuzzAppendCompact hold the two to the same bytes.
func appendCompact(dst, src []byte) []byte {
	const hex = "0123456789abcdef"
	inString := false
	start := 0 // src[start:i] is still to copy
	for i := 0; i < len(src); i++ {
		c := src[i]
		if !compactActs[c] { // most bytes: copied as they are
			continue
		}
		switch {
		case inString && c == '\\':
			i++ // the escaped byte is copied as it is
		case c == '"':
			inString = !inString
		case !inString && (c == ' ' || c == '\t' || c == '\n' || c == '\r'):
			dst = append(dst, src[start:i]...)
			start = i + 1
		case c == '<' || c == '>' || c == '&':
			dst = append(dst, src[start:i]...)
			dst = append(dst, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xF])
			start = i + 1
		case c == 0xE2 && i+2 < len(src) && src[i+1] == 0x80 && src[i+2]&^1 == 0xA8:
			dst = append(dst, src[start:i]...)
			dst = append(dst, '\\', 'u', '2', '0', '2', hex[src[i+2]&0xF])
			i += 2
			start = i + 1
		}
	}
	return append(dst, src[start:]...)
}

// compactActs are the bytes appendCompact looks at: the others are copied.
var compactActs = func() (t [256]bool) {
	for _, c := range []byte("\"\\ \t\n\r<>&\xE2") {
		t[c] = true
	}
	return t
}()
