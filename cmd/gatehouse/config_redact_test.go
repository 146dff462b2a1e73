package main

import (
	"strings"
	"testing"

	"github.com/gatehouse/gatehouse/internal/config"
)

// TestConfigCheckRedactsForwardURLsAndBrokenDatabaseURLs: `config check`
// shows a forward URL as its scheme, host and a digest of its path (an
// incoming webhook's path, user info or query is its credential), and a
// database URL whose password breaks it ('/', '#', '?') masked whole.
func TestConfigCheckRedactsForwardURLsAndBrokenDatabaseURLs(t *testing.T) {
	const secrets = "slack-path-token-4c4c|fwd-user-9a9a|fwd-pass-1a1a|fwd-query-token-5d5d|db-pass-8e8e"
	for _, pw := range []string{"ab/db-pass-8e8e", "ab#db-pass-8e8e", "ab?db-pass-8e8e", "1234#db-pass-8e8e"} {
		file := `listen: "127.0.0.1:0"
database_url: "postgres://gatehouse:` + pw + `@db.example.com:5432/gatehouse"
providers:
  stripe:
    scheme: stripe
    secrets: [{id: a, value: whsec_literal_provider_secret_71c2}]
    forward:
      - url: "https://fwd-user-9a9a:fwd-pass-1a1a@hooks.slack.com/services/T0/B0/slack-path-token-4c4c?code=fwd-query-token-5d5d"
        secret: "whsec_c2VjcmV0LWZvcndhcmQtc2VjcmV0LWZvcndhcmQ="
`
		out, errOut, err := runCLI(t, nil, "config", "check", "--config", writeFile(t, "gatehouse.yaml", file))
		if err != nil {
			t.Fatalf("config check: %v\n%s", err, errOut)
		}
		for _, s := range strings.Split(secrets, "|") {
			if strings.Contains(out+errOut, s) {
				t.Errorf("%s: %q appears in the output:\n%s", pw, s, out+errOut)
			}
		}
		for _, want := range []string{"url: https://hooks.slack.com/…#", "database_url: postgres://" + config.Redact} {
			if !strings.Contains(out, want) {
				t.Errorf("%s: the output lacks %q:\n%s", pw, want, out)
			}
		}
	}
}
