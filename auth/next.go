package auth

import (
	"net/url"
	"strings"
)

// maxNextLen bounds the return path; longer values fall back to "/".
const maxNextLen = 2048

// SafeNext returns raw when it is a safe place to send the browser after
// login, and "/" otherwise. Accepted: an exact entry of allowlist, or a local
// path: one leading "/", no "//" or "/\" prefix, no backslash, no control
// character (raw or percent-encoded, however many times encoded), no scheme,
// host or userinfo. This refuses the open-redirect payloads of oauth2-proxy's
// advisories ("//evil.com", "/\evil.com", "/%09/evil.com", "/%2f%2fevil.com",
// "https://evil.com", "javascript:…", "/@evil.com" is a local path and kept).
func SafeNext(raw string, allowlist []string) string {
	for _, a := range allowlist {
		if raw == a {
			return raw
		}
	}
	if isLocalPath(raw) {
		return raw
	}
	return "/"
}

func isLocalPath(raw string) bool {
	if raw == "" || len(raw) > maxNextLen {
		return false
	}
	// Check the raw value and every decoded form of it: browsers and proxies
	// differ in how often they decode before interpreting a Location.
	s := raw
	for range 4 {
		if !localShape(s) {
			return false
		}
		d, err := url.PathUnescape(s)
		if err != nil {
			return false
		}
		if d == s {
			break
		}
		s = d
	}
	if strings.Contains(s, "%") && !localShape(s) { // still encoded after 4 rounds
		return false
	}
	u, err := url.Parse(raw)
	if err != nil || u.Scheme != "" || u.Host != "" || u.User != nil || u.Opaque != "" {
		return false
	}
	return true
}

func localShape(s string) bool {
	if len(s) == 0 || s[0] != '/' {
		return false
	}
	if len(s) > 1 && (s[1] == '/' || s[1] == '\\') {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < 0x20 || c == 0x7f || c == '\\' {
			return false
		}
	}
	// Unicode tricks: fullwidth solidus/reverse solidus and other slash look-alikes
	// that some stacks normalise to "/" or "\".
	for _, r := range s {
		switch r {
		case '\uff0f', '\uff3c', '\u2215', '\u2044', '\u29f8', '\ufe68', '\u3002':
			return false
		}
	}
	return true
}
