package consumers

import (
	"fmt"
	"log/slog"
	"sort"
	"time"

	"github.com/gatehouse/gatehouse/internal/config"
	"github.com/gatehouse/gatehouse/internal/kafka"
	"github.com/gatehouse/gatehouse/schemas/providers"
)

// HandlersFromConfig registers the built-in handlers of every provider
// with an api_url, as its kind in the catalogue says (providers.Kinds):
// RegisterReference or RegisterStripe. Providers of other kinds, or without
// an api_url, have no fetching handler: their events are recorded as
// skipped.
//
// Each provider's APIClient carries its api_concurrency, api_rate_limit and
// api_rate_burst, and reports to metrics (nil: not reported).
func HandlersFromConfig(configured map[string]*config.Provider, apiTimeout time.Duration, now func() time.Time, log *slog.Logger, metrics *APIMetrics) (*Registry, error) {
	reg := NewRegistry()
	names := make([]string, 0, len(configured))
	for n := range configured {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, name := range names {
		p := configured[name]
		if p == nil || p.APIURL == "" {
			log.Info("provider has no api_url; its events are recorded without an effect", "provider", name)
			continue
		}
		cfg := APIClientConfig{BaseURL: p.APIURL, Key: p.APIKeyValue(), Version: p.APIVersion, Timeout: apiTimeout,
			Provider: name, Concurrency: p.APIConcurrency, RateLimit: p.APIRateLimit, RateBurst: p.APIRateBurst,
			Metrics: metrics, Now: now}
		switch kind := p.Kind(); kind.Handlers {
		case providers.HandlersReference, providers.HandlersStripe:
			cfg.VersionHeader = kind.VersionHeader
			api, err := NewAPIClient(cfg)
			if err != nil {
				return nil, fmt.Errorf("provider %s: %w", name, err)
			}
			if kind.Handlers == providers.HandlersStripe {
				RegisterStripe(reg, name, api, now)
			} else {
				RegisterReference(reg, name, api)
			}
		default:
			log.Info("no built-in handlers for this scheme; events are recorded without an effect", "provider", name, "scheme", p.Scheme)
		}
	}
	return reg, nil
}

// FromConfig builds a Runner's Config from gatehouse's configuration: the
// providers listed in consumers.providers (all when empty), their topics,
// the retry ladder and the built-in handlers. Pool, Logger and Registerer
// are passed through. It fails on an unknown provider name.
func FromConfig(c *config.Config, deps Config) (Config, error) {
	out := deps
	out.Brokers = c.Kafka.Brokers
	out.Group = c.Consumers.Group
	out.RetryDelays = c.Consumers.RetryDelays
	out.Concurrency = c.Consumers.Concurrency
	out.MaxPollRecords = c.Consumers.MaxPollRecords
	out.DrainTimeout = c.Consumers.DrainTimeout
	out.SessionTimeout = c.Consumers.SessionTimeout
	out.ClientID = c.Kafka.ClientID
	out.KafkaOpts = append(kafka.SecurityOpts(&c.Kafka), out.KafkaOpts...)
	out.TopicSpec = kafka.TopicSpec{Partitions: c.Kafka.Partitions, ReplicationFactor: c.Kafka.ReplicationFactor,
		Configs: c.Kafka.TopicConfigs}
	if out.Logger == nil {
		out.Logger = slog.Default()
	}
	if out.Now == nil {
		out.Now = time.Now
	}
	selected := map[string]*config.Provider{}
	if len(c.Consumers.Providers) == 0 {
		selected = c.Providers
	}
	for _, name := range c.Consumers.Providers {
		p, ok := c.Providers[name]
		if !ok {
			return Config{}, fmt.Errorf("consumers.providers: %q is not a configured provider", name)
		}
		selected[name] = p
	}
	out.Topics = map[string]string{}
	for name, p := range selected {
		out.Topics[name] = p.Topic
	}
	if out.Handlers == nil {
		reg, err := HandlersFromConfig(selected, c.Consumers.APITimeout, out.Now, out.Logger, NewAPIMetrics(out.Registerer))
		if err != nil {
			return Config{}, err
		}
		out.Handlers = reg
	}
	return out, nil
}
