package inbox

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
)

// rec is a minimal Record of provider "p" and event id.
func rec(id string, life time.Duration) Record {
	now := time.Now()
	return Record{Provider: "p", EventID: id, Type: "t", CreatedAt: &now, Payload: []byte(`{"id":"` + id + `","customer":"cus_1"}`),
		SecretID: "s", AggregateID: "a", Topic: "topic", KeyLifetime: life}
}

// resetKeyPartitions replaces dedupe_keys' partitions by the given ranges
// (offsets from the database's now(); end > start).
func resetKeyPartitions(t *testing.T, pool *pgxpool.Pool, ranges ...[2]time.Duration) {
	t.Helper()
	ctx := context.Background()
	var names []string
	rows, err := pool.Query(ctx, `SELECT name FROM storage_partitions WHERE parent = 'dedupe_keys'`)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var n string
		if err := rows.Scan(&n); err != nil {
			t.Fatal(err)
		}
		names = append(names, n)
	}
	for _, n := range names {
		mustExec(t, pool, `DROP TABLE `+n)
		mustExec(t, pool, `DELETE FROM storage_partitions WHERE name = $1`, n)
	}
	for _, r := range ranges {
		mustExec(t, pool, `SELECT storage_create_partition('dedupe_keys', date_trunc('second', now()) + $1::interval, date_trunc('second', now()) + $2::interval)`, r[0], r[1])
	}
}

func mustExec(t *testing.T, pool *pgxpool.Pool, sql string, args ...any) {
	t.Helper()
	if _, err := pool.Exec(context.Background(), sql, args...); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
}

func count(t *testing.T, pool *pgxpool.Pool, sql string, args ...any) int {
	t.Helper()
	var n int
	if err := pool.QueryRow(context.Background(), sql, args...).Scan(&n); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
	return n
}

func writeOne(t *testing.T, w *Writer, r Record) Outcome {
	t.Helper()
	out, err := w.Write(context.Background(), r)
	if err != nil {
		t.Fatalf("write %s: %v", r.EventID, err)
	}
	return out
}

func TestConcurrentDuplicatesAreRecordedOnce(t *testing.T) {
	base, _ := newTestWriter(t, 0)
	// Several Writers (several receivers), each with its own connection:
	// the same ids sent by all of them at once.
	writers := make([]*Writer, 6)
	for i := range writers {
		w, err := NewWriter(base, 1, 8)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(w.Close)
		writers[i] = w
	}
	const ids = 40
	var mu sync.Mutex
	news := map[string]int{}
	var wg sync.WaitGroup
	for _, w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range ids {
				out, err := w.Write(context.Background(), rec(fmt.Sprint("evt_", i), 0))
				if err != nil {
					t.Error(err)
					return
				}
				if out.New {
					mu.Lock()
					news[fmt.Sprint("evt_", i)]++
					mu.Unlock()
				}
			}
		}()
	}
	wg.Wait()
	for i := range ids {
		if n := news[fmt.Sprint("evt_", i)]; n != 1 {
			t.Errorf("evt_%d recorded as new %d times, want 1", i, n)
		}
	}
	if n := count(t, base, `SELECT count(*) FROM inbox`); n != ids {
		t.Errorf("inbox rows = %d, want %d", n, ids)
	}
	if n := count(t, base, `SELECT count(*) FROM outbox`); n != ids {
		t.Errorf("outbox rows = %d, want %d", n, ids)
	}
}

