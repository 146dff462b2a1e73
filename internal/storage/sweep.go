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
	var total int64
	for {
		tag, err := conn.Exec(ctx, q, keep, sweepBatch)
		if err != nil {
			return total, fmt.Errorf("delete old %s: %w", table, err)
		}
		total += tag.RowsAffected()
		if tag.RowsAffected() < sweepBatch || ctx.Err() != nil {
			return total, nil
		}
	}
}
