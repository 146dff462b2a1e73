package config

import "github.com/gatehouse/gatehouse/internal/settings"

// identifier is what a slot or publication name may be.
var identifier = settings.Identifier

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

// RelayExternal is relay.mode for an outbox read by Debezium instead.
const RelayExternal = settings.RelayExternal
