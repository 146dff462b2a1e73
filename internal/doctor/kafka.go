package doctor

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/gatehouse/gatehouse/internal/config"
	"github.com/gatehouse/gatehouse/internal/kafka"
	"github.com/gatehouse/gatehouse/schemas"
)

// kafkaChecks: the brokers answer (with kafka.tls and kafka.sasl), and
// every topic the stages use exists: each provider's topic, its retry
// topics and its dead-letter topic.
func kafkaChecks(ctx context.Context, o Options, cfg *config.Config) []Check {
	reach := Check{Name: "kafka brokers reachable"}
	if len(cfg.Kafka.Brokers) == 0 {
		return []Check{
			skip(reach.Name, "kafka.brokers (GATEHOUSE_KAFKA_BROKERS) is empty: only gatehouse dev runs, with an embedded broker; relay and consume need brokers"),
			skip("kafka topics exist", "no brokers to ask"),
		}
	}
	opts, err := kafka.Options(kafka.ClientConfig{Brokers: cfg.Kafka.Brokers, ClientID: cfg.Kafka.ClientID, Name: "doctor"})
	topicsSkipped := skip("kafka topics exist", "the brokers do not answer")
	if err != nil {
		reach.Detail = err.Error()
		return []Check{reach, topicsSkipped}
	}
	opts = append(opts, kafka.SecurityOpts(kafka.SecurityOf(&cfg.Kafka))...)
	opts = append(opts, kgo.DialTimeout(o.Timeout), kgo.RequestRetries(1))
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		reach.Detail = err.Error()
		return []Check{reach, topicsSkipped}
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	cctx, cancel := context.WithTimeout(ctx, o.Timeout)
	defer cancel()
	brokers, err := adm.ListBrokers(cctx)
	if err != nil {
		reach.Detail = fmt.Sprintf("%v: %v", cfg.Kafka.Brokers, err)
		reach.Fix = "check kafka.brokers (GATEHOUSE_KAFKA_BROKERS), that the brokers' advertised listeners are reachable from here, and kafka.tls / kafka.sasl"
		return []Check{reach, topicsSkipped}
	}
	reach.OK, reach.Detail = true, fmt.Sprintf("%d brokers", len(brokers))
	var want []string
	for _, name := range slices.Sorted(mapKeys(cfg.Providers)) {
		t := cfg.Providers[name].Topic
		want = append(want, t)
		for n := 1; n <= len(cfg.Consumers.RetryDelays); n++ {
			want = append(want, schemas.RetryTopic(t, n))
		}
		want = append(want, schemas.DeadLetterTopic(t))
	}
	topics := Check{Name: "kafka topics exist"}
	if len(want) == 0 {
		return []Check{reach, skip(topics.Name, "no provider configured")}
	}
	details, err := adm.ListTopics(cctx, want...)
	if err != nil {
		topics.Detail = err.Error()
		return []Check{reach, topics}
	}
	var missing []string
	for _, t := range want {
		if d, ok := details[t]; !ok || d.Err != nil {
			missing = append(missing, t)
		}
	}
	if len(missing) > 0 {
		topics.Detail = "missing " + strings.Join(missing, ", ")
		topics.Fix = fmt.Sprintf("start gatehouse consume once (it creates every provider's topics with kafka.partitions %d and replication_factor %d), "+
			"or create them with your cluster's tooling; never add partitions to an existing topic", cfg.Kafka.Partitions, cfg.Kafka.ReplicationFactor)
		return []Check{reach, topics}
	}
	topics.OK, topics.Detail = true, fmt.Sprintf("%d topics", len(want))
	return []Check{reach, topics}
}

func mapKeys[V any](m map[string]V) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}
