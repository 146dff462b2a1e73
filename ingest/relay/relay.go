// Package relay publishes outbox rows to Kafka, Debezium-style: it streams
// outbox inserts from the WAL by logical replication (pgoutput, a persistent
// slot, protocol v2 streaming of large transactions), or polls the outbox
// table where logical replication is not available, and a dispatcher
// re-publishes rows still unsent after a threshold. Each row becomes one
// record on its topic, keyed by the subject object's id. Delivery is at least
// once and per-key ordered; the slot's LSN is confirmed only after Kafka has
// acknowledged every record up to it.
//
// It lives under ingest/ because the outbox is ingest's table: the relay is
// the second half of ingest's atomic handoff (ingest writes the rows, the
// relay finishes them), and docs/ARCHITECTURE.md's layout has no top-level relay. The
// record it writes is schemas.Record; it never imports consumers.
package relay

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"go.opentelemetry.io/otel/trace"

	"github.com/gatehouse/gatehouse/internal/kafka"
	"github.com/gatehouse/gatehouse/internal/settings"
	"github.com/gatehouse/gatehouse/internal/tracing"
)

// Mode names (relay.mode).
const (
	ModeReplication = settings.RelayReplication
	ModePoll        = settings.RelayPoll
)

// Config holds a Relay's dependencies.
type Config struct {
	// Pool is used for the lock-free queries: publication set-up, marking
	// rows, the dispatcher, poll mode and metrics. Required.
	Pool *pgxpool.Pool
	// DatabaseURL opens the replication connection and the lock session.
	// Required.
	DatabaseURL string
	// Relay is how the relay reads the outbox: the relay section of the
	// configuration; New applies the defaults of the settings left zero.
	Relay Settings
	// Kafka is where it publishes (Brokers required).
	Kafka Kafka
	// Topics are created at start (the configured providers' topics); topics
	// of rows are created on first use as well.
	Topics []string
	// Logger nil: slog.Default(). Registerer nil: metrics are not registered
	// (the rule of every stage's Config).
	Logger     *slog.Logger
	Registerer prometheus.Registerer
	// Now is the clock of latency metrics. Default time.Now.
	Now func() time.Time
	// Tracer exports the publish spans (internal/tracing); nil: no spans,
	// but a stored trace context is still published.
	Tracer trace.TracerProvider
	// RetryInterval is the pause between attempts after an error and between
	// lock attempts while another relay is active. Default 1s.
	RetryInterval time.Duration
}

// Settings are the relay's own settings: the relay section of the
// configuration, declared with its defaults and validation in
// internal/settings and taken unchanged (docs/CONFIG.md, relay.*).
type Settings = settings.Relay

// Kafka is the cluster the relay publishes to and how new topics are
// made: the kafka section (docs/CONFIG.md, kafka.*) as the configuration
// declares it, its TLS files and SASL password resolved. New applies its
// defaults.
type Kafka = settings.Kafka

// Relay moves outbox rows to Kafka. Build it with New, run it with Run.
type Relay struct {
	cfg  Config
	log  *slog.Logger
	m    *metrics
	cl   *kgo.Client
	adm  *kadm.Client
	spec kafka.TopicSpec

	tracer  trace.Tracer
	tracing bool // cfg.Tracer records spans

	topicsMu sync.Mutex
	known    map[string]bool

	statusMu sync.Mutex
	lastLag  time.Time // oldest pending commit time of the streamer

	hz horizon // keeps the dispatcher behind the stream

	readyOnce sync.Once
	ready     chan struct{}
}

// Ready is closed once this relay first publishes: it holds the lock and is
// streaming from the slot (replication) or polling (poll).
func (r *Relay) Ready() <-chan struct{} { return r.ready }

func (r *Relay) markReady() { r.readyOnce.Do(func() { close(r.ready) }) }

