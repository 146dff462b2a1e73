package upkeep

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/gatehouse/gatehouse/ingest/inbox"
	"github.com/gatehouse/gatehouse/internal/settings"
	"github.com/gatehouse/gatehouse/internal/testenv"
)

func openPool(t *testing.T, url string) *pgxpool.Pool {
	t.Helper()
	pool, err := pgxpool.New(context.Background(), url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	return pool
}

// TestOutboxPartitionsDropByAgeWithAnExternalRelay: with relay.mode
// external (Debezium reads the outbox) no cursor decides, age alone does.
func TestOutboxPartitionsDropByAgeWithAnExternalRelay(t *testing.T) {
	ctx := context.Background()
	pool := openPool(t, testenv.Postgres(t))
	mustExec(t, pool, `INSERT INTO outbox (id, aggregatetype, aggregateid, type, payload, event_id, topic, created_at)
		VALUES (gen_random_uuid(), 'p', 'a', 't', '{}', 'e1', 'topic', '2001-01-01')`)
	mustExec(t, pool, `UPDATE storage_partitions SET ends = now() - interval '7 days' WHERE name = 'outbox_legacy'`)
	for _, mode := range []string{"replication", "external"} {
		cfg := retentionConfig(t, "24h", "24h", "24h", func(c *MaintenanceConfig) { c.OutboxExternal = mode == "external" })
		cfg.Pool = pool
		mt, err := NewMaintenance(cfg)
		if err != nil {
			t.Fatal(err)
		}
		res, err := mt.Pass(ctx)
		if err != nil {
			t.Fatal(err)
		}
		dropped := strings.Join(res.Dropped, ",")
		switch {
		case mode == "replication" && dropped != "":
			t.Fatalf("relay.mode replication: dropped %q holding an unpublished row", dropped)
		case mode == "external" && dropped != "outbox_legacy":
			t.Fatalf("relay.mode external: dropped %q, want outbox_legacy (age alone)", dropped)
		}
	}
}

// retentionConfig is the maintenance of one provider "p" (and of
// unconfigured ones) kept retention, its keys the longer of retention and
// dedupe, with inbox and key partitions of width interval and the
// configuration's other storage defaults (ahead 3, audit 1 year, outbox 1 h
// partitions kept 24 h); opts change it further.
func retentionConfig(t *testing.T, interval, retention, dedupe string, opts ...func(*MaintenanceConfig)) MaintenanceConfig {
	t.Helper()
	d := func(s string) time.Duration {
		v, err := time.ParseDuration(s)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	kept := Kept{Retention: d(retention), KeyLifetime: max(d(retention), d(dedupe))}
	c := MaintenanceConfig{
		Providers: map[string]Kept{"p": kept}, Default: kept,
		Storage: settings.Storage{PartitionInterval: d(interval), KeyPartitionInterval: d(interval), OutboxPartitionInterval: time.Hour,
			Ahead: 3, CheckInterval: time.Minute, AuditRetention: 365 * 24 * time.Hour, OutboxRetention: 24 * time.Hour},
	}
	for _, o := range opts {
		o(&c)
	}
	return c
}

// TestRetentionPassBoundsEveryIngestTable fills every ingest table with
// rows older than the retention and checks one pass leaves only what the
// retention keeps, with partitions ahead and the metrics set.
func TestRetentionPassBoundsEveryIngestTable(t *testing.T) {
	ctx := context.Background()
	pool := openPool(t, testenv.Postgres(t))
	// Provider q keeps its events 1 h, p and unconfigured ones 2 h.
	cfg := retentionConfig(t, "1h", "2h", "2h", func(c *MaintenanceConfig) { c.Providers["q"] = Kept{Retention: time.Hour, KeyLifetime: 2 * time.Hour} })
	// Hour-wide partitions from 6 h ago; the migration's own are dropped
	// first (they start today at the migration's time).
	mustExec(t, pool, `DO $$ DECLARE r record; BEGIN
  FOR r IN SELECT name FROM storage_partitions LOOP EXECUTE format('DROP TABLE %I', r.name); END LOOP;
  DELETE FROM storage_partitions;
  FOR h IN 1..6 LOOP
    PERFORM storage_create_partition('inbox', date_trunc('hour', now()) - make_interval(hours => h), date_trunc('hour', now()) - make_interval(hours => h - 1));
    PERFORM storage_create_partition('dedupe_keys', date_trunc('hour', now()) - make_interval(hours => h), date_trunc('hour', now()) - make_interval(hours => h - 1));
  END LOOP;
END $$`)
	for h := 1; h <= 6; h++ {
		for _, prov := range []string{"p", "q", "gone"} {
			at := fmt.Sprintf("date_trunc('hour', now()) - interval '%d hours' + interval '10 minutes'", h)
			mustExec(t, pool, `INSERT INTO inbox (provider, event_id, event_type, payload, received_at, verified, secret_id)
VALUES ($1, $2, 't', '{}', `+at+`, true, 's')`, prov, fmt.Sprint("e", h))
			mustExec(t, pool, `INSERT INTO dedupe_keys (provider, event_id, gen) VALUES ($1, $2, date_trunc('hour', now()) - interval '`+fmt.Sprint(h)+` hours')`, prov, fmt.Sprint("e", h))
		}
		mustExec(t, pool, `INSERT INTO replays (provider, event_id, outbox_id, previous_state, previous_attempts, requested_by, requested_at)
VALUES ('p', $1, gen_random_uuid(), 'dead', 1, 'op', now() - make_interval(hours => $2))`, fmt.Sprint("e", h), h)
		mustExec(t, pool, `INSERT INTO erasures (requested_by, requested_at, provider, selector, events, outbox_rows, objects)
VALUES ('op', now() - make_interval(days => $1 * 100), 'p', 'event x', 1, 0, 0)`, h)
	}
	for _, h := range []int{1, 3} { // failure issues last as long as the longest retention (2 h)
		mustExec(t, pool, `WITH i AS (INSERT INTO failure_issues (provider, stage, fingerprint, error_class, message, last_error, last_seen)
VALUES ('p', 'fetch', $1, 'transient', 'm', 'm', now() - make_interval(hours => $2)) RETURNING id)
INSERT INTO failure_issue_events (issue_id, provider, event_id, received_at, last_seen) SELECT id, 'p', 'e1', now(), now() - make_interval(hours => $2) FROM i`,
			fmt.Sprint("f", h), h)
	}
	reg := prometheus.NewRegistry()
	cfg.Pool, cfg.Registerer = pool, reg
	mt, err := NewMaintenance(cfg)
	if err != nil {
		t.Fatal(err)
	}
	res, err := mt.Pass(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !res.Held {
		t.Fatal("the only maintainer did not get the lock")
	}
	// inbox: partitions whose range ended more than 2 h ago are gone (those
	// started 6, 5, 4 and 3 h ago); q's rows are purged from the one ended
	// 1-2 h ago (started 2 h ago).
	if got := count(t, pool, `SELECT count(*) FROM inbox WHERE received_at < date_trunc('hour', now()) - interval '2 hours'`); got != 0 {
		t.Errorf("inbox rows older than the retention's partitions: %d, want 0", got)
	}
	if got := count(t, pool, `SELECT count(*) FROM inbox WHERE provider = 'q'`); got != 1 {
		t.Errorf("q's inbox rows = %d, want 1 (the last hour's)", got)
	}
	if got := count(t, pool, `SELECT count(*) FROM inbox WHERE provider = 'p'`); got != 2 {
		t.Errorf("p's inbox rows = %d, want 2", got)
	}
	// dedupe_keys: kept for lifetime (2 h) + one partition width.
	if got := count(t, pool, `SELECT count(*) FROM dedupe_keys WHERE gen < date_trunc('hour', now()) - interval '3 hours'`); got != 0 {
		t.Errorf("expired dedupe keys left: %d", got)
	}
	if got := count(t, pool, `SELECT count(*) FROM replays`); got != 1 {
		t.Errorf("replays = %d, want 1 (the one of the last 2 h)", got)
	}
	if got := count(t, pool, `SELECT count(*) FROM failure_issues`) + count(t, pool, `SELECT count(*) FROM failure_issue_events`); got != 2 {
		t.Errorf("failure issues and their events = %d, want 2 (the issue seen 1 h ago and its event)", got)
	}
	if got := count(t, pool, `SELECT count(*) FROM erasures`); got != 3 {
		t.Errorf("erasure audit rows = %d, want 3 (younger than 365 days)", got)
	}
	// Partitions ahead: at least 3 hours beyond now for both tables.
	for _, parent := range []string{"inbox", "dedupe_keys"} {
		if got := count(t, pool, `SELECT count(*) FROM storage_partitions WHERE parent = $1 AND ends > now() + interval '3 hours'`, parent); got < 1 {
			t.Errorf("%s: no partition created 3 h ahead", parent)
		}
		if got := count(t, pool, `SELECT count(*) FROM pg_inherits WHERE inhparent = $1::regclass`, parent); got != count(t, pool, `SELECT count(*) FROM storage_partitions WHERE parent = $1`, parent) {
			t.Errorf("%s: attached partitions differ from storage_partitions", parent)
		}
	}
	if v := gaugeValue(t, reg, "gatehouse_storage_partitions", "inbox"); v < 5 {
		t.Errorf("gatehouse_storage_partitions{table=inbox} = %v", v)
	}
	// A partitioned table and a plain one (replays) both report their size.
	for _, table := range []string{"inbox", "replays"} {
		if v := gaugeValue(t, reg, "gatehouse_storage_table_bytes", table); v <= 0 {
			t.Errorf("gatehouse_storage_table_bytes{table=%s} = %v", table, v)
		}
	}
	// A second pass has nothing left to do.
	res, err = mt.Pass(ctx)
	if err != nil || len(res.Created)+len(res.Dropped) != 0 || res.Deleted["inbox"] != 0 {
		t.Fatalf("second pass: %+v, %v; want nothing to do", res, err)
	}
	// Writes still work in the maintained layout.
	w, err := inbox.NewWriter(pool, 1, 8)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(w.Close)
	if out := writeOne(t, w, rec("after", 0)); !out.New {
		t.Fatal("write after the pass not new")
	}
}

// TestOneMaintainerAtATime: while one process holds the stage's lock,
// another one's pass only observes.
func TestOneMaintainerAtATime(t *testing.T) {
	ctx := context.Background()
	pool := openPool(t, testenv.Postgres(t))
	cfg := retentionConfig(t, "24h", "720h", "168h")
	holder, err := pool.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer holder.Release()
	if _, err := holder.Exec(ctx, lockHeld, "ingest"); err != nil {
		t.Fatal(err)
	}
	cfg.Pool = pool
	mt, err := NewMaintenance(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if res, err := mt.Pass(ctx); err != nil || res.Held {
		t.Fatalf("pass while another process holds the lock: %+v, %v; want not held", res, err)
	}
	if _, err := holder.Exec(ctx, `SELECT pg_advisory_unlock(hashtextextended('gatehouse.storage:' || $1, 0))`, "ingest"); err != nil {
		t.Fatal(err)
	}
	if res, err := mt.Pass(ctx); err != nil || !res.Held {
		t.Fatalf("pass after the lock was released: %+v, %v; want held", res, err)
	}
}

const lockHeld = `SELECT pg_advisory_lock(hashtextextended('gatehouse.storage:' || $1, 0))`

func gaugeValue(t *testing.T, reg *prometheus.Registry, name, table string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "table" && l.GetValue() == table {
					return m.GetGauge().GetValue()
				}
			}
		}
	}
	t.Fatalf("metric %s{table=%q} not found", name, table)
	return 0
}

// TestInterruptedDetachIsFinishedByTheNextPass: a drop detaches the
// partition concurrently first; when that detach was interrupted (the
// partition is left "detach pending"), the next pass finalizes and drops it.
func TestInterruptedDetachIsFinishedByTheNextPass(t *testing.T) {
	ctx := context.Background()
	pool := openPool(t, testenv.Postgres(t))
	cfg := retentionConfig(t, "1h", "2h", "2h")
	// The (empty) legacy partition of a fresh database, made old.
	name := "inbox_legacy"
	mustExec(t, pool, `UPDATE storage_partitions SET ends = now() - interval '7 days' WHERE name = $1`, name)
	// A transaction that has read the inbox keeps the detach's second
	// phase waiting; the detach is cancelled there, leaving it pending.
	reader, err := pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer reader.Rollback(ctx) //nolint:errcheck // ends the snapshot
	if _, err := reader.Exec(ctx, `SET TRANSACTION ISOLATION LEVEL REPEATABLE READ`); err != nil {
		t.Fatal(err)
	}
	if _, err := reader.Exec(ctx, `SELECT count(*) FROM inbox`); err != nil {
		t.Fatal(err)
	}
	c, err := pool.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Exec(ctx, `SET statement_timeout = '500ms'`); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Exec(ctx, `ALTER TABLE inbox DETACH PARTITION `+name+` CONCURRENTLY`); err == nil {
		t.Fatal("detach finished while a reader held the parent")
	}
	c.Release()
	_ = reader.Rollback(ctx)
	if got := count(t, pool, `SELECT count(*) FROM pg_inherits WHERE inhrelid = $1::regclass AND inhdetachpending`, name); got != 1 {
		t.Fatalf("partition not left detach-pending (%d)", got)
	}
	cfg.Pool = pool
	mt, err := NewMaintenance(cfg)
	if err != nil {
		t.Fatal(err)
	}
	res, err := mt.Pass(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(strings.Join(res.Dropped, ","), name) {
		t.Fatalf("dropped %v, want %s among them", res.Dropped, name)
	}
	if got := count(t, pool, `SELECT count(*) FROM pg_class WHERE relname = $1`, name); got != 0 {
		t.Fatalf("%s still exists", name)
	}
}

// TestKeyPartitionsHaveTheirOwnWidth: storage.key_partition_interval sets
// the width of the dedupe keys' new partitions, partition_interval the
// inbox's; the maintenance creates the keys ahead at their own width (the
// migration's daily partitions already cover the inbox's 3 h ahead) and
// reports each width.
func TestKeyPartitionsHaveTheirOwnWidth(t *testing.T) {
	ctx := context.Background()
	pool := openPool(t, testenv.Postgres(t))
	cfg := retentionConfig(t, "1h", "2h", "3h", func(c *MaintenanceConfig) { c.KeyPartitionInterval = 168 * time.Hour; c.Providers = nil })
	reg := prometheus.NewRegistry()
	cfg.Pool, cfg.Registerer = pool, reg
	mt, err := NewMaintenance(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := mt.Pass(ctx); err != nil {
		t.Fatal(err)
	}
	// (The legacy partitions start at -infinity: no width.)
	widths := `(SELECT parent, ends - starts AS w FROM storage_partitions WHERE starts > '-infinity' OFFSET 0) p`
	if n := count(t, pool, `SELECT count(*) FROM `+widths+` WHERE parent = 'dedupe_keys' AND w = interval '168 hours'`); n < 1 {
		t.Errorf("no dedupe_keys partition 168 h wide")
	}
	for table, want := range map[string]float64{"inbox": 3600, "dedupe_keys": 7 * 24 * 3600} {
		if v := gaugeValue(t, reg, "gatehouse_storage_partition_interval_seconds", table); v != want {
			t.Errorf("gatehouse_storage_partition_interval_seconds{table=%s} = %v, want %v", table, v, want)
		}
	}
}
