package consumers

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// processing_state of an inbox row. The receiver writes pending; consumers
// and the replay tool move it:
//
//	pending ──claim──▶ processing ──effect applied──────────▶ succeeded
//	                       │      ──older or equal version──▶ ignored_stale
//	                       │      ──no handler for the type─▶ skipped
//	                       ├──transient failure, retries left──▶ retrying ──claim──▶ processing
//	                       └──permanent failure or retries exhausted──▶ dead
//	dead | retrying | pending | processing ──replay──▶ pending (attempts reset to 0)
//	succeeded | ignored_stale | skipped ──replay --force──▶ pending
//
// succeeded, ignored_stale and skipped are final: a record of a finished
// event (a Kafka duplicate, a stale retry copy) is counted as a duplicate
// and changes nothing. attempts counts claims since the last replay;
// last_error and last_error_class describe the latest failure and are
// cleared on success.
const (
	StatePending      = "pending"
	StateProcessing   = "processing"
	StateSucceeded    = "succeeded"
	StateIgnoredStale = "ignored_stale"
	StateSkipped      = "skipped"
	StateRetrying     = "retrying"
	StateDead         = "dead"
)

// Final reports whether state is a final success state.
func Final(state string) bool {
	return state == StateSucceeded || state == StateIgnoredStale || state == StateSkipped
}

// Outcomes of processing one record, the outcome label of
// gatehouse_consumer_records_processed_total.
const (
	OutcomeOK           = "ok"
	OutcomeRetried      = "retried"
	OutcomeDeadLettered = "dead_lettered"
	OutcomeStale        = "stale_ignored"
	OutcomeDuplicate    = "duplicate"
	OutcomeSkipped      = "skipped"
)

// store is the consumers' SQL over inbox and the projection tables.
type store struct{ pool *pgxpool.Pool }

// claim moves the inbox row to processing and counts the attempt. It
// returns the state found: a final state means the event is done (nothing
// was changed); errNoInbox means no verified row exists.
func (s store) claim(ctx context.Context, provider, eventID string) (prev string, attempts int, err error) {
	const q = `
WITH prev AS (
  SELECT provider, event_id, processing_state FROM inbox
  WHERE provider = $1 AND event_id = $2 AND verified FOR UPDATE
), upd AS (
  UPDATE inbox i SET processing_state = 'processing', attempts = i.attempts + 1,
         processing_started_at = now(), next_attempt_at = NULL, updated_at = now()
  FROM prev WHERE i.provider = prev.provider AND i.event_id = prev.event_id
    AND prev.processing_state NOT IN ('succeeded', 'ignored_stale', 'skipped')
  RETURNING i.attempts
)
SELECT prev.processing_state, coalesce((SELECT attempts FROM upd), 0) FROM prev`
	var n int32
	err = s.pool.QueryRow(ctx, q, provider, eventID).Scan(&prev, &n)
	if errors.Is(err, pgx.ErrNoRows) {
		return "", 0, errNoInbox
	}
	if err != nil {
		return "", 0, fmt.Errorf("claim inbox row: %w", err)
	}
	return prev, int(n), nil
}

