// Package admin is the administration of what the receiver stored:
// replay of a stored event through the outbox, the dead events a replay
// picks from, and erasure of payloads with its audit and notices. The API
// and the CLI import it, not the edge.
package admin

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/tidwall/gjson"

	"github.com/gatehouse/gatehouse/ingest/inbox"
	"github.com/gatehouse/gatehouse/internal/tracing"
	"github.com/gatehouse/gatehouse/schemas"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
)

// ErrNotReplayable is returned for an event that is not stored as verified,
// whose provider is not configured, or whose state forbids a replay without
// Force.
var ErrNotReplayable = errors.New("event cannot be replayed")

// ErrNotDead is returned (wrapping ErrNotReplayable) by a replay with
// OnlyDead of an event that is no longer dead: replayed meanwhile, or
// processed since.
var ErrNotDead = fmt.Errorf("%w: no longer dead", ErrNotReplayable)

// ErrNotFound is returned when no inbox row exists for the event.
var ErrNotFound = errors.New("event not found")

// ReplayTarget says where a provider's events are enqueued: the outbox
// topic and the dotted paths of the aggregate id (the Kafka key), exactly
// as the receiver computes them.
type ReplayTarget struct {
	Topic           string
	AggregateIDPath []string
}

// ReplayTargetFor is the target of a configured provider, from targets
// (the configured providers' own, package wiring's ReplayTargets). Every
// replay (the CLI's and the API's) goes through it, so an event of a
// provider that is no longer configured is refused the same way
// everywhere (an error wrapping ErrNotReplayable): nothing consumes a
// topic gatehouse has no provider for.
func ReplayTargetFor(targets map[string]ReplayTarget, provider string) (ReplayTarget, error) {
	t, ok := targets[provider]
	if !ok {
		return ReplayTarget{}, fmt.Errorf("%w: provider %q is not configured", ErrNotReplayable, provider)
	}
	return t, nil
}

// ReplayRequest names one stored event to re-enqueue.
type ReplayRequest struct {
	Provider, EventID string
	// Force also replays an event in a final state (succeeded,
	// ignored_stale, skipped) or in processing; the consumers' dedupe row is
	// removed (consumers_forget) so the handler runs again (the version
	// guard still protects the projection).
	Force       bool
	RequestedBy string // recorded in replays.requested_by
	// OnlyDead replays the event only while it is dead, checked under the
	// row lock (a failure issue's replay): a concurrent replay that reset
	// it first makes this one ErrNotDead, so each event is re-enqueued
	// once. Force is then ignored.
	OnlyDead bool
	// Tracer records the replay's span (internal/tracing): the root of a
	// new trace, linked to the original delivery's span, whose context the
	// new outbox row carries. nil: no span, no trace context.
	Tracer trace.TracerProvider
}

// ReplayResult describes one replay.
type ReplayResult struct {
	OutboxID      uuid.UUID
	PreviousState string
	PrevAttempts  int
	// Trace is the replay's new trace id (invalid with tracing off).
	Trace trace.TraceID
}

// replayOutboxSQL writes the replay's outbox row with the Writer's column
// list (inbox.OutboxColumnsVia) from the stored inbox row, its via too; its key ($3) and
// event_time ($6) are the original's (originalSQL), else read from the
// stored envelope as the receiver did (AggregateID, schemas.EnvelopeTime:
// the text the receiver wrote, not inbox.event_created_at, which holds
// microseconds only).
const replayOutboxSQL = `INSERT INTO outbox ` + inbox.OutboxColumnsVia + `
SELECT $1::uuid, $2::text, $3::text, event_type, payload, event_id, $5::text, $6::text, $7::text, via
FROM inbox WHERE provider = $2 AND event_id = $4`

// originalSQL reads the key and the event_time of the event's first outbox
// row still in the outbox log (the receiver's, erased or not: an erasure
// rewrites the payload only).
const originalSQL = `SELECT aggregateid, event_time FROM outbox
WHERE aggregatetype = $1 AND event_id = $2 ORDER BY created_at, seq LIMIT 1`

