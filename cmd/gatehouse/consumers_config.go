package main

import (
	"fmt"
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/gatehouse/gatehouse/consumers"
	"github.com/gatehouse/gatehouse/internal/config"
	"github.com/gatehouse/gatehouse/internal/kafka"
	"github.com/gatehouse/gatehouse/wiring"
)

// consumerHandlers registers what the consumers do with each of
// configured's events (wiring.Consumers: fetch, then forwards).
func consumerHandlers(configured map[string]*config.Provider, apiTimeout time.Duration, now func() time.Time, log *slog.Logger, reg prometheus.Registerer) (*consumers.Registry, error) {
	parts, err := wiring.Consumers(configured, apiTimeout, now, log, reg)
	if err != nil {
		return nil, err
	}
	out := consumers.NewRegistry()
	for name, p := range parts {
		consumers.RegisterProvider(out, name, p.Fetch, p.Forwards)
	}
	return out, nil
}

// consumersConfig builds a consumers.Runner's Config from gatehouse's
// configuration: the providers listed in consumers.providers (all when
// empty), their topics, the retry ladder and the built-in handlers
// (consumerHandlers). Pool, Logger and Registerer are passed through. It
// fails on an unknown provider name.
func consumersConfig(c *config.Config, deps consumers.Config) (consumers.Config, error) {
	out := deps
	out.Brokers = c.Kafka.Brokers
	out.Consumers = c.Consumers
	out.ClientID = c.Kafka.ClientID
	out.KafkaOpts = append(kafka.SecurityOpts(kafka.SecurityOf(&c.Kafka)), out.KafkaOpts...)
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
		reg, err := consumerHandlers(selected, c.Consumers.APITimeout, out.Now, out.Logger, out.Registerer)
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
