package main

import (
	"context"
	"errors"
	"fmt"
	"sort"

	"golang.org/x/sync/errgroup"

	"github.com/gatehouse/gatehouse/ingest/relay"
	"github.com/gatehouse/gatehouse/internal/config"
)

func runRelay(ctx context.Context, e env, args []string) error {
	fs, cfgPath := newFlags("relay", e)
	mode := fs.String("mode", "", "replication or poll (default: relay.mode from the config)")
	b, err := loadBase(ctx, e, fs, cfgPath, args)
	if err != nil {
		return err
	}
	defer b.close()
	if *mode != "" {
		b.cfg.Relay.Mode = *mode
	}
	if b.cfg.Relay.Mode == config.RelayExternal {
		return errors.New("relay: relay.mode is external: another CDC (Debezium's Outbox Event Router) reads the outbox, so gatehouse relay does not run; set relay.mode to replication or poll to run it")
	}
	if len(b.cfg.Kafka.Brokers) == 0 {
		return errors.New("relay: kafka.brokers is empty (set GATEHOUSE_KAFKA_BROKERS, or use `gatehouse dev` for an embedded broker)")
	}
	rl, err := newRelay(b)
	if err != nil {
		return err
	}
	defer rl.Close()
	ln, err := listen("admin_listen", b.cfg.AdminListen)
	if err != nil {
		return err
	}
	fmt.Fprintf(e.stdout, "gatehouse relay mode=%s admin=http://%s\n", b.cfg.Relay.Mode, ln.Addr())
	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() error { return rl.Run(gctx) })
	g.Go(func() error { return serveUntil(gctx, adminServer(b, rl.PingKafka), ln, nil) })
	return g.Wait()
}

// newRelay builds the relay of b's configuration: the providers' topics are
// created at start.
func newRelay(b *base) (*relay.Relay, error) {
	var topics []string
	for _, p := range b.cfg.Providers {
		if p != nil && p.Topic != "" {
			topics = append(topics, p.Topic)
		}
	}
	sort.Strings(topics)
	return relay.New(relay.Config{
		Pool: b.pool, DatabaseURL: b.cfg.DatabaseURL, Relay: b.cfg.Relay, Kafka: b.cfg.Kafka,
		Topics: topics, Logger: b.log, Registerer: b.reg, Tracer: b.tp,
	})
}
