package storage

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// reshape replaces the partitions of table that are wider than interval,
// have not ended and hold no row, so the configured width holds from the
// first partition on: the migration creates the first ones a day (the
// inbox, the keys) or an hour (the outbox) wide, whatever the
// configuration says, and a width changed in the configuration would
// otherwise reach only the partitions created after those already made
// ahead. Those not yet started are dropped (ensure creates them again at
// the configured width); the current one is replaced by one from its
// start to the next boundary of interval after now(). A partition holding
// a row keeps its width (the Writer's key lookups know partitions of
// several widths). Each replacement is one transaction holding the
// parent's ACCESS EXCLUSIVE lock, taken within a second or left for the
// next pass, so no row can arrive between the check and the drop and no
// moment is left without a partition. It returns the partitions dropped
// and created.
func reshape(ctx context.Context, conn *pgx.Conn, table string, interval time.Duration) (dropped, created []string, err error) {
	rows, err := conn.Query(ctx, `SELECT name, starts <= now() FROM storage_partitions
WHERE parent = $1 AND starts > '-infinity' AND ends > now() AND ends - starts > $2::interval
  AND (starts > now() OR date_bin($2::interval, now(), timestamptz '2000-01-01 00:00:00+00') + $2::interval < ends)
ORDER BY starts DESC`, table, interval)
	if err != nil {
		return nil, nil, fmt.Errorf("list partitions of %s: %w", table, err)
	}
	type part struct {
		Name    string
		Current bool
	}
	parts, err := pgx.CollectRows(rows, pgx.RowToStructByPos[part])
	if err != nil {
		return nil, nil, fmt.Errorf("list partitions of %s: %w", table, err)
	}
	for _, p := range parts { // newest first: the current one is last
		var made *string
		gone := false
		err := pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
			if _, err := tx.Exec(ctx, `SET LOCAL lock_timeout = '1s'`); err != nil {
				return err
			}
			if _, err := tx.Exec(ctx, `LOCK TABLE `+pgx.Identifier{table}.Sanitize()+` IN ACCESS EXCLUSIVE MODE`); err != nil {
				return err
			}
			var empty bool
			if err := tx.QueryRow(ctx, `SELECT NOT EXISTS (SELECT 1 FROM `+pgx.Identifier{p.Name}.Sanitize()+`)`).Scan(&empty); err != nil {
				return err
			}
			if !empty {
				return nil
			}
			var starts, ends time.Time
			if err := tx.QueryRow(ctx, `DELETE FROM storage_partitions WHERE name = $1 RETURNING starts, ends`, p.Name).Scan(&starts, &ends); err != nil {
				return err
			}
			if _, err := tx.Exec(ctx, `DROP TABLE `+pgx.Identifier{p.Name}.Sanitize()); err != nil {
				return err
			}
			gone = true
			if !p.Current {
				return nil
			}
			return tx.QueryRow(ctx, `SELECT storage_create_partition($1, $2,
  least($3, date_bin($4::interval, now(), timestamptz '2000-01-01 00:00:00+00') + $4::interval))`, table, starts, ends, interval).Scan(&made)
		})
		if err != nil {
			return dropped, created, fmt.Errorf("reshape partition %s to %s: %w", p.Name, interval, err)
		}
		if gone {
			dropped = append(dropped, p.Name)
		}
		if made != nil {
			created = append(created, *made)
		}
	}
	return dropped, created, nil
}
