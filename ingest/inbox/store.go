// Package inbox is the receiver's atomic write: the Writer that records a
// verified delivery's events (the dedupe key, the inbox row and, for a new
// key, its outbox job) in one coalesced statement, its SQL and write queue,
// the replay guard's record, and the key filters it probes with.
package inbox

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
)

// Record is one verified delivery to write: an inbox row and, when the row
// is new, its outbox job.
type Record struct {
	Provider  string
	EventID   string
	Type      string
	CreatedAt *time.Time // inbox.event_created_at; nil when unknown
	// EventTime is the creation time as the provider wrote it
	// (schemas.EventTime): outbox.event_time, published as ce_time exactly.
	// Empty, CreatedAt is written in RFC 3339 with nanoseconds.
	EventTime   string
	Payload     []byte
	SecretID    string
	AggregateID string
	Topic       string
	// KeyLifetime is how long the event id is remembered: a delivery of
	// the same id within it is a duplicate, after it a new event. 0:
	// DefaultKeyLifetime.
	KeyLifetime time.Duration
	// Traceparent is the delivery span's W3C trace context, stored in
	// inbox.traceparent and outbox.traceparent ("" : NULL, tracing off).
	Traceparent string
	// Guard is the replay guard's record of the delivery (guard.go),
	// written in the same statement as the event; no Key: none.
	Guard GuardKey
	// Via is how the event was obtained, written to inbox.via and
	// outbox.via: ViaWebhook (the default, "") or ViaReconcile (read from
	// the provider's event list by ingest/reconcile, unsigned).
	Via string
}

// How an event was obtained (Record.Via; the gatehousevia attribute).
const (
	ViaWebhook   = "webhook"
	ViaReconcile = "reconcile"
)

// DefaultKeyLifetime is the key lifetime of a Record that sets none: the
// default retention (30 days), which is longer than the default dedupe
// window (7 days).
const DefaultKeyLifetime = 30 * 24 * time.Hour

// StateExpired is the Outcome.State of a duplicate whose stored event was
// already removed by retention (its id is still remembered).
const StateExpired = "expired"

// Outcome says what the atomic write did.
type Outcome struct {
	New      bool      // the inbox row was inserted by this delivery
	OutboxID uuid.UUID // the outbox job (queue id) when New
	State    string    // processing_state of the stored row
	Attempts int       // processing attempts of the stored row
	// WriteSpan is the span of the statement that wrote the row (tracing
	// on; invalid otherwise): the delivery's span links to it.
	WriteSpan trace.SpanContext
	// DuplicateOf is the event id the same signed content was stored
	// under, when the replay guard made this delivery a duplicate of
	// another id's (State and Attempts are then that event's).
	DuplicateOf string
	// Replayed: the guard's token was used before with another event id
	// (GuardToken); nothing was written, and the delivery is refused.
	Replayed bool
}

// Writer performs the atomic inbox+outbox write. Concurrent calls are
// coalesced: each of a few workers takes whatever deliveries are waiting (up
// to MaxBatch) and writes them in one statement, so one commit serves many
// deliveries; every caller returns only after the commit of its own event.
type Writer struct {
	pool       *pgxpool.Pool
	connConfig *pgx.ConnConfig // of the Writer's pool: key filters are read through a connection of their own
	queue      *writeQueue
	quit       chan struct{}
	maxBatch   int
	stop       sync.Once
	tracer     trace.Tracer // SetTracer
	tracing    bool
	filters    atomic.Pointer[keyFilters] // keyfilter.go; nil until first loaded
}

type pending struct {
	rec  Record
	out  Outcome
	err  error
	done chan struct{}
}

// ErrBadEnvelope marks a record whose content PostgreSQL refuses to store
// (the edge answers 400; its own parse errors wrap it too).
var ErrBadEnvelope = errors.New("bad envelope")

// ErrClosed is returned by Write after Close.
var ErrClosed = errors.New("ingest: writer closed")

// NewWriter returns a running Writer with workers goroutines (default 4),
// each writing at most one statement at a time of at most maxBatch rows
// (default 64). A worker that is free starts a statement as soon as a
// delivery waits: a delivery waits behind a statement only while every
// worker is writing one, and PostgreSQL's group commit merges the flushes
// of concurrent statements. Waiting deliveries are taken one provider at a
// time in turn (writeQueue), so a flood does not delay another provider.
//
// The Writer opens its own pool of workers connections, configured as base
// is (same database, timeouts and hooks), with two settings that make its
// statement's cost independent of the tables' statistics (a fresh
// database, a partition that just became current, a table just emptied:
// docs/BENCHMARKS.md, "Cold start"):
//
//   - plan_cache_mode=force_generic_plan: under the default (auto), the
//     planner keeps choosing custom plans for the statement, since a custom
//     plan sees how many rows the arrays hold, and so re-plans it on every
//     execution: ~300 µs of PostgreSQL CPU per flush (ingestbench);
//   - enable_seqscan=off: a partition analyzed while empty is estimated at
//     0 pages, and a generic plan made then scans it for every lookup while
//     it fills (the plan is cached until the next analyze). With sequential
//     scans priced out, every lookup of the statement is an index probe.
//
// The settings stay out of base, whose other queries keep the defaults.
// Close releases the pool.
func NewWriter(base *pgxpool.Pool, workers, maxBatch int) (*Writer, error) {
	if maxBatch <= 0 {
		maxBatch = 64
	}
	if workers <= 0 {
		workers = 4
	}
	cfg := base.Config()
	cfg.MaxConns = int32(workers)
	cfg.MinConns = 0
	for k, v := range writerSettings {
		cfg.ConnConfig.RuntimeParams[k] = v
	}
	pool, err := pgxpool.NewWithConfig(context.Background(), cfg)
	if err != nil {
		return nil, fmt.Errorf("writer pool: %w", err)
	}
	w := &Writer{pool: pool, connConfig: cfg.ConnConfig, queue: newWriteQueue(workers), quit: make(chan struct{}), maxBatch: maxBatch}
	w.SetTracer(nil)
	for range workers {
		go w.loop()
	}
	go w.refreshLoop()
	return w, nil
}

