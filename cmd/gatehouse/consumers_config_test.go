package main

import (
	"log/slog"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/gatehouse/gatehouse/consumers"
	"github.com/gatehouse/gatehouse/internal/config"
)

// The consumers' wiring from the configuration: topics of the selected
// providers, a handler for a provider with a fetch or a forward and none
// for one with neither (the fetch's and the forward's figures registered
// on one registry without a conflict), and the errors of an unknown
// provider and of a forward that cannot be built.
func TestConsumersConfigWiring(t *testing.T) {
	const yaml = `kafka: {brokers: [127.0.0.1:1]}
providers:
  ref:
    scheme: stripe
    secrets: [{id: s1, value: whsec_x}]
    api_url: http://127.0.0.1:1/api
  fwd:
    scheme: stripe
    secrets: [{id: s1, value: whsec_x}]
    forward:
      - url: http://127.0.0.1:1/hooks
        secret: whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw
  broken:
    scheme: stripe
    secrets: [{id: s1, value: whsec_x}]
    forward:
      - url: http://127.0.0.1:1/other
        secret: whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw
        transform: "function handler( {"
  quiet:
    scheme: stripe
    secrets: [{id: s1, value: whsec_x}]
`
	c, err := config.Parse([]byte(yaml), func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewRegistry()
	c.Consumers.Providers = []string{"ref", "fwd", "quiet"}
	cfg, err := consumersConfig(c, consumers.Config{Logger: slog.New(slog.DiscardHandler), Registerer: reg})
	if err != nil {
		t.Fatal(err)
	}
	if len(cfg.Topics) != 3 || cfg.Topics["ref"] != c.Providers["ref"].Topic || len(cfg.Brokers) != 1 {
		t.Errorf("topics %v, brokers %v", cfg.Topics, cfg.Brokers)
	}
	for p, want := range map[string]bool{"ref": true, "fwd": true, "quiet": false} {
		if got := cfg.Handlers.Lookup(p, "payment.succeeded") != nil; got != want {
			t.Errorf("%s has a handler: %v, want %v", p, got, want)
		}
	}
	c.Consumers.Providers = []string{"ref", "nope"}
	if _, err := consumersConfig(c, consumers.Config{Logger: slog.New(slog.DiscardHandler)}); err == nil ||
		!strings.Contains(err.Error(), `"nope" is not a configured provider`) {
		t.Errorf("unknown provider: %v", err)
	}
	c.Consumers.Providers = []string{"broken"}
	if _, err := consumersConfig(c, consumers.Config{Logger: slog.New(slog.DiscardHandler)}); err == nil ||
		!strings.Contains(err.Error(), "provider broken: forward[0]") {
		t.Errorf("a forward that cannot be built: %v", err)
	}
}
