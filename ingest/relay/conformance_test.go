package relay

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/gatehouse/gatehouse/internal/testenv"
	"github.com/gatehouse/gatehouse/schemas"
	"github.com/jackc/pglogrepl"
	"github.com/jackc/pgx/v5/pgconn"
)

// The conformance suite: both modes must pass every case.
func TestConformanceReplication(t *testing.T) { conformance(t, ModeReplication) }
func TestConformancePoll(t *testing.T)        { conformance(t, ModePoll) }

func conformance(t *testing.T, mode string) {
	brokers := testenv.KafkaForTest(t)
	cases := []struct {
		name string
		fn   func(t *testing.T, e *env)
	}{
		{"RecordFormat", testRecordFormat},
		{"ExactEventTime", testExactEventTime},
		{"PerKeyOrder", testPerKeyOrder},
		{"LargeAndAbortedTransactions", testLargeTransactions},
		{"OutOfOrderCommits", testOutOfOrderCommits},
		{"DispatcherRepublishesUnsent", testDispatcher},
		{"RestartResumes", testRestartResumes},
		{"SingleActiveRelay", testSingleActive},
		{"ErasedBeforePublication", testErasedBeforePublication},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			c.fn(t, newEnv(t, mode, brokers, ""))
		})
	}
}

func testRecordFormat(t *testing.T, e *env) {
	e.start()
	other := "test." + randHex(4) + ".other"
	evs := e.newEvents("pay_1", 1, 2)
	ev3 := e.newEvents("inv_9", 1, 1)[0]
	ev3.Topic = other
	e.mustInsert(append(evs, ev3)...)
	g := collect(t, e.brokers, []string{e.topic, other}, append(evs, ev3), 30*time.Second)
	for _, ev := range append(evs, ev3) {
		r := g.recs[g.firsts[ev.ID]]
		if r.Topic != ev.Topic || string(r.Key) != ev.Key {
			t.Fatalf("record %s: topic %s key %s, want %s %s", ev.ID, r.Topic, r.Key, ev.Topic, ev.Key)
		}
		var got, want map[string]any
		if err := json.Unmarshal(r.Value, &got); err != nil {
			t.Fatalf("value is not JSON: %v", err)
		}
		_ = json.Unmarshal([]byte(payload(ev)), &want)
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("value %s, want %s", r.Value, payload(ev))
		}
		for k, v := range map[string]string{
			schemas.HeaderID: ev.EventID, schemas.HeaderSource: "/webhooks/prov", schemas.HeaderType: "test.changed",
			schemas.HeaderSpecVersion: "1.0", schemas.HeaderContentType: "application/json",
			schemas.HeaderTime: "2026-01-02T03:04:05Z", schemas.HeaderOutboxID: ev.ID, schemas.HeaderProvider: "prov",
		} {
			if h := header(r, k); h != v {
				t.Errorf("header %s = %q, want %q", k, h, v)
			}
		}
	}
	// A row with outbox.event_time (as the receiver writes it): ce_time
	// comes from the column, not from the payload.
	timed := e.newEvents("pay_2", 1, 1)
	tv := timed[0]
	if _, err := e.pool.Exec(context.Background(), `INSERT INTO outbox (id, aggregatetype, aggregateid, type, payload, event_id, topic, event_time)
		VALUES ($1, 'prov', $2, 'test.changed', $3::jsonb, $4, $5, '2026-03-04T05:06:07.123456Z')`,
		tv.ID, tv.Key, payload(tv), tv.EventID, tv.Topic); err != nil {
		t.Fatal(err)
	}
	g = collect(t, e.brokers, []string{e.topic}, timed, 30*time.Second)
	if h := header(g.recs[g.firsts[timed[0].ID]], schemas.HeaderTime); h != "2026-03-04T05:06:07.123456Z" {
		t.Errorf("ce_time of a row with event_time = %q, want 2026-03-04T05:06:07.123456Z", h)
	}
	waitFor(t, 10*time.Second, "the cursor passing every row", func() bool { return e.unsent() == 0 })
	// The outbox is a log: publishing wrote nothing back (no delete, no
	// update); partitions are dropped whole (ingest's maintenance).
	var left, dead int
	if err := e.pool.QueryRow(context.Background(), `SELECT count(*) FROM outbox`).Scan(&left); err != nil {
		t.Fatal(err)
	}
	if left != len(evs)+1+len(timed) {
		t.Fatalf("%d rows in the outbox after publishing %d; the relay must not delete them", left, len(evs)+1+len(timed))
	}
	if err := e.pool.QueryRow(context.Background(), `SELECT coalesce(sum(n_tup_upd + n_tup_del), 0) FROM pg_stat_user_tables
		WHERE relid IN (SELECT inhrelid FROM pg_inherits WHERE inhparent = 'outbox'::regclass)`).Scan(&dead); err != nil {
		t.Fatal(err)
	}
	if dead != 0 {
		t.Fatalf("%d outbox rows updated or deleted while publishing; the log is append-only", dead)
	}
}

