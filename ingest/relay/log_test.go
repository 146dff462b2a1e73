package relay

import (
	"context"
	"testing"
	"time"

	"github.com/gatehouse/gatehouse/internal/testenv"
)

// TestPollLateCommitIsNotSkipped: a transaction that began before others
// and commits after them (its txid and seq lower than rows already
// published) is still published: windows are sets of committed
// transactions, not a position in seq or txid order.
func TestPollLateCommitIsNotSkipped(t *testing.T) {
	e := newEnv(t, ModePoll, testenv.KafkaForTest(t), "")
	ctx := context.Background()
	tx, err := e.pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx) //nolint:errcheck
	late := e.newEvents("late", 0, 1)
	if _, err := tx.Exec(ctx, insertSQL, insertArgs(late)...); err != nil {
		t.Fatal(err)
	}
	var lateXID string
	if err := tx.QueryRow(ctx, `SELECT pg_current_xact_id()::text`).Scan(&lateXID); err != nil {
		t.Fatal(err)
	}
	rn := e.start()
	early := e.newEvents("early", 0, 3)
	e.mustInsert(early...)
	collect(t, e.brokers, []string{e.topic}, early, 30*time.Second)
	moved := value(rn.r.m.cursorMoves)
	waitFor(t, 10*time.Second, "the cursor passing the committed rows", func() bool { return value(rn.r.m.cursorMoves) > moved })
	var passed bool
	if err := e.pool.QueryRow(ctx, `SELECT pg_visible_in_snapshot($1::xid8, snap) FROM outbox_cursor WHERE slot = $2`,
		lateXID, e.slot).Scan(&passed); err != nil {
		t.Fatal(err)
	}
	if passed {
		t.Fatal("the cursor passed a transaction that had not committed")
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	collect(t, e.brokers, []string{e.topic}, append(early, late...), 30*time.Second)
	waitFor(t, 10*time.Second, "the cursor passing the late row", func() bool { return e.unsent() == 0 })
}

// TestNewSlotStartsWhereTheSlowestRelayIs: a relay with a slot name the
// log has no cursor for (added beside another, or renamed) starts at the
// cursor of the relay furthest behind: it publishes neither the whole
// retained log again nor skips a row that relay has not published.
func TestNewSlotStartsWhereTheSlowestRelayIs(t *testing.T) {
	brokers := testenv.KafkaForTest(t)
	a := newEnv(t, ModePoll, brokers, "")
	old := a.newEvents("old", 0, 20)
	a.mustInsert(old...)
	ra := a.start()
	collect(t, a.brokers, []string{a.topic}, old, 30*time.Second)
	waitFor(t, 10*time.Second, "the first relay's cursor passing its rows", func() bool { return a.unsent() == 0 })
	ra.stop()
	later := a.newEvents("later", 0, 5)
	a.mustInsert(later...) // written while no relay runs: unpublished for both
	b := &env{t: t, mode: ModePoll, dbURL: a.dbURL, pool: a.pool, brokers: brokers, slot: "relay_" + randHex(4), topic: a.topic}
	rb := b.start()
	collect(t, b.brokers, []string{b.topic}, later, 30*time.Second)
	waitFor(t, 10*time.Second, "the new relay's cursor passing the later rows", func() bool { return b.unsent() == 0 })
	if n := value(rb.r.m.published.WithLabelValues(b.topic, pathPoll)); n != float64(len(later)) {
		t.Fatalf("the new slot's relay published %v rows, want the %d the first relay had not published", n, len(later))
	}
}

// TestQueueAgeAndBacklog: the queue age (gatehouse_relay_outbox_oldest_
// unsent_age_seconds, also exported by serve) and the console's backlog
// count the rows the slowest cursor has not passed, and fall to zero once
// a relay published them.
func TestQueueAgeAndBacklog(t *testing.T) {
	e := newEnv(t, ModePoll, testenv.KafkaForTest(t), "")
	ctx := context.Background()
	evs := e.newEvents("age", 0, 7)
	e.mustInsert(evs...)
	time.Sleep(1100 * time.Millisecond)
	age, err := oldestUnpublished(ctx, e.pool)
	if err != nil || age < 1 {
		t.Fatalf("queue age with 7 unpublished rows = %v, %v; want at least 1 s", age, err)
	}
	if n, oldest, err := Backlog(ctx, e.pool); err != nil || n != 7 || oldest == nil {
		t.Fatalf("backlog = %d, %v, %v; want 7 rows and their oldest time", n, oldest, err)
	}
	e.start()
	collect(t, e.brokers, []string{e.topic}, evs, 30*time.Second)
	waitFor(t, 10*time.Second, "the queue age back to 0", func() bool {
		age, err := oldestUnpublished(ctx, e.pool)
		return err == nil && age == 0
	})
	if n, oldest, err := Backlog(ctx, e.pool); err != nil || n != 0 || oldest != nil {
		t.Fatalf("backlog after publishing = %d, %v, %v; want none", n, oldest, err)
	}
}
