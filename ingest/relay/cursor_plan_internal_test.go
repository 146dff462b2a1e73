package relay

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/gatehouse/gatehouse/internal/testenv"
	"github.com/gatehouse/gatehouse/internal/testkit"
)

// planFillTxs × planFillRows outbox rows are written between the plans
// made on empty tables and the reads measured: 100 000 rows, as the
// Writer's plan test fills its partitions.
const (
	planFillTxs  = 100
	planFillRows = 1000
	planPage     = 1000 // the relay's default batch_size
)

// TestWindowReadsDoNotDependOnStatistics: the statements the relay runs
// for every window and every replicated transaction cost the same on
// tables without statistics as on analyzed ones. Their plans are made on
// empty tables (a freshly migrated database, or one analyzed while empty;
// the cursor's and the erasure lookup's generic plans cached on the
// connection as the pool's prepared statements cache them), then the
// current outbox partition fills with 100 000 rows in 100 transactions and
// outbox_erasures with 100 000 rows, without an analyze, and the buffers
// each read touches are compared with those of the same read after
// ANALYZE. A window page planned on estimates (a bitmap scan of the whole
// window and a sort) touched every row of the window for each page.
func TestWindowReadsDoNotDependOnStatistics(t *testing.T) {
	for _, state := range []string{"never analyzed", "analyzed while empty"} {
		t.Run(state, func(t *testing.T) {
			ctx := context.Background()
			dbURL := testenv.Postgres(t)
			base, err := pgx.Connect(ctx, dbURL)
			if err != nil {
				t.Fatal(err)
			}
			defer base.Close(ctx)
			mustExec(t, base, `DO $$ DECLARE r record; BEGIN
				FOR r IN SELECT name FROM storage_partitions WHERE parent = 'outbox' LOOP
					EXECUTE format('ALTER TABLE %I SET (autovacuum_enabled = false)', r.name);
				END LOOP; END $$`)
			mustExec(t, base, `ALTER TABLE outbox_erasures SET (autovacuum_enabled = false)`)
			mustExec(t, base, `ALTER TABLE outbox_cursor SET (autovacuum_enabled = false)`)
			if state == "analyzed while empty" {
				mustExec(t, base, `ANALYZE`)
			}
			pc := testkit.NewPlanConn(t, dbURL, nil)
			reads := func(from, to string, txids []string, ids []string) map[string]int64 {
				return windowReads(t, pc, from, to, txids, ids)
			}
			// Plans made, and the generic ones cached, on empty tables.
			snap := currentSnap(t, base)
			for range 6 {
				reads(snap, snap, nil, nil)
			}

			txids, ids := fillOutbox(t, base)
			mustExec(t, base, `INSERT INTO outbox_erasures (outbox_id, provider, event_id, erasure_id)
				SELECT gen_random_uuid(), 'p', 'e-' || g, g FROM generate_series(1, 100000) g`)
			// The window: the first half of the fill's transactions in
			// progress in the cursor, the second half newer than it.
			half := len(txids) / 2
			from := fmt.Sprintf("%s:%s:%s", txids[0], txids[half], strings.Join(txids[:half], ","))
			to := currentSnap(t, base)
			cold := reads(from, to, txids, ids)
			mustExec(t, base, `ANALYZE`)
			warm := reads(from, to, txids, ids)
			for _, name := range sortedKeys(warm) {
				t.Logf("%s: %s: %d buffers on the plan made on empty tables, %d after ANALYZE", state, name, cold[name], warm[name])
				if cold[name] > warm[name]*3/2+16 {
					t.Errorf("%s: %s touched %d buffers on the plan made on empty tables, %d after ANALYZE: its cost depends on statistics",
						state, name, cold[name], warm[name])
				}
			}
		})
	}
}

