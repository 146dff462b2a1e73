package upkeep

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
)

// SweepReplayGuard deletes expired replay-guard records until ctx ends,
// every interval, in batches of at most batch rows (oldest first, through
// the expires_at index), at most 20 batches a round, so one round never
// holds a long transaction or scans the table. Errors are logged and the
// next round tries again.
func SweepReplayGuard(ctx context.Context, pool *pgxpool.Pool, interval time.Duration, batch int, log *slog.Logger) error {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		for range 20 {
			n, err := sweepReplayGuard(ctx, pool, time.Now(), batch)
			if err != nil {
				if ctx.Err() == nil {
					log.Warn("replay guard sweep", "err", err)
				}
				break
			}
			if n < int64(batch) {
				break
			}
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}

func sweepReplayGuard(ctx context.Context, pool *pgxpool.Pool, now time.Time, batch int) (int64, error) {
	tag, err := pool.Exec(ctx, `DELETE FROM ingest_replay_guard WHERE key IN (
		SELECT key FROM ingest_replay_guard WHERE expires_at <= $1 ORDER BY expires_at LIMIT $2)`, now, batch)
	if err != nil {
		return 0, fmt.Errorf("delete expired replay guard rows: %w", err)
	}
	return tag.RowsAffected(), nil
}
