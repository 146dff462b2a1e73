package relay

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/twmb/franz-go/pkg/kgo"
)

// Publishing paths (the "path" label of the metrics).
const (
	pathStream     = "stream"
	pathDispatcher = "dispatcher"
	pathPoll       = "poll"
	pathSnapshot   = "snapshot"
)

// claimSQL takes the oldest unsent rows at least $2 old (with seq at most
// $3, created before $4: see horizon), skipping rows
// another transaction holds, and drops from the batch every row whose key
// has an earlier unsent row outside the batch (locked elsewhere or not old
// enough): per-key order holds even when rows are skipped. Its cost grows
// with the batch, not with the backlog. Nothing
// is selected by a cursor, so a row whose transaction commits late (a lower
// seq than rows already published) is still found: out-of-order commits are
// never skipped.
const claimSQL = `
WITH cand AS (
  SELECT id, seq, topic, aggregateid FROM outbox
  WHERE published_at IS NULL AND created_at <= now() - $2::interval AND seq <= $3 AND created_at < $4
  ORDER BY seq LIMIT $1
  FOR UPDATE SKIP LOCKED
), skipped AS (
  -- Unsent rows ordered before the batch's last row but not in it: locked
  -- by another transaction or not old enough. A key with such a row keeps
  -- its later rows out of this batch.
  SELECT p.topic, p.aggregateid, min(p.seq) AS b
  FROM outbox p
  WHERE p.published_at IS NULL AND p.seq < (SELECT max(seq) FROM cand) AND p.id NOT IN (SELECT id FROM cand)
  GROUP BY p.topic, p.aggregateid
)
SELECT o.id::text, o.aggregatetype, o.aggregateid, o.type, o.payload::text, o.event_id, o.topic, o.created_at, o.seq, o.event_time, o.traceparent
FROM cand c JOIN outbox o ON o.id = c.id
LEFT JOIN skipped b ON b.topic = c.topic AND b.aggregateid = c.aggregateid
WHERE b.b IS NULL OR c.seq < b.b
ORDER BY c.seq`

// pollLoop publishes unsent rows older than minAge in batches, each in one
// transaction: claim, produce, wait for every acknowledgement, delete or
// mark the rows, commit. A Kafka error rolls the batch back (its rows stay
// unsent) and ends the loop with the error. It sleeps idle when a batch
// came back empty and a tenth of it when the batch was not full.
func (r *Relay) pollLoop(ctx context.Context, path string, minAge, idle time.Duration) error {
	if path == pathPoll {
		r.markReady()
	}
	for {
		n, err := r.pollStep(ctx, path, minAge)
		if ctx.Err() != nil {
			return nil
		}
		if err != nil {
			return err
		}
		// Empty: sleep the poll interval. Partial: rows are trickling in;
		// come back sooner so they do not wait a whole interval.
		wait := time.Duration(0)
		switch {
		case n == 0:
			wait = idle
		case n < r.cfg.Relay.BatchSize:
			wait = idle / 10
		}
		if wait > 0 {
			select {
			case <-ctx.Done():
				return nil
			case <-time.After(wait):
			}
		}
	}
}

// pollStep publishes one batch; the dispatcher's stays behind the stream
// (see horizon).
func (r *Relay) pollStep(ctx context.Context, path string, minAge time.Duration) (int, error) {
	var before time.Time
	if path == pathDispatcher {
		var ok bool
		var err error
		if before, ok, err = r.dispatchLimit(ctx); err != nil || !ok {
			return 0, err
		}
	}
	return r.pollOnce(ctx, path, minAge, math.MaxInt64, before)
}

