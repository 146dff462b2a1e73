package main

import (
	"fmt"
	"log/slog"
	"sort"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/gatehouse/gatehouse/consumers"
	"github.com/gatehouse/gatehouse/consumers/event"
	"github.com/gatehouse/gatehouse/consumers/fetch"
	"github.com/gatehouse/gatehouse/consumers/forward"
	"github.com/gatehouse/gatehouse/consumers/throttle"
	"github.com/gatehouse/gatehouse/internal/config"
	"github.com/gatehouse/gatehouse/internal/kafka"
)

// consumerMetrics are the figures of the consumers' handlers: the fetches'
// and the forwards', whose limiter waits share one histogram.
type consumerMetrics struct {
	fetch   *fetch.Metrics
	forward *forward.Metrics
}

// newConsumerMetrics builds them on reg (nil: not registered).
func newConsumerMetrics(reg prometheus.Registerer) consumerMetrics {
	flow := throttle.NewMetrics(reg)
	return consumerMetrics{fetch: fetch.NewMetrics(reg, flow), forward: forward.NewMetrics(reg, flow)}
}

// consumerHandlers registers what the consumers do with each provider's
// events: the declarative fetch of a provider with an api_url (its own
// fetch rules, then the catalogue's: providers.Kind.API), and the forward
// destinations of its forward list. A provider with neither has no
// handler: its events are recorded as skipped, and this is logged once.
//
// Each provider's fetch.APIClient carries its api_concurrency,
// api_rate_limit and api_rate_burst, and reports to metrics. Forward
// entries of any provider whose URLs name one destination
// (redact.DestinationKey) share its circuit breaker, concurrency and rate
// limit. It fails on an
// invalid rule, api_url or forward destination, or on two entries naming
// one destination with different limits.
func consumerHandlers(configured map[string]*config.Provider, apiTimeout time.Duration, now func() time.Time, log *slog.Logger, metrics consumerMetrics) (*consumers.Registry, error) {
	reg := consumers.NewRegistry()
	shared := forward.NewDestinations(metrics.forward)
	names := make([]string, 0, len(configured))
	for n := range configured {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, name := range names {
		p := configured[name]
		if p == nil {
			continue
		}
		h, err := providerHandlerOf(name, p, apiTimeout, now, log, metrics, shared)
		if err != nil {
			return nil, fmt.Errorf("provider %s: %w", name, err)
		}
		if h != nil {
			reg.Register(name, "*", h)
		}
	}
	return reg, nil
}

// providerHandlerOf is the handler of provider name (fetch, then forwards:
// consumers.NewProviderHandler), nil when it has neither.
func providerHandlerOf(name string, p *config.Provider, apiTimeout time.Duration, now func() time.Time, log *slog.Logger,
	metrics consumerMetrics, shared *forward.Destinations) (event.Handler, error) {
	var fetcher event.Handler
	var forwards []consumers.Forwarder
	api := p.APIRules()
	switch {
	case p.APIURL != "" && len(api.Fetch) > 0:
		client, err := fetch.NewAPIClient(fetch.APIClientConfig{BaseURL: p.APIURL, Key: p.APIKeyValue(), Version: p.APIVersion,
			VersionHeader: api.VersionHeader, Auth: api.Auth, AuthHeader: api.AuthHeader, Accept: api.Accept, Timeout: apiTimeout,
			Provider: name, Concurrency: p.APIConcurrency, RateLimit: p.APIRateLimit, RateBurst: p.APIRateBurst,
			Metrics: metrics.fetch, Now: now})
		if err != nil {
			return nil, err
		}
		f, err := fetch.NewFetcher(api.Fetch, client, p.APIVersion)
		if err != nil {
			return nil, err
		}
		fetcher = f
	case p.APIURL != "":
		why := api.EventOnly
		if why == "" {
			why = "the catalogue has no fetch rules for scheme " + p.Scheme + ": add fetch rules"
		}
		log.Info("provider has an api_url but no fetch rules; events not forwarded are recorded as skipped", "provider", name, "why", why)
	case len(p.Forward) == 0:
		log.Info("provider has neither api_url nor forward; its events are recorded as skipped (read them from the topic)", "provider", name)
		return nil, nil
	}
	for i, f := range p.Forward {
		fw, err := forward.NewForwarder(forward.Config{Provider: name, URL: f.URL, Secret: string(f.SecretValue()), Types: f.Types,
			When: f.When, Transform: f.TransformSource(), TransformTimeout: f.TransformTimeout,
			Include: f.Include == config.IncludeObject, Timeout: f.Timeout, Concurrency: f.Concurrency,
			RateLimit: f.RateLimit, RateBurst: f.RateBurst, BreakerFailures: f.BreakerFailures,
			BreakerProbe: f.BreakerProbe, Shared: shared, Metrics: metrics.forward, Now: now})
		if err != nil {
			return nil, fmt.Errorf("forward[%d]: %w", i, err)
		}
		forwards = append(forwards, fw)
	}
	return consumers.NewProviderHandler(fetcher, forwards...), nil
}

// consumersConfig builds a consumers.Runner's Config from gatehouse's
// configuration: the providers listed in consumers.providers (all when
// empty), their topics, the retry ladder and the built-in handlers
// (consumerHandlers). Pool, Logger and Registerer are passed through. It
// fails on an unknown provider name.
func consumersConfig(c *config.Config, deps consumers.Config) (consumers.Config, error) {
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
			return consumers.Config{}, fmt.Errorf("consumers.providers: %q is not a configured provider", name)
		}
		selected[name] = p
	}
	out.Topics = map[string]string{}
	for name, p := range selected {
		out.Topics[name] = p.Topic
	}
	if out.Handlers == nil {
		reg, err := consumerHandlers(selected, c.Consumers.APITimeout, out.Now, out.Logger, newConsumerMetrics(out.Registerer))
		if err != nil {
			return consumers.Config{}, err
		}
		out.Handlers = reg
	}
	return out, nil
}

// maintenanceConfig fills deps (pool, logger, registerer, clock) with the
// consumers' retention settings of c: storage's partitioning and each
// provider's payload and object retention (docs/STORAGE.md).
func maintenanceConfig(c *config.Config, deps consumers.MaintenanceConfig) consumers.MaintenanceConfig {
	out := deps
	_, out.KeyLifetime = c.Lifetimes()
	out.PayloadRetention = func(provider string) time.Duration { p, _ := c.Retention(provider); return p }
	out.ObjectRetention = c.ObjectRetention
	out.PartitionInterval, out.Ahead, out.CheckInterval = c.Storage.PartitionInterval, c.Storage.Ahead, c.Storage.CheckInterval
	return out
}
