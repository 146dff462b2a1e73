package reconcile

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// The provider's lock: one pass of a provider at a time over every
// instance (serve's schedule and `gatehouse reconcile`), held by the
// session of the pass's connection, so a crashed instance releases it.
const (
	tryLockSQL = `SELECT pg_try_advisory_lock(hashtextextended('gatehouse.reconcile:' || $1, 0))`
	unlockSQL  = `SELECT pg_advisory_unlock(hashtextextended('gatehouse.reconcile:' || $1, 0))`
)

// state is a provider's row of reconcile_passes: the durable cursor.
type state struct {
	covered                         *time.Time // covered_until
	partFrom, partBefore, partUntil *time.Time // the part a truncated pass left
}

// window is what one pass checks: the provider's items of [from, before],
// after which the cursor becomes until.
type window struct {
	from, before, until time.Time
	partial             bool // the rest of a truncated pass
}

func loadState(ctx context.Context, pool *pgxpool.Pool, provider string) (state, error) {
	var st state
	err := pool.QueryRow(ctx, `SELECT covered_until, partial_from, partial_before, partial_to FROM reconcile_passes WHERE provider = $1`,
		provider).Scan(&st.covered, &st.partFrom, &st.partBefore, &st.partUntil)
	if errors.Is(err, pgx.ErrNoRows) {
		return state{}, nil
	}
	if err != nil {
		return state{}, fmt.Errorf("read cursor: %w", err)
	}
	return st, nil
}

// window is the pass's window at now: the part a truncated pass left;
// else from the cursor less the overlap (the whole dedupe window on a
// first pass) to now; with since, (now-since, now]. It never starts
// before the dedupe window less margin: an older event's key may be gone.
func (r *Reconciler) window(st state, now time.Time, since time.Duration) window {
	floor := now.Add(-r.cfg.DedupeWindow + margin)
	var w window
	switch {
	case since > 0:
		w = window{from: now.Add(-since), before: now, until: now}
	case st.partFrom != nil && st.partBefore != nil && st.partUntil != nil:
		w = window{from: *st.partFrom, before: *st.partBefore, until: *st.partUntil, partial: true}
	case st.covered != nil:
		w = window{from: st.covered.Add(-r.cfg.Settings.Overlap), before: now, until: now}
	default:
		w = window{from: floor, before: now, until: now}
	}
	if w.from.Before(floor) {
		w.from = floor
	}
	return w
}

// next is the state after a successful pass over w: complete, the cursor
// moves to w.until; truncated at oldest, the part [w.from, oldest] is
// left to the next pass. An on-demand pass (adhoc) leaves the cursor.
func (st state) next(w window, truncated bool, oldest time.Time, adhoc bool) state {
	if adhoc {
		return st
	}
	if truncated {
		return state{covered: st.covered, partFrom: &w.from, partBefore: &oldest, partUntil: &w.until}
	}
	c := w.until
	if st.covered != nil && st.covered.After(c) {
		c = *st.covered
	}
	return state{covered: &c}
}

func markRunning(ctx context.Context, pool *pgxpool.Pool, provider, way string, at time.Time) error {
	_, err := pool.Exec(ctx, `INSERT INTO reconcile_passes (provider, way, started_at, result) VALUES ($1, $2, $3, 'running')
ON CONFLICT (provider) DO UPDATE SET way = excluded.way, started_at = excluded.started_at, finished_at = NULL, result = 'running', error = NULL`,
		provider, way, at)
	if err != nil {
		return fmt.Errorf("record the pass: %w", err)
	}
	return nil
}

func saveOK(ctx context.Context, pool *pgxpool.Pool, provider string, at time.Time, res Result, st state) error {
	_, err := pool.Exec(ctx, `UPDATE reconcile_passes SET finished_at = $2, result = 'ok', listed = $3, missing = $4, closed = $5,
  error = NULL, last_success_at = $2, covered_until = $6, partial_from = $7, partial_before = $8, partial_to = $9
WHERE provider = $1`, provider, at, res.Listed, len(res.Missing), res.Closed, st.covered, st.partFrom, st.partBefore, st.partUntil)
	if err != nil {
		return fmt.Errorf("move the cursor: %w", err)
	}
	return nil
}

func saveFailed(ctx context.Context, pool *pgxpool.Pool, provider string, at time.Time, res Result, cause error) error {
	_, err := pool.Exec(ctx, `UPDATE reconcile_passes SET finished_at = $2, result = 'failed', listed = $3, missing = $4, closed = $5, error = $6
WHERE provider = $1`, provider, at, res.Listed, len(res.Missing), res.Closed, cause.Error())
	return err
}

// stored returns which of ids the receiver remembers (a dedupe key of the
// provider): present or not, the Writer's own dedupe decides a write.
func stored(ctx context.Context, pool *pgxpool.Pool, provider string, ids []string) (map[string]bool, error) {
	rows, err := pool.Query(ctx, `SELECT DISTINCT event_id FROM dedupe_keys WHERE provider = $1 AND event_id = ANY($2::text[])`, provider, ids)
	if err != nil {
		return nil, fmt.Errorf("look the ids up: %w", err)
	}
	ids, err = pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, fmt.Errorf("look the ids up: %w", err)
	}
	out := make(map[string]bool, len(ids))
	for _, id := range ids {
		out[id] = true
	}
	return out, nil
}

// storedSuffix returns which of guids are stored as the suffix of an event
// id "<hook id>:<guid>" (GitHub, when the hook id is not configured: an
// App's hook). It reads every key of the provider (no index serves a
// suffix): configure hook_id to look the ids up by index instead.
func storedSuffix(ctx context.Context, pool *pgxpool.Pool, provider string, guids []string) (map[string]bool, error) {
	rows, err := pool.Query(ctx, `SELECT DISTINCT split_part(event_id, ':', 2) FROM dedupe_keys
WHERE provider = $1 AND split_part(event_id, ':', 2) = ANY($2::text[])`, provider, guids)
	if err != nil {
		return nil, fmt.Errorf("look the deliveries up: %w", err)
	}
	got, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, fmt.Errorf("look the deliveries up: %w", err)
	}
	out := make(map[string]bool, len(got))
	for _, g := range got {
		out[g] = true
	}
	return out, nil
}