// writerSettings are the Writer's session settings (NewWriter).
var writerSettings = map[string]string{
	"plan_cache_mode": "force_generic_plan",
	"enable_seqscan":  "off",
	// A write lasting longer than keyOverlap could miss a concurrent
	// duplicate across a key partition boundary (insertSQL).
	"statement_timeout": writerStatementTimeout,
}

// Close stops the workers and closes the Writer's pool. Writes still queued
// fail with ErrClosed; a batch being written finishes first.
func (w *Writer) Close() {
	w.stop.Do(func() {
		close(w.quit)
		w.pool.Close()
	})
}

// Write records rec atomically and reports whether it was new. An error
// means nothing is known to be committed; the caller must not acknowledge.
func (w *Writer) Write(ctx context.Context, rec Record) (Outcome, error) {
	p := &pending{rec: rec, done: make(chan struct{})}
	select {
	case <-w.quit:
		return Outcome{}, ErrClosed
	default:
	}
	w.queue.push(p)
	select {
	case <-p.done:
		return p.out, p.err
	case <-w.quit:
		return Outcome{}, ErrClosed
	case <-ctx.Done():
		// The batch may still commit; the provider retries and the retry is a duplicate.
		return Outcome{}, ctx.Err()
	}
}

func (w *Writer) loop() {
	batch := make([]*pending, 0, w.maxBatch)
	for {
		select {
		case <-w.queue.wake:
		case <-w.quit:
			return
		}
		for {
			if batch = w.queue.take(batch[:0], w.maxBatch); len(batch) == 0 {
				break
			}
			w.flush(batch)
			clear(batch)
		}
	}
}

// flush writes batch and answers every delivery in it. Deliveries of the
// same replay guard key under different event ids cannot share a
// statement (its guard row is written once), so they are written in
// rounds: each after the one before committed, so the guard then sees
// what the round before stored.
func (w *Writer) flush(batch []*pending) {
	for len(batch) > 0 {
		uniq, firstOf, later := dedupeBatch(batch)
		w.flushRound(uniq)
		for _, p := range batch {
			if first := firstOf[p]; first != nil {
				p.err, p.out = first.err, first.out
				if p.out.New { // the first delivery's event: this one is its duplicate
					p.out = Outcome{State: "pending", WriteSpan: first.out.WriteSpan}
				}
			}
		}
		for _, p := range batch {
			if _, deferred := later[p]; !deferred {
				close(p.done)
			}
		}
		next := make([]*pending, 0, len(later))
		for _, p := range batch {
			if _, deferred := later[p]; deferred {
				next = append(next, p)
			}
		}
		batch = next
	}
}

// flushRound writes uniq (distinct event ids and guard keys) in one
// statement and sets each delivery's outcome.
func (w *Writer) flushRound(uniq []*pending) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, span := w.startWrite(uniq)
	err := w.write(ctx, uniq)
	if err != nil && span.IsRecording() {
		span.RecordError(err)
		span.SetStatus(codes.Error, "write failed")
	}
	span.End()
	ws := span.SpanContext()
	if err != nil && len(uniq) > 1 && refused(err) {
		// PostgreSQL refused one row's content: write each row alone, so
		// only that delivery fails (400) and the rest of the batch commits.
		for _, p := range uniq {
			p.err = w.write(ctx, []*pending{p})
		}
	} else if err != nil {
		for _, p := range uniq {
			p.err = err
		}
	}
	for _, p := range uniq {
		p.out.WriteSpan = ws
		if refused(p.err) {
			p.err = fmt.Errorf("%w: PostgreSQL cannot store the payload: %w", ErrBadEnvelope, p.err)
		}
	}
}

// write runs the statement for rows, retrying deadlocks and serialization
// failures.
func (w *Writer) write(ctx context.Context, rows []*pending) error {
	var err error
	for attempt := 0; attempt < 3; attempt++ {
		if err = w.exec(ctx, rows); err == nil || !retryable(err) {
			break
		}
	}
	return err
}

func (w *Writer) exec(ctx context.Context, uniq []*pending) error {
	return execOn(ctx, w.pool, uniq, w.filters.Load())
}