// Replay re-enqueues a stored, verified event through the outbox, in one
// transaction: a new outbox row (the relay publishes it to the provider's
// topic), the inbox row back to pending with attempts reset, and a row in
// replays. It never forges an inbound request. The new row keeps the
// object's key and ce_time: those of the event's original outbox row
// while the outbox log holds it, so a replay of an erased event (whose
// payload, the marker, holds neither) lands in the object's partition
// after its other records; else the ones the stored envelope gives, as the
// receiver computed them. An erased event whose original row is gone has
// no key left to keep: it is refused (ErrNotReplayable) rather than
// published under another. Errors: ErrNotFound, ErrNotReplayable
// (unverified, a final or in-flight state without Force, ErrNotDead for
// OnlyDead, an erased event without its key), database errors.
func Replay(ctx context.Context, pool *pgxpool.Pool, target ReplayTarget, req ReplayRequest) (ReplayResult, error) {
	var res ReplayResult
	var span trace.Span
	err := pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		var (
			state    string
			payload  []byte
			attempts int32
			lastErr  *string
			verified bool
			original *string
		)
		err := tx.QueryRow(ctx, `SELECT payload, processing_state, attempts, last_error, verified, traceparent
FROM inbox WHERE provider = $1 AND event_id = $2 FOR UPDATE`, req.Provider, req.EventID).
			Scan(&payload, &state, &attempts, &lastErr, &verified, &original)
		if errors.Is(err, pgx.ErrNoRows) {
			return fmt.Errorf("%w: provider %s event %s", ErrNotFound, req.Provider, req.EventID)
		}
		if err != nil {
			return fmt.Errorf("read inbox row: %w", err)
		}
		if !verified {
			return fmt.Errorf("%w: event %s is not stored as verified", ErrNotReplayable, req.EventID)
		}
		if req.OnlyDead && state != schemas.StateDead {
			return fmt.Errorf("%w: event %s is %s", ErrNotDead, req.EventID, state)
		}
		if (schemas.Final(state) || state == schemas.StateProcessing) && !req.Force && !req.OnlyDead {
			return fmt.Errorf("%w: event %s is %s (use --force to process it again)", ErrNotReplayable, req.EventID, state)
		}
		agg, eventTime, err := replayKey(ctx, tx, req, target, payload)
		if err != nil {
			return err
		}
		id, err := uuid.NewV7()
		if err != nil {
			return fmt.Errorf("outbox id: %w", err)
		}
		var sctx context.Context
		sctx, span = startReplay(ctx, req, original, id.String(), state)
		var traceparent *string
		if tp := tracing.Traceparent(sctx); tp != "" {
			traceparent = &tp
		}
		if _, err := tx.Exec(ctx, replayOutboxSQL, id, req.Provider, agg, req.EventID, target.Topic, eventTime, traceparent); err != nil {
			return fmt.Errorf("insert outbox: %w", err)
		}
		if _, err := tx.Exec(ctx, `UPDATE inbox SET processing_state = 'pending', attempts = 0, last_error = NULL,
  last_error_class = NULL, next_attempt_at = NULL, processed_at = NULL, replays = replays + 1, updated_at = now()
WHERE provider = $1 AND event_id = $2`, req.Provider, req.EventID); err != nil {
			return fmt.Errorf("reset inbox row: %w", err)
		}
		if req.Force && !req.OnlyDead {
			if _, err := tx.Exec(ctx, `SELECT consumers_forget($1, $2)`, req.Provider, req.EventID); err != nil {
				return fmt.Errorf("clear dedupe row: %w", err)
			}
		}
		if _, err := tx.Exec(ctx, `INSERT INTO replays (provider, event_id, outbox_id, previous_state, previous_attempts, previous_error, forced, requested_by)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`, req.Provider, req.EventID, id, state, attempts, lastErr, req.Force, req.RequestedBy); err != nil {
			return fmt.Errorf("record replay: %w", err)
		}
		res = ReplayResult{OutboxID: id, PreviousState: state, PrevAttempts: int(attempts), Trace: trace.SpanContextFromContext(sctx).TraceID()}
		return nil
	})
	if span != nil {
		if err != nil {
			span.RecordError(err)
			span.SetStatus(codes.Error, "replay failed")
		}
		span.End()
	}
	return res, err
}

