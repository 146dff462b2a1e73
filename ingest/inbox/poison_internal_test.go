package inbox

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"
)

// TestOversizedKeyFailsAloneInACoalescedBatch: PostgreSQL refuses a row
// whose key is too large for a btree index (SQLSTATE 54000) and so the
// whole statement; the Writer splits the batch, so only that row fails
// (ErrBadEnvelope: 400, never 503 forever) and its 8 neighbours commit.
// Rows reach the Writer here without the receiver's length caps, as a
// future path or a raised cap would send them. The key is the event id
// (the dedupe and inbox indexes); the aggregate id is in no index since the
// outbox became a log (migrations/00001_baseline.sql), so PostgreSQL refuses no long
// aggregate id and only the receiver's cap (MaxAggregateIDBytes) bounds it.
func TestOversizedKeyFailsAloneInACoalescedBatch(t *testing.T) {
	ctx := context.Background()
	base, w := newTestWriter(t, 0)
	for _, field := range []string{"event_id"} {
		t.Run(field, func(t *testing.T) {
			rec := func(id string) Record {
				return Record{Provider: "p", EventID: id, Type: "t", Payload: []byte(`{}`), SecretID: "s", AggregateID: "a", Topic: "topic"}
			}
			// Hold the one worker on a locked key, so the 9 writes below
			// queue and are flushed together in one statement.
			blocker := field + "-blocker"
			tx, err := base.Begin(ctx)
			if err != nil {
				t.Fatal(err)
			}
			defer tx.Rollback(ctx) //nolint:errcheck // rolled back below; a failed test must not leave the pool's Close waiting
			if _, err := tx.Exec(ctx, `INSERT INTO dedupe_keys (provider, event_id, gen)
				SELECT 'p', $1, starts FROM storage_partitions WHERE parent = 'dedupe_keys' AND starts <= now() AND ends > now()`, blocker); err != nil {
				t.Fatal(err)
			}
			blocked := make(chan error, 1)
			go func() { _, err := w.Write(ctx, rec(blocker)); blocked <- err }()
			deadline := time.Now().Add(10 * time.Second)
			for waiting := 0; waiting == 0 && time.Now().Before(deadline); { // the worker waits on the lock
				if err := base.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock'`).Scan(&waiting); err != nil {
					t.Fatal(err)
				}
				time.Sleep(5 * time.Millisecond)
			}
			recs := make([]Record, 9)
			for i := range recs {
				recs[i] = rec(fmt.Sprintf("%s-good-%d", field, i))
			}
			recs[4].EventID = incompressible(4000)
			errs := make([]error, len(recs))
			var wg sync.WaitGroup
			for i := range recs {
				wg.Add(1)
				go func() { defer wg.Done(); _, errs[i] = w.Write(ctx, recs[i]) }()
			}
			for w.queue.len() < len(recs) && time.Now().Before(deadline) {
				time.Sleep(5 * time.Millisecond)
			}
			if w.queue.len() != len(recs) {
				t.Fatalf("%d writes queued, want %d", w.queue.len(), len(recs))
			}
			if err := tx.Rollback(ctx); err != nil {
				t.Fatal(err)
			}
			wg.Wait()
			if err := <-blocked; err != nil {
				t.Fatal(err)
			}
			for i, err := range errs {
				if i == 4 {
					if !errors.Is(err, ErrBadEnvelope) {
						t.Errorf("oversized row: error %v, want ErrBadEnvelope", err)
					}
					continue
				}
				if err != nil {
					t.Errorf("row %d beside the oversized one: %v", i, err)
				}
			}
			var n int
			if err := base.QueryRow(ctx, `SELECT count(*) FROM inbox WHERE event_id LIKE $1`, field+"-good-%").Scan(&n); err != nil {
				t.Fatal(err)
			}
			if n != 8 {
				t.Errorf("%d good rows stored, want 8", n)
			}
		})
	}
}

// incompressible returns n hex characters of random bytes: PostgreSQL
// compresses a long repetitive key below the btree limit, not this one.
func incompressible(n int) string {
	b := make([]byte, n/2)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
