package main

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/gatehouse/gatehouse/deploy/bench/benchenv"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/gatehouse/gatehouse/internal/kafka"
)

// bench holds what every run shares.
type bench struct {
	*benchenv.Stack
	o        *options
	adm      *kadm.Client
	runSeq   int
	profiled bool // the -cpuprofile profile was taken
}

// setup connects the admin client the runs create topics with; the
// caller closes b.adm.
func setup(st *benchenv.Stack, o *options) (*bench, error) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(st.Kafka.Brokers...))
	if err != nil {
		return nil, err
	}
	return &bench{Stack: st, o: o, adm: kadm.NewClient(cl)}, nil
}

// newTopic creates a fresh topic for one run.
func (b *bench) newTopic(ctx context.Context, name string) (string, error) {
	b.runSeq++
	topic := fmt.Sprintf("bench.%02d.%s", b.runSeq, name)
	_, err := kafka.EnsureTopics(ctx, b.adm, slog.New(slog.DiscardHandler),
		kafka.TopicSpec{Partitions: int32(b.o.partitions), ReplicationFactor: 1}, topic)
	return topic, err
}
