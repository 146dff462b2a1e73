package config

import (
	"strings"
	"testing"
)

// order, on_dead and the parking bounds: their defaults (unordered, skip,
// 10000 keys, 100000 events), the values taken, and the values refused.
func TestForwardOrderSettings(t *testing.T) {
	getenv := env(map[string]string{"DEMO": "s", "FWD": fwdSecret})
	cfg, err := Parse([]byte(valid+`    forward:
      - url: http://a.internal/hooks
        secret: env:FWD
      - url: http://b.internal/hooks
        secret: env:FWD
        order: per_object
        on_dead: hold
        max_parked_keys: 5
        max_parked_events: 50
`), getenv)
	if err != nil {
		t.Fatal(err)
	}
	a, b := cfg.Providers["demo"].Forward[0], cfg.Providers["demo"].Forward[1]
	if a.Ordered() || a.OnDead != OnDeadSkip || a.MaxParkedKeys != 10000 || a.MaxParkedEvents != 100000 {
		t.Errorf("defaults: %+v", a)
	}
	if !b.Ordered() || b.OnDead != OnDeadHold || b.MaxParkedKeys != 5 || b.MaxParkedEvents != 50 {
		t.Errorf("set: %+v", b)
	}
	for name, tc := range map[string]struct{ entry, want string }{
		"order unknown":   {"order: fifo", "providers.demo.forward[0].order"},
		"on_dead unknown": {"on_dead: drop", "providers.demo.forward[0].on_dead"},
		"negative bound":  {"max_parked_events: -1", "providers.demo.forward[0].max_parked_keys and max_parked_events"},
	} {
		_, err := Parse([]byte(valid+"    forward: [{url: http://x/h, secret: env:FWD, "+tc.entry+"}]\n"), getenv)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want an error naming %s", name, err, tc.want)
		}
	}
}
