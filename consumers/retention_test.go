package consumers

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/gatehouse/gatehouse/internal/config"
	"github.com/gatehouse/gatehouse/internal/testenv"
)

// TestRetentionPassBoundsTheConsumersTables: rows older than the retention
// (effect log) and the key lifetime (effect dedupe) are deleted, younger
// ones kept, the projection untouched.
func TestRetentionPassBoundsTheConsumersTables(t *testing.T) {
	ctx := context.Background()
	pool, err := pgxpool.New(ctx, testenv.Postgres(t))
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	cfg, err := config.Parse([]byte("storage: {partition_interval: 1h, retention: 2h, dedupe_window: 3h}\n"), func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	exec := func(sql string, args ...any) {
		t.Helper()
		if _, err := pool.Exec(ctx, sql, args...); err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
	}
	// 12 000 rows of each, one a minute over 200 hours back: more than one
	// sweep batch.
	exec(`INSERT INTO processed_events (provider, event_id, outcome, processed_at)
SELECT 'p', 'e' || i, 'succeeded', now() - make_interval(mins => i) FROM generate_series(0, 11999) i`)
	exec(`INSERT INTO provider_object_changes (provider, object_id, event_id, event_type, new_version, applied_at)
SELECT 'p', 'o', 'e' || i, 't', i, now() - make_interval(mins => i) FROM generate_series(0, 11999) i`)
	exec(`INSERT INTO provider_objects (provider, object_id, object_type, version, data, last_event_id, updated_at)
VALUES ('p', 'o', 't', 1, '{}', 'e1', now() - interval '300 days')`)
	mt, err := NewMaintenance(MaintenanceConfig{Pool: pool, Config: cfg})
	if err != nil {
		t.Fatal(err)
	}
	res, err := mt.Pass(ctx)
	if err != nil {
		t.Fatal(err)
	}
	count := func(sql string) int {
		var n int
		if err := pool.QueryRow(ctx, sql).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	// processed_events: key lifetime max(2h, 3h) + 1h partition width = 4 h.
	if n := count(`SELECT count(*) FROM processed_events`); n < 239 || n > 241 {
		t.Errorf("processed_events left: %d, want the 240 of the last 4 h (deleted %d)", n, res.Deleted["processed_events"])
	}
	if n := count(`SELECT count(*) FROM provider_object_changes`); n < 119 || n > 121 {
		t.Errorf("provider_object_changes left: %d, want the 120 of the last 2 h", n)
	}
	if n := count(`SELECT count(*) FROM provider_objects`); n != 1 {
		t.Errorf("provider_objects = %d, want 1 (the projection is current state, not history)", n)
	}
}
