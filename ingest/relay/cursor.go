package relay

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
)

// The outbox is an append-only log (migrations/00001_baseline.sql): the
// relay never deletes or updates a published row. How far it got is one
// row per slot in outbox_cursor, a PostgreSQL snapshot: every outbox row
// whose writing transaction (outbox.txid) is visible in it has been
// acknowledged by Kafka. A window is the set of rows visible in a newer
// snapshot but not in the cursor; windows never overlap and never leave a
// gap, whatever order transactions commit in (PgQ's design), and the
// cursor moves forward once per window, not once per row.

// cursorInitSQL gives the slot its cursor on first use: where the relay
// furthest behind is (the smallest xmax), so a relay added beside others,
// or one whose slot was renamed, neither skips what they have not
// published nor publishes the whole retained log again; with no relay yet,
// the default row '*' (written by the migration: every row written since
// is unpublished).
const cursorInitSQL = `INSERT INTO outbox_cursor (slot, snap)
SELECT $1, snap FROM outbox_cursor ORDER BY slot = '*', pg_snapshot_xmax(snap) LIMIT 1
ON CONFLICT (slot) DO NOTHING`

// cursorSaveSQL moves the cursor forward only: a snapshot taken later has
// an xmax at least as high and sees every transaction an earlier one saw.
const cursorSaveSQL = `UPDATE outbox_cursor SET snap = $2::pg_snapshot, updated_at = now()
WHERE slot = $1 AND pg_snapshot_xmax(snap) <= pg_snapshot_xmax($2::pg_snapshot)`

// A window ($1, $2] holds the rows whose transaction is visible in $2 and
// not in $1: the transactions still in progress in $1 (its xip list) and
// those from $1's xmax on. It is read in two parts, each in (txid, seq)
// order from the partitions' (txid, seq) indexes, so a page costs the page
// and a transaction left open for hours (which holds every snapshot's xmin
// back) costs one index probe per window, not a rescan of everything
// written since it began. Every xip transaction is below $1's xmax, so the
// parts follow each other in (txid, seq) order: per-transaction insertion
// order (per-key order within a delivery batch) and, across transactions,
// the order they began in. $3, $4: the last (txid, seq) read.
const (
	windowColumns = `SELECT id::text, aggregatetype, aggregateid, type, payload::text, event_id, topic, created_at, seq, event_time, traceparent, txid::text AS txid_text, via
FROM outbox`
	windowInProgressSQL = windowColumns + `
WHERE txid = ANY(ARRAY(SELECT pg_snapshot_xip($1::pg_snapshot)))
  AND pg_visible_in_snapshot(txid, $2::pg_snapshot) AND (txid, seq) > ($3::xid8, $4::bigint)
ORDER BY outbox.txid, outbox.seq
LIMIT $5`
	windowNewerSQL = windowColumns + `
WHERE txid >= pg_snapshot_xmax($1::pg_snapshot) AND txid < pg_snapshot_xmax($2::pg_snapshot)
  AND pg_visible_in_snapshot(txid, $2::pg_snapshot) AND (txid, seq) > ($3::xid8, $4::bigint)
ORDER BY outbox.txid, outbox.seq
LIMIT $5`
)

// loadCursor returns the slot's cursor, creating it from the default.
func (r *Relay) loadCursor(ctx context.Context) (string, error) {
	if _, err := r.cfg.Pool.Exec(ctx, cursorInitSQL, r.cfg.Relay.Slot); err != nil {
		return "", fmt.Errorf("outbox cursor: %w", err)
	}
	var snap string
	err := r.cfg.Pool.QueryRow(ctx, `SELECT snap::text FROM outbox_cursor WHERE slot = $1`, r.cfg.Relay.Slot).Scan(&snap)
	if errors.Is(err, pgx.ErrNoRows) {
		return "", errors.New("outbox cursor: no row for the slot and no default ('*') row; was the baseline migration applied?")
	}
	if err != nil {
		return "", fmt.Errorf("outbox cursor: %w", err)
	}
	return snap, nil
}

