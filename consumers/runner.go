// Package consumers processes the provider topics: consumer groups that
// dedupe by event id, fetch the authoritative object from the provider's
// API, apply it to a projection under a version guard, forward transient
// failures through retry topics with growing delays and dead-letter what
// cannot succeed.
package consumers

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/gatehouse/gatehouse/internal/kafka"
)

// Config holds a Runner's dependencies and settings.
type Config struct {
	Brokers []string // seed brokers; required
	Group   string   // consumer group id; default gatehouse
	// Topics maps each consumed provider to its main topic; required.
	Topics map[string]string
	// RetryDelays is the retry ladder; default [10s, 1m, 10m].
	RetryDelays []time.Duration
	Pool        *pgxpool.Pool // required
	Handlers    *Registry     // default: an empty registry (every event skipped)
	// Concurrency bounds retry-topic partitions processed in parallel;
	// default 16. Main-topic records are processed as one batch per poll.
	Concurrency int
	// MaxPollRecords bounds the records of one poll, and so of one batch
	// (one claim statement, one apply transaction); default 500.
	MaxPollRecords int
	// DrainTimeout bounds finishing polled records after ctx ends; default 30s.
	DrainTimeout time.Duration
	// SessionTimeout is the group session timeout; default 45s.
	SessionTimeout time.Duration
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
}

// Runner runs one consumer group member over the configured topics.
type Runner struct {
	cfg    Config
	layout layout
	store  store
	parts  *partitions
	m      *metrics
	log    *slog.Logger
}

// New validates cfg and returns a Runner. It fails when brokers, topics or
// the pool are missing.
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
	if cfg.Group == "" {
		cfg.Group = "gatehouse"
	}
	if len(cfg.RetryDelays) == 0 {
		cfg.RetryDelays = []time.Duration{10 * time.Second, time.Minute, 10 * time.Minute}
	}
	if cfg.Handlers == nil {
		cfg.Handlers = NewRegistry()
	}
	if cfg.Concurrency <= 0 {
		cfg.Concurrency = 16
	}
	if cfg.MaxPollRecords <= 0 {
		cfg.MaxPollRecords = 500
	}
	if cfg.DrainTimeout <= 0 {
		cfg.DrainTimeout = 30 * time.Second
	}
	if cfg.SessionTimeout <= 0 {
		cfg.SessionTimeout = 45 * time.Second
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
	}
	r.m = newMetrics(cfg.Registerer, r.parts)
	return r, nil
}

// Run consumes until ctx ends. It creates missing topics first. A session
// that cannot forward a record (Kafka unavailable) is closed, committing
// what was finished, and a new one resumes from the committed offsets. Run
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
	for {
		err := r.session(ctx)
		if ctx.Err() != nil {
			return nil
		}
		r.log.Warn("consumer session ended; starting a new one", "err", err)
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

// session is one group membership: one client, held records, callbacks.
type session struct {
	r      *Runner
	cl     *kgo.Client
	mu     sync.Mutex
	held   map[tp][]*kgo.Record // not yet due records of paused retry partitions
	rebal  sync.RWMutex         // read-held while processing; callbacks take it
	broken atomic.Bool          // a record could not be finished: restart the session
}

func (r *Runner) session(ctx context.Context) error {
	s := &session{r: r, held: map[tp][]*kgo.Record{}}
	opts, err := kafka.Options(kafka.ClientConfig{Brokers: r.cfg.Brokers, ClientID: r.cfg.ClientID,
		Logger: r.log, Registerer: r.cfg.Registerer, Name: "consumer"})
	if err != nil {
		return err
	}
	opts = append(opts,
		kgo.ConsumerGroup(r.cfg.Group),
		kgo.ConsumeTopics(r.layout.consumed()...),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.BlockRebalanceOnPoll(),
		kgo.AutoCommitMarks(),
		kgo.AutoCommitInterval(time.Second),
		kgo.SessionTimeout(r.cfg.SessionTimeout),
		kgo.OnPartitionsAssigned(s.onAssigned),
		kgo.OnPartitionsRevoked(s.onRevoked),
		kgo.OnPartitionsLost(s.onLost),
		kgo.RecordDeliveryTimeout(30*time.Second),
		kgo.ProducerLinger(0),
	)
	cl, err := kgo.NewClient(append(opts, r.cfg.KafkaOpts...)...)
	if err != nil {
		return fmt.Errorf("kafka client: %w", err)
	}
	s.cl = cl
	defer func() {
		cctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := cl.CommitMarkedOffsets(cctx); err != nil {
			r.log.Warn("commit on close", "err", err)
		}
		cl.Close() // leaves the group; onRevoked commits again
	}()
	// Records already polled are finished after ctx ends, within DrainTimeout.
	pctx, pcancel := context.WithCancel(context.WithoutCancel(ctx))
	defer pcancel()
	stop := context.AfterFunc(ctx, func() { time.AfterFunc(r.cfg.DrainTimeout, pcancel) })
	defer stop()
	for ctx.Err() == nil {
		pollCtx, cancel := s.pollContext(ctx)
		fetches := cl.PollRecords(pollCtx, r.cfg.MaxPollRecords)
		cancel()
		r.m.lastPoll.WithLabelValues(r.cfg.Group).Set(float64(r.cfg.Now().UnixNano()) / 1e9)
		if fetches.IsClientClosed() {
			return errors.New("client closed")
		}
		fetches.EachError(func(t string, p int32, err error) {
			if !errors.Is(err, context.Canceled) && !errors.Is(err, context.DeadlineExceeded) {
				r.log.Warn("fetch error", "topic", t, "partition", p, "err", err)
			}
		})
		// franz-go holds rebalance callbacks only after a non-empty poll;
		// held records may be processed after an empty one, so the callbacks
		// also wait for rebal: no partition is revoked while its records are
		// being processed and marked.
		s.rebal.RLock()
		s.process(pctx, s.collect(fetches))
		s.rebal.RUnlock()
		cl.AllowRebalance()
		if s.broken.Load() {
			return errors.New("a record could not be finished")
		}
	}
	return nil
}

// pollContext bounds a poll by the earliest due time of held records, so
// the loop wakes up to process them without ever sleeping.
func (s *session) pollContext(ctx context.Context) (context.Context, context.CancelFunc) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var earliest time.Time
	for k, recs := range s.held {
		due := s.r.layout.dueAt(recs[0], s.r.layout.roles[k.topic])
		if earliest.IsZero() || due.Before(earliest) {
			earliest = due
		}
	}
	if earliest.IsZero() {
		return context.WithCancel(ctx)
	}
	return context.WithDeadline(ctx, earliest)
}