// New builds a relay and its idempotent Kafka producer. It returns an error
// when the config is incomplete or the client cannot be built.
func New(cfg Config) (*Relay, error) {
	if cfg.Pool == nil || cfg.DatabaseURL == "" {
		return nil, errors.New("relay: pool and database url are required")
	}
	cfg.Relay.ApplyDefaults()
	cfg.Kafka.ApplyDefaults()
	if err := cfg.Relay.Validate(); err != nil {
		return nil, fmt.Errorf("relay: %w", err)
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.RetryInterval <= 0 {
		cfg.RetryInterval = time.Second
	}
	r := &Relay{
		cfg: cfg, log: cfg.Logger.With("component", "relay"), m: newMetrics(cfg.Registerer),
		tracer: tracing.Tracer(cfg.Tracer, "relay"), tracing: tracing.Recording(cfg.Tracer),
		known: map[string]bool{}, ready: make(chan struct{}),
		spec: kafka.TopicSpec{Partitions: cfg.Kafka.Partitions, ReplicationFactor: cfg.Kafka.ReplicationFactor,
			Configs: cfg.Kafka.TopicConfigs},
	}
	opts, err := kafka.Options(kafka.ClientConfig{Brokers: cfg.Kafka.Brokers, ClientID: cfg.Kafka.ClientID,
		Logger: cfg.Logger, Registerer: cfg.Registerer, Name: "relay"})
	if err != nil {
		return nil, err
	}
	opts = append(opts,
		// Idempotent (the default; never disabled), acks=all, retried until
		// delivered: a broker outage delays records, it never drops or
		// reorders them.
		kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.ProducerLinger(time.Millisecond),
		kgo.MaxBufferedRecords(50_000),
		kgo.UnknownTopicRetries(-1),
		kgo.ProducerBatchCompression(kgo.NoCompression()),
	)
	opts = append(opts, kafka.SecurityOpts(kafka.SecurityOf(&cfg.Kafka))...)
	if r.cl, err = kgo.NewClient(opts...); err != nil {
		return nil, fmt.Errorf("kafka producer: %w", err)
	}
	admOpts, _ := kafka.Options(kafka.ClientConfig{Brokers: cfg.Kafka.Brokers, ClientID: cfg.Kafka.ClientID, Name: "relay-admin"})
	admCl, err := kgo.NewClient(append(admOpts, kafka.SecurityOpts(kafka.SecurityOf(&cfg.Kafka))...)...)
	if err != nil {
		r.cl.Close()
		return nil, fmt.Errorf("kafka admin: %w", err)
	}
	r.adm = kadm.NewClient(admCl)
	return r, nil
}

// Close flushes nothing and closes the Kafka clients; call it after Run.
func (r *Relay) Close() {
	r.cl.Close()
	r.adm.Close()
}

// Run publishes until ctx ends. It waits for the relay lock (one active
// relay per slot name), then runs the configured mode with the dispatcher
// beside it; any error (PostgreSQL or Kafka unavailable, lock lost) ends
// the term and a new one starts from the last confirmed position after
// RetryInterval. It returns nil when ctx ends, or an error only for a
// misconfiguration that retrying cannot fix.
func (r *Relay) Run(ctx context.Context) error {
	if r.cfg.Relay.Mode != ModeReplication && r.cfg.Relay.Mode != ModePoll {
		return fmt.Errorf("relay: mode %q: gatehouse relay runs in replication or poll mode (external: another CDC reads the outbox)", r.cfg.Relay.Mode)
	}
	go r.metricsLoop(ctx)
	wait := r.cfg.RetryInterval
	for ctx.Err() == nil {
		began := time.Now()
		err := r.term(ctx)
		if ctx.Err() != nil {
			return nil
		}
		var fatal *fatalError
		if errors.As(err, &fatal) {
			return fatal.err
		}
		// Back off while terms fail at once (Kafka or PostgreSQL
		// unreachable), up to 30 times RetryInterval; a term that ran for a
		// while starts the backoff again.
		if time.Since(began) > 30*r.cfg.RetryInterval {
			wait = r.cfg.RetryInterval
		}
		r.log.Warn("relay term ended; retrying", "brokers", r.cfg.Kafka.Brokers, "err", err, "retry_in", wait)
		select {
		case <-ctx.Done():
		case <-time.After(wait):
		}
		wait = min(2*wait, 30*r.cfg.RetryInterval)
	}
	return nil
}

// PingKafka reports whether a Kafka broker answers (a readiness check): it
// names the brokers when none does.
func (r *Relay) PingKafka(ctx context.Context) error {
	if err := r.cl.Ping(ctx); err != nil {
		return fmt.Errorf("no kafka broker of %v answers: %w", r.cfg.Kafka.Brokers, err)
	}
	return nil
}

type fatalError struct{ err error }

func (f *fatalError) Error() string { return f.err.Error() }

// term holds the lock once and runs the mode until an error.
func (r *Relay) term(ctx context.Context) error {
	lead, err := acquire(ctx, r.cfg.DatabaseURL, r.cfg.Relay.Slot, r.cfg.RetryInterval, func() {
		r.log.Info("another relay is active for this slot; waiting to take over", "slot", r.cfg.Relay.Slot)
	})
	if err != nil {
		return err
	}
	defer lead.release()
	r.m.active.Set(1)
	defer r.m.active.Set(0)
	r.log.Info("relay active", "mode", r.cfg.Relay.Mode, "slot", r.cfg.Relay.Slot)
	r.hz.restart(time.Now())

	tctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	if err := r.ensureTopics(tctx, r.cfg.Topics...); err != nil {
		return err
	}
	var wg sync.WaitGroup
	run := func(name string, fn func(context.Context) error) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := fn(tctx); err != nil {
				cancel(fmt.Errorf("%s: %w", name, err))
			}
		}()
	}
	run("lock", func(ctx context.Context) error { return lead.watch(ctx, r.cfg.RetryInterval) })
	if r.cfg.Relay.Mode == ModeReplication {
		// The stream reconnects on its own, so the dispatcher keeps the
		// safety net up while the stream cannot run.
		run("stream", func(ctx context.Context) error {
			for {
				err := r.stream(ctx)
				if ctx.Err() != nil {
					return nil
				}
				var fatal *fatalError
				if errors.As(err, &fatal) {
					return err
				}
				r.log.Warn("replication stream ended; reconnecting", "err", err, "retry_in", r.cfg.RetryInterval)
				select {
				case <-ctx.Done():
					return nil
				case <-time.After(r.cfg.RetryInterval):
				}
			}
		})
		run("dispatcher", func(ctx context.Context) error {
			return r.pollLoop(ctx, pathDispatcher, min(max(r.cfg.Relay.RepublishAfter/4, 10*time.Millisecond), 250*time.Millisecond))
		})
	} else {
		run("poll", func(ctx context.Context) error {
			return r.pollLoop(ctx, pathPoll, r.cfg.Relay.PollInterval)
		})
	}
	<-tctx.Done()
	wg.Wait()
	if r.cfg.Relay.Mode == ModeReplication {
		r.finalCursor()
	}
	// Records still buffered belong to rows that are not confirmed: they
	// are published again by the next term. Give them a moment so the next
	// term does not race them.
	fctx, fcancel := context.WithTimeout(context.Background(), 5*time.Second)
	_ = r.cl.Flush(fctx)
	fcancel()
	return context.Cause(tctx)
}

