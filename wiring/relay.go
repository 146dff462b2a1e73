package wiring

import (
	"github.com/gatehouse/gatehouse/ingest/relay"
	"github.com/gatehouse/gatehouse/internal/config"
)

// Relay is the relay section of c as the relay takes it.
func Relay(c *config.Config) relay.Settings {
	r := c.Relay
	return relay.Settings{Mode: r.Mode, Slot: r.Slot, Publication: r.Publication,
		RepublishAfter: r.RepublishAfter, StatusInterval: r.StatusInterval, HeartbeatInterval: r.HeartbeatInterval,
		PollInterval: r.PollInterval, MetricsInterval: r.MetricsInterval, BatchSize: r.BatchSize}
}

// RelayKafka is the kafka section of c as the relay takes it.
func RelayKafka(c *config.Config) relay.Kafka {
	k := &c.Kafka
	return relay.Kafka{Brokers: k.Brokers, ClientID: k.ClientID, Partitions: k.Partitions,
		ReplicationFactor: k.ReplicationFactor, TopicConfigs: k.TopicConfigs, Security: k.Security()}
}
