package config

import (
	"strings"
	"testing"
)

// Issue 46: configuration errors named Go's types ("field secret not
// found in type config.Provider") and cut a bad duration off ("five
// mi..."); issue 45: a type error echoed the value, a secret included. An
// error names the YAML path, the line, the unknown key with the known key
// it is nearest to, or the type wanted, and never the value (a duration's
// excepted).
func TestYAMLErrorsNameThePathNotGoAndNeverTheValue(t *testing.T) {
	none := func(string) string { return "" }
	for _, c := range []struct {
		name, yaml string
		want       []string
		never      []string
	}{
		{"unknown key", "providers:\n  demo:\n    scheme: stripe\n    secret: [{value: whsec_x}]\n",
			[]string{"providers.demo.secret (line 4)", `unknown key "secret"`, `did you mean "secrets"?`}, []string{"config.Provider", "not found in type"}},
		{"unknown key in a list", "providers:\n  demo:\n    scheme: stripe\n    secrets:\n      - vlaue: whsec_x\n",
			[]string{"providers.demo.secrets[0].vlaue (line 5)", `did you mean "value"?`}, []string{"SecretEntry"}},
		{"unknown top-level key, nothing near", "zzzzzz: 1\n",
			[]string{"zzzzzz (line 1)", "known keys here:", "providers", "storage"}, nil},
		{"bad duration", "storage:\n  retention: five minutes\n",
			[]string{`storage.retention (line 2): "five minutes" is not a duration (examples: 90s, 5m, 72h)`}, []string{"time.Duration", "five mi..."}},
		{"duration given a list", "providers:\n  demo:\n    scheme: stripe\n    secrets: [{value: x}]\n    tolerance: [1]\n",
			[]string{"providers.demo.tolerance (line 5): want a duration (examples: 90s, 5m, 72h), not a list"}, nil},
		{"secret where a list is wanted", "providers:\n  demo:\n    scheme: stripe\n    secrets: hunter2secret\n",
			[]string{"providers.demo.secrets (line 4): want a list of objects, not text"}, []string{"hunter2", "!!str", "SecretEntry"}},
		{"secret where a string is wanted", "auth:\n  client_secret: [hunter2secret]\n  operator_token: {t: hunter3secret}\n",
			[]string{"auth.client_secret (line 2): want a string, not a list", "auth.operator_token (line 3): want a string, not a mapping"}, []string{"hunter2", "hunter3"}},
		{"integer given text", "providers:\n  demo:\n    scheme: stripe\n    secrets: [{value: x}]\n    max_body_bytes: hunter4secret\n",
			[]string{"providers.demo.max_body_bytes (line 5): want an integer, not text"}, []string{"hunter4", "int64"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := Check([]byte(c.yaml), none)
			if err == nil {
				t.Fatal("accepted")
			}
			for _, w := range c.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
			for _, n := range c.never {
				if strings.Contains(err.Error(), n) {
					t.Errorf("error %q contains %q", err, n)
				}
			}
			// The walk of doctor and config check over the same file.
			if _, err := SecretRefs([]byte(c.yaml), none); err != nil && strings.Contains(err.Error(), "hunter") {
				t.Errorf("SecretRefs echoed a value: %v", err)
			}
		})
	}
}
