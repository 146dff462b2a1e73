package redact

import (
	"strings"
	"testing"
)

func TestURL(t *testing.T) {
	for raw, want := range map[string]string{
		"https://hooks.example/in":                              "https://hooks.example/in",
		"https://hooks.example/in?token=abc&v=1":                "https://hooks.example/in?token=REDACTED&v=REDACTED",
		"https://alice:pw@hooks.example:8443/in?token=abc#frag": "https://REDACTED@hooks.example:8443/in?token=REDACTED",
		"https://apikey@hooks.example/in":                       "https://REDACTED@hooks.example/in",
		"https://hooks.example/in?token=a&token=b":              "https://hooks.example/in?token=REDACTED",
		"https://hooks.example/in?":                             "https://hooks.example/in?",
		"http://a:b@host/%zz?token=abc":                         "http://REDACTED@host/%zz",
	} {
		if got := URL(raw); got != want {
			t.Errorf("URL(%q) = %q, want %q", raw, got, want)
		}
	}
	if _, err := DestinationKey("/relative?token=abc"); err == nil || strings.Contains(err.Error(), "abc") {
		t.Errorf("DestinationKey: %v", err)
	}
}