func testPerKeyOrder(t *testing.T, e *env) {
	rn := e.start()
	var keys []string
	for i := range 16 {
		keys = append(keys, fmt.Sprintf("obj_%02d", i))
	}
	evs := e.writer(context.Background(), keys, 25, 4, 0)
	g := collect(t, e.brokers, []string{e.topic}, evs, 60*time.Second)
	checkOrder(t, g, evs)
	waitFor(t, 10*time.Second, "the cursor passing every row", func() bool { return e.unsent() == 0 })
	// Every row went through the mode's main path (not only the safety net).
	path := pathPoll
	if e.mode == ModeReplication {
		path = pathStream
	}
	waitFor(t, 10*time.Second, "rows published by the "+path+" path", func() bool {
		return value(rn.r.m.published.WithLabelValues(e.topic, path)) >= float64(len(evs))
	})
}

// testLargeTransactions writes transactions far above
// logical_decoding_work_mem (streamed by protocol v2 before commit): one
// committed with a rolled-back savepoint inside, one rolled back entirely.
// Exactly the committed rows are published, in order.
func testLargeTransactions(t *testing.T, e *env) {
	e.start()
	ctx := context.Background()
	kept := e.newEvents("big", 0, 1500)
	dropped := e.newEvents("big_sub", 0, 500)
	kept2 := e.newEvents("big", 1500, 1000)
	tx, err := e.pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	mustExec := func(sql string, args ...any) {
		if _, err := tx.Exec(ctx, sql, args...); err != nil {
			t.Fatal(err)
		}
	}
	mustExec(insertSQL, insertArgs(kept)...)
	mustExec("SAVEPOINT s1")
	mustExec(insertSQL, insertArgs(dropped)...)
	mustExec("ROLLBACK TO SAVEPOINT s1")
	mustExec(insertSQL, insertArgs(kept2)...)
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	aborted := e.newEvents("big_abort", 0, 2000)
	tx2, err := e.pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx2.Exec(ctx, insertSQL, insertArgs(aborted)...); err != nil {
		t.Fatal(err)
	}
	// Let the walsender stream part of it before the rollback.
	time.Sleep(300 * time.Millisecond)
	_ = tx2.Rollback(ctx)
	marker := e.newEvents("after", 0, 1)
	e.mustInsert(marker...)
	want := append(append(append([]event{}, kept...), kept2...), marker...)
	g := collect(t, e.brokers, []string{e.topic}, want, 60*time.Second)
	checkOrder(t, g, want)
	for _, r := range g.recs {
		if k := string(r.Key); k == "big_sub" || k == "big_abort" {
			t.Fatalf("a rolled-back row reached Kafka: key %s", k)
		}
	}
	if e.mode == ModeReplication {
		var streamed int64
		if err := e.pool.QueryRow(ctx, `SELECT coalesce(sum(stream_txns), 0) FROM pg_stat_replication_slots WHERE slot_name = $1`, e.slot).Scan(&streamed); err != nil {
			t.Fatal(err)
		}
		if streamed == 0 {
			t.Fatalf("no transaction was streamed (pg_stat_replication_slots.stream_txns = 0); the test did not exercise protocol v2 streaming")
		}
	}
}

// testOutOfOrderCommits commits a row with a lower seq after a row with a
// higher seq was published: it must still be published (no cursor skips it).
func testOutOfOrderCommits(t *testing.T, e *env) {
	e.start()
	ctx := context.Background()
	early := e.newEvents("slow", 0, 1)
	tx, err := e.pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(ctx, insertSQL, insertArgs(early)...); err != nil {
		t.Fatal(err)
	}
	late := e.newEvents("fast", 0, 1)
	e.mustInsert(late...)
	collect(t, e.brokers, []string{e.topic}, late, 30*time.Second)
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	collect(t, e.brokers, []string{e.topic}, append(late, early...), 30*time.Second)
}