// ensureTopics creates topics not known yet (see kafka.EnsureTopics).
func (r *Relay) ensureTopics(ctx context.Context, topics ...string) error {
	r.topicsMu.Lock()
	defer r.topicsMu.Unlock()
	var missing []string
	for _, t := range topics {
		if !r.known[t] {
			missing = append(missing, t)
		}
	}
	if len(missing) == 0 {
		return nil
	}
	if _, err := kafka.EnsureTopics(ctx, r.adm, r.log, r.spec, missing...); err != nil {
		return err
	}
	for _, t := range missing {
		r.known[t] = true
	}
	return nil
}

// topicsOf lists the distinct topics of rows.
func topicsOf(rows []*Row) []string {
	var out []string
	seen := map[string]bool{}
	for _, row := range rows {
		if !seen[row.Topic] {
			seen[row.Topic] = true
			out = append(out, row.Topic)
		}
	}
	return out
}

// metricsLoop measures the outbox queue age and slot lag.
func (r *Relay) metricsLoop(ctx context.Context) {
	t := time.NewTicker(r.cfg.Relay.MetricsInterval)
	defer t.Stop()
	for {
		r.measure(ctx)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

func (r *Relay) measure(ctx context.Context) {
	qctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if age, err := oldestUnpublished(qctx, r.cfg.Pool); err == nil {
		r.m.oldestUnsent.Set(age)
	}
	if r.cfg.Relay.Mode == ModeReplication {
		var lag float64
		if err := r.cfg.Pool.QueryRow(qctx, `SELECT coalesce((SELECT (pg_current_wal_lsn() - confirmed_flush_lsn)::float8
			FROM pg_replication_slots WHERE slot_name = $1), 0)`, r.cfg.Relay.Slot).Scan(&lag); err == nil {
			r.m.lagBytes.Set(lag)
		}
		r.statusMu.Lock()
		oldest := r.lastLag
		r.statusMu.Unlock()
		if oldest.IsZero() {
			r.m.lagSeconds.Set(0)
		} else {
			r.m.lagSeconds.Set(max(r.cfg.Now().Sub(oldest).Seconds(), 0))
		}
	}
}
