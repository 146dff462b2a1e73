package config

import (
	"strings"
	"testing"
)

func TestRedactURL(t *testing.T) {
	for raw, want := range map[string]string{
		"https://hooks.example/in":                              "https://hooks.example/in",
		"https://hooks.example/in?token=abc&v=1":                "https://hooks.example/in?token=REDACTED&v=REDACTED",
		"https://alice:pw@hooks.example:8443/in?token=abc#frag": "https://REDACTED@hooks.example:8443/in?token=REDACTED",
		"https://apikey@hooks.example/in":                       "https://REDACTED@hooks.example/in",
		"https://hooks.example/in?token=a&token=b":              "https://hooks.example/in?token=REDACTED",
		"https://hooks.example/in?":                             "https://hooks.example/in?",
		"http://a:b@host/%zz?token=abc":                         "http://REDACTED@host/%zz",
	} {
		if got := RedactURL(raw); got != want {
			t.Errorf("RedactURL(%q) = %q, want %q", raw, got, want)
		}
	}
	// Configuration errors name the URL redacted too.
	err := (&Forward{URL: "ftp://alice:pw@host/in?token=abc", Secret: "x"}).validate()
	if err == nil || strings.Contains(err.Error(), "abc") || strings.Contains(err.Error(), "alice") {
		t.Errorf("validate: %v", err)
	}
	if _, err := DestinationKey("/relative?token=abc"); err == nil || strings.Contains(err.Error(), "abc") {
		t.Errorf("DestinationKey: %v", err)
	}
}
