package wiring

import (
	"github.com/gatehouse/gatehouse/ingest"
	"github.com/gatehouse/gatehouse/ingest/admin"
	"github.com/gatehouse/gatehouse/ingest/signature"
	"github.com/gatehouse/gatehouse/ingest/upkeep"
	"github.com/gatehouse/gatehouse/internal/config"
)

// Receiver is the receiver's Config of c: its providers and the ingest
// section. The caller adds the Store and the observability (Logger,
// Registerer, Tracer, Rollup).
func Receiver(c *config.Config) ingest.Config {
	return ingest.Config{Providers: Providers(c), Ingest: c.Ingest, KeyLifetime: c.KeyLifetime}
}

// Providers are c's providers as the receiver reads them.
func Providers(c *config.Config) map[string]*ingest.Provider {
	out := make(map[string]*ingest.Provider, len(c.Providers))
	for name, p := range c.Providers {
		if p != nil {
			out[name] = Provider(p)
		}
	}
	return out
}

// Provider is one configured provider as ingest reads it.
func Provider(p *config.Provider) *ingest.Provider {
	k := p.Kind()
	sc := signature.Config{Scheme: k.Scheme, Tolerance: p.Tolerance, TimestampHeader: p.TimestampHeader,
		SignatureHeader: p.SignatureHeader, HMAC: p.HMAC, PublicURL: p.PublicURL}
	for _, s := range p.Secrets {
		sc.Secrets = append(sc.Secrets, signature.Secret{ID: s.ID, Value: s.Resolved()})
	}
	return &ingest.Provider{Kind: k, Signature: sc, VerifyToken: p.VerifyTokenValue(), MaxBodyBytes: p.MaxBodyBytes,
		MaxInFlight: p.MaxInFlight, ReservedInFlight: p.ReservedInFlight, OverloadStatus: p.OverloadStatus,
		ReplayGuardTTL: p.ReplayGuardTTL, AggregateIDPath: p.AggregateIDPath, Topic: p.Topic,
		SearchIndexed: p.Search == config.SearchIndexed}
}

// ReplayTargets are c's providers as replay and erasure (ingest/admin)
// read them: each one's topic and aggregate id paths.
func ReplayTargets(c *config.Config) map[string]admin.ReplayTarget {
	out := make(map[string]admin.ReplayTarget, len(c.Providers))
	for name, p := range c.Providers {
		if p != nil {
			out[name] = admin.ReplayTarget{Topic: p.Topic, AggregateIDPath: p.AggregateIDPath}
		}
	}
	return out
}

// IngestUpkeep is ingest's maintenance (ingest/upkeep) under c's storage
// section and providers. The caller adds the Pool, the observability and
// the relay's backlog.
func IngestUpkeep(c *config.Config) upkeep.Config {
	return upkeep.Config{Maintenance: IngestMaintenance(c)}
}

// IngestMaintenance is the maintenance of ingest's tables under c's
// storage section and providers. The caller adds the Pool and the
// observability.
func IngestMaintenance(c *config.Config) upkeep.MaintenanceConfig {
	s := c.Storage
	m := upkeep.MaintenanceConfig{
		Storage:        s,
		Providers:      map[string]upkeep.Kept{},
		Default:        upkeep.Kept{Retention: s.Retention, KeyLifetime: max(s.Retention, s.DedupeWindow)},
		OutboxExternal: c.Relay.Mode == config.RelayExternal,
	}
	for name, p := range c.Providers {
		if p == nil {
			continue
		}
		payload, _ := c.Retention(name)
		m.Providers[name] = upkeep.Kept{Retention: payload, KeyLifetime: c.KeyLifetime(name), SearchIndexed: p.Search == config.SearchIndexed}
	}
	return m
}
