package auth

import (
	"context"
	"fmt"
	"time"
)

// purgeBatch bounds each delete of ended sessions and families.
const purgeBatch = 1000

// purgeEnded deletes, oldest first and in batches, the sessions that ended
// (revoked_at: logout, revocation or expiry) before cutoff and whose
// family's OP revocation is done (a pending one still needs the tokens),
// and then the refresh-token families whose OP revocation finished before
// cutoff and that no session or token row still names, with their
// refresh-token ledger (ON DELETE CASCADE).
// Each batch walks an index on the time it filters by (migrations/00001_baseline.sql), so
// a pass costs the rows it deletes, not the sessions kept. It returns how
// many sessions and families it deleted.
func (s *Store) purgeEnded(ctx context.Context, cutoff time.Time) (int64, error) {
	var total int64
	for _, q := range []string{
		`DELETE FROM auth_sessions WHERE ctid = ANY (ARRAY(
   SELECT s.ctid FROM auth_sessions s
   WHERE s.revoked_at < $1
     AND EXISTS (SELECT 1 FROM auth_refresh_families f WHERE f.id = s.family_id AND f.op_revoked_at IS NOT NULL)
   ORDER BY s.revoked_at LIMIT $2))`,
		`DELETE FROM auth_refresh_families WHERE ctid = ANY (ARRAY(
   SELECT f.ctid FROM auth_refresh_families f
   WHERE f.op_revoked_at < $1
     AND NOT EXISTS (SELECT 1 FROM auth_sessions x WHERE x.family_id = f.id)
     AND NOT EXISTS (SELECT 1 FROM auth_tokens t WHERE t.family_id = f.id)
   ORDER BY f.op_revoked_at LIMIT $2))`,
	} {
		for {
			tag, err := s.pool.Exec(ctx, q, cutoff, purgeBatch)
			if err != nil {
				return total, fmt.Errorf("purge ended sessions: %w", err)
			}
			total += tag.RowsAffected()
			if tag.RowsAffected() < purgeBatch || ctx.Err() != nil {
				break
			}
		}
	}
	if total > 0 {
		s.log.Info("ended sessions purged", "rows", total, "ended_before", cutoff)
	}
	return total, nil
}
