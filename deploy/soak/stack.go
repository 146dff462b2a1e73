package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/gatehouse/gatehouse/internal/testenv"
)

// soakSecret signs the soak's webhooks (reference scheme).
const soakSecret = "whsec_soak_secret_for_a_chaos_run"

// topic is the provider's topic.
const topic = "gatehouse.webhooks.soak"

// stack is the running topology.
type stack struct {
	o        *options
	pg       *testenv.PG
	kafka    *testenv.KafkaCluster
	dbURL    string
	pool     *pgxpool.Pool
	api      *providerAPI
	serve    *testenv.Proc
	relay    *testenv.Proc
	consume  []*testenv.Proc
	public   string // http://host:port of serve
	logMu    sync.Mutex
	started  time.Time
	procsDir string
}

func (s *stack) logf(format string, args ...any) {
	s.logMu.Lock()
	defer s.logMu.Unlock()
	fmt.Fprintf(s.o.log, "soak %6.1fs: %s\n", time.Since(s.started).Seconds(), fmt.Sprintf(format, args...))
}

func startStack(ctx context.Context, o *options) (_ *stack, err error) {
	s := &stack{o: o, started: time.Now(), procsDir: filepath.Join(o.dir, "procs")}
	defer func() {
		if err != nil {
			s.close()
		}
	}()
	if err := os.MkdirAll(s.procsDir, 0o755); err != nil {
		return nil, err
	}
	s.logf("building gatehouse")
	bin, err := testenv.BuildGatehouse(ctx, o.dir)
	if err != nil {
		return nil, err
	}
	s.logf("starting PostgreSQL (fsync on) and a three-node Kafka cluster")
	var wg sync.WaitGroup
	var pgErr, kErr error
	wg.Add(2)
	go func() { defer wg.Done(); s.pg, pgErr = testenv.StartPG(ctx, filepath.Join(o.dir, "pg"), false) }()
	go func() {
		defer wg.Done()
		s.kafka, kErr = testenv.StartKafkaCluster(ctx, filepath.Join(o.dir, "kafka"), 3)
	}()
	wg.Wait()
	if err := errors.Join(pgErr, kErr); err != nil {
		return nil, err
	}
	if s.dbURL, err = testenv.CreateDatabase(ctx, s.pg.AdminURL(), false); err != nil {
		return nil, err
	}
	if s.pool, err = pgxpool.New(ctx, s.dbURL); err != nil {
		return nil, err
	}
	s.api = newProviderAPI()
	cfgPath := filepath.Join(o.dir, "gatehouse.yaml")
	cfg := fmt.Sprintf(`kafka:
  partitions: 6
  replication_factor: 3
  topic_configs: {min.insync.replicas: "2"}
consumers:
  group: soak
  retry_delays: [1s, 2s, 4s, 8s]
  session_timeout: 10s
providers:
  soak:
    scheme: reference
    timestamp_header: X-Gatehouse-Timestamp
    signature_header: X-Gatehouse-Signature
    secrets: [{id: soak, value: "env:SOAK_SECRET"}]
    aggregate_id_path: [data.payment_id]
    topic: %s
    api_url: %s
`, topic, s.api.url)
	if err := os.WriteFile(cfgPath, []byte(cfg), 0o600); err != nil {
		return nil, err
	}
	env := append(os.Environ(), "GATEHOUSE_DATABASE_URL="+s.dbURL, "SOAK_SECRET="+soakSecret,
		"GATEHOUSE_KAFKA_BROKERS="+strings.Join(s.kafka.Brokers(), ","), "GATEHOUSE_LOG_LEVEL=warn")
	migrate := exec.CommandContext(ctx, bin, "migrate", "--config", cfgPath)
	migrate.Env = env
	if out, err := migrate.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("gatehouse migrate: %w: %s", err, out)
	}
	newProc := func(name, sub string) (*testenv.Proc, error) {
		return testenv.NewProc(name, bin, sub, cfgPath, env, filepath.Join(s.procsDir, name+".log"))
	}
	if s.serve, err = newProc("serve", "serve"); err != nil {
		return nil, err
	}
	s.public = "http://" + s.serve.Public
	if s.relay, err = newProc("relay", "relay"); err != nil {
		return nil, err
	}
	for i := range 2 {
		p, err := newProc(fmt.Sprintf("consume-%d", i+1), "consume")
		if err != nil {
			return nil, err
		}
		s.consume = append(s.consume, p)
	}
	for _, p := range s.procs() {
		if err := p.Start(ctx); err != nil {
			return nil, err
		}
	}
	s.logf("stack ready: serve %s, relay, 2 consumers; brokers %v", s.public, s.kafka.Brokers())
	return s, nil
}

func (s *stack) procs() []*testenv.Proc {
	return append([]*testenv.Proc{s.serve, s.relay}, s.consume...)
}

func (s *stack) close() {
	for _, p := range s.procs() {
		if p != nil {
			p.Stop()
		}
	}
	if s.pool != nil {
		s.pool.Close()
	}
	if s.api != nil {
		s.api.close()
	}
	if s.kafka != nil {
		s.kafka.Stop()
	}
	if s.pg != nil {
		_ = s.pg.Stop(false)
	}
}