// pollOnce publishes one batch of unsent rows at least minAge old with seq at
// most maxSeq, created before before (the zero time: no bound), and reports
// how many it published.
func (r *Relay) pollOnce(ctx context.Context, path string, minAge time.Duration, maxSeq int64, before time.Time) (int, error) {
	tx, err := r.cfg.Pool.Begin(ctx)
	if err != nil {
		return 0, fmt.Errorf("%s: begin: %w", path, err)
	}
	defer tx.Rollback(context.Background()) //nolint:errcheck // no-op after commit
	// The outbox grows and shrinks faster than autovacuum's statistics
	// follow; with stale estimates the planner would read every unsent row
	// and sort it for each batch. Walking the seq index in order keeps a
	// claim proportional to the batch. The commit only finishes published
	// rows: losing it in a crash merely publishes them again, so it need not
	// wait for a WAL flush.
	if _, err := tx.Exec(ctx, `SELECT set_config('enable_bitmapscan', 'off', true), set_config('enable_seqscan', 'off', true),
		set_config('synchronous_commit', 'off', true)`); err != nil {
		return 0, fmt.Errorf("%s: %w", path, err)
	}
	rows, err := claim(ctx, tx, r.cfg.Relay.BatchSize, minAge, maxSeq, before)
	if err != nil {
		return 0, fmt.Errorf("%s: %w", path, err)
	}
	if len(rows) == 0 {
		return 0, tx.Commit(ctx)
	}
	if path == pathDispatcher {
		r.log.Info("dispatcher re-publishing unsent outbox rows", "rows", len(rows), "older_than", minAge)
	}
	if path == pathSnapshot {
		r.log.Info("new slot: publishing outbox rows written before it", "rows", len(rows))
	}
	if err := r.ensureTopics(ctx, topicsOf(rows)...); err != nil {
		return 0, err
	}
	if err := r.produceAll(ctx, rows, path); err != nil {
		return 0, err
	}
	ids := make([]string, len(rows))
	for i, row := range rows {
		ids[i] = row.ID
	}
	// The claim holds every row's lock: none can be missing.
	if _, err := r.finish(ctx, tx, ids); err != nil {
		return 0, fmt.Errorf("%s: %w", path, err)
	}
	if err := tx.Commit(ctx); err != nil {
		return 0, fmt.Errorf("%s: commit: %w", path, err)
	}
	return len(rows), nil
}

func claim(ctx context.Context, tx pgx.Tx, limit int, minAge time.Duration, maxSeq int64, before time.Time) ([]*Row, error) {
	// Unnamed statement: planned for these values every time, never a
	// cached generic plan (whose guesses about the backlog go stale).
	q, err := tx.Query(ctx, claimSQL, pgx.QueryExecModeExec, limit, minAge, maxSeq, createdBefore(before))
	if err != nil {
		return nil, fmt.Errorf("claim outbox rows: %w", err)
	}
	defer q.Close()
	var out []*Row
	for q.Next() {
		row := &Row{}
		var payload string
		var at, tp *string
		if err := q.Scan(&row.ID, &row.AggregateType, &row.AggregateID, &row.Type, &payload, &row.EventID,
			&row.Topic, &row.CreatedAt, &row.Seq, &at, &tp); err != nil {
			return nil, fmt.Errorf("scan outbox row: %w", err)
		}
		row.Payload = []byte(payload)
		if at != nil {
			row.EventTime = *at
		}
		if tp != nil {
			row.Traceparent = *tp
		}
		out = append(out, row)
	}
	if err := q.Err(); err != nil {
		return nil, fmt.Errorf("claim outbox rows: %w", err)
	}
	return out, nil
}

// produceAll produces rows in order and waits for every acknowledgement;
// it returns the first error.
func (r *Relay) produceAll(ctx context.Context, rows []*Row, path string) error {
	var (
		wg       sync.WaitGroup
		mu       sync.Mutex
		firstErr error
	)
	wg.Add(len(rows))
	for _, row := range rows {
		created := row.CreatedAt
		rec, end := r.startPublish(ctx, row, path)
		r.cl.Produce(ctx, rec, func(rec *kgo.Record, err error) {
			defer wg.Done()
			end(rec, err)
			if err != nil {
				r.m.errors.WithLabelValues(rec.Topic).Inc()
				mu.Lock()
				if firstErr == nil {
					firstErr = err
				}
				mu.Unlock()
				return
			}
			r.m.published.WithLabelValues(rec.Topic, path).Inc()
			if !created.IsZero() {
				r.m.latency.WithLabelValues(path).Observe(r.cfg.Now().Sub(created).Seconds())
			}
		})
	}
	wg.Wait()
	if firstErr != nil {
		if errors.Is(firstErr, context.Canceled) && ctx.Err() != nil {
			return ctx.Err()
		}
		return fmt.Errorf("%s: produce: %w", path, firstErr)
	}
	return nil
}
