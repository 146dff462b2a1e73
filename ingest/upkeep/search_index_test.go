package upkeep

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/gatehouse/gatehouse/internal/testenv"
)

// Issue 38: a provider whose search is indexed gets a jsonb_path_ops GIN
// index of its payloads on every inbox partition, existing ones included,
// which the API's containment search of that provider uses; switching the
// search off drops them, and an index left invalid is built again.
func TestSearchIndexesFollowPartitionsAndConfig(t *testing.T) {
	ctx := context.Background()
	pool := openPool(t, testenv.Postgres(t))
	cfg := retentionConfig(t, "24h", "720h", "168h", func(c *MaintenanceConfig) {
		c.Providers["p"] = Kept{Retention: 720 * time.Hour, KeyLifetime: 720 * time.Hour, SearchIndexed: true}
	})
	mustExec(t, pool, `INSERT INTO inbox (provider, event_id, event_type, payload, verified, secret_id)
SELECT 'p', 'e' || i, 't', jsonb_build_object('data', jsonb_build_object('customer', 'cus_' || i)), true, 's' FROM generate_series(1, 2000) i`)
	pass := func(c MaintenanceConfig) {
		t.Helper()
		c.Pool = pool
		mt, err := NewMaintenance(c)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := mt.Pass(ctx); err != nil {
			t.Fatal(err)
		}
	}
	indexes := func() (valid, all int) {
		t.Helper()
		return count(t, pool, `SELECT count(*) FROM pg_index x JOIN pg_class i ON i.oid = x.indexrelid JOIN pg_inherits h ON h.inhrelid = x.indrelid
WHERE h.inhparent = 'inbox'::regclass AND i.relname LIKE '%\_search\_%' AND x.indisvalid`),
			count(t, pool, `SELECT count(*) FROM pg_index x JOIN pg_class i ON i.oid = x.indexrelid JOIN pg_inherits h ON h.inhrelid = x.indrelid
WHERE h.inhparent = 'inbox'::regclass AND i.relname LIKE '%\_search\_%'`)
	}
	pass(cfg)
	partitions := count(t, pool, `SELECT count(*) FROM storage_partitions WHERE parent = 'inbox'`)
	if valid, all := indexes(); valid != partitions || all != partitions {
		t.Fatalf("%d valid search indexes of %d, want one on each of the %d inbox partitions", valid, all, partitions)
	}
	// The API's search of p (api/list.go, indexed: the provider as a
	// constant) reads the index.
	mustExec(t, pool, `ANALYZE inbox`)
	rows, err := pool.Query(ctx, `EXPLAIN SELECT event_id FROM inbox WHERE provider = 'p' AND payload @> $1::jsonb
AND received_at >= now() - interval '1 day' ORDER BY received_at DESC LIMIT 51`, `{"data":{"customer":"cus_7"}}`)
	if err != nil {
		t.Fatal(err)
	}
	var plan strings.Builder
	for rows.Next() {
		var line string
		if err := rows.Scan(&line); err != nil {
			t.Fatal(err)
		}
		plan.WriteString(line + "\n")
	}
	rows.Close()
	if !strings.Contains(plan.String(), "_search_") {
		t.Errorf("the search does not use the index:\n%s", plan.String())
	}
	// An interrupted build leaves an invalid index: the next pass builds it again.
	var some string
	if err := pool.QueryRow(ctx, `SELECT i.relname FROM pg_index x JOIN pg_class i ON i.oid = x.indexrelid WHERE i.relname LIKE '%\_search\_%' LIMIT 1`).Scan(&some); err != nil {
		t.Fatal(err)
	}
	mustExec(t, pool, `UPDATE pg_index SET indisvalid = false WHERE indexrelid = $1::regclass`, some)
	pass(cfg)
	if valid, all := indexes(); valid != partitions || all != partitions {
		t.Fatalf("after an invalid index: %d valid of %d, want %d", valid, all, partitions)
	}
	// Search switched off: the indexes go.
	pass(retentionConfig(t, "24h", "720h", "168h"))
	if _, all := indexes(); all != 0 {
		t.Errorf("%d search indexes left with search off", all)
	}
}
