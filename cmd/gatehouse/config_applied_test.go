package main

import (
	"strings"
	"testing"

	"gopkg.in/yaml.v3"
)

// Issue 46: `config check` printed replay_guard_ttl: 0s and tolerance: 5m
// for GitHub, which signs no timestamp and keeps its replay guard 72 h.
// The effective configuration shows what the stages apply: the guard's
// lifetime (72 h, or twice a timestamped scheme's tolerance), null with
// "does not apply" where the scheme has no timestamp or no guard, and the
// storage defaults a provider inherits; what the file sets stays.
func TestConfigCheckPrintsTheAppliedValues(t *testing.T) {
	path := writeFile(t, "gatehouse.yaml", `providers:
  github:
    scheme: github
    secrets: [{value: gh}]
  linear:
    scheme: linear
    secrets: [{value: lin}]
  stripe:
    scheme: stripe
    secrets: [{value: whsec_x}]
  shopify:
    scheme: shopify
    secrets: [{value: shp}]
    replay_guard_ttl: 48h
    retention: 240h
storage:
  retention: 360h
`)
	out, _, err := runCLI(t, nil, "config", "check", "--config", path)
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Providers map[string]map[string]any `yaml:"providers"`
	}
	if err := yaml.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatalf("the printed configuration is not YAML: %v\n%s", err, out)
	}
	for _, c := range []struct {
		provider, key string
		want          any // nil: null (does not apply)
	}{
		{"github", "tolerance", nil},
		{"github", "replay_guard_ttl", "72h"},
		{"linear", "tolerance", "1m"},
		{"linear", "replay_guard_ttl", "2m"},
		{"stripe", "tolerance", "5m"},
		{"stripe", "replay_guard_ttl", nil},
		{"shopify", "replay_guard_ttl", "48h"},
		{"shopify", "retention", "240h"},
		{"github", "retention", "360h"},
	} {
		if got := doc.Providers[c.provider][c.key]; got != c.want {
			t.Errorf("providers.%s.%s = %v, want %v\n%s", c.provider, c.key, got, c.want, out)
		}
	}
	for _, want := range []string{
		"tolerance: null # does not apply: scheme github signs no timestamp",
		"replay_guard_ttl: 72h # default: 72h for a scheme without a signed timestamp",
		"replay_guard_ttl: null # does not apply: scheme stripe keeps no replay guard",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}
