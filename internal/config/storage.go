package config

import (
	"time"

	"github.com/gatehouse/gatehouse/internal/settings"
)

// DefaultKeyFilterFalsePositives is storage.key_filter_false_positives' default.
const DefaultKeyFilterFalsePositives = settings.DefaultKeyFilterFalsePositives

// Retention returns provider's payload retention and dedupe window: its
// own settings, else storage's defaults. An unknown provider (events of an
// endpoint removed from the configuration) gets the defaults.
func (c *Config) Retention(provider string) (payload, dedupe time.Duration) {
	payload, dedupe = c.Storage.Retention, c.Storage.DedupeWindow
	if p := c.Providers[provider]; p != nil {
		if p.Retention > 0 {
			payload = p.Retention
		}
		if p.DedupeWindow > 0 {
			dedupe = p.DedupeWindow
		}
	}
	return payload, dedupe
}

// KeyLifetime is how long provider's event ids are remembered: the longer
// of its dedupe window and its retention, so a stored event always has its
// key (the inbox itself has no unique index across partitions).
func (c *Config) KeyLifetime(provider string) time.Duration {
	payload, dedupe := c.Retention(provider)
	return max(payload, dedupe)
}

// ObjectRetention is how long the projection of one of provider's objects
// is kept after its last applied change: its own object_retention, else
// storage.object_retention, else its key lifetime.
func (c *Config) ObjectRetention(provider string) time.Duration {
	if p := c.Providers[provider]; p != nil && p.ObjectRetention > 0 {
		return p.ObjectRetention
	}
	if c.Storage.ObjectRetention > 0 {
		return c.Storage.ObjectRetention
	}
	return c.KeyLifetime(provider)
}

// Lifetimes are the longest payload retention and the longest key
// lifetime of the storage defaults and every configured provider: what the
// stages' maintenance keeps whole partitions for.
func (c *Config) Lifetimes() (payload, key time.Duration) {
	payload, key = c.Storage.Retention, max(c.Storage.Retention, c.Storage.DedupeWindow)
	for name := range c.Providers {
		p, _ := c.Retention(name)
		payload = max(payload, p)
		key = max(key, c.KeyLifetime(name))
	}
	return payload, key
}

// validateRetention checks a provider's retention settings against the
// partition width and its scheme's documented redelivery window.
func (c *Config) validateRetention() error {
	if o := c.Storage.ObjectRetention; o > 0 && o < c.Storage.DedupeWindow {
		return errorf("storage.object_retention: %s is shorter than storage.dedupe_window (%s)", o, c.Storage.DedupeWindow)
	}
	for name, p := range c.Providers {
		if p == nil {
			continue
		}
		if p.Retention < 0 || p.DedupeWindow < 0 || p.ObjectRetention < 0 {
			return errorf("providers.%s: retention, dedupe_window and object_retention must not be negative", name)
		}
		payload, dedupe := c.Retention(name)
		if payload < c.Storage.PartitionInterval {
			return errorf("providers.%s.retention: %s is shorter than storage.partition_interval (%s)", name, payload, c.Storage.PartitionInterval)
		}
		if r := p.Kind().Redelivery; dedupe < r.Window {
			return errorf("providers.%s.dedupe_window: %s is shorter than %s's redelivery window %s (%s)", name, dedupe, p.Scheme, r.Window, r.Source)
		}
		if p.Scheme == "gitlab" && p.Reconcile.Enabled && dedupe < settings.GitLabDedupeWindow {
			return errorf("providers.%s.dedupe_window: %s is shorter than %s: a reconciled gitlab provider resends any of the hook's events of GitLab's %s, which carry no time, so the dedupe window must cover them with a day's margin",
				name, dedupe, settings.GitLabDedupeWindow, settings.GitLabHistory)
		}
		if o := c.ObjectRetention(name); o < dedupe {
			return errorf("providers.%s: object_retention %s is shorter than its dedupe window %s (set providers.%s.object_retention or storage.object_retention)", name, o, dedupe, name)
		}
	}
	return nil
}