func TestDuplicateInALaterKeyPartitionIsRefused(t *testing.T) {
	base, w := newTestWriter(t, 0)
	// The boundary 3 s from now: the first delivery's key is written before
	// it, the redelivery's after it (into the next partition).
	resetKeyPartitions(t, base, [2]time.Duration{-time.Hour, 3 * time.Second}, [2]time.Duration{3 * time.Second, time.Hour})
	if out := writeOne(t, w, rec("evt_b", 0)); !out.New {
		t.Fatal("first delivery not new")
	}
	time.Sleep(3500 * time.Millisecond)
	if out := writeOne(t, w, rec("evt_b", 0)); out.New || out.State != "pending" {
		t.Fatalf("redelivery after the boundary: %+v, want a duplicate of the pending event", out)
	}
	// A duplicate answers the stored row's state and attempts, read after
	// its batch committed (duplicateStateSQL).
	mustExec(t, base, `UPDATE inbox SET processing_state = 'retrying', attempts = 2 WHERE provider = 'p' AND event_id = 'evt_b'`)
	if out := writeOne(t, w, rec("evt_b", 0)); out.New || out.State != "retrying" || out.Attempts != 2 {
		t.Fatalf("redelivery of a retrying event: %+v, want a duplicate, retrying after 2 attempts", out)
	}
	// Far from any boundary (a partition an hour wide, started an hour
	// ago): the key is only in the current partition, the old one is found.
	resetKeyPartitions(t, base, [2]time.Duration{-3 * time.Hour, -time.Hour}, [2]time.Duration{-time.Hour, time.Hour})
	mustExec(t, base, `INSERT INTO dedupe_keys (provider, event_id, gen) VALUES ('p', 'evt_old', now() - interval '2 hours')`)
	if out := writeOne(t, w, rec("evt_old", 0)); out.New || out.State != StateExpired {
		t.Fatalf("id of an older key partition, payload gone: %+v, want a duplicate with state %q", out, StateExpired)
	}
}

func TestConcurrentDuplicatesStraddlingAKeyBoundaryAreRecordedOnce(t *testing.T) {
	base, w := newTestWriter(t, 0)
	ctx := context.Background()
	resetKeyPartitions(t, base, [2]time.Duration{-time.Hour, 2 * time.Second}, [2]time.Duration{2 * time.Second, time.Hour})
	// The first delivery's transaction starts before the boundary and stays
	// open (a slow commit); the second one starts after the boundary.
	tx, err := base.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx) //nolint:errcheck // committed below; a failed test must not leak it
	first := []*pending{{rec: rec("evt_x", 0)}}
	if err := execOn(ctx, tx, first, nil); err != nil {
		t.Fatal(err)
	}
	if !first[0].out.New {
		t.Fatal("first delivery not new")
	}
	time.Sleep(2500 * time.Millisecond)
	done := make(chan Outcome, 1)
	go func() {
		out, err := w.Write(ctx, rec("evt_x", 0))
		if err != nil {
			t.Error(err)
		}
		done <- out
	}()
	select {
	case out := <-done:
		t.Fatalf("second delivery finished while the first was uncommitted: %+v (it must wait on the shared key)", out)
	case <-time.After(500 * time.Millisecond):
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	out := <-done
	if out.New {
		t.Fatalf("second delivery across the boundary recorded as new: %+v", out)
	}
	// Its stored state is read after its own statement, so it sees the
	// event that committed while it waited (inside the statement, whose
	// snapshot predates that commit, it read as expired).
	if out.State != "pending" {
		t.Fatalf("second delivery's stored state %q, want the committed event's pending", out.State)
	}
	if n := count(t, base, `SELECT count(*) FROM inbox WHERE event_id = 'evt_x'`); n != 1 {
		t.Fatalf("inbox rows of evt_x = %d, want 1", n)
	}
}

