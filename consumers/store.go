package consumers

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/gatehouse/gatehouse/consumers/event"
	"github.com/gatehouse/gatehouse/schemas"
)

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

// claim moves ev's inbox row to processing and counts the attempt (the
// claim of claimMany, for one event), and sets ev.ReceivedAt to the row's.
// It returns the state found: a final state means the event is done
// (nothing was changed); errNoInbox means no verified row exists.
func (s store) claim(ctx context.Context, ev *event.Event) (prev string, attempts int, err error) {
	c, err := s.claimMany(ctx, []eventKey{{ev.Provider, ev.ID, ev.ReceivedAt}})
	if err != nil {
		return "", 0, err
	}
	if !c[0].found {
		return "", 0, errNoInbox
	}
	ev.ReceivedAt = c[0].receivedAt
	return c[0].prev, c[0].attempts, nil
}

// receivedAt is ev's ReceivedAt as a query argument: NULL when unknown.
func receivedAt(ev *event.Event) *time.Time {
	if ev == nil || ev.ReceivedAt.IsZero() {
		return nil
	}
	return &ev.ReceivedAt
}

// outcomes maps consumers_apply's result to the processed outcome.
var outcomes = map[string]string{
	schemas.StateSucceeded: OutcomeOK, schemas.StateIgnoredStale: OutcomeStale, schemas.StateSkipped: OutcomeSkipped, "duplicate": OutcomeDuplicate,
}

// apply performs the business effect exactly once per event in one
// statement and transaction (consumers_apply): the event-id dedupe row, the
// projection write under the version guard, the effect log row and the
// inbox state. eff nil records a skipped event. It returns OutcomeOK,
// OutcomeStale, OutcomeSkipped or OutcomeDuplicate (the event id was already
// processed; nothing changed).
func (s store) apply(ctx context.Context, ev *event.Event, eff *event.Effect) (string, error) {
	var objID, objType *string
	var version *int64
	var data []byte
	if eff != nil {
		objID, objType, version, data = effectArgs(eff)
	}
	var state string
	if err := s.pool.QueryRow(ctx, `SELECT consumers_apply($1, $2, $3, $4, $5, $6, $7, $8)`,
		ev.Provider, ev.ID, ev.Type, objID, objType, version, data, receivedAt(ev)).Scan(&state); err != nil {
		return "", fmt.Errorf("apply effect: %w", err)
	}
	out, ok := outcomes[state]
	if !ok {
		return "", fmt.Errorf("apply effect: unexpected result %q", state)
	}
	return out, nil
}

// fail is recordFailure in stage event.StageApply, the issue's error joined.
func (s store) fail(ctx context.Context, provider, eventID string, at *time.Time, state, class, msg string, next *time.Time) error {
	ierr, err := s.recordFailure(ctx, provider, eventID, at, state, class, msg, "", next, event.StageApply)
	return errors.Join(err, ierr)
}

// recordFailure records a failed attempt: retrying with the next due time, or dead.
// A final row is left alone (a late failure of a duplicate copy). at (nil:
// unknown) is the event's received_at: the update reads its partition, and
// every partition only when that changed no row. In the same transaction
// the failure is counted into its failure issue (stage, the fingerprint
// of msg; the issue keeps summary, FailureSummary, not msg), only when the inbox row changed: the issue counts exactly the
// failures recorded. The issue is written under a savepoint: when it
// fails the inbox state is still recorded, and the issue's error returned
// beside nil (issueErr) for the caller to log.
func (s store) recordFailure(ctx context.Context, provider, eventID string, at *time.Time, state, class, msg, summary string, next *time.Time, stage string) (issueErr, err error) {
	const update = `UPDATE inbox SET processing_state = $3, last_error = $4, last_error_class = $5,
  next_attempt_at = $6, updated_at = now()
WHERE provider = $1 AND event_id = $2 AND processing_state <> ALL($7)`
	const returning = ` RETURNING received_at, event_type`
	args := []any{provider, eventID, state, msg, class, next, schemas.FinalStates()}
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return nil, fmt.Errorf("record %s: %w", state, err)
	}
	defer func() { _ = tx.Rollback(ctx) }()
	var rat time.Time
	var typ string
	found := false
	if at != nil {
		err := tx.QueryRow(ctx, update+` AND received_at = $8`+returning, append(args, *at)...).Scan(&rat, &typ)
		if err != nil && !errors.Is(err, pgx.ErrNoRows) {
			return nil, fmt.Errorf("record %s: %w", state, err)
		}
		found = err == nil
	}
	if !found {
		err := tx.QueryRow(ctx, update+returning, args...).Scan(&rat, &typ)
		if errors.Is(err, pgx.ErrNoRows) {
			return nil, nil // final, or no row: nothing recorded, nothing counted
		}
		if err != nil {
			return nil, fmt.Errorf("record %s: %w", state, err)
		}
	}
	issueErr = inSavepoint(ctx, tx, func(sp pgx.Tx) error {
		return recordIssue(ctx, sp, provider, eventID, typ, rat, stage, class, msg, summary, time.Now())
	})
	if err := tx.Commit(ctx); err != nil {
		return nil, fmt.Errorf("record %s: %w", state, err)
	}
	return issueErr, nil
}

// effectArgs are consumers_apply's object arguments of eff (not nil): an
// effect without an object (a forward) passes object type "forward" and no
// object id, which the baseline migration records as succeeded without a
// projection write.
func effectArgs(eff *event.Effect) (objID, objType *string, version *int64, data []byte) {
	if eff.ObjectID == "" {
		t := "forward"
		return nil, &t, nil, nil
	}
	return &eff.ObjectID, &eff.ObjectType, &eff.Version, eff.Data
}