// testDispatcher breaks replication while the database works: another
// session holds the slot, so the stream cannot start and reports nothing.
// Once republish_after has passed the dispatcher publishes the log's
// windows itself, in per-key order. In poll mode the same rows are simply
// polled.
func testDispatcher(t *testing.T, e *env) {
	ctx := context.Background()
	if e.mode == ModeReplication {
		// As the relay would: the publication exists before the slot.
		if _, err := e.pool.Exec(ctx, `CREATE PUBLICATION gatehouse_outbox FOR TABLE outbox WITH (publish = 'insert', publish_via_partition_root = true)`); err != nil {
			t.Fatal(err)
		}
		if _, err := e.pool.Exec(ctx, `SELECT pg_create_logical_replication_slot($1, 'pgoutput')`, e.slot); err != nil {
			t.Fatal(err)
		}
		if _, err := e.pool.Exec(ctx, `INSERT INTO relay_slot (slot, snapshot_done_at) VALUES ($1, now())`, e.slot); err != nil {
			t.Fatal(err)
		}
		holdSlot(t, e)
	}
	lost := append(e.newEvents("lost_a", 0, 3), e.newEvents("lost_b", 0, 2)...)
	e.mustInsert(lost...)
	var rn *running
	if e.mode == ModeReplication {
		rn = e.startNoWait() // never ready: its stream cannot start
	} else {
		rn = e.start()
	}
	fresh := e.newEvents("fresh", 0, 2)
	e.mustInsert(fresh...)
	want := append(lost, fresh...)
	g := collect(t, e.brokers, []string{e.topic}, want, 30*time.Second)
	checkOrder(t, g, want)
	path := pathPoll
	if e.mode == ModeReplication {
		path = pathDispatcher
	}
	waitFor(t, 10*time.Second, "published counter", func() bool {
		return value(rn.r.m.published.WithLabelValues(e.topic, path)) >= float64(len(want))
	})
	waitFor(t, 10*time.Second, "the cursor passing every row", func() bool { return e.unsent() == 0 })
}

// holdSlot streams e's slot from a replication connection of its own until
// the test ends, so the relay's stream cannot start on it.
func holdSlot(t *testing.T, e *env) {
	t.Helper()
	ctx := context.Background()
	cfg, err := pgconn.ParseConfig(e.dbURL)
	if err != nil {
		t.Fatal(err)
	}
	cfg.RuntimeParams["replication"] = "database"
	conn, err := pgconn.ConnectConfig(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close(context.Background()) })
	if err := pglogrepl.StartReplication(ctx, conn, e.slot, 0, pglogrepl.StartReplicationOptions{
		PluginArgs: []string{"proto_version '2'", "publication_names 'gatehouse_outbox'"}}); err != nil {
		t.Fatal(err)
	}
}

// testRestartResumes stops the relay, writes while it is down, and starts
// another: everything is published and (replication) the slot advanced.
func testRestartResumes(t *testing.T, e *env) {
	rn := e.start()
	first := e.newEvents("r", 0, 50)
	e.mustInsert(first...)
	collect(t, e.brokers, []string{e.topic}, first, 30*time.Second)
	waitFor(t, 10*time.Second, "the cursor passing every row", func() bool { return e.unsent() == 0 })
	rn.stop()
	second := e.newEvents("r", 50, 50)
	e.mustInsert(second...)
	e.start()
	all := append(first, second...)
	g := collect(t, e.brokers, []string{e.topic}, all, 30*time.Second)
	checkOrder(t, g, all)
	waitFor(t, 10*time.Second, "the cursor passing every row", func() bool { return e.unsent() == 0 })
	if e.mode == ModeReplication {
		after := currentLSN(t, e)
		waitFor(t, 10*time.Second, "slot confirmed past the last insert", func() bool {
			var ok bool
			err := e.pool.QueryRow(context.Background(), `SELECT confirmed_flush_lsn >= $2::pg_lsn FROM pg_replication_slots
				WHERE slot_name = $1`, e.slot, after).Scan(&ok)
			return err == nil && ok
		})
	}
	t.Logf("%d records for %d rows (%d duplicates)", len(g.recs), len(all), g.dups())
}

func currentLSN(t *testing.T, e *env) string {
	var lsn string
	if err := e.pool.QueryRow(context.Background(), `SELECT pg_current_wal_insert_lsn()::text`).Scan(&lsn); err != nil {
		t.Fatal(err)
	}
	return lsn
}

// testSingleActive runs two relays on one slot: one publishes, the other
// waits, and takes over when the first stops.
func testSingleActive(t *testing.T, e *env) {
	a := e.start()
	waitFor(t, 10*time.Second, "first relay active", func() bool { return value(a.r.m.active) == 1 })
	b := e.startNoWait()
	time.Sleep(time.Second)
	if value(b.r.m.active) != 0 {
		t.Fatal("second relay became active while the first holds the slot")
	}
	evs := e.newEvents("s", 0, 10)
	e.mustInsert(evs...)
	collect(t, e.brokers, []string{e.topic}, evs, 30*time.Second)
	a.stop()
	waitFor(t, 10*time.Second, "second relay takes over", func() bool { return value(b.r.m.active) == 1 })
	more := e.newEvents("s", 10, 10)
	e.mustInsert(more...)
	g := collect(t, e.brokers, []string{e.topic}, append(evs, more...), 30*time.Second)
	checkOrder(t, g, append(evs, more...))
}
