package console

import "net/url"

// unescape decodes a path parameter chi left escaped (the path had
// escapes); a value that does not decode is used as it is.
func unescape(s string) string {
	if v, err := url.PathUnescape(s); err == nil {
		return v
	}
	return s
}
