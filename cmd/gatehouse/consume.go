package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/gatehouse/gatehouse/consumers"
	"github.com/gatehouse/gatehouse/internal/obs"
	"github.com/gatehouse/gatehouse/internal/pg"
)

func init() {
	register("consume", "process provider events from Kafka (consumer group, retries, dead letters)", runConsume)
	devConsumers = func(ctx context.Context, _ env, b *base) error {
		run, err := newConsumers(b)
		if err != nil {
			return err
		}
		return run.Run(ctx)
	}
}

func runConsume(ctx context.Context, e env, args []string) error {
	fs, cfgPath := newFlags("consume", e)
	b, err := loadBase(ctx, e, fs, cfgPath, args)
	if err != nil {
		return err
	}
	defer b.pool.Close()
	if len(b.cfg.Kafka.Brokers) == 0 {
		return errors.New("consume: kafka.brokers is empty (or set GATEHOUSE_KAFKA_BROKERS)")
	}
	run, err := newConsumers(b)
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", b.cfg.AdminListen)
	if err != nil {
		return fmt.Errorf("listen %s: %w", b.cfg.AdminListen, err)
	}
	srv := &http.Server{
		Handler:           obs.AdminHandler(b.reg, b.log, map[string]obs.Check{"database": pg.Ping(b.pool)}),
		ReadHeaderTimeout: 10 * time.Second,
	}
	fmt.Fprintf(e.stdout, "gatehouse consuming group=%s admin=http://%s\n", b.cfg.Consumers.Group, ln.Addr())
	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() error { return run.Run(gctx) })
	g.Go(func() error {
		if err := srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
			return fmt.Errorf("serve admin: %w", err)
		}
		return nil
	})
	g.Go(func() error {
		<-gctx.Done()
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		return srv.Shutdown(sctx)
	})
	return g.Wait()
}

// newConsumers builds the consumer runner from the loaded configuration; it
// is also how `gatehouse dev` starts consumers in-process.
func newConsumers(b *base) (*consumers.Runner, error) {
	cfg, err := consumers.FromConfig(b.cfg, consumers.Config{Pool: b.pool, Logger: b.log, Registerer: b.reg})
	if err != nil {
		return nil, err
	}
	return consumers.New(cfg)
}
