package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strings"
	"sync/atomic"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/gatehouse/gatehouse/consumers"
	"github.com/gatehouse/gatehouse/ingest"
	"github.com/gatehouse/gatehouse/ingest/relay"
	"github.com/gatehouse/gatehouse/internal/config"
	"github.com/gatehouse/gatehouse/internal/testenv"
)

const (
	provider = "bench"
	secret   = "whsec_consumerbench_test_mode"
	tsHeader = "X-Bench-Timestamp"
	sgHeader = "X-Bench-Signature"
)

// bench is one run's components, all real and private to the run.
type bench struct {
	o        *options
	log      io.Writer
	pgDir    string
	pg       *testenv.PG
	kafka    *testenv.Kafka
	dbURL    string
	pool     *pgxpool.Pool
	cfg      *config.Config
	api      *http.Server
	apiCalls atomic.Int64
	pgVer    string
	// consumerStop stops the consumer started by the throughput run; the
	// latency run keeps using it.
	consumerStop func()
	relayStop    func()
}

func setup(ctx context.Context, o *options, log io.Writer) (*bench, error) {
	b := &bench{o: o, log: log}
	var err error
	if b.pgDir, err = os.MkdirTemp("", "consumerbench-pg-"); err != nil {
		return nil, err
	}
	fmt.Fprintf(log, "consumerbench: starting PostgreSQL (fsync on) and Kafka\n")
	if b.pg, err = testenv.StartPG(ctx, b.pgDir, false); err != nil {
		b.close()
		return nil, fmt.Errorf("start postgres: %w", err)
	}
	if b.kafka, err = testenv.StartKafka(ctx, ""); err != nil {
		b.close()
		return nil, fmt.Errorf("start kafka: %w", err)
	}
	if b.dbURL, err = testenv.CreateDatabase(ctx, b.pg.AdminURL(), true); err != nil {
		b.close()
		return nil, err
	}
	if b.pool, err = pgxpool.New(ctx, b.dbURL); err != nil {
		b.close()
		return nil, err
	}
	_ = b.pool.QueryRow(ctx, "SHOW server_version").Scan(&b.pgVer)
	apiURL, err := b.startAPI()
	if err != nil {
		b.close()
		return nil, err
	}
	yaml := fmt.Sprintf(`
listen: "127.0.0.1:0"
kafka:
  partitions: %d
consumers:
  group: consumerbench
  concurrency: %d
  key_concurrency: %d
providers:
  %s:
    scheme: reference
    timestamp_header: %s
    signature_header: %s
    secrets: [{id: bench, value: %q}]
    aggregate_id_path: [data.payment_id]
    topic: gatehouse.webhooks.%s
    api_url: %s
    api_key: bench_api_key
`, o.partitions, o.concurrency, o.keyConcurrency, provider, tsHeader, sgHeader, secret, provider, apiURL)
	getenv := func(k string) string {
		switch k {
		case "GATEHOUSE_DATABASE_URL":
			return b.dbURL
		case "GATEHOUSE_KAFKA_BROKERS":
			return strings.Join(b.kafka.Brokers, ",")
		}
		return ""
	}
	if b.cfg, err = config.Parse([]byte(yaml), getenv); err != nil {
		b.close()
		return nil, err
	}
	return b, nil
}

// startAPI serves the reference provider's API: every payment exists at
// version 1, answered after -api-latency.
func (b *bench) startAPI() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	b.api = &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b.apiCalls.Add(1)
		if b.o.apiLatency > 0 {
			time.Sleep(b.o.apiLatency)
		}
		id := strings.TrimPrefix(r.URL.Path, "/v1/payments/")
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{"id": id, "object": "payment", "version": 1, "status": "succeeded", "amount": 1999})
	})}
	go func() { _ = b.api.Serve(ln) }()
	return "http://" + ln.Addr().String(), nil
}

func quiet() *slog.Logger { return slog.New(slog.DiscardHandler) }

// startRelay runs the real relay (logical replication) until ctx ends.
func (b *bench) startRelay(ctx context.Context) (func(), error) {
	rl, err := relay.New(relay.Config{Pool: b.pool, DatabaseURL: b.dbURL, Relay: b.cfg.Relay, Kafka: b.cfg.Kafka,
		Topics: []string{b.cfg.Providers[provider].Topic}, Logger: quiet()})
	if err != nil {
		return nil, err
	}
	rctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { _ = rl.Run(rctx); close(done) }()
	select {
	case <-rl.Ready():
	case <-time.After(60 * time.Second):
		cancel()
		return nil, fmt.Errorf("relay not ready within 60s")
	}
	return func() { cancel(); <-done; rl.Close() }, nil
}

// startConsumer runs a consumer group member with a fresh group.
func (b *bench) startConsumer(ctx context.Context, group string, reg prometheus.Registerer) (func(), error) {
	cfg, err := consumers.FromConfig(b.cfg, consumers.Config{Pool: b.pool, Logger: quiet(), Registerer: reg})
	if err != nil {
		return nil, err
	}
	cfg.Group = group
	r, err := consumers.New(cfg)
	if err != nil {
		return nil, err
	}
	cctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { _ = r.Run(cctx); close(done) }()
	return func() { cancel(); <-done }, nil
}

// receiver runs the real webhook receiver on a loopback listener.
func (b *bench) receiver() (addr string, stop func(), err error) {
	w, err := ingest.NewWriter(b.pool, 4, 64)
	if err != nil {
		return "", nil, err
	}
	rcv, err := ingest.New(ingest.Config{Providers: b.cfg.Providers, Store: w, Logger: quiet(),
		Registerer: prometheus.NewRegistry()})
	if err != nil {
		w.Close()
		return "", nil, err
	}
	mux := chi.NewRouter()
	rcv.Routes(mux)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		w.Close()
		return "", nil, err
	}
	srv := &http.Server{Handler: mux}
	go func() { _ = srv.Serve(ln) }()
	return "http://" + ln.Addr().String(), func() { _ = srv.Close(); w.Close() }, nil
}

func (b *bench) close() {
	if b.api != nil {
		_ = b.api.Close()
	}
	if b.pool != nil {
		b.pool.Close()
	}
	if b.kafka != nil {
		_ = b.kafka.Stop()
		if !b.o.keep {
			_ = os.RemoveAll(b.kafka.Dir)
		}
	}
	if b.pg != nil {
		_ = b.pg.Stop(false)
	}
	if b.pgDir != "" && !b.o.keep {
		_ = os.RemoveAll(b.pgDir)
	}
}
