package main

import (
	"context"
	"fmt"

	"golang.org/x/sync/errgroup"

	"github.com/gatehouse/gatehouse/internal/kafka"
)

// devConsumers is the hook through which `gatehouse dev` runs the Kafka
// consumers beside serve and relay. The consumers stage sets it from its
// own file's init; nil means dev runs without consumers. It must block
// until ctx ends and return nil then.
var devConsumers func(ctx context.Context, e env, b *base) error

func runDev(ctx context.Context, e env, args []string) error {
	fs, cfgPath := newFlags("dev", e)
	kafkaPort := fs.Int("kafka-port", 9092, "port of the embedded Kafka broker when no brokers are configured (0: any free port)")
	b, err := loadBase(ctx, e, fs, cfgPath, args)
	if err != nil {
		return err
	}
	defer b.pool.Close()
	if len(b.cfg.Kafka.Brokers) == 0 {
		emb, err := kafka.StartEmbedded(*kafkaPort)
		if err != nil {
			return err
		}
		defer emb.Close()
		b.cfg.Kafka.Brokers = emb.Brokers()
		fmt.Fprintf(e.stdout, "gatehouse dev: embedded Kafka (in memory) at %s\n", b.cfg.Kafka.Brokers[0])
	} else {
		fmt.Fprintf(e.stdout, "gatehouse dev: Kafka at %v\n", b.cfg.Kafka.Brokers)
	}
	router, closeRouter, err := publicRouter(ctx, b)
	if err != nil {
		return err
	}
	defer closeRouter()
	rl, err := newRelay(b)
	if err != nil {
		return err
	}
	defer rl.Close()
	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() error { return serveHTTP(gctx, e, b, router) })
	g.Go(func() error { return rl.Run(gctx) })
	if devConsumers != nil {
		g.Go(func() error { return devConsumers(gctx, e, b) })
	}
	return g.Wait()
}