// saveCursor moves the slot's cursor to snap (never backwards). Its commit
// need not wait for a WAL flush: losing it in a crash only publishes a
// window again (at least once).
func (r *Relay) saveCursor(ctx context.Context, snap string) error {
	err := pgx.BeginFunc(ctx, r.cfg.Pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SET LOCAL synchronous_commit = off`); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, cursorSaveSQL, r.cfg.Relay.Slot, snap)
		return err
	})
	if err != nil {
		return fmt.Errorf("save the outbox cursor: %w", err)
	}
	r.m.cursorMoves.Inc()
	return nil
}

// currentSnapshot is the server's snapshot now: every transaction visible
// in it committed before this call.
func (r *Relay) currentSnapshot(ctx context.Context) (string, error) {
	var snap string
	if err := r.cfg.Pool.QueryRow(ctx, `SELECT pg_current_snapshot()::text`).Scan(&snap); err != nil {
		return "", fmt.Errorf("take a snapshot: %w", err)
	}
	return snap, nil
}

// prefetchPages is how many pages of a window are read ahead of the one
// being produced: reading the next page overlaps producing this one.
const prefetchPages = 2

// publishWindow publishes every row the cursor has not passed and that is
// committed now, then moves the cursor past them once Kafka acknowledged
// every one of them. A reader goroutine reads the window in pages of
// BatchSize, in (txid, seq) order, up to prefetchPages ahead; the pages
// are produced in that order without waiting for each page's
// acknowledgements (the producer's buffer, MaxBufferedRecords, bounds
// what is in flight). It returns how many rows it produced. An error
// leaves the cursor where it was: the window is published again (at
// least once), never skipped.
func (r *Relay) publishWindow(ctx context.Context, path string) (int, error) {
	from, err := r.loadCursor(ctx)
	if err != nil {
		return 0, err
	}
	to, err := r.currentSnapshot(ctx)
	if err != nil {
		return 0, err
	}
	rctx, cancel := context.WithCancel(ctx)
	defer cancel()
	pages := make(chan []*Row, prefetchPages)
	readErr := make(chan error, 1)
	go func() {
		defer close(pages)
		readErr <- r.readWindow(rctx, path, from, to, pages)
	}()
	a := &acks{}
	var topicErr error
	total := 0
	for rows := range pages {
		if topicErr != nil || a.err() != nil {
			cancel() // stop reading; drain what was read
			continue
		}
		switch path {
		case pathDispatcher:
			r.log.Info("dispatcher publishing outbox rows while the stream is down", "rows", len(rows))
		case pathSnapshot:
			r.log.Info("new slot: publishing outbox rows written before it", "rows", len(rows))
		}
		if topicErr = r.ensureTopics(ctx, topicsOf(rows)...); topicErr != nil {
			continue
		}
		r.produceRows(ctx, rows, path, a)
		total += len(rows)
	}
	err = <-readErr
	werr := a.wait()
	if topicErr != nil {
		return total, topicErr
	}
	if werr != nil {
		if errors.Is(werr, context.Canceled) && ctx.Err() != nil {
			return total, ctx.Err()
		}
		return total, fmt.Errorf("%s: produce: %w", path, werr)
	}
	if err != nil {
		return total, err
	}
	if from != to {
		if err := r.saveCursor(ctx, to); err != nil {
			return total, err
		}
	}
	return total, nil
}

// readWindow sends the window (from, to] to pages, page by page, in
// (txid, seq) order: its in-progress part, then its newer part.
func (r *Relay) readWindow(ctx context.Context, path, from, to string, pages chan<- []*Row) error {
	lastTxid, lastSeq := "0", int64(0)
	for _, part := range []string{windowInProgressSQL, windowNewerSQL} {
		for {
			rows, err := r.page(ctx, part, from, to, lastTxid, lastSeq)
			if err != nil {
				return fmt.Errorf("%s: %w", path, err)
			}
			if len(rows) == 0 {
				break
			}
			select {
			case pages <- rows:
			case <-ctx.Done():
				return ctx.Err()
			}
			last := rows[len(rows)-1]
			lastTxid, lastSeq = last.txid, last.Seq
			if len(rows) < r.cfg.Relay.BatchSize {
				break
			}
		}
	}
	return nil
}

// page reads one page of a part of the window (from, to] after (txid, seq).
func (r *Relay) page(ctx context.Context, part, from, to, txid string, seq int64) ([]*Row, error) {
	return readPage(ctx, r.cfg.Pool, part, from, to, txid, seq, r.cfg.Relay.BatchSize)
}

// txBeginner begins a transaction: the relay's pool, or a test's connection.
type txBeginner interface {
	BeginTx(ctx context.Context, opts pgx.TxOptions) (pgx.Tx, error)
}

// readPage reads up to limit rows of a part of the window (from, to]
// after (txid, seq), in one read-only transaction on db.
func readPage(ctx context.Context, db txBeginner, part, from, to, txid string, seq int64, limit int) (out []*Row, err error) {
	err = pgx.BeginTxFunc(ctx, db, pgx.TxOptions{AccessMode: pgx.ReadOnly}, func(tx pgx.Tx) error {
		// A partition's statistics trail its rows (a new partition has none
		// until autovacuum analyzes it): planned on estimates, a page over
		// a large window became a bitmap scan of the whole window and a
		// sort, every page. Walking the (txid, seq) indexes in order keeps a
		// page's cost the page's (TestWindowReadsDoNotDependOnStatistics).
		if _, err := tx.Exec(ctx, `SELECT set_config('enable_bitmapscan', 'off', true), set_config('enable_seqscan', 'off', true),
			set_config('enable_sort', 'off', true)`); err != nil {
			return err
		}
		// Unnamed statement: planned for these values every time, never a
		// cached generic plan.
		q, err := tx.Query(ctx, part, pgx.QueryExecModeExec, from, to, txid, seq, limit)
		if err != nil {
			return err
		}
		out, err = scanRows(q)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("read outbox window: %w", err)
	}
	return out, nil
}

func scanRows(q pgx.Rows) ([]*Row, error) {
	defer q.Close()
	var out []*Row
	for q.Next() {
		row := &Row{}
		var payload string
		var at, tp, via *string
		if err := q.Scan(&row.ID, &row.AggregateType, &row.AggregateID, &row.Type, &payload, &row.EventID,
			&row.Topic, &row.CreatedAt, &row.Seq, &at, &tp, &row.txid, &via); err != nil {
			return nil, fmt.Errorf("scan outbox row: %w", err)
		}
		row.Payload = []byte(payload)
		if at != nil {
			row.EventTime = *at
		}
		if tp != nil {
			row.Traceparent = *tp
		}
		if via != nil {
			row.Via = *via
		}
		out = append(out, row)
	}
	return out, q.Err()
}
