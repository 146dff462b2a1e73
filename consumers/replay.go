package consumers

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/gatehouse/gatehouse/schemas"
	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// ErrNotReplayable is returned for an event that is not stored as verified,
// or whose state forbids a replay without Force.
var ErrNotReplayable = errors.New("event cannot be replayed")

// ErrNotFound is returned when no inbox row exists for the event.
var ErrNotFound = errors.New("event not found")

// ReplayTarget says where a provider's events are enqueued: the outbox
// topic and the dotted paths of the aggregate id (the Kafka key), exactly
// as the receiver computes them.
type ReplayTarget struct {
	Topic           string
	AggregateIDPath []string
}

// ReplayRequest names one stored event to re-enqueue.
type ReplayRequest struct {
	Provider, EventID string
	// Force also replays an event in a final state (succeeded,
	// ignored_stale, skipped) or in processing; its dedupe row is removed so
	// the handler runs again (the version guard still protects the projection).
	Force       bool
	RequestedBy string // recorded in replays.requested_by
}

// ReplayResult describes one replay.
type ReplayResult struct {
	OutboxID      uuid.UUID
	PreviousState string
	PrevAttempts  int
}

// Replay re-enqueues a stored, verified event through the outbox, in one
// transaction: a new outbox row (the relay publishes it to the provider's
// topic), the inbox row back to pending with attempts reset, and a row in
// replays. Errors: ErrNotFound, ErrNotReplayable (unverified, or a final or
// in-flight state without Force), database errors.
func Replay(ctx context.Context, pool *pgxpool.Pool, target ReplayTarget, req ReplayRequest) (ReplayResult, error) {
	var res ReplayResult
	err := pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		var (
			typ, state string
			payload    []byte
			attempts   int32
			lastErr    *string
			verified   bool
		)
		err := tx.QueryRow(ctx, `SELECT event_type, payload, processing_state, attempts, last_error, verified
FROM inbox WHERE provider = $1 AND event_id = $2 FOR UPDATE`, req.Provider, req.EventID).
			Scan(&typ, &payload, &state, &attempts, &lastErr, &verified)
		if errors.Is(err, pgx.ErrNoRows) {
			return fmt.Errorf("%w: provider %s event %s", ErrNotFound, req.Provider, req.EventID)
		}
		if err != nil {
			return fmt.Errorf("read inbox row: %w", err)
		}
		if !verified {
			return fmt.Errorf("%w: event %s is not stored as verified", ErrNotReplayable, req.EventID)
		}
		if (Final(state) || state == StateProcessing) && !req.Force {
			return fmt.Errorf("%w: event %s is %s (use --force to process it again)", ErrNotReplayable, req.EventID, state)
		}
		agg := req.EventID
		for _, p := range target.AggregateIDPath {
			if v, ok := schemas.LookupPathJSON(payload, p); ok {
				agg = v
				break
			}
		}
		id, err := uuid.NewV7()
		if err != nil {
			return fmt.Errorf("outbox id: %w", err)
		}
		if _, err := tx.Exec(ctx, `INSERT INTO outbox (id, aggregatetype, aggregateid, type, payload, event_id, topic, event_time)
SELECT $1::uuid, $2::text, $3::text, $4::text, $5::jsonb, $6::text, $7::text, event_created_at FROM inbox WHERE provider = $2 AND event_id = $6`,
			id, req.Provider, agg, typ, payload, req.EventID, target.Topic); err != nil {
			return fmt.Errorf("insert outbox: %w", err)
		}
		if _, err := tx.Exec(ctx, `UPDATE inbox SET processing_state = 'pending', attempts = 0, last_error = NULL,
  last_error_class = NULL, next_attempt_at = NULL, processed_at = NULL, replays = replays + 1, updated_at = now()
WHERE provider = $1 AND event_id = $2`, req.Provider, req.EventID); err != nil {
			return fmt.Errorf("reset inbox row: %w", err)
		}
		if req.Force {
			if _, err := tx.Exec(ctx, `DELETE FROM processed_events WHERE provider = $1 AND event_id = $2`, req.Provider, req.EventID); err != nil {
				return fmt.Errorf("clear dedupe row: %w", err)
			}
		}
		if _, err := tx.Exec(ctx, `INSERT INTO replays (provider, event_id, outbox_id, previous_state, previous_attempts, previous_error, forced, requested_by)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`, req.Provider, req.EventID, id, state, attempts, lastErr, req.Force, req.RequestedBy); err != nil {
			return fmt.Errorf("record replay: %w", err)
		}
		res = ReplayResult{OutboxID: id, PreviousState: state, PrevAttempts: int(attempts)}
		return nil
	})
	return res, err
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

// FindDead lists dead events matching f, oldest first.
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
