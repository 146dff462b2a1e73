package storage_test

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/gatehouse/gatehouse/internal/storage"
	"github.com/gatehouse/gatehouse/internal/testenv"
)

// The configured partition width holds from the first partition on: a
// freshly migrated database has a first inbox and key partition running to
// midnight and a first outbox partition to the next hour; the first pass
// replaces those that hold no row.
func TestConfiguredWidthHoldsFromTheFirstPartition(t *testing.T) {
	ctx := context.Background()
	pool, err := pgxpool.New(ctx, testenv.Postgres(t))
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	// The keys hold a row (a write arrived before maintenance ran): that
	// partition keeps its width, the empty ones ahead of it do not.
	if _, err := pool.Exec(ctx, `INSERT INTO dedupe_keys (provider, event_id, gen)
		SELECT 'p', 'e', starts FROM storage_partitions WHERE parent = 'dedupe_keys' AND starts <= now() AND ends > now()`); err != nil {
		t.Fatal(err)
	}
	// Its bounds, which the passes must leave as they are (its width alone
	// says nothing: the migration's first partition ends at midnight, so it is
	// narrow late in the day).
	const currentKeys = `SELECT starts, ends FROM storage_partitions WHERE parent = 'dedupe_keys' AND starts <= now() AND ends > now()`
	var keysFrom, keysTo time.Time
	if err := pool.QueryRow(ctx, currentKeys).Scan(&keysFrom, &keysTo); err != nil {
		t.Fatal(err)
	}
	const width = 2 * time.Minute
	tables := []storage.Table{{Name: "inbox", Retention: time.Hour}, {Name: "outbox", Retention: time.Hour}, {Name: "dedupe_keys", Retention: time.Hour}}
	m, err := storage.New(storage.Config{Pool: pool, Stage: "ingest", Partitioned: tables, Interval: width, Ahead: 3})
	if err != nil {
		t.Fatal(err)
	}
	for pass := range 2 { // the second pass changes nothing
		res, err := m.Pass(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if pass == 1 && (len(res.Created) != 0 || len(res.Dropped) != 0) {
			t.Errorf("second pass created %v and dropped %v", res.Created, res.Dropped)
		}
	}
	for _, table := range []string{"inbox", "outbox", "dedupe_keys"} {
		var currentWidth, widestAhead time.Duration
		var ahead int
		if err := pool.QueryRow(ctx, `SELECT
			(SELECT ends - starts FROM storage_partitions WHERE parent = $1 AND starts <= now() AND ends > now()),
			(SELECT coalesce(max(ends - starts), '0') FROM storage_partitions WHERE parent = $1 AND starts > now()),
			(SELECT count(*) FROM storage_partitions WHERE parent = $1 AND starts > now())`, table).Scan(&currentWidth, &widestAhead, &ahead); err != nil {
			t.Fatal(err)
		}
		if table == "dedupe_keys" {
			var from, to time.Time
			if err := pool.QueryRow(ctx, currentKeys).Scan(&from, &to); err != nil {
				t.Fatal(err)
			}
			if !from.Equal(keysFrom) || !to.Equal(keysTo) {
				t.Errorf("%s: the current partition, holding a row, was replaced: [%s, %s) is now [%s, %s) (%s wide)", table, keysFrom, keysTo, from, to, currentWidth)
			}
			continue
		}
		// The replacement runs from the migration's moment to the next
		// boundary: at most one width past now, plus the test's own time.
		if currentWidth > width+time.Minute {
			t.Errorf("%s: current partition %s wide, want at most about %s", table, currentWidth, width)
		}
		if widestAhead > width || ahead < 3 {
			t.Errorf("%s: %d partitions ahead, the widest %s; want at least 3 of %s", table, ahead, widestAhead, width)
		}
	}
	// Nothing is left without a partition: a row for now goes in.
	if _, err := pool.Exec(ctx, `INSERT INTO inbox (provider, event_id, event_type, payload, verified, secret_id) VALUES ('p', 'e', 't', '{}', true, 's')`); err != nil {
		t.Fatal(err)
	}
}