// replayKey is the key and the event_time of a replay (Replay): the
// original outbox row's, else the stored envelope's.
func replayKey(ctx context.Context, tx pgx.Tx, req ReplayRequest, target ReplayTarget, payload []byte) (string, *string, error) {
	var (
		agg       string
		eventTime *string
	)
	err := tx.QueryRow(ctx, originalSQL, req.Provider, req.EventID).Scan(&agg, &eventTime)
	if err == nil {
		return agg, eventTime, nil
	}
	if !errors.Is(err, pgx.ErrNoRows) {
		return "", nil, fmt.Errorf("read original outbox row: %w", err)
	}
	if _, erased := schemas.ErasedPayload(payload); erased {
		return "", nil, fmt.Errorf("%w: event %s is erased and its original outbox row, which held its key, is gone", ErrNotReplayable, req.EventID)
	}
	agg, found := inbox.AggregateID(gjson.ParseBytes(payload), target.AggregateIDPath)
	if !found {
		agg = req.EventID
	}
	if text, ok := schemas.EnvelopeTime(payload); ok {
		eventTime = &text
	}
	return agg, eventTime, nil
}

// startReplay starts the replay's span: a new trace (a replay is its own
// cause, days after the delivery) linked to the original delivery's span.
func startReplay(ctx context.Context, req ReplayRequest, original *string, outboxID, state string) (context.Context, trace.Span) {
	if !tracing.Recording(req.Tracer) {
		return ctx, trace.SpanFromContext(context.Background())
	}
	opts := []trace.SpanStartOption{trace.WithNewRoot(), trace.WithSpanKind(trace.SpanKindInternal), trace.WithAttributes(
		attribute.String("gatehouse.provider", req.Provider), attribute.String("gatehouse.event_id", req.EventID),
		attribute.String("gatehouse.outbox_id", outboxID), attribute.String("gatehouse.previous_state", state),
		attribute.Bool("gatehouse.replay.forced", req.Force), attribute.String("gatehouse.replay.requested_by", req.RequestedBy))}
	if original != nil {
		if l, ok := tracing.LinkTo(*original, attribute.String("gatehouse.link", "original delivery")); ok {
			opts = append(opts, trace.WithLinks(l))
		}
	}
	return tracing.Tracer(req.Tracer, "ingest").Start(ctx, "replay "+req.Provider, opts...)
}

// DeadFilter selects dead events for a bulk replay; zero fields match all.
type DeadFilter struct {
	Provider string
	Type     string
	Since    time.Time // events that became dead (updated_at) at or after Since
	Limit    int       // 0: no limit
}

// DeadEvent is one event selected by FindDead.
type DeadEvent struct {
	Provider, EventID, Type, LastError string
	Attempts                           int
	UpdatedAt                          time.Time
}

// FindDead lists dead, verified events matching f, oldest first.
func FindDead(ctx context.Context, pool *pgxpool.Pool, f DeadFilter) ([]DeadEvent, error) {
	var since *time.Time
	if !f.Since.IsZero() {
		since = &f.Since
	}
	limit := int64(f.Limit)
	if limit <= 0 {
		limit = 1 << 62
	}
	rows, err := pool.Query(ctx, `SELECT provider, event_id, event_type, coalesce(last_error, ''), attempts, updated_at
FROM inbox WHERE processing_state = 'dead' AND verified
  AND ($1 = '' OR provider = $1) AND ($2 = '' OR event_type = $2) AND ($3::timestamptz IS NULL OR updated_at >= $3)
ORDER BY received_at, provider, event_id LIMIT $4`, f.Provider, f.Type, since, limit)
	if err != nil {
		return nil, fmt.Errorf("find dead events: %w", err)
	}
	var out []DeadEvent
	for rows.Next() {
		var d DeadEvent
		var attempts int32
		if err := rows.Scan(&d.Provider, &d.EventID, &d.Type, &d.LastError, &attempts, &d.UpdatedAt); err != nil {
			return nil, fmt.Errorf("scan dead event: %w", err)
		}
		d.Attempts = int(attempts)
		out = append(out, d)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("find dead events: %w", err)
	}
	return out, nil
}
