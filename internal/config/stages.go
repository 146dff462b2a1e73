package config

import (
	"fmt"
	"time"
)

func errorf(format string, args ...any) error {
	return fmt.Errorf("config: "+format, args...)
}

// Kafka configures the Kafka client shared by relay and consumers.
type Kafka struct {
	// Brokers are seed brokers; empty means `gatehouse dev` embeds a kfake broker.
	Brokers []string `yaml:"brokers"`
	// Partitions and ReplicationFactor are used when gatehouse creates a topic.
	// Defaults 6 and 1. An existing topic's partition count is never changed.
	Partitions        int32 `yaml:"partitions"`
	ReplicationFactor int16 `yaml:"replication_factor"`
}

func (k *Kafka) applyEnv(getenv func(string) string) {}

func (k *Kafka) applyDefaults() {
	if k.Partitions == 0 {
		k.Partitions = 6
	}
	if k.ReplicationFactor == 0 {
		k.ReplicationFactor = 1
	}
}

func (k *Kafka) validate() error {
	if k.Partitions < 1 {
		return errorf("kafka.partitions: must be at least 1")
	}
	if k.ReplicationFactor < 1 {
		return errorf("kafka.replication_factor: must be at least 1")
	}
	return nil
}

// Relay configures the outbox relay.
type Relay struct {
	// Mode is "replication" (logical replication, default) or "poll".
	Mode string `yaml:"mode"`
	// Slot and Publication name the replication slot and publication.
	// Defaults gatehouse_outbox and gatehouse_outbox.
	Slot        string `yaml:"slot"`
	Publication string `yaml:"publication"`
	// RepublishAfter is the age after which the dispatcher re-publishes an
	// unsent outbox row. Default 30s.
	RepublishAfter time.Duration `yaml:"republish_after"`
}

func (r *Relay) applyDefaults() {
	if r.Mode == "" {
		r.Mode = "replication"
	}
	if r.Slot == "" {
		r.Slot = "gatehouse_outbox"
	}
	if r.Publication == "" {
		r.Publication = "gatehouse_outbox"
	}
	if r.RepublishAfter == 0 {
		r.RepublishAfter = 30 * time.Second
	}
}

func (r *Relay) validate() error {
	if r.Mode != "replication" && r.Mode != "poll" {
		return errorf("relay.mode: %q is not replication or poll", r.Mode)
	}
	return nil
}

// Consumers configures the Kafka consumer groups.
type Consumers struct {
	// Group is the consumer group id. Default gatehouse.
	Group string `yaml:"group"`
	// RetryDelays is the retry ladder. Default [10s, 1m, 10m].
	RetryDelays []time.Duration `yaml:"retry_delays"`
}

func (c *Consumers) applyDefaults() {
	if c.Group == "" {
		c.Group = "gatehouse"
	}
	if len(c.RetryDelays) == 0 {
		c.RetryDelays = []time.Duration{10 * time.Second, time.Minute, 10 * time.Minute}
	}
}

func (c *Consumers) validate() error {
	for i, d := range c.RetryDelays {
		if d <= 0 {
			return errorf("consumers.retry_delays[%d]: must be positive", i)
		}
	}
	return nil
}

// Auth configures browser login and the API. Login is enabled when Issuer is set.
type Auth struct {
	Issuer string `yaml:"issuer"`
}

func (a *Auth) applyEnv(getenv func(string) string) {}
func (a *Auth) applyDefaults()                      {}
func (a *Auth) resolve(getenv func(string) string) error {
	return nil
}
func (a *Auth) validate() error { return nil }