// collect groups polled records by partition, in front of each the held
// records that are due now (their partitions are resumed).
func (s *session) collect(fetches kgo.Fetches) map[tp][]*kgo.Record {
	batches := map[tp][]*kgo.Record{}
	now := s.r.cfg.Now()
	s.mu.Lock()
	resume := map[string][]int32{}
	for k, recs := range s.held {
		if !s.r.layout.dueAt(recs[0], s.r.layout.roles[k.topic]).After(now) {
			batches[k] = recs
			delete(s.held, k)
			resume[k.topic] = append(resume[k.topic], k.partition)
		}
	}
	s.mu.Unlock()
	if len(resume) > 0 {
		s.cl.ResumeFetchPartitions(resume)
	}
	fetches.EachPartition(func(p kgo.FetchTopicPartition) {
		if len(p.Records) == 0 {
			return
		}
		k := tp{p.Topic, p.Partition}
		s.r.parts.fetched(k, p.HighWatermark, p.Records[0].Offset)
		batches[k] = append(batches[k], p.Records...)
	})
	return batches
}

// process runs the poll's main-topic records as one batch (processMain)
// beside the retry partitions (in parallel, each in offset order) and
// returns when all are finished or held.
func (s *session) process(ctx context.Context, batches map[tp][]*kgo.Record) {
	sem := make(chan struct{}, s.r.cfg.Concurrency)
	var wg sync.WaitGroup
	main := map[tp][]*kgo.Record{}
	for k, recs := range batches {
		if s.r.layout.roles[k.topic].level == 0 {
			main[k] = recs
			delete(batches, k)
		}
	}
	if len(main) > 0 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s.processMain(ctx, main)
		}()
	}
	for k, recs := range batches {
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer func() { <-sem; wg.Done() }()
			s.processPartition(ctx, k, recs)
		}()
	}
	wg.Wait()
}

func (s *session) processPartition(ctx context.Context, k tp, recs []*kgo.Record) {
	role := s.r.layout.roles[k.topic]
	for i, rec := range recs {
		at := rec.Timestamp
		if role.level > 0 {
			at = s.r.layout.dueAt(rec, role)
			if at.After(s.r.cfg.Now()) {
				s.mu.Lock()
				s.held[k] = recs[i:]
				s.mu.Unlock()
				s.cl.PauseFetchPartitions(map[string][]int32{k.topic: {k.partition}})
				s.r.parts.head(k, at)
				return
			}
		}
		s.r.parts.head(k, at)
		if !s.handle(ctx, rec, role) {
			s.broken.Store(true)
			return
		}
		s.cl.MarkCommitRecords(rec)
		s.r.parts.done(k, rec.Offset, at)
	}
}

func (s *session) onAssigned(_ context.Context, _ *kgo.Client, assigned map[string][]int32) {
	s.rebal.Lock()
	defer s.rebal.Unlock()
	s.r.m.rebalances.WithLabelValues(s.r.cfg.Group, "assigned").Inc()
	s.r.log.Info("partitions assigned", "partitions", assigned)
}

// onRevoked drops held records of revoked partitions (they were never
// marked) and commits everything marked, so the next owner starts exactly
// after the last finished record.
func (s *session) onRevoked(ctx context.Context, cl *kgo.Client, revoked map[string][]int32) {
	s.rebal.Lock()
	defer s.rebal.Unlock()
	s.r.m.rebalances.WithLabelValues(s.r.cfg.Group, "revoked").Inc()
	s.forget(cl, revoked)
	if err := cl.CommitMarkedOffsets(ctx); err != nil {
		s.r.log.Warn("commit on revoke", "err", err)
	}
	s.r.log.Info("partitions revoked", "partitions", revoked)
}

// onLost forgets lost partitions without committing: another member may
// already own them.
func (s *session) onLost(_ context.Context, cl *kgo.Client, lost map[string][]int32) {
	s.rebal.Lock()
	defer s.rebal.Unlock()
	s.r.m.rebalances.WithLabelValues(s.r.cfg.Group, "lost").Inc()
	s.forget(cl, lost)
	s.r.log.Warn("partitions lost", "partitions", lost)
}

func (s *session) forget(cl *kgo.Client, parts map[string][]int32) {
	s.mu.Lock()
	for t, ps := range parts {
		for _, p := range ps {
			delete(s.held, tp{t, p})
		}
	}
	s.mu.Unlock()
	cl.ResumeFetchPartitions(parts)
	s.r.parts.drop(parts)
}
