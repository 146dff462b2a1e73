package auth

import "testing"

func TestSafeNext(t *testing.T) {
	allow := []string{"https://docs.example.com/welcome", "https://app.example.com/"}
	good := []string{
		"/", "/account", "/account?tab=sessions", "/a/b/c#frag", "/search?q=%2Fx",
		"/@evil.com", // a local path: "@" in a path is not userinfo
		"https://docs.example.com/welcome", "https://app.example.com/",
	}
	bad := []string{
		"", "//evil.com", "///evil.com", "////evil.com", "/\\evil.com", "\\\\evil.com", "\\/evil.com",
		"/%09/evil.com", "/\t/evil.com", "/%0a/evil.com", "/%0d/evil.com", "/%00/evil.com",
		"/%2f%2fevil.com", "/%2F%2Fevil.com", "/%252f%252fevil.com", "/%5cevil.com", "/%5C%5Cevil.com",
		"/%2f/evil.com", "/%25%32%66%25%32%66evil.com",
		"https://evil.com", "http://evil.com/", "https:evil.com", "//user@evil.com", "https://app.example.com@evil.com/",
		"https://evil.com\\@app.example.com", "http:/\\/evil.com", "javascript:alert(1)", "JavaScript:alert(1)",
		" /account", "data:text/html,<script>alert(1)</script>", "evil.com", "account",
		"https://docs.example.com/welcome/", "https://docs.example.com/welcome?x", // allowlist is exact
		"/\uff0fevil.com", "/\uff3cevil.com", "/%ef%bc%8fevil.com",
		"/x\x7f", "/%7f",
		string(make([]byte, 3000)),
	}
	for _, g := range good {
		if got := SafeNext(g, allow); got != g {
			t.Errorf("SafeNext(%q) = %q, want it kept", g, got)
		}
	}
	for _, b := range bad {
		if got := SafeNext(b, allow); got != "/" {
			t.Errorf("SafeNext(%q) = %q, want /", b, got)
		}
	}
}

func FuzzSafeNext(f *testing.F) {
	for _, s := range []string{"/", "//evil.com", "/%2f%2fevil.com", "/\\evil", "/a?b=c"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got := SafeNext(s, nil)
		if got == "/" {
			return
		}
		if got != s || !localShape(got) {
			t.Fatalf("SafeNext(%q) = %q", s, got)
		}
	})
}
