package relay

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/gatehouse/gatehouse/internal/testenv"
)

// TestCursorWaitsForVisibility holds a committed transaction between its
// WAL flush and its visibility, the moment in which PostgreSQL has already
// streamed the commit but other sessions cannot see the row yet: a
// synchronous standby that never answers (synchronous_standby_names on a
// private cluster) keeps the committing session waiting exactly there,
// while logical decoding sends the flushed commit at once. The relay
// publishes the record and confirms past it, but the log's cursor must not
// pass the row while snapshots cannot see it (a cursor move that skipped it
// would later count a row the stream published as unpublished, or the other
// way round); once the wait is released the cursor passes it, and the
// dispatcher published nothing.
func TestCursorWaitsForVisibility(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	_, dbURL := privatePG(t, ctx)
	e := newEnv(t, ModeReplication, testenv.KafkaForTest(t), dbURL)
	rn := e.start()
	syncStandby := func(names string) {
		t.Helper()
		if _, err := e.pool.Exec(ctx, `ALTER SYSTEM SET synchronous_standby_names = '`+names+`'`); err != nil {
			t.Fatal(err)
		}
		if _, err := e.pool.Exec(ctx, `SELECT pg_reload_conf()`); err != nil {
			t.Fatal(err)
		}
	}
	syncStandby("gatehouse_no_such_standby")

	conn, err := pgx.Connect(ctx, e.dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	evs := e.newEvents("held", 0, 1)
	committed := make(chan error, 1)
	go func() {
		tx, err := conn.Begin(ctx)
		if err == nil {
			_, err = tx.Exec(ctx, `SET LOCAL synchronous_commit = on`)
		}
		if err == nil {
			_, err = tx.Exec(ctx, insertSQL, insertArgs(evs)...)
		}
		if err == nil {
			err = tx.Commit(ctx) // waits for the standby after the flush
		}
		committed <- err
	}()
	collect(t, e.brokers, []string{e.topic}, evs, 30*time.Second)
	moved := value(rn.r.m.cursorMoves)
	waitFor(t, 10*time.Second, "the cursor moving behind the stream", func() bool { return value(rn.r.m.cursorMoves) >= moved+2 })
	select {
	case err := <-committed:
		t.Fatalf("the commit returned before the standby wait was released (err %v): the test did not hold it", err)
	default:
	}
	if n := e.unsent(); n != 0 {
		// Precondition: invisible to other sessions while held.
		t.Fatalf("the held row is visible (%d unsent)", n)
	}
	syncStandby("")
	if err := <-committed; err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, "the cursor passing the row", func() bool { return e.unsent() == 0 })
	time.Sleep(e.config(nil).Relay.RepublishAfter + time.Second)
	if n := value(rn.r.m.published.WithLabelValues(e.topic, pathDispatcher)); n != 0 {
		t.Errorf("the dispatcher re-published %v rows", n)
	}
}
