package reconcile_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/gatehouse/gatehouse/ingest/inbox/inboxtest"
	"github.com/gatehouse/gatehouse/ingest/reconcile"
)

// One pass of a provider at a time over every instance: while another
// session holds the provider's lock, a pass is refused with ErrBusy and
// touches nothing; Run skips it and stops when its context ends.
func TestOnePassAtATime(t *testing.T) {
	pool, w := inboxtest.NewWriter(t, 0)
	ctx := context.Background()
	holder, err := pool.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer holder.Release()
	if _, err := holder.Exec(ctx, `SELECT pg_advisory_lock(hashtextextended('gatehouse.reconcile:' || $1, 0))`, "stripe"); err != nil {
		t.Fatal(err)
	}
	api, calls := eventList(t)
	r := stripeReconciler(t, "stripe", api.URL, pool, w, time.Now())
	if _, err := r.Pass(ctx, reconcile.Options{}); !errors.Is(err, reconcile.ErrBusy) {
		t.Fatalf("pass under another's lock: %v, want ErrBusy", err)
	}
	rctx, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
	defer cancel()
	if err := r.Run(rctx); err != nil {
		t.Fatal(err)
	}
	if calls.Load() != 0 || inboxtest.Count(t, pool, `SELECT count(*) FROM reconcile_passes`) != 0 {
		t.Fatal("a pass without the lock called the provider or recorded itself")
	}
	if _, err := holder.Exec(ctx, `SELECT pg_advisory_unlock(hashtextextended('gatehouse.reconcile:' || $1, 0))`, "stripe"); err != nil {
		t.Fatal(err)
	}
	api2, _ := eventList(t, answer(200, page(false)))
	r = stripeReconciler(t, "stripe", api2.URL, pool, w, time.Now())
	if _, err := r.Pass(ctx, reconcile.Options{}); err != nil {
		t.Fatalf("pass after the lock was released: %v", err)
	}
}
