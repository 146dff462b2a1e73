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
	out.KafkaOpts = append(kafka.SecurityOpts(c.Kafka.Security()), out.KafkaOpts...)
	out.TopicSpec = kafka.TopicSpec{Partitions: c.Kafka.Partitions, ReplicationFactor: c.Kafka.ReplicationFactor, Configs: c.Kafka.TopicConfigs}
	out.Topics = map[string]string{prov: p.Topic}
	if out.Logger == nil {
		out.Logger = slog.Default()
	}
	parts, err := wiring.Consumers(map[string]*config.Provider{prov: p}, c.Consumers.APITimeout, time.Now, out.Logger, reg)
	if err != nil {
		return consumers.Config{}, err
	}
	out.Handlers = consumers.NewRegistry()
	consumers.RegisterProvider(out.Handlers, prov, parts[prov].Fetch, parts[prov].Forwards)
	return out, nil
}
