package upkeep

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/gatehouse/gatehouse/internal/testenv"
)

// The receiver's answers are added per provider and minute in memory and
// flushed as upserts that add to what is there (several serve processes
// share the rows); each flush samples the stages' queue ages into the
// stage-wide row; a failed flush keeps its counts for the next.
func TestRollupAddsAnswersPerMinute(t *testing.T) {
	ctx := context.Background()
	pool := openPool(t, testenv.Postgres(t))
	at := time.Date(2026, 11, 27, 10, 30, 15, 0, time.UTC)
	r := NewRollup(pool, time.Hour, nil)
	r.now = func() time.Time { return at }
	r.RelayOldest = func(context.Context) (*time.Time, error) { old := at.Add(-90 * time.Second); return &old, nil }
	r.Observe("stripe", "accepted", http.StatusNoContent, 3*time.Millisecond)
	r.Observe("stripe", "accepted", http.StatusNoContent, 30*time.Millisecond)
	r.Observe("stripe", "duplicate", http.StatusNoContent, time.Millisecond)
	r.Observe("stripe", "rejected_signature", http.StatusBadRequest, time.Millisecond)
	r.Observe("stripe", "refused", http.StatusServiceUnavailable, 0)
	r.Observe("github", "accepted", http.StatusNoContent, 5*time.Second)
	if err := r.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	// A second process (or flush) adds to the same minute.
	r.Observe("stripe", "accepted", http.StatusNoContent, 3*time.Millisecond)
	if err := r.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	var a, d, rj, rf int
	var buckets []int32
	if err := pool.QueryRow(ctx, `SELECT accepted, duplicate, rejected, refused, ack_buckets FROM pipeline_minutes WHERE provider = 'stripe' AND minute = $1`,
		at.Truncate(time.Minute)).Scan(&a, &d, &rj, &rf, &buckets); err != nil {
		t.Fatal(err)
	}
	if a != 3 || d != 1 || rj != 1 || rf != 1 {
		t.Errorf("stripe's minute: accepted %d duplicate %d rejected %d refused %d; want 3 1 1 1", a, d, rj, rf)
	}
	// 3 ms ×2 in the ≤ 5 ms bucket (index 3), 30 ms in ≤ 50 ms (6), the
	// 1 ms ones in ≤ 1 ms (1), the refusal in ≤ 0.5 ms (0).
	want := map[int]int32{0: 1, 1: 2, 3: 2, 6: 1}
	if len(buckets) != len(AckBuckets)+1 {
		t.Fatalf("%d buckets, want %d", len(buckets), len(AckBuckets)+1)
	}
	for i, v := range buckets {
		if v != want[i] {
			t.Errorf("bucket %d: %d, want %d (%v)", i, v, want[i], buckets)
		}
	}
	var past int32
	if err := pool.QueryRow(ctx, `SELECT ack_buckets[13] FROM pipeline_minutes WHERE provider = 'github'`).Scan(&past); err != nil || past != 1 {
		t.Errorf("github's 5 s answer in the +Inf bucket: %d %v", past, err)
	}
	var relay, consume *float32
	if err := pool.QueryRow(ctx, `SELECT relay_age_s, consume_age_s FROM pipeline_minutes WHERE provider = ''`).Scan(&relay, &consume); err != nil || relay == nil || consume == nil || *relay != 90 {
		t.Errorf("the stages' ages were not sampled (relay 90 s): %v %v %v", relay, consume, err)
	}
	// A flush that fails keeps its counts.
	r.Observe("stripe", "accepted", http.StatusNoContent, time.Millisecond)
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if err := r.Flush(cctx); err == nil {
		t.Fatal("a flush with a cancelled context succeeded")
	}
	if err := r.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if err := pool.QueryRow(ctx, `SELECT accepted FROM pipeline_minutes WHERE provider = 'stripe'`).Scan(&a); err != nil || a != 4 {
		t.Errorf("after a failed flush: accepted %d, want 4 (%v)", a, err)
	}
}
