// Package consumers processes the provider topics: consumer group members
// that dedupe by event id, run each event's handler (the provider API
// fetch of consumers/fetch, the forwards of consumers/forward, joined by
// NewProviderHandler and wired in cmd/gatehouse), apply the fetched object
// to a projection under a version guard, forward transient failures
// through retry topics with growing delays and dead-letter what cannot
// succeed.
package consumers

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/gatehouse/gatehouse/internal/kafka"
	"github.com/gatehouse/gatehouse/internal/settings"
	"github.com/gatehouse/gatehouse/internal/tracing"
	"go.opentelemetry.io/otel/trace"
)

// Config holds a Runner's dependencies and settings.
type Config struct {
	// Consumers is the consumers section of the configuration (group,
	// retry ladder, concurrency, poll size, timeouts), declared with its
	// defaults and validation in internal/settings; New applies the
	// defaults of the settings left zero.
	settings.Consumers
	Brokers []string // seed brokers; required
	// Topics maps each consumed provider to its main topic; required.
	Topics   map[string]string
	Pool     *pgxpool.Pool // required
	Handlers *Registry     // default: an empty registry (every event skipped)
	// TopicSpec is used to create missing topics (partitions default 6,
	// replication factor 1); existing topics are never changed.
	TopicSpec kafka.TopicSpec
	// ClientID is sent to the brokers; default gatehouse.
	ClientID string
	// KafkaOpts are appended to the client options (tests, TLS, SASL).
	KafkaOpts []kgo.Opt

	// Logger nil: slog.Default(). Registerer nil: metrics are not registered
	// (the rule of every stage's Config).
	Logger     *slog.Logger
	Registerer prometheus.Registerer
	Now        func() time.Time // default time.Now
	// Tracer records the consumer's spans (internal/tracing, consumers/
	// trace.go); nil: none.
	Tracer trace.TracerProvider
}

// Runner runs one consumer group member over the configured topics.
type Runner struct {
	cfg     Config
	layout  layout
	store   store
	parts   *partitions
	m       *metrics
	pm      *parkMetrics // parking.go's gauges
	log     *slog.Logger
	tracer  trace.Tracer
	tracing bool // Tracer records spans
}

// New validates cfg and returns a Runner. It fails when brokers, topics or
// the pool are missing, or when a setting is out of range (naming its
// key).
func New(cfg Config) (*Runner, error) {
	if len(cfg.Brokers) == 0 {
		return nil, errors.New("consumers: no kafka brokers configured")
	}
	if len(cfg.Topics) == 0 {
		return nil, errors.New("consumers: no provider topics to consume")
	}
	if cfg.Pool == nil {
		return nil, errors.New("consumers: no database pool")
	}
	cfg.Consumers.ApplyDefaults()
	if err := cfg.Consumers.Validate(); err != nil {
		return nil, fmt.Errorf("consumers: %w", err)
	}
	if cfg.Handlers == nil {
		cfg.Handlers = NewRegistry()
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	r := &Runner{
		cfg:    cfg,
		layout: newLayout(cfg.Topics, cfg.RetryDelays),
		store:  store{pool: cfg.Pool},
		parts:  newPartitions(cfg.Group, cfg.Now),
		log:    cfg.Logger.With("group", cfg.Group),
		tracer: tracing.Tracer(cfg.Tracer, "consumers"), tracing: tracing.Recording(cfg.Tracer),
	}
	r.m = newMetrics(cfg.Registerer, r.parts)
	r.pm = newParkMetrics(cfg.Registerer)
	return r, nil
}

// Run consumes until ctx ends. It creates missing topics first. A group
// membership that cannot forward a record (Kafka unavailable) is left,
// committing what was finished, and the runner joins again, resuming from
// the committed offsets. Run
// returns nil after a clean stop and an error only when start-up fails.
func (r *Runner) Run(ctx context.Context) error {
	// Kafka unreachable at start: say so (the error names the brokers) and
	// try again with backoff; /readyz answers 503 meanwhile (PingKafka).
	for wait := time.Second; ; wait = min(2*wait, 30*time.Second) {
		err := r.ensureTopics(ctx)
		if err == nil {
			break
		}
		if ctx.Err() != nil {
			return nil
		}
		r.log.Warn("consumers: kafka not reachable; retrying", "brokers", r.cfg.Brokers, "err", err, "retry_in", wait)
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(wait):
		}
	}
	if r.cfg.Handlers.Ordered() {
		drained := make(chan struct{})
		go func() { defer close(drained); r.drainParked(ctx) }()
		defer func() { <-drained }()
	}
	for {
		err := r.join(ctx)
		if ctx.Err() != nil {
			return nil
		}
		r.log.Warn("consumer group membership ended; joining again", "err", err)
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(time.Second):
		}
	}
}

// PingKafka reports whether a Kafka broker answers (a readiness check): it
// names the brokers when none does.
func (r *Runner) PingKafka(ctx context.Context) error {
	opts, err := kafka.Options(kafka.ClientConfig{Brokers: r.cfg.Brokers, ClientID: r.cfg.ClientID, Name: "consumer-ping"})
	if err != nil {
		return err
	}
	cl, err := kgo.NewClient(append(opts, r.cfg.KafkaOpts...)...)
	if err != nil {
		return fmt.Errorf("kafka client: %w", err)
	}
	defer cl.Close()
	if err := cl.Ping(ctx); err != nil {
		return fmt.Errorf("no kafka broker of %v answers: %w", r.cfg.Brokers, err)
	}
	return nil
}

func (r *Runner) ensureTopics(ctx context.Context) error {
	opts, err := kafka.Options(kafka.ClientConfig{Brokers: r.cfg.Brokers, ClientID: r.cfg.ClientID, Name: "consumer-admin"})
	if err != nil {
		return fmt.Errorf("consumers: %w", err)
	}
	cl, err := kgo.NewClient(append(opts, r.cfg.KafkaOpts...)...)
	if err != nil {
		return fmt.Errorf("consumers: kafka client: %w", err)
	}
	defer cl.Close()
	tctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if _, err := kafka.EnsureTopics(tctx, kadm.NewClient(cl), r.log, r.cfg.TopicSpec, r.layout.all()...); err != nil {
		return fmt.Errorf("consumers: %w", err)
	}
	return nil
}
