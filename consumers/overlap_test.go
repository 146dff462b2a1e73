package consumers

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/gatehouse/gatehouse/consumers/event"
	"github.com/gatehouse/gatehouse/schemas"
)

// A batch's commit half (apply, marks) runs while the next poll's records
// are claimed and handled: with the first batch's apply held up by a row
// lock on its inbox row, the next event's handler still runs. Both succeed
// once the lock is gone, each applied once.
func TestNextBatchIsHandledWhileTheLastCommits(t *testing.T) {
	f := newFixture(t)
	var mu sync.Mutex
	handled := map[string]time.Time{}
	var lock pgx.Tx
	locked := make(chan struct{})
	cfg := f.config(nil)
	cfg.Handlers = NewRegistry()
	cfg.Handlers.Register(f.provider, "*", event.HandlerFunc(func(ctx context.Context, ev *event.Event, _ *event.Batch) (*event.Effect, error) {
		mu.Lock()
		handled[ev.ID] = time.Now()
		mu.Unlock()
		if ev.ID == "evt_first" {
			// Claimed already: hold the inbox row so this batch's apply waits.
			tx, err := f.pool.Begin(context.Background())
			if err != nil {
				return nil, err
			}
			if _, err := tx.Exec(context.Background(), `SELECT 1 FROM inbox WHERE provider = $1 AND event_id = $2 FOR UPDATE`,
				f.provider, ev.ID); err != nil {
				return nil, err
			}
			lock = tx
			close(locked)
		}
		return &event.Effect{}, nil
	}))
	f.start(cfg)
	f.ingest("evt_first", "payment.succeeded", "pay_first")
	f.relay()
	select {
	case <-locked:
	case <-time.After(30 * time.Second):
		t.Fatal("the first event was not handled")
	}
	f.ingest("evt_second", "payment.succeeded", "pay_second")
	f.relay()
	deadline := time.Now().Add(15 * time.Second)
	for {
		mu.Lock()
		_, ok := handled["evt_second"]
		mu.Unlock()
		if ok {
			break
		}
		if time.Now().After(deadline) {
			_ = lock.Rollback(context.Background())
			t.Fatal("the next event was not handled while the first batch's apply waited")
		}
		time.Sleep(20 * time.Millisecond)
	}
	if st := f.inbox("evt_first").State; st != schemas.StateProcessing {
		t.Errorf("first event is %s while its apply waits, want processing", st)
	}
	if err := lock.Rollback(context.Background()); err != nil {
		t.Fatal(err)
	}
	f.waitState(schemas.StateSucceeded, 30*time.Second, "evt_first", "evt_second")
}
