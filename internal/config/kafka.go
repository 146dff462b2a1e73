package config

import (
	"regexp"
	"time"
)

// identifier is what a slot or publication name may be (PostgreSQL
// unquoted identifier, lower case).
var identifier = regexp.MustCompile(`^[a-z_][a-z0-9_]{0,62}$`)

// Kafka configures the Kafka client shared by relay and consumers.
type Kafka struct {
	// Brokers are seed brokers; empty means `gatehouse dev` embeds a kfake
	// broker. Env GATEHOUSE_KAFKA_BROKERS (comma-separated) overrides.
	Brokers []string `yaml:"brokers"`
	// ClientID is sent to the brokers. Default "gatehouse".
	ClientID string `yaml:"client_id"`
	// Partitions and ReplicationFactor are used when gatehouse creates a topic.
	// Defaults 6 and 1. An existing topic's partition count is never changed.
	Partitions        int32 `yaml:"partitions"`
	ReplicationFactor int16 `yaml:"replication_factor"`
	// TopicConfigs are applied to topics gatehouse creates, e.g.
	// retention.ms. Default: retention.ms=604800000 (7 days).
	// A cluster of three or more brokers wants replication_factor 3 and
	// topic_configs {min.insync.replicas: "2"}: with the relay's acks=all,
	// an acknowledged record is then on two brokers before it counts.
	TopicConfigs map[string]string `yaml:"topic_configs"`
	// TLS and SASL secure the connection to managed clusters (TLS to the
	// brokers, SASL authentication). Default: plaintext, no authentication.
	TLS  KafkaTLS  `yaml:"tls"`
	SASL KafkaSASL `yaml:"sasl"`
}

func (k *Kafka) applyDefaults() {
	if k.ClientID == "" {
		k.ClientID = "gatehouse"
	}
	if k.Partitions == 0 {
		k.Partitions = 6
	}
	if k.ReplicationFactor == 0 {
		k.ReplicationFactor = 1
	}
	if k.TopicConfigs == nil {
		k.TopicConfigs = map[string]string{"retention.ms": "604800000"}
	}
}

func (k *Kafka) validate() error {
	if k.Partitions < 1 {
		return errorf("kafka.partitions: must be at least 1")
	}
	if k.ReplicationFactor < 1 {
		return errorf("kafka.replication_factor: must be at least 1")
	}
	return k.validateSecurity()
}

// Relay configures the outbox relay.
type Relay struct {
	// Mode is "replication" (logical replication, default) or "poll";
	// `gatehouse relay --mode` overrides.
	// "external" says the outbox is read by another CDC (Debezium's Outbox
	// Event Router): `gatehouse relay` refuses to run, and the outbox's
	// partitions are dropped by age alone (storage.outbox_retention).
	Mode string `yaml:"mode"`
	// Slot and Publication name the replication slot and publication.
	// Defaults gatehouse_outbox and gatehouse_outbox. The slot name also
	// names the lock that keeps one relay active at a time (both modes).
	Slot        string `yaml:"slot"`
	Publication string `yaml:"publication"`
	// RepublishAfter is the age after which the dispatcher re-publishes an
	// unsent outbox row. Default 30s.
	RepublishAfter time.Duration `yaml:"republish_after"`
	// StatusInterval is how often the streamer reports its confirmed LSN to
	// PostgreSQL and asks for a keepalive. Default 1s.
	StatusInterval time.Duration `yaml:"status_interval"`
	// HeartbeatInterval is how often the streamer writes a logical decoding
	// message so the slot advances on a quiet database. Default 10s.
	HeartbeatInterval time.Duration `yaml:"heartbeat_interval"`
	// PollInterval is how long poll mode and the dispatcher sleep when they
	// found nothing to do. Default 100ms (poll mode), the dispatcher checks
	// every RepublishAfter/4.
	PollInterval time.Duration `yaml:"poll_interval"`
	// BatchSize is how many rows poll mode and the dispatcher take per
	// transaction. Default 1000.
	BatchSize int `yaml:"batch_size"`
	// OnPublished and RetainPublished were removed with the baseline migration:
	// the outbox is an append-only log whose partitions are dropped after
	// storage.outbox_retention. Setting either is an error that says so.
	OnPublished     string        `yaml:"on_published"`
	RetainPublished time.Duration `yaml:"retain_published"`
	// MetricsInterval is how often queue age and slot lag are measured.
	// Default 5s.
	MetricsInterval time.Duration `yaml:"metrics_interval"`
}

// RelayExternal is relay.mode for an outbox read by Debezium instead.
const RelayExternal = "external"

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
	if r.StatusInterval == 0 {
		r.StatusInterval = time.Second
	}
	if r.HeartbeatInterval == 0 {
		r.HeartbeatInterval = 10 * time.Second
	}
	if r.PollInterval == 0 {
		r.PollInterval = 100 * time.Millisecond
	}
	if r.BatchSize == 0 {
		r.BatchSize = 1000
	}
	if r.MetricsInterval == 0 {
		r.MetricsInterval = 5 * time.Second
	}
}

func (r *Relay) validate() error {
	if r.Mode != "replication" && r.Mode != "poll" && r.Mode != RelayExternal {
		return errorf("relay.mode: %q is not replication, poll or external", r.Mode)
	}
	if !identifier.MatchString(r.Slot) {
		return errorf("relay.slot: %q must match %s", r.Slot, identifier)
	}
	if !identifier.MatchString(r.Publication) {
		return errorf("relay.publication: %q must match %s", r.Publication, identifier)
	}
	if r.RepublishAfter < 0 || r.StatusInterval < 0 || r.HeartbeatInterval < 0 || r.PollInterval < 0 || r.MetricsInterval < 0 {
		return errorf("relay: intervals must be positive")
	}
	if r.OnPublished != "" || r.RetainPublished != 0 {
		return errorf("relay.on_published and relay.retain_published were removed: the outbox is an append-only log " +
			"whose partitions are dropped after storage.outbox_retention (docs/RELAY.md); delete these keys")
	}
	if r.BatchSize < 1 {
		return errorf("relay.batch_size: must be at least 1")
	}
	return nil
}
