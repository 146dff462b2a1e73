package main

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/gatehouse/gatehouse/consumers"
	"github.com/gatehouse/gatehouse/deploy/bench/benchenv"
	"github.com/gatehouse/gatehouse/ingest/relay"
	"github.com/gatehouse/gatehouse/internal/config"
	"github.com/gatehouse/gatehouse/internal/kafka"
	"github.com/gatehouse/gatehouse/wiring"
)

const secret = "whsec_consumerbench_test_mode"

// fwdSecret signs the forward cases' deliveries (Standard Webhooks).
const fwdSecret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"

// providers are the run's providers, one per case, so each case has a
// topic of its own; "limited" has api_rate_limit 100, the "fwd" ones
// forward every event instead of fetching it.
var providers = []string{"maxrate", "fast", "slow", "grouped", "limited", "steady", "mixed", "fwdfast", "fwdslow"}

// bench is one run's components, all real and private to the run.
type bench struct {
	*benchenv.Stack
	o   *options
	cfg *config.Config
	api *fakeAPI
}

// setup starts the fake API (the caller stops it) and parses the run's
// configuration.
func setup(st *benchenv.Stack, o *options) (*bench, error) {
	b := &bench{Stack: st, o: o, api: &fakeAPI{}}
	var err error
	if b.api.url, b.api.stop, err = benchenv.Serve(http.HandlerFunc(b.api.serve)); err != nil {
		return nil, err
	}
	var yaml strings.Builder
	fmt.Fprintf(&yaml, "listen: \"127.0.0.1:0\"\nkafka:\n  partitions: %d\nconsumers:\n  max_poll_records: %d\n  retry_delays: [10s, 1m]\nproviders:\n",
		o.partitions, o.maxPoll)
	// One case's provider at a time carries the load: each may take every
	// slot of ingest.max_in_flight (256), so the receiver's per-provider
	// share (a quarter by default) refuses nothing the pipeline can carry,
	// and case 5 measures latency, not admission (docs/RECEIVER.md).
	for _, p := range providers {
		yaml.WriteString(benchenv.ProviderYAML(p, []byte(secret), "    topic: bench."+p+"\n    max_in_flight: 256\n"))
		switch {
		case strings.HasPrefix(p, "fwd"):
			fmt.Fprintf(&yaml, "    forward:\n      - url: %s/hooks\n        secret: %s\n        concurrency: %d\n", b.api.url, fwdSecret, o.apiConcurrency)
		case p == "limited":
			fmt.Fprintf(&yaml, "    api_rate_limit: %d\n", o.rateLimit)
			fallthrough
		default:
			fmt.Fprintf(&yaml, "    api_url: %s\n    api_key: bench_api_key\n    api_concurrency: %d\n", b.api.url, o.apiConcurrency)
		}
	}
	env := map[string]string{"GATEHOUSE_DATABASE_URL": b.DBURL, "GATEHOUSE_KAFKA_BROKERS": b.Brokers()}
	if b.cfg, err = config.Parse([]byte(yaml.String()), func(k string) string { return env[k] }); err != nil {
		b.api.stop()
		return nil, err
	}
	return b, nil
}

// fakeAPI is the reference provider's API: every payment exists at
// version 1, answered after the current latency. It answers 429 above its
// own limit of requests in the last second (when set), as Stripe does.
// Under /hooks it is the forward cases' destination, answering 204 after
// the same latency.
type fakeAPI struct {
	url       string
	stop      func()
	latency   atomic.Int64 // time.Duration
	limit     atomic.Int64 // requests per second before 429s; 0: none
	tooMany   atomic.Int64
	delivered atomic.Int64 // forward deliveries

	mu    sync.Mutex
	times []time.Time // request times since the last reset
	most  int         // most requests in any one second since the last reset
}

