package main

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/gatehouse/gatehouse/deploy/bench/benchenv"
	"github.com/gatehouse/gatehouse/internal/kafka"
)

// bench holds what every run shares.
type bench struct {
	*benchenv.Stack
	o        *options
	runSeq   int
	profiled bool // the -cpuprofile profile was taken
}

// newTopic creates a fresh topic for one run.
func (b *bench) newTopic(ctx context.Context, name string) (string, error) {
	b.runSeq++
	topic := fmt.Sprintf("bench.%02d.%s", b.runSeq, name)
	_, err := kafka.EnsureTopics(ctx, b.Admin, slog.New(slog.DiscardHandler),
		kafka.TopicSpec{Partitions: int32(b.o.partitions), ReplicationFactor: 1}, topic)
	return topic, err
}
