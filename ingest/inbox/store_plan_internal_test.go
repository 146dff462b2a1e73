package inbox

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/gatehouse/gatehouse/internal/testenv"
	"github.com/gatehouse/gatehouse/internal/testkit"
)

// TestWriterPlanDoesNotDependOnStatistics: the Writer's statement costs
// the same on tables without statistics as on analyzed ones. The plan is
// cached on a connection when its tables are empty (a freshly migrated
// database, or one analyzed while empty, as after a restore or on a
// partition that just became current), the current partitions then fill
// without an analyze, and the cached plan's buffer accesses for a batch
// are compared with those of the plan made after ANALYZE. A semi-join of
// the key lookup was planned as a hash of the whole current key partition
// on such tables (thousands of buffers a statement at 100 000 keys,
// against tens). The same batch is then written again, all duplicates,
// and the plan that reads their stored state (duplicateStateSQL, run on
// the Writer's connection after each batch holding a duplicate) is held
// to the same comparison: as a plain join it read every inbox partition
// whole.
func TestWriterPlanDoesNotDependOnStatistics(t *testing.T) {
	for _, state := range []string{"never analyzed", "analyzed while empty"} {
		t.Run(state, func(t *testing.T) {
			ctx := context.Background()
			dbURL := testenv.Postgres(t)
			base, err := pgx.Connect(ctx, dbURL)
			if err != nil {
				t.Fatal(err)
			}
			defer base.Close(ctx)
			// No autovacuum may analyze behind the test's back (and
			// change the plan it measures); set before the plan is cached.
			mustExecConn(t, base, `DO $$ DECLARE r record; BEGIN
				FOR r IN SELECT name FROM storage_partitions WHERE parent IN ('inbox', 'outbox', 'dedupe_keys') LOOP
					EXECUTE format('ALTER TABLE %I SET (autovacuum_enabled = false)', r.name);
				END LOOP; END $$`)
			if state == "analyzed while empty" {
				mustExecConn(t, base, `ANALYZE`)
			}
			w := newPlanConn(t, dbURL)
			w.write(t, "warm", 1) // the generic plan is made now, and cached
			w.again(t)            // and the duplicates' lookup's
			mustExecConn(t, base, `INSERT INTO dedupe_keys (provider, event_id, gen)
				SELECT 'p', 'old-' || g, (SELECT starts FROM storage_partitions WHERE parent = 'dedupe_keys' AND starts <= now() AND ends > now())
				FROM generate_series(1, 100000) g`)
			mustExecConn(t, base, `INSERT INTO inbox (provider, event_id, event_type, payload, verified, secret_id)
				SELECT 'p', 'old-' || g, 't', '{}', true, 's' FROM generate_series(1, 100000) g`)
			cold := w.write(t, "cold", 8)
			coldDup := w.again(t)
			mustExecConn(t, base, `ANALYZE`)
			warm := w.write(t, "analyzed", 8)
			warmDup := w.again(t)
			t.Logf("%s: %d buffers a batch of 8 on the cached plan, %d after ANALYZE", state, cold.buffers, warm.buffers)
			t.Logf("%s: the duplicates' stored state: %d buffers for 8 on the cached plan, %d after ANALYZE", state, coldDup.buffers, warmDup.buffers)
			if coldDup.buffers > warmDup.buffers*3/2+16 {
				t.Errorf("%s: reading the stored state of 8 duplicates touched %d buffers on the plan cached on empty tables, %d on the analyzed plan: its cost depends on statistics",
					state, coldDup.buffers, warmDup.buffers)
			}
			for _, n := range coldDup.scans {
				t.Errorf("%s: the cached plan of the duplicates' stored state scans %s", state, n)
			}
			if cold.buffers > warm.buffers*3/2+16 {
				t.Errorf("%s: the plan cached on empty tables touched %d buffers for a batch, the analyzed plan %d: the Writer's cost depends on statistics again", state, cold.buffers, warm.buffers)
			}
			for _, n := range cold.scans {
				t.Errorf("%s: the cached plan scans %s", state, n)
			}
		})
	}
}

// planConn runs the Writer's statement with the Writer's settings and
// reports its executed plan.
type planConn struct {
	*testkit.PlanConn
	n    int
	last []*pending // the last batch write wrote
}

func newPlanConn(t *testing.T, dbURL string) *planConn {
	return &planConn{PlanConn: testkit.NewPlanConn(t, dbURL, writerSettings)}
}

// planStats is what one execution of the statement did.
type planStats struct {
	buffers int64    // shared buffers hit or read by the whole plan
	scans   []string // sequential scans of the event tables
}

// write writes n new events in one statement and returns its plan's stats.
func (pc *planConn) write(t *testing.T, prefix string, n int) planStats {
	t.Helper()
	batch := make([]*pending, n)
	now := time.Now()
	for i := range batch {
		pc.n++
		id := fmt.Sprintf("%s-%d", prefix, pc.n)
		batch[i] = &pending{rec: Record{Provider: "p", EventID: id, Type: "t", CreatedAt: &now, Payload: []byte(`{"id":"` + id + `"}`),
			SecretID: "s", AggregateID: "a", Topic: "topic", Guard: GuardKey{Key: []byte("g-" + id), TTL: time.Hour}}}
	}
	plans := pc.Run(t, "INSERT INTO outbox", func(conn *pgx.Conn) error { return execOn(context.Background(), conn, batch, nil) })
	for _, p := range batch {
		if !p.out.New {
			t.Fatalf("%s: not written as new", p.rec.EventID)
		}
	}
	if len(plans) != 1 {
		t.Fatalf("%d plans reported for the Writer's statement, want 1", len(plans))
	}
	pc.last = batch
	return planStats{buffers: plans[0].Buffers(), scans: plans[0].SeqScans("dedupe_keys", "inbox", "outbox")}
}

func mustExecConn(t *testing.T, c *pgx.Conn, sql string) {
	t.Helper()
	if _, err := c.Exec(context.Background(), sql); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
}

// again writes the last batch again, all duplicates, and returns the
// stats of the plan that read their stored state (duplicateStateSQL).
func (pc *planConn) again(t *testing.T) planStats {
	t.Helper()
	batch := make([]*pending, len(pc.last))
	for i, p := range pc.last {
		batch[i] = &pending{rec: p.rec}
	}
	plans := pc.Run(t, "AS d(provider, event_id, ord)", func(conn *pgx.Conn) error { return execOn(context.Background(), conn, batch, nil) })
	for _, p := range batch {
		if p.out.New || p.out.State != "pending" {
			t.Fatalf("%s written again: %+v, want a duplicate in state pending", p.rec.EventID, p.out)
		}
	}
	if len(plans) != 1 {
		t.Fatalf("%d plans reported for the duplicates' stored state, want 1", len(plans))
	}
	return planStats{buffers: plans[0].Buffers(), scans: plans[0].SeqScans("inbox")}
}