func (a *fakeAPI) serve(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path == "/hooks" {
		time.Sleep(time.Duration(a.latency.Load()))
		a.delivered.Add(1)
		w.WriteHeader(http.StatusNoContent)
		return
	}
	now, n := time.Now(), 0
	a.mu.Lock()
	a.times = append(a.times, now)
	for i := len(a.times) - 1; i >= 0 && now.Sub(a.times[i]) < time.Second; i-- {
		n++
	}
	a.most = max(a.most, n)
	a.mu.Unlock()
	if l := a.limit.Load(); l > 0 && int64(n) > l {
		a.tooMany.Add(1)
		w.Header().Set("Retry-After", "1")
		http.Error(w, `{"error":{"type":"rate_limit_error"}}`, http.StatusTooManyRequests)
		return
	}
	time.Sleep(time.Duration(a.latency.Load()))
	id := strings.TrimPrefix(r.URL.Path, "/v1/payments/")
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{"id": id, "object": "payment", "version": 1, "status": "succeeded", "amount": 1999})
}

// reset returns the requests since the last reset and the most of them in
// any one second, and forgets them.
func (a *fakeAPI) reset() (calls, most int) {
	a.mu.Lock()
	defer a.mu.Unlock()
	calls, most = len(a.times), a.most
	a.times, a.most = nil, 0
	return calls, most
}

func quiet() *slog.Logger { return slog.New(slog.DiscardHandler) }

// startRelay runs the real relay (logical replication) until the returned
// stop is called.
func (b *bench) startRelay(ctx context.Context) (func(), error) {
	var topics []string
	for _, p := range providers {
		topics = append(topics, b.cfg.Providers[p].Topic)
	}
	return benchenv.Relay(ctx, relay.Config{Pool: b.Pool, DatabaseURL: b.DBURL, Relay: wiring.Relay(b.cfg), Kafka: wiring.RelayKafka(b.cfg),
		Topics: topics, Logger: quiet()})
}

// startConsumer runs a consumer group member for one provider's topic,
// configured as `gatehouse consume` configures its Runner
// (cmd/gatehouse/consumers_config.go, which a bench cannot import): the
// consumers' settings, the provider's fetch and forward handlers.
func (b *bench) startConsumer(ctx context.Context, prov string) (func(), error) {
	c, p := b.cfg, b.cfg.Providers[prov]
	cfg := consumers.Config{Pool: b.Pool, Logger: quiet(), Brokers: c.Kafka.Brokers, ClientID: c.Kafka.ClientID, Group: "consumerbench-" + prov,
		RetryDelays: c.Consumers.RetryDelays, Concurrency: c.Consumers.Concurrency, MaxPollRecords: c.Consumers.MaxPollRecords,
		DrainTimeout: c.Consumers.DrainTimeout, SessionTimeout: c.Consumers.SessionTimeout, KafkaOpts: kafka.SecurityOpts(c.Kafka.Security()),
		TopicSpec: kafka.TopicSpec{Partitions: c.Kafka.Partitions, ReplicationFactor: c.Kafka.ReplicationFactor, Configs: c.Kafka.TopicConfigs},
		Topics:    map[string]string{prov: p.Topic}, Handlers: consumers.NewRegistry()}
	parts, err := wiring.Consumers(map[string]*config.Provider{prov: p}, c.Consumers.APITimeout, time.Now, cfg.Logger, nil)
	if err != nil {
		return nil, err
	}
	consumers.RegisterProvider(cfg.Handlers, prov, parts[prov].Fetch, parts[prov].Forwards)
	r, err := consumers.New(cfg)
	if err != nil {
		return nil, err
	}
	cctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { _ = r.Run(cctx); close(done) }()
	return func() { cancel(); <-done }, nil
}

// receiver runs the real webhook receiver on a loopback listener (host:port).
func (b *bench) receiver() (addr string, stop func(), err error) {
	return benchenv.InProcess(b.Pool, b.cfg, 4, 64, quiet(), prometheus.NewRegistry())
}
