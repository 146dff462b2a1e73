package main

import (
	"context"
	"fmt"
	"io"
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
	log      io.Writer
	adm      *kadm.Client
	runSeq   int
	profiled bool // the -cpuprofile profile was taken
}

func setup(ctx context.Context, o *options, log io.Writer) (*bench, error) {
	st, err := benchenv.Start(ctx, benchenv.Options{Name: "relaybench", PGDir: o.pgDir, Kafka: true}, log)
	if err != nil {
		return nil, err
	}
	b := &bench{Stack: st, o: o, log: log}
	cl, err := kgo.NewClient(kgo.SeedBrokers(st.Kafka.Brokers...))
	if err != nil {
		b.close()
		return nil, err
	}
	b.adm = kadm.NewClient(cl)
	return b, nil
}

func (b *bench) close() {
	if b.adm != nil {
		b.adm.Close()
	}
	b.Stack.Close()
}

// newTopic creates a fresh topic for one run.
func (b *bench) newTopic(ctx context.Context, name string) (string, error) {
	b.runSeq++
	topic := fmt.Sprintf("bench.%02d.%s", b.runSeq, name)
	_, err := kafka.EnsureTopics(ctx, b.adm, slog.New(slog.DiscardHandler),
		kafka.TopicSpec{Partitions: int32(b.o.partitions), ReplicationFactor: 1}, topic)
	return topic, err
}

func (b *bench) logf(format string, args ...any) {
	fmt.Fprintf(b.log, "relaybench: "+format+"\n", args...)
}