// apply performs the business effect exactly once per event, in one
// transaction: the event-id dedupe row, the projection write under the
// version guard, the effect log row and the inbox state. eff nil records a
// skipped event. It returns OutcomeOK, OutcomeStale, OutcomeSkipped or
// OutcomeDuplicate (the event id was already processed; nothing changed).
func (s store) apply(ctx context.Context, ev *Event, eff *Effect) (string, error) {
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return "", fmt.Errorf("begin apply: %w", err)
	}
	defer tx.Rollback(context.WithoutCancel(ctx))
	outcome, state := OutcomeSkipped, StateSkipped
	var objID *string
	var version *int64
	if eff != nil {
		outcome, state, objID, version = OutcomeOK, StateSucceeded, &eff.ObjectID, &eff.Version
	}
	tag, err := tx.Exec(ctx, `INSERT INTO processed_events (provider, event_id, outcome, object_id, version)
VALUES ($1, $2, $3, $4, $5) ON CONFLICT (provider, event_id) DO NOTHING`, ev.Provider, ev.ID, state, objID, version)
	if err != nil {
		return "", fmt.Errorf("dedupe event: %w", err)
	}
	if tag.RowsAffected() == 0 {
		// Already processed: restore the inbox row's final state from the dedupe row.
		if _, err := tx.Exec(ctx, `UPDATE inbox i SET processing_state = pe.outcome,
  processed_at = coalesce(i.processed_at, pe.processed_at), updated_at = now()
FROM processed_events pe WHERE pe.provider = i.provider AND pe.event_id = i.event_id
  AND i.provider = $1 AND i.event_id = $2`, ev.Provider, ev.ID); err != nil {
			return "", fmt.Errorf("restore final state: %w", err)
		}
		if err := tx.Commit(ctx); err != nil {
			return "", fmt.Errorf("commit duplicate: %w", err)
		}
		return OutcomeDuplicate, nil
	}
	if eff != nil {
		var old *int64
		err := tx.QueryRow(ctx, `SELECT version FROM provider_objects WHERE provider = $1 AND object_id = $2 FOR UPDATE`,
			ev.Provider, eff.ObjectID).Scan(&old)
		if err != nil && !errors.Is(err, pgx.ErrNoRows) {
			return "", fmt.Errorf("read projection: %w", err)
		}
		tag, err := tx.Exec(ctx, `INSERT INTO provider_objects AS o (provider, object_id, object_type, version, data, last_event_id)
VALUES ($1, $2, $3, $4, $5, $6)
ON CONFLICT (provider, object_id) DO UPDATE SET object_type = EXCLUDED.object_type, version = EXCLUDED.version,
  data = EXCLUDED.data, last_event_id = EXCLUDED.last_event_id, updated_at = now()
WHERE o.version < EXCLUDED.version`, ev.Provider, eff.ObjectID, eff.ObjectType, eff.Version, []byte(eff.Data), ev.ID)
		if err != nil {
			return "", fmt.Errorf("write projection: %w", err)
		}
		if tag.RowsAffected() == 0 {
			outcome, state = OutcomeStale, StateIgnoredStale
			if _, err := tx.Exec(ctx, `UPDATE processed_events SET outcome = 'ignored_stale' WHERE provider = $1 AND event_id = $2`,
				ev.Provider, ev.ID); err != nil {
				return "", fmt.Errorf("record stale: %w", err)
			}
		} else if _, err := tx.Exec(ctx, `INSERT INTO provider_object_changes (provider, object_id, event_id, event_type, old_version, new_version)
VALUES ($1, $2, $3, $4, $5, $6)`, ev.Provider, eff.ObjectID, ev.ID, ev.Type, old, eff.Version); err != nil {
			return "", fmt.Errorf("log effect: %w", err)
		}
	}
	if _, err := tx.Exec(ctx, `UPDATE inbox SET processing_state = $3, processed_at = now(), updated_at = now(),
  last_error = NULL, last_error_class = NULL, next_attempt_at = NULL WHERE provider = $1 AND event_id = $2`,
		ev.Provider, ev.ID, state); err != nil {
		return "", fmt.Errorf("finish inbox row: %w", err)
	}
	if err := tx.Commit(ctx); err != nil {
		return "", fmt.Errorf("commit effect: %w", err)
	}
	return outcome, nil
}

// fail records a failed attempt: retrying with the next due time, or dead.
// A final row is left alone (a late failure of a duplicate copy).
func (s store) fail(ctx context.Context, provider, eventID, state, class, msg string, next *time.Time) error {
	_, err := s.pool.Exec(ctx, `UPDATE inbox SET processing_state = $3, last_error = $4, last_error_class = $5,
  next_attempt_at = $6, updated_at = now()
WHERE provider = $1 AND event_id = $2 AND processing_state NOT IN ('succeeded', 'ignored_stale', 'skipped')`,
		provider, eventID, state, msg, class, next)
	if err != nil {
		return fmt.Errorf("record %s: %w", state, err)
	}
	return nil
}
