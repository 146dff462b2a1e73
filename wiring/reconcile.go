package wiring

import (
	"slices"

	"github.com/gatehouse/gatehouse/ingest/reconcile"
	"github.com/gatehouse/gatehouse/internal/config"
)

// Reconcile is the reconciliation Config of provider name under c: its
// catalogue entry, its reconcile section, its API address, credential,
// version and rate limit, its dedupe window and key lifetime, and where a
// backfilled event goes (topic, aggregate id paths). The caller adds the
// Pool, the Writer and the observability. false when c has no provider
// name.
func Reconcile(c *config.Config, name string) (reconcile.Config, bool) {
	p := c.Providers[name]
	if p == nil {
		return reconcile.Config{}, false
	}
	k := p.Kind()
	_, dedupe := c.Retention(name)
	return reconcile.Config{Provider: name, Kind: k, Settings: p.Reconcile,
		APIURL: p.APIURL, APIKey: p.APIKeyValue(), APIVersion: p.APIVersion, VersionHeader: k.API.VersionHeader,
		RateLimit: p.APIRateLimit, RateBurst: p.APIRateBurst,
		DedupeWindow: dedupe, KeyLifetime: c.KeyLifetime(name),
		Topic: p.Topic, AggregateIDPath: p.AggregateIDPath}, true
}

// Reconciled are the providers of c whose reconciliation runs in serve
// (providers.<name>.reconcile.enabled), sorted by name.
func Reconciled(c *config.Config) []reconcile.Config {
	names := make([]string, 0, len(c.Providers))
	for name := range c.Providers {
		names = append(names, name)
	}
	slices.Sort(names)
	var out []reconcile.Config
	for _, name := range names {
		if p := c.Providers[name]; p != nil && p.Reconcile.Enabled {
			rc, _ := Reconcile(c, name)
			out = append(out, rc)
		}
	}
	return out
}
