package main

import (
	"fmt"
	"log/slog"
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

// consumerConfig is the Runner configuration `gatehouse consume` builds
// from c for one provider (cmd/gatehouse/consumers_config.go, which a
// bench cannot import): its topic, the consumers' settings, its fetch
// and forward handlers, every figure on reg.
func consumerConfig(c *config.Config, prov string, deps consumers.Config, reg prometheus.Registerer) (consumers.Config, error) {
	p, ok := c.Providers[prov]
	if !ok {
		return consumers.Config{}, fmt.Errorf("consumerbench: no provider %q", prov)
	}
	out := deps
	out.Registerer = reg
	out.Brokers, out.ClientID = c.Kafka.Brokers, c.Kafka.ClientID
	out.Group, out.RetryDelays, out.Concurrency = c.Consumers.Group, c.Consumers.RetryDelays, c.Consumers.Concurrency
	out.MaxPollRecords, out.DrainTimeout, out.SessionTimeout = c.Consumers.MaxPollRecords, c.Consumers.DrainTimeout, c.Consumers.SessionTimeout
	out.KafkaOpts = append(kafka.SecurityOpts(&c.Kafka), out.KafkaOpts...)
	out.TopicSpec = kafka.TopicSpec{Partitions: c.Kafka.Partitions, ReplicationFactor: c.Kafka.ReplicationFactor, Configs: c.Kafka.TopicConfigs}
	out.Topics = map[string]string{prov: p.Topic}
	if out.Logger == nil {
		out.Logger = slog.Default()
	}
	flow := throttle.NewMetrics(reg)
	fm, wm := fetch.NewMetrics(reg, flow), forward.NewMetrics(reg, flow)
	var fetcher event.Handler
	if api := p.APIRules(); p.APIURL != "" && len(api.Fetch) > 0 {
		client, err := fetch.NewAPIClient(fetch.APIClientConfig{BaseURL: p.APIURL, Key: p.APIKeyValue(), Version: p.APIVersion,
			VersionHeader: api.VersionHeader, Auth: api.Auth, AuthHeader: api.AuthHeader, Accept: api.Accept,
			Timeout: c.Consumers.APITimeout, Provider: prov, Concurrency: p.APIConcurrency, RateLimit: p.APIRateLimit,
			RateBurst: p.APIRateBurst, Metrics: fm, Now: time.Now})
		if err != nil {
			return consumers.Config{}, err
		}
		f, err := fetch.NewFetcher(api.Fetch, client, p.APIVersion)
		if err != nil {
			return consumers.Config{}, err
		}
		fetcher = f
	}
	shared := forward.NewDestinations(wm)
	var forwards []consumers.Forwarder
	for _, f := range p.Forward {
		fw, err := forward.NewForwarder(forward.Config{Provider: prov, URL: f.URL, Secret: string(f.SecretValue()), Types: f.Types,
			When: f.When, Transform: f.TransformSource(), TransformTimeout: f.TransformTimeout,
			Include: f.Include == config.IncludeObject, Timeout: f.Timeout, Concurrency: f.Concurrency,
			RateLimit: f.RateLimit, RateBurst: f.RateBurst, BreakerFailures: f.BreakerFailures,
			BreakerProbe: f.BreakerProbe, Shared: shared, Metrics: wm, Now: time.Now})
		if err != nil {
			return consumers.Config{}, err
		}
		forwards = append(forwards, fw)
	}
	out.Handlers = consumers.NewRegistry()
	if h := consumers.NewProviderHandler(fetcher, forwards...); h != nil {
		out.Handlers.Register(prov, "*", h)
	}
	return out, nil
}