// windowReads runs what the relay reads per window and per replicated
// transaction, the way it runs them, and returns the buffers each touched.
// With txids (the fill's transactions) it reads the first page of each
// part of the window and a page from the middle of each; ids are outbox
// ids looked up among the erasures (one transaction's rows).
func windowReads(t *testing.T, pc *testkit.PlanConn, from, to string, txids, ids []string) map[string]int64 {
	t.Helper()
	ctx := context.Background()
	out := map[string]int64{}
	measure := func(name, match string, fn func(conn *pgx.Conn) error) {
		t.Helper()
		var n int64
		for _, p := range pc.Run(t, match, fn) {
			n += p.Buffers()
		}
		out[name] = n
	}
	page := func(name, part, txid string, seq int64, want int) {
		t.Helper()
		measure(name, "FROM outbox", func(conn *pgx.Conn) error {
			rows, err := readPage(ctx, conn, part, from, to, txid, seq, planPage)
			if err == nil && len(rows) != want {
				err = fmt.Errorf("%s: %d rows, want %d", name, len(rows), want)
			}
			return err
		})
	}
	if len(txids) == 0 {
		page("in-progress page", windowInProgressSQL, "0", 0, 0)
		page("newer page", windowNewerSQL, "0", 0, 0)
	} else {
		half := len(txids) / 2
		page("in-progress page", windowInProgressSQL, "0", 0, planPage)
		page("in-progress page, mid-window", windowInProgressSQL, txids[half/2], firstSeq(t, pc.Conn, txids[half/2])+planFillRows/2, planPage)
		page("newer page", windowNewerSQL, "0", 0, planPage)
		page("newer page, mid-window", windowNewerSQL, txids[half+half/2], firstSeq(t, pc.Conn, txids[half+half/2])+planFillRows/2, planPage)
	}
	measure("cursor init", "INSERT INTO outbox_cursor", func(conn *pgx.Conn) error {
		_, err := conn.Exec(ctx, cursorInitSQL, "plan_test")
		return err
	})
	measure("cursor load", "FROM outbox_cursor WHERE slot", func(conn *pgx.Conn) error {
		return conn.QueryRow(ctx, `SELECT snap::text FROM outbox_cursor WHERE slot = $1`, "plan_test").Scan(new(string))
	})
	measure("cursor save", "UPDATE outbox_cursor", func(conn *pgx.Conn) error {
		_, err := conn.Exec(ctx, cursorSaveSQL, "plan_test", to)
		return err
	})
	measure("erasure lookup", "FROM outbox_erasures", func(conn *pgx.Conn) error {
		_, err := erasedOf(ctx, conn, ids)
		return err
	})
	return out
}

// fillOutbox writes planFillTxs transactions of planFillRows outbox rows
// each and returns their transaction ids in order, and the ids of the
// last transaction's rows.
func fillOutbox(t *testing.T, c *pgx.Conn) (txids, ids []string) {
	t.Helper()
	for i := range planFillTxs {
		var txid string
		if err := c.QueryRow(context.Background(), `WITH ins AS (
			INSERT INTO outbox (id, aggregatetype, aggregateid, type, payload, event_id, topic)
			SELECT gen_random_uuid(), 'p', 'a-' || g, 't', '{}', 'e-' || $1::int || '-' || g, 'topic' FROM generate_series(1, $2::int) g
			RETURNING txid)
			SELECT txid::text FROM ins LIMIT 1`, i, planFillRows).Scan(&txid); err != nil {
			t.Fatal(err)
		}
		txids = append(txids, txid)
	}
	rows, err := c.Query(context.Background(), `SELECT id::text FROM outbox WHERE txid = $1::xid8 LIMIT 100`, txids[len(txids)-1])
	if err != nil {
		t.Fatal(err)
	}
	if ids, err = pgx.CollectRows(rows, pgx.RowTo[string]); err != nil {
		t.Fatal(err)
	}
	return txids, ids
}

func firstSeq(t *testing.T, c *pgx.Conn, txid string) int64 {
	t.Helper()
	var seq int64
	if err := c.QueryRow(context.Background(), `SELECT min(seq) FROM outbox WHERE txid = $1::xid8`, txid).Scan(&seq); err != nil {
		t.Fatal(err)
	}
	return seq
}

func currentSnap(t *testing.T, c *pgx.Conn) string {
	t.Helper()
	var snap string
	if err := c.QueryRow(context.Background(), `SELECT pg_current_snapshot()::text`).Scan(&snap); err != nil {
		t.Fatal(err)
	}
	return snap
}

func mustExec(t *testing.T, c *pgx.Conn, sql string) {
	t.Helper()
	if _, err := c.Exec(context.Background(), sql); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
}

func sortedKeys(m map[string]int64) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}
