package main

import (
	"context"
	"fmt"
	"net/http"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/gatehouse/gatehouse/internal/demoapi"
	"github.com/gatehouse/gatehouse/internal/kafka"
)

func runDev(ctx context.Context, e env, args []string) error {
	fs, cfgPath := newFlags("dev", e)
	kafkaPort := fs.Int("kafka-port", 9092, "port of the embedded Kafka broker when no brokers are configured (0: any free port)")
	demoAPI := fs.String("demo-api", "", "also serve the demo provider's API (internal/demoapi) on this address, e.g. 127.0.0.1:9191; point the provider's api_url at it")
	b, err := loadBase(ctx, e, fs, cfgPath, args)
	if err != nil {
		return err
	}
	defer b.close()
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
	sf, err := publicSurface(ctx, b)
	if err != nil {
		return err
	}
	defer sf.close()
	rl, err := newRelay(b)
	if err != nil {
		return err
	}
	defer rl.Close()
	cons, err := newConsumers(b)
	if err != nil {
		return err
	}
	cmt, err := newConsumersMaintenance(b)
	if err != nil {
		return err
	}
	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() error { return cmt.Run(gctx) })
	if *demoAPI != "" {
		ln, err := listen("--demo-api", *demoAPI)
		if err != nil {
			return err
		}
		fmt.Fprintf(e.stdout, "gatehouse dev: demo provider API at http://%s\n", ln.Addr())
		srv := &http.Server{Handler: demoapi.Handler(nil), ReadHeaderTimeout: 10 * time.Second}
		g.Go(func() error { return serveUntil(gctx, srv, ln, nil) })
	}
	g.Go(func() error { return serveHTTP(gctx, e, b, sf) })
	g.Go(func() error { return rl.Run(gctx) })
	g.Go(func() error { return cons.Run(gctx) })
	return g.Wait()
}
