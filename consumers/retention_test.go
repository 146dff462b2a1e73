package consumers

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/gatehouse/gatehouse/internal/config"
	"github.com/gatehouse/gatehouse/internal/testenv"
)

// TestRetentionPassBoundsTheConsumersTables: rows older than the retention
// (effect log, per provider) and the key lifetime (effect dedupe) are
// deleted, younger ones kept; projections whose last change is older than
// their provider's object retention are removed.
func TestRetentionPassBoundsTheConsumersTables(t *testing.T) {
	ctx := context.Background()
	pool, err := pgxpool.New(ctx, testenv.Postgres(t))
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	cfg, err := config.Parse([]byte(`storage: {partition_interval: 1h, retention: 2h, dedupe_window: 3h}
providers:
  q:
    scheme: stripe
    secrets: [{id: a, value: whsec_x}]
    retention: 5h
    dedupe_window: 72h
    object_retention: 100h
`), func(string) string { return "" })
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
	exec(`INSERT INTO provider_object_changes (provider, object_id, event_id, event_type, new_version, applied_at)
SELECT 'q', 'o', 'e' || i, 't', i, now() - make_interval(mins => i) FROM generate_series(0, 11999) i`)
	// One object a minute over 200 hours back for each provider; p keeps
	// its projections for its key lifetime (3 h), q for its own 100 h.
	exec(`INSERT INTO provider_objects (provider, object_id, object_type, version, data, last_event_id, updated_at)
SELECT pr, 'o' || i, 't', 1, '{}', 'e1', now() - make_interval(mins => i) FROM generate_series(0, 11999) i, unnest(ARRAY['p', 'q']) pr`)
	mt, err := NewMaintenance(maintenanceConfigOf(cfg, MaintenanceConfig{Pool: pool}))
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
	// processed_events: the longest key lifetime (q's 72 h dedupe window)
	// + 1 h partition width = 73 h.
	if n := count(`SELECT count(*) FROM processed_events`); n < 4379 || n > 4381 {
		t.Errorf("processed_events left: %d, want the 4380 of the last 73 h (deleted %d)", n, res.Deleted["processed_events"])
	}
	if n := count(`SELECT count(*) FROM provider_object_changes WHERE provider = 'p'`); n < 119 || n > 121 {
		t.Errorf("provider_object_changes of p left: %d, want the 120 of the last 2 h", n)
	}
	if n := count(`SELECT count(*) FROM provider_object_changes WHERE provider = 'q'`); n < 299 || n > 301 {
		t.Errorf("provider_object_changes of q left: %d, want the 300 of its own 5 h", n)
	}
	if n := count(`SELECT count(*) FROM provider_objects WHERE provider = 'p'`); n < 179 || n > 181 {
		t.Errorf("provider_objects of p left: %d, want the 180 changed in its key lifetime (3 h)", n)
	}
	if n := count(`SELECT count(*) FROM provider_objects WHERE provider = 'q'`); n < 5999 || n > 6001 {
		t.Errorf("provider_objects of q left: %d, want the 6000 changed in its object retention (100 h)", n)
	}
	if d := res.Deleted["provider_objects"]; d < 12000-181+12000-6001 {
		t.Errorf("deleted provider_objects reported %d", d)
	}
}
