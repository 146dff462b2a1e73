package main

import (
	"context"
	"errors"
	"fmt"

	"golang.org/x/sync/errgroup"

	"github.com/gatehouse/gatehouse/consumers"
	"github.com/gatehouse/gatehouse/internal/storage"
)

func runConsume(ctx context.Context, e env, args []string) error {
	fs, cfgPath := newFlags("consume", e)
	b, err := loadBase(ctx, e, fs, cfgPath, args)
	if err != nil {
		return err
	}
	defer b.close()
	if len(b.cfg.Kafka.Brokers) == 0 {
		return errors.New("consume: kafka.brokers is empty (or set GATEHOUSE_KAFKA_BROKERS)")
	}
	run, err := newConsumers(b)
	if err != nil {
		return err
	}
	ln, err := listen("admin_listen", b.cfg.AdminListen)
	if err != nil {
		return err
	}
	fmt.Fprintf(e.stdout, "gatehouse consuming group=%s admin=http://%s\n", b.cfg.Consumers.Group, ln.Addr())
	mt, err := newConsumersMaintenance(b)
	if err != nil {
		return err
	}
	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() error { return run.Run(gctx) })
	g.Go(func() error { return mt.Run(gctx) })
	g.Go(func() error { return serveUntil(gctx, adminServer(b, run.PingKafka), ln, nil) })
	return g.Wait()
}

// newConsumersMaintenance builds the consumers' storage maintenance
// (docs/STORAGE.md).
func newConsumersMaintenance(b *base) (*storage.Maintainer, error) {
	return consumers.NewMaintenance(maintenanceConfig(b.cfg, consumers.MaintenanceConfig{Pool: b.pool, Logger: b.log, Registerer: b.reg}))
}

// newConsumers builds the consumer runner from the loaded configuration
// (`consume`, and `dev` in-process).
func newConsumers(b *base) (*consumers.Runner, error) {
	cfg, err := consumersConfig(b.cfg, consumers.Config{Pool: b.pool, Logger: b.log, Registerer: b.reg, Tracer: b.tp})
	if err != nil {
		return nil, err
	}
	return consumers.New(cfg)
}
