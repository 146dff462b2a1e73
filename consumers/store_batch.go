package consumers

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/gatehouse/gatehouse/consumers/event"
)

// eventKey names one event; receivedAt (zero: unknown) is the hint that
// finds its inbox row in one partition.
type eventKey struct {
	provider, id string
	receivedAt   time.Time
}

// claim is what consumers_claim_many found for one event.
type claim struct {
	found      bool      // a verified inbox row exists
	prev       string    // its state before the claim
	attempts   int       // attempts after the claim (0: nothing claimed)
	receivedAt time.Time // the row's received_at
}

// claimMany claims the inbox rows of keys in one statement
// (consumers_claim_many in migrations/00001_baseline.sql):
// each row is looked up in the partition of its key's receivedAt, and in
// every partition when that finds nothing. Pass keys sorted: rows are
// locked in that order.
func (s store) claimMany(ctx context.Context, keys []eventKey) ([]claim, error) {
	provs, ids, ats := make([]string, len(keys)), make([]string, len(keys)), make([]*time.Time, len(keys))
	for i, k := range keys {
		provs[i], ids[i] = k.provider, k.id
		if !k.receivedAt.IsZero() {
			ats[i] = &keys[i].receivedAt
		}
	}
	// One implicit transaction (a batch is sent with one Sync): the
	// setting holds for the claim's statements.
	b := &pgx.Batch{}
	b.Queue(genericPlans)
	b.Queue(`SELECT o_ord, o_prev, o_attempts, o_received_at FROM consumers_claim_many($1, $2, $3)`, provs, ids, ats)
	br := s.pool.SendBatch(ctx, b)
	defer br.Close()
	if _, err := br.Exec(); err != nil {
		return nil, fmt.Errorf("claim inbox rows: %w", err)
	}
	rows, err := br.Query()
	if err != nil {
		return nil, fmt.Errorf("claim inbox rows: %w", err)
	}
	defer rows.Close()
	out := make([]claim, len(keys))
	for rows.Next() {
		var (
			ord, n int32
			prev   *string
			at     *time.Time
		)
		if err := rows.Scan(&ord, &prev, &n, &at); err != nil {
			return nil, fmt.Errorf("claim inbox rows: %w", err)
		}
		if ord < 1 || int(ord) > len(keys) {
			return nil, fmt.Errorf("claim inbox rows: position %d out of range", ord)
		}
		if prev != nil && at != nil {
			out[ord-1] = claim{found: true, prev: *prev, attempts: int(n), receivedAt: *at}
		}
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("claim inbox rows: %w", err)
	}
	return out, nil
}

// genericPlans makes the statements of the consumers' functions
// (consumers_claim_many, consumers_apply and consumers_set_final) use
// their cached generic plans for the rest of the transaction. By default
// PostgreSQL planned the inbox updates anew on every call: a custom plan
// prunes the partitioned inbox at plan time, so it always looked cheaper
// than the generic plan, which prunes at execution.
const genericPlans = `SELECT set_config('plan_cache_mode', 'force_generic_plan', true)`

// applyItem is one event's effect to apply (eff nil: no effect, skipped).
type applyItem struct {
	ev  *event.Event
	eff *event.Effect
}

// applyMany applies the effects of items in one transaction, in order: one
// consumers_apply per event (the same dedupe row, version guard, effect log
// row and inbox state as apply), one commit for all. It returns each
// event's outcome. A deadlock or serialization failure retries the whole
// transaction (at most three times); any other error fails the batch and
// nothing of it is committed.
func (s store) applyMany(ctx context.Context, items []applyItem) ([]string, error) {
	out := make([]string, len(items))
	var err error
	for attempt := 1; attempt <= 3; attempt++ {
		err = pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
			b := &pgx.Batch{}
			b.Queue(genericPlans)
			for _, it := range items {
				var objID, objType *string
				var version *int64
				var data []byte
				if it.eff != nil {
					objID, objType, version, data = effectArgs(it.eff)
				}
				b.Queue(`SELECT consumers_apply($1, $2, $3, $4, $5, $6, $7, $8)`, it.ev.Provider, it.ev.ID, it.ev.Type,
					objID, objType, version, data, receivedAt(it.ev))
			}
			br := tx.SendBatch(ctx, b)
			if _, err := br.Exec(); err != nil {
				_ = br.Close()
				return fmt.Errorf("apply effects: %w", err)
			}
			for i, it := range items {
				var state string
				if err := br.QueryRow().Scan(&state); err != nil {
					_ = br.Close()
					return fmt.Errorf("apply effect of %s/%s: %w", it.ev.Provider, it.ev.ID, err)
				}
				o, ok := outcomes[state]
				if !ok {
					_ = br.Close()
					return fmt.Errorf("apply effect of %s/%s: unexpected result %q", it.ev.Provider, it.ev.ID, state)
				}
				out[i] = o
			}
			return br.Close()
		})
		if !retryable(err) {
			break
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(time.Duration(attempt*attempt) * 10 * time.Millisecond):
		}
	}
	if err != nil {
		return nil, err
	}
	return out, nil
}

// retryable reports a deadlock or serialization failure.
func retryable(err error) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) && (pe.Code == "40P01" || pe.Code == "40001")
}
