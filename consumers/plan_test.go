package consumers_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/gatehouse/gatehouse/internal/testenv"
	"github.com/gatehouse/gatehouse/internal/testkit"
)

// TestClaimAndApplyPlansDoNotDependOnStatistics: the consumers' per-event
// functions stay index lookups when their plans were cached on empty
// tables (a fresh database, one analyzed while empty, a partition that
// just became current) and the tables then filled without an analyze.
func TestClaimAndApplyPlansDoNotDependOnStatistics(t *testing.T) {
	ctx := context.Background()
	dbURL := testenv.Postgres(t)
	base, err := pgx.Connect(ctx, dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer base.Close(ctx)
	exec := func(sql string, args ...any) {
		t.Helper()
		if _, err := base.Exec(ctx, sql, args...); err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
	}
	exec(`DO $$ DECLARE r record; BEGIN
		FOR r IN SELECT c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
			WHERE n.nspname = 'public' AND c.relkind = 'r' LOOP
			EXECUTE format('ALTER TABLE %I SET (autovacuum_enabled = false)', r.relname);
		END LOOP; END $$`)
	exec(`ANALYZE`)
	pc := testkit.NewPlanConn(t, dbURL, nil)
	n := 0
	claimApply := func() []testkit.Plan {
		n++
		id := fmt.Sprint("new-", n)
		var at time.Time
		if err := base.QueryRow(ctx, `INSERT INTO inbox (provider, event_id, event_type, payload, verified, secret_id)
			VALUES ('p', $1, 't', '{}', true, 's') RETURNING received_at`, id).Scan(&at); err != nil {
			t.Fatal(err)
		}
		return pc.Run(t, "", func(conn *pgx.Conn) error {
			if _, err := conn.Exec(ctx, `SELECT * FROM consumers_claim_many($1, $2, $3)`, []string{"p", "p"}, []string{id, "missing-" + id}, []time.Time{at, at}); err != nil {
				return err
			}
			_, err := conn.Exec(ctx, `SELECT consumers_apply('p', $1, 't', 'obj-'||$1, 'o', 1, '{}', $2)`, id, at)
			return err
		})
	}
	for range 8 { // past the five custom plans: the generic ones are cached now
		claimApply()
	}
	exec(`INSERT INTO inbox (provider, event_id, event_type, payload, verified, secret_id)
		SELECT 'p', 'old-' || g, 't', '{}', true, 's' FROM generate_series(1, 100000) g`)
	exec(`INSERT INTO processed_events (provider, event_id, outcome) SELECT 'p', 'old-' || g, 'succeeded' FROM generate_series(1, 100000) g`)
	var buffers int64
	for _, p := range claimApply() {
		buffers += p.Buffers()
		for _, rel := range p.SeqScans("inbox", "processed_events", "provider_objects") {
			t.Errorf("a plan cached on empty tables scans %s whole", rel)
		}
	}
	if buffers > 2000 {
		t.Errorf("claim and apply of one event touched %d buffers", buffers)
	}
	t.Logf("claim and apply of one event after the tables filled: %d buffers", buffers)
}
