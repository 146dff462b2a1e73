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

// TestDestination: a forward URL shows as scheme, host and a digest of its
// path; no user info, query, fragment or path text survives, even of a
// text that is not a URL.
func TestDestination(t *testing.T) {
	for raw, want := range map[string]string{
		"https://hooks.slack.com/services/T0/B0/XXXX":                    "https://hooks.slack.com/…#e248725e",
		"https://u:pw@hooks.slack.com:443/services/T0/B0/XXXX?token=a#f": "https://hooks.slack.com/…#e248725e",
		"http://svc.example:8080/":                                       "http://svc.example:8080/",
		"http://svc.example":                                             "http://svc.example/",
	} {
		if got := Destination(raw); got != want {
			t.Errorf("Destination(%q) = %q, want %q", raw, got, want)
		}
	}
	for _, raw := range []string{"hooks.slack.com/services/T0/B0/XXXX", "https://u:p w@hooks.slack.com/XXXX", "https://%zz/XXXX"} {
		if got := Destination(raw); strings.Contains(got, "XXXX") || strings.Contains(got, "slack") || !strings.HasPrefix(got, "…#") {
			t.Errorf("Destination(%q) = %q", raw, got)
		}
	}
}

// TestDatabaseURL: a password never survives, whether the URL parses, is
// broken by a password holding '/', '#', '?' or '@', parses as another
// host, or is libpq's key=value form (quoted, unquoted, unterminated).
func TestDatabaseURL(t *testing.T) {
	const m = "<m>"
	for raw, want := range map[string]string{
		"postgres://gh:pw-secret@db:5432/x?sslmode=require":     "postgres://gh:<m>@db:5432/x?sslmode=require",
		"postgres://gh@db/x?password=pw-secret&sslmode=disable": "postgres://gh@db/x?password=<m>&sslmode=disable",
		"postgres://gh:pa%2Fpw-secret@db/x":                     "postgres://gh:<m>@db/x",
		"postgres://db/x":                                       "postgres://db/x",
		"postgres://gh:pa/pw-secret@db/x":                       "postgres://<m>",
		"postgres://gh:pa#pw-secret@db/x":                       "postgres://<m>",
		"postgres://gh:pa?pw-secret@db/x":                       "postgres://<m>",
		"postgres://gh:1234#pw-secret@db/x":                     "postgres://<m>",
		"postgres://gh:1234/pw-secret@db/x":                     "postgres://<m>",
		"postgresql://gh:p@pw-secret@db/x":                      "postgresql://gh:<m>@db/x",
		"host=db user=gh password=pw-secret dbname=x":           "host=db user=gh password=<m> dbname=x",
		"host=db password = 'pw secret\\' more' dbname=x":       "host=db password=<m> dbname=x",
		"host=db sslpassword=pw-secret application_name='a b'":  "host=db sslpassword=<m> application_name='a b'",
		"host=db password='pw-secret dbname=x":                  "<m>",
		"host=db pw-secret":                                     "<m>",
		"":                                                      "",
	} {
		got := DatabaseURL(raw, m)
		if got != want {
			t.Errorf("DatabaseURL(%q) = %q, want %q", raw, got, want)
		}
		if strings.Contains(got, "secret") {
			t.Errorf("DatabaseURL(%q) = %q shows the password", raw, got)
		}
	}
}

// TestScriptStrings: an inline transform shows without the text of its
// string literals, of any quote, escaped quotes included.
func TestScriptStrings(t *testing.T) {
	src := "function handler(w) { // a 'comment'\n  w.headers[\"Authorization\"] = 'Bearer tok-1\\'x' + `t${\"tok-2\"}`;\n  return w; /* \"c\" */ }\n"
	want := "function handler(w) { // a 'comment'\n  w.headers[\"REDACTED\"] = 'REDACTED' + `REDACTED`;\n  return w; /* \"c\" */ }\n"
	if got := ScriptStrings(src); got != want {
		t.Errorf("ScriptStrings = %q, want %q", got, want)
	}
	if got := ScriptStrings(`x = "open tok-3`); strings.Contains(got, "tok-3") {
		t.Errorf("an open literal: %q", got)
	}
}
