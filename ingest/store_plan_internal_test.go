package ingest

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/gatehouse/gatehouse/internal/testenv"
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
// against tens).
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
			mustExecConn(t, base, `INSERT INTO dedupe_keys (provider, event_id, gen)
				SELECT 'p', 'old-' || g, (SELECT starts FROM storage_partitions WHERE parent = 'dedupe_keys' AND starts <= now() AND ends > now())
				FROM generate_series(1, 100000) g`)
			mustExecConn(t, base, `INSERT INTO inbox (provider, event_id, event_type, payload, verified, secret_id)
				SELECT 'p', 'old-' || g, 't', '{}', true, 's' FROM generate_series(1, 100000) g`)
			cold := w.write(t, "cold", 8)
			mustExecConn(t, base, `ANALYZE`)
			warm := w.write(t, "analyzed", 8)
			t.Logf("%s: %d buffers a batch of 8 on the cached plan, %d after ANALYZE", state, cold.buffers, warm.buffers)
			if cold.buffers > warm.buffers*3/2+16 {
				t.Errorf("%s: the plan cached on empty tables touched %d buffers for a batch, the analyzed plan %d: the Writer's cost depends on statistics again", state, cold.buffers, warm.buffers)
			}
			for _, n := range cold.scans {
				t.Errorf("%s: the cached plan scans %s", state, n)
			}
		})
	}
}

// planConn is a connection with the Writer's settings whose statements
// report their executed plans (auto_explain, sent to the client).
type planConn struct {
	conn  *pgx.Conn
	mu    sync.Mutex
	plans []string
	n     int
}

func newPlanConn(t *testing.T, dbURL string) *planConn {
	t.Helper()
	ctx := context.Background()
	cfg, err := pgx.ParseConfig(dbURL)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range writerSettings {
		cfg.RuntimeParams[k] = v
	}
	pc := &planConn{}
	cfg.OnNotice = func(_ *pgconn.PgConn, n *pgconn.Notice) {
		if strings.HasPrefix(n.Message, "duration:") {
			pc.mu.Lock()
			pc.plans = append(pc.plans, n.Message)
			pc.mu.Unlock()
		}
	}
	if pc.conn, err = pgx.ConnectConfig(ctx, cfg); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pc.conn.Close(ctx) })
	for _, s := range []string{`LOAD 'auto_explain'`, `SET auto_explain.log_min_duration = 0`, `SET auto_explain.log_analyze = on`,
		`SET auto_explain.log_buffers = on`, `SET auto_explain.log_timing = off`, `SET auto_explain.log_format = json`, `SET client_min_messages = log`} {
		mustExecConn(t, pc.conn, s)
	}
	return pc
}

// planStats is what one execution of the statement did.
type planStats struct {
	buffers int64    // shared buffers hit or read by the whole plan
	scans   []string // sequential scans of the event tables
}

// write writes n new events in one statement and returns its plan's stats.
func (pc *planConn) write(t *testing.T, prefix string, n int) planStats {
	t.Helper()
	ctx := context.Background()
	batch := make([]*pending, n)
	now := time.Now()
	for i := range batch {
		pc.n++
		id := fmt.Sprintf("%s-%d", prefix, pc.n)
		batch[i] = &pending{rec: Record{Provider: "p", EventID: id, Type: "t", CreatedAt: &now, Payload: []byte(`{"id":"` + id + `"}`),
			SecretID: "s", AggregateID: "a", Topic: "topic", Guard: GuardKey{Key: []byte("g-" + id), TTL: time.Hour}}}
	}
	pc.mu.Lock()
	pc.plans = nil
	pc.mu.Unlock()
	if err := execOn(ctx, pc.conn, batch, nil); err != nil {
		t.Fatal(err)
	}
	for _, p := range batch {
		if !p.out.New {
			t.Fatalf("%s: not written as new", p.rec.EventID)
		}
	}
	pc.mu.Lock()
	defer pc.mu.Unlock()
	for _, msg := range pc.plans {
		if !strings.Contains(msg, "INSERT INTO outbox") {
			continue
		}
		var doc struct {
			Plan planNode `json:"Plan"`
		}
		js := msg[strings.Index(msg, "{"):]
		if err := json.Unmarshal([]byte(js), &doc); err != nil {
			t.Fatalf("auto_explain output: %v", err)
		}
		var st planStats
		st.buffers = doc.Plan.SharedHit + doc.Plan.SharedRead
		doc.Plan.walk(func(n planNode) {
			if n.Type == "Seq Scan" && (strings.HasPrefix(n.Relation, "dedupe_keys") || strings.HasPrefix(n.Relation, "inbox") || strings.HasPrefix(n.Relation, "outbox")) {
				st.scans = append(st.scans, n.Relation)
			}
		})
		return st
	}
	t.Fatalf("no plan reported for the Writer's statement (%d notices)", len(pc.plans))
	return planStats{}
}

type planNode struct {
	Type       string     `json:"Node Type"`
	Relation   string     `json:"Relation Name"`
	SharedHit  int64      `json:"Shared Hit Blocks"`
	SharedRead int64      `json:"Shared Read Blocks"`
	Plans      []planNode `json:"Plans"`
}

func (n planNode) walk(f func(planNode)) {
	f(n)
	for _, c := range n.Plans {
		c.walk(f)
	}
}

func mustExecConn(t *testing.T, c *pgx.Conn, sql string) {
	t.Helper()
	if _, err := c.Exec(context.Background(), sql); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
}
