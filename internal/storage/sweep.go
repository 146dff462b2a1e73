package storage

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// sweepBatch bounds each DELETE so no statement holds many row locks or
// writes much WAL at once.
const sweepBatch = 5000

// DeleteOlder deletes the rows of table whose col is older than keep,
// oldest first, in batches, and returns how many. table and col are
// trusted identifiers (the stages' own tables).
func DeleteOlder(ctx context.Context, conn *pgx.Conn, table, col string, keep time.Duration) (int64, error) {
	t, c := pgx.Identifier{table}.Sanitize(), pgx.Identifier{col}.Sanitize()
	q := `DELETE FROM ` + t + ` WHERE ctid = ANY (ARRAY(SELECT ctid FROM ` + t + ` WHERE ` + c + ` < now() - $1::interval ORDER BY ` + c + ` LIMIT $2))`
	n, err := inBatches(ctx, conn, q, keep)
	if err != nil {
		return n, fmt.Errorf("delete old %s: %w", table, err)
	}
	return n, nil
}

// inBatches runs the batched delete q ($1 the age to keep, $2 the batch
// size, then extra) until a batch deletes fewer rows than sweepBatch or
// ctx ends, and returns how many rows it deleted.
func inBatches(ctx context.Context, conn *pgx.Conn, q string, keep time.Duration, extra ...any) (int64, error) {
	var total int64
	for {
		tag, err := conn.Exec(ctx, q, append([]any{keep, sweepBatch}, extra...)...)
		if err != nil {
			return total, err
		}
		total += tag.RowsAffected()
		if tag.RowsAffected() < sweepBatch || ctx.Err() != nil {
			return total, nil
		}
	}
}

// DeleteOlderPerProvider is DeleteOlder for a table with a provider column
// and an index on (provider, col): each provider in the table (found by a
// skip scan of that index, one probe per provider) loses its rows older
// than keep(provider), oldest first, in batches. Its cost follows the
// rows deleted and the number of providers, not the rows kept. It returns
// how many rows it deleted.
func DeleteOlderPerProvider(ctx context.Context, conn *pgx.Conn, table, col string, keep func(provider string) time.Duration) (int64, error) {
	t, c := pgx.Identifier{table}.Sanitize(), pgx.Identifier{col}.Sanitize()
	rows, err := conn.Query(ctx, `WITH RECURSIVE p AS (
  (SELECT provider FROM `+t+` ORDER BY provider LIMIT 1)
  UNION ALL
  SELECT (SELECT provider FROM `+t+` WHERE provider > p.provider ORDER BY provider LIMIT 1) FROM p WHERE p.provider IS NOT NULL
) SELECT provider FROM p WHERE provider IS NOT NULL`)
	if err != nil {
		return 0, fmt.Errorf("list providers of %s: %w", table, err)
	}
	providers, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return 0, fmt.Errorf("list providers of %s: %w", table, err)
	}
	q := `DELETE FROM ` + t + ` WHERE ctid = ANY (ARRAY(SELECT ctid FROM ` + t + ` WHERE provider = $3 AND ` + c + ` < now() - $1::interval ORDER BY ` + c + ` LIMIT $2))`
	var total int64
	for _, p := range providers {
		n, err := inBatches(ctx, conn, q, keep(p), p)
		total += n
		if err != nil {
			return total, fmt.Errorf("delete old %s of %q: %w", table, p, err)
		}
		if ctx.Err() != nil {
			return total, nil
		}
	}
	return total, nil
}
