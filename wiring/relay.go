package wiring

import (
	"github.com/gatehouse/gatehouse/ingest/relay"
	"github.com/gatehouse/gatehouse/internal/config"
)

// RelayKafka is the kafka section of c as the relay takes it.
func RelayKafka(c *config.Config) relay.Kafka {
	k := &c.Kafka
	return relay.Kafka{Brokers: k.Brokers, ClientID: k.ClientID, Partitions: k.Partitions,
		ReplicationFactor: k.ReplicationFactor, TopicConfigs: k.TopicConfigs, Security: k.Security()}
}