func TestDuplicateAfterItsPayloadExpiredIsRefusedAndAfterTheWindowAccepted(t *testing.T) {
	base, w := newTestWriter(t, 0)
	// Key partitions an hour wide: the current one, and two older ones.
	resetKeyPartitions(t, base, [2]time.Duration{-3 * time.Hour, -2 * time.Hour}, [2]time.Duration{-2 * time.Hour, -time.Hour},
		[2]time.Duration{-time.Hour, time.Hour})
	if out := writeOne(t, w, rec("evt_p", 2*time.Hour)); !out.New {
		t.Fatal("first delivery not new")
	}
	// Retention removed the stored event; its key stays.
	mustExec(t, base, `DELETE FROM inbox WHERE event_id = 'evt_p'`)
	if out := writeOne(t, w, rec("evt_p", 2*time.Hour)); out.New || out.State != StateExpired {
		t.Fatalf("redelivery after the payload expired: %+v, want a duplicate (%s)", out, StateExpired)
	}
	// Seen 90 minutes ago (in the partition started 2 h ago), lifetime 1 h:
	// the partition may hold keys seen up to 1 h ago, so it still counts.
	mustExec(t, base, `INSERT INTO dedupe_keys (provider, event_id, gen) VALUES ('p', 'evt_recent', now() - interval '2 hours')`)
	if out := writeOne(t, w, rec("evt_recent", time.Hour)); out.New {
		t.Fatalf("redelivery within the window: %+v, want a duplicate", out)
	}
	// Seen in the partition started 3 h ago (ended 2 h ago), lifetime 1 h:
	// past the window, a new event.
	mustExec(t, base, `INSERT INTO dedupe_keys (provider, event_id, gen) VALUES ('p', 'evt_late', now() - interval '3 hours')`)
	if out := writeOne(t, w, rec("evt_late", time.Hour)); !out.New {
		t.Fatalf("delivery after the dedupe window: %+v, want new", out)
	}
	if out := writeOne(t, w, rec("evt_late", time.Hour)); out.New {
		t.Fatal("the accepted-again event is not remembered")
	}
}

func TestWriteFailsWhenNoKeyPartitionCoversNow(t *testing.T) {
	base, w := newTestWriter(t, 0)
	resetKeyPartitions(t, base, [2]time.Duration{-3 * time.Hour, -time.Hour})
	_, err := w.Write(context.Background(), rec("evt_nopart", 0))
	if err == nil || !strings.Contains(err.Error(), "no partition") {
		t.Fatalf("write with no current key partition: err = %v, want PostgreSQL's no-partition error (never a silent duplicate)", err)
	}
	// Not the event's fault: the provider must get 503 and retry, not 400.
	if errors.Is(err, ErrBadEnvelope) {
		t.Fatalf("a missing partition is reported as a bad event: %v", err)
	}
	if n := count(t, base, `SELECT count(*) FROM inbox WHERE event_id = 'evt_nopart'`); n != 0 {
		t.Fatalf("inbox rows = %d, want 0", n)
	}
}

// TestKeyInAnOldWidePartitionIsRefused: keys live in partitions of
// storage.key_partition_interval, which may have been wider when an old
// partition was created. A key seen late in a wide old partition (gen is
// its start, 12 h ago; seen 3 h ago) is still within its 4 h lifetime
// although the current partition is narrower than the distance from gen:
// the lifetime is widened by the widest key partition, not the current one.
func TestKeyInAnOldWidePartitionIsRefused(t *testing.T) {
	base, w := newTestWriter(t, 0)
	resetKeyPartitions(t, base, [2]time.Duration{-12 * time.Hour, -2 * time.Hour}, [2]time.Duration{-2 * time.Hour, time.Hour})
	mustExec(t, base, `INSERT INTO dedupe_keys (provider, event_id, gen) VALUES ('p', 'evt_wide', date_trunc('second', now()) - interval '12 hours')`)
	if out := writeOne(t, w, rec("evt_wide", 4*time.Hour)); out.New {
		t.Fatalf("redelivery of a key in an old wide key partition: %+v, want a duplicate", out)
	}
	// The same partition layout: a key whose partition ended longer ago
	// than its lifetime plus the widest width is accepted again.
	mustExec(t, base, `INSERT INTO dedupe_keys (provider, event_id, gen) VALUES ('p', 'evt_gone', date_trunc('second', now()) - interval '12 hours')`)
	if out := writeOne(t, w, rec("evt_gone", time.Hour)); !out.New {
		t.Fatalf("key past its lifetime plus the widest partition: %+v, want new", out)
	}
}
