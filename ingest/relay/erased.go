package relay

import (
	"context"
	"fmt"
	"strconv"

	"github.com/jackc/pgx/v5"
)

// erasedSQL finds which of a transaction's rows an erasure reached after
// their insert (the baseline migration: admin.Erase lists every outbox row whose
// payload it replaced).
const erasedSQL = `SELECT outbox_id::text, erasure_id FROM outbox_erasures WHERE outbox_id = ANY($1::uuid[])`

// redactErased replaces the payload of each row of rows that was erased
// after its insert by the erasure marker the outbox row now holds
// ({"erased": true, "erasure_id": N}). A row decoded from the WAL carries
// the payload its INSERT wrote, which the erasure's UPDATE of the outbox
// row does not change; without this check replication mode would publish
// a payload erased before publication. It costs one indexed lookup per
// committed transaction on a table that holds only erased rows. An erasure
// that commits after the lookup (while the transaction's records are being
// produced) is not seen: the record was on its way to Kafka already, and
// docs/SECURITY.md#erasure says what Kafka keeps.
func (r *Relay) redactErased(ctx context.Context, rows []*Row) error {
	ids := make([]string, len(rows))
	for i, row := range rows {
		ids[i] = row.ID
	}
	erased, err := erasedOf(ctx, r.cfg.Pool, ids)
	if err != nil {
		return err
	}
	if len(erased) == 0 {
		return nil
	}
	for _, row := range rows {
		if n, ok := erased[row.ID]; ok {
			row.Payload = []byte(`{"erased": true, "erasure_id": ` + strconv.FormatInt(n, 10) + `}`)
		}
	}
	return nil
}

// querier runs a query: the relay's pool, or a test's connection.
type querier interface {
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
}

// erasedOf returns the erasure id of each of the outbox rows ids that an
// erasure reached.
func erasedOf(ctx context.Context, q querier, ids []string) (map[string]int64, error) {
	// Unnamed statement, planned for the table as it is at every call: a
	// generic plan cached while outbox_erasures was empty (analyzed while
	// empty, as after a restore) read the whole table for every
	// transaction once erasures filled it, until an analyze
	// (TestWindowReadsDoNotDependOnStatistics).
	rows, err := q.Query(ctx, erasedSQL, pgx.QueryExecModeExec, ids)
	if err != nil {
		return nil, fmt.Errorf("look up erased outbox rows: %w", err)
	}
	defer rows.Close()
	erased := map[string]int64{}
	for rows.Next() {
		var id string
		var erasure int64
		if err := rows.Scan(&id, &erasure); err != nil {
			return nil, fmt.Errorf("look up erased outbox rows: %w", err)
		}
		erased[id] = erasure
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("look up erased outbox rows: %w", err)
	}
	return erased, nil
}
