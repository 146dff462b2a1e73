package relay

import (
	"context"
	"testing"
	"time"

	"github.com/gatehouse/gatehouse/internal/testenv"
)

// TestPostgresRestartDoesNotReplay publishes rows, restarts PostgreSQL
// (fast shutdown), then publishes more: the topic holds each row once.
// PostgreSQL before 17 may not persist a logical slot's confirmed position
// at shutdown, so the slot alone would stream the first rows again; the
// relay resumes from the position it recorded itself.
func TestPostgresRestartDoesNotReplay(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	pg, dbURL := privatePG(t, ctx)
	e := newEnv(t, ModeReplication, testenv.KafkaForTest(t), dbURL)
	e.start()
	first := append(e.newEvents("a", 0, 200), e.newEvents("b", 0, 200)...)
	e.mustInsert(first...)
	collect(t, e.brokers, []string{e.topic}, first, 30*time.Second)
	waitFor(t, 10*time.Second, "rows finished", func() bool { return e.unsent() == 0 })
	// The relay records its confirmed position at most once per status
	// interval: wait until it covers the first rows.
	var end string
	if err := e.pool.QueryRow(ctx, `SELECT pg_current_wal_insert_lsn()::text`).Scan(&end); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 20*time.Second, "the confirmed position recorded", func() bool {
		var ok bool
		err := e.pool.QueryRow(ctx, `SELECT coalesce(confirmed_lsn >= $2::pg_lsn, false) FROM relay_slot WHERE slot = $1`, e.slot, end).Scan(&ok)
		return err == nil && ok
	})
	if err := pg.Stop(false); err != nil {
		t.Fatal(err)
	}
	if err := pg.Start(ctx); err != nil {
		t.Fatal(err)
	}
	var second []event
	waitFor(t, 30*time.Second, "inserts after the restart", func() bool {
		evs := e.newEvents("c", 0, 100)
		if e.insert(ctx, evs) != nil {
			return false
		}
		second = evs
		return true
	})
	want := append(first, second...)
	collect(t, e.brokers, []string{e.topic}, want, 60*time.Second)
	waitFor(t, 30*time.Second, "rows finished after the restart", func() bool { return e.unsent() == 0 })
	time.Sleep(time.Second) // room for a replay to show
	if got := topicRecords(t, e.brokers, e.topic); got != int64(len(want)) {
		t.Errorf("the topic holds %d records for %d rows: the restart replayed %d", got, len(want), got-int64(len(want)))
	}
}
