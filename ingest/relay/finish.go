package relay

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// finishRetryDelays is how long the stream waits before each new attempt to
// finish a published row whose delete (or mark) found nothing. PostgreSQL
// sends a commit to the replication stream once its WAL is flushed, a moment
// before the transaction becomes visible to other sessions; a record Kafka
// acknowledges within that moment finds no row to delete. The row appears
// within milliseconds: the first retries are short. A row still missing
// after the last one was finished by another path (the dispatcher, an
// earlier term): it is counted in gatehouse_relay_rows_unmatched_total.
var finishRetryDelays = []time.Duration{2 * time.Millisecond, 10 * time.Millisecond, 50 * time.Millisecond,
	250 * time.Millisecond, time.Second, 4 * time.Second}

// publishedSQL finishes published rows ($1: their ids): delete them, or
// mark them published (relay.on_published), and returns the ids it
// finished. Both are idempotent.
func (r *Relay) publishedSQL() string {
	if r.cfg.Relay.OnPublished == OnPublishedMark {
		return `UPDATE outbox SET published_at = now() WHERE id = ANY($1::text[]::uuid[]) AND published_at IS NULL RETURNING id::text`
	}
	return `DELETE FROM outbox WHERE id = ANY($1::text[]::uuid[]) RETURNING id::text`
}

// finish runs publishedSQL in q for ids and returns the ids it found no row
// for; it counts the rows it finished.
func (r *Relay) finish(ctx context.Context, q pgx.Tx, ids []string) (missing []string, err error) {
	rows, err := q.Query(ctx, r.publishedSQL(), ids)
	if err != nil {
		return nil, fmt.Errorf("finish published rows: %w", err)
	}
	done, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, fmt.Errorf("finish published rows: %w", err)
	}
	r.m.marked.Add(float64(len(done)))
	if len(done) == len(ids) {
		return nil, nil
	}
	found := make(map[string]bool, len(done))
	for _, id := range done {
		found[id] = true
	}
	for _, id := range ids {
		if !found[id] {
			missing = append(missing, id)
		}
	}
	return missing, nil
}

// markPublished finishes rows Kafka acknowledged (see publishedSQL) in
// batches of at most 10 000 and returns the ids it found no row for. It
// commits asynchronously (synchronous_commit off): losing this commit in a
// server crash only means the rows are published again (at least once),
// and skipping a WAL flush per batch matters at tens of thousands of rows
// per second.
func (r *Relay) markPublished(ctx context.Context, ids []string) ([]string, error) {
	var missing []string
	for len(ids) > 0 {
		n := min(len(ids), 10_000)
		m, err := r.markBatch(ctx, ids[:n])
		if err != nil {
			return nil, err
		}
		missing = append(missing, m...)
		ids = ids[n:]
	}
	return missing, nil
}

func (r *Relay) markBatch(ctx context.Context, ids []string) ([]string, error) {
	tx, err := r.cfg.Pool.Begin(ctx)
	if err != nil {
		return nil, fmt.Errorf("finish published rows: %w", err)
	}
	defer tx.Rollback(context.Background()) //nolint:errcheck // no-op after commit
	if _, err := tx.Exec(ctx, `SET LOCAL synchronous_commit = off`); err != nil {
		return nil, fmt.Errorf("finish published rows: %w", err)
	}
	missing, err := r.finish(ctx, tx, ids)
	if err != nil {
		return nil, err
	}
	if err := tx.Commit(ctx); err != nil {
		return nil, fmt.Errorf("finish published rows: %w", err)
	}
	return missing, nil
}

// retryQueue holds published rows whose finish found nothing yet, by the
// time of their next attempt.
type retryQueue struct {
	items []retryItem
}

type retryItem struct {
	ids     []string
	attempt int // index into finishRetryDelays of the wait before this attempt
	due     time.Time
}

func (q *retryQueue) add(ids []string, attempt int, now time.Time) {
	q.items = append(q.items, retryItem{ids: ids, attempt: attempt, due: now.Add(finishRetryDelays[attempt])})
}

// next is when the earliest item is due (zero when empty).
func (q *retryQueue) next() time.Time {
	var t time.Time
	for _, it := range q.items {
		if t.IsZero() || it.due.Before(t) {
			t = it.due
		}
	}
	return t
}

// retryDue makes one more attempt for every due item: rows found are
// finished, rows still missing wait for their next delay or, after the last
// one, are counted as unmatched.
func (r *Relay) retryDue(ctx context.Context, q *retryQueue, now time.Time) error {
	kept := q.items[:0]
	var due []retryItem
	for _, it := range q.items {
		if it.due.After(now) {
			kept = append(kept, it)
		} else {
			due = append(due, it)
		}
	}
	q.items = kept
	for _, it := range due {
		missing, err := r.markPublished(ctx, it.ids)
		if err != nil {
			q.items = append(q.items, it)
			return err
		}
		if len(missing) == 0 {
			continue
		}
		if it.attempt+1 < len(finishRetryDelays) {
			q.add(missing, it.attempt+1, now)
			continue
		}
		r.m.unmatched.Add(float64(len(missing)))
		r.log.Warn("published outbox rows were already finished by another path (a duplicate record on the topic)",
			"rows", len(missing))
	}
	return nil
}
