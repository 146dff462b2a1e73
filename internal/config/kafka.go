package config

import "time"

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

