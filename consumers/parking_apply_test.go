package consumers

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/gatehouse/gatehouse/consumers/event"
	"github.com/gatehouse/gatehouse/schemas"
)

// orderedRunner is a Runner of cfg that is not run (the test calls its
// drain and store), with its one forward ordered per object.
func orderedRunner(t *testing.T, cfg Config) (*Runner, orderedForwarder) {
	t.Helper()
	r, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	for _, fw := range r.cfg.Handlers.ordered["ref"] {
		return r, fw
	}
	t.Fatal("no forward ordered per object")
	return nil, nil
}

// inboxEvents are the ingested events ids of key, as a batch decodes them.
func (f *fixture) inboxEvents(key string, ids ...string) []*event.Event {
	f.t.Helper()
	var out []*event.Event
	for _, id := range ids {
		ev := &event.Event{Provider: f.provider, ID: id, ObjectKey: key, Attempt: 1}
		err := f.pool.QueryRow(context.Background(), `SELECT event_type, payload, received_at FROM inbox WHERE provider = $1 AND event_id = $2`,
			f.provider, id).Scan(&ev.Type, &ev.Envelope, &ev.ReceivedAt)
		if err != nil {
			f.t.Fatal(err)
		}
		out = append(out, ev)
	}
	return out
}

// A batch parks A2 and A3 behind A1 and dies before its apply commits
// (their inbox rows are not final, their offsets not marked). A1's retry
// succeeds meanwhile. The drain leaves A2 and A3 parked until a batch
// applies them: the redelivered records park them again (once each), and
// once that batch's apply commits they go out in order, each once. (A
// drain that sent them at once found the key gone at the redelivery, which
// sent them a second time.)
func TestOrderedDestinationParkedEventWaitsForItsBatchApply(t *testing.T) {
	f := newFixture(t)
	svc := newOrderService(t)
	a := ids("ord_tx_", 3)
	for _, id := range a {
		f.ingest(id, "payment.succeeded", "pay_TX")
	}
	r, fw := orderedRunner(t, orderedConfig(t, f, svc, "        breaker_failures: 1000\n"))
	ctx := context.Background()
	k := parkKey{dest: fw.Destination(), provider: "ref", key: "pay_TX"}
	evs := f.inboxEvents("pay_TX", a...)
	if err := r.store.parkBehind(ctx, k, a[0], "500 from the destination", "skip"); err != nil {
		t.Fatal(err)
	}
	parkAll := func() {
		t.Helper()
		for _, ev := range evs[1:] {
			res, err := r.store.park(ctx, k, ev, nil)
			if err != nil || res != parkParked {
				t.Fatalf("park %s: %v, %v; want parked", ev.ID, res, err)
			}
		}
	}
	parkAll() // the batch's handle stage; then the process dies
	if err := r.store.headDelivered(ctx, k, a[0]); err != nil {
		t.Fatal(err)
	}
	for range 3 {
		r.drainRound(ctx, deadLetters{}) // nothing dies here
		time.Sleep(parkUnappliedWait)
	}
	if got := svc.accepted(); len(got) != 0 {
		t.Fatalf("the drain sent %v before the batch that parked them applied", got)
	}
	parkAll() // the records delivered again
	if keys, events := f.parked(); keys != 1 || events != 2 {
		t.Fatalf("after the redelivery %d keys and %d events parked, want 1 and 2", keys, events)
	}
	for _, ev := range evs[1:] { // the batch's apply commits
		if _, err := r.store.apply(ctx, ev, &event.Effect{}); err != nil {
			t.Fatal(err)
		}
	}
	waitFor(t, 10*time.Second, "A2 and A3 to be delivered", func() bool {
		r.drainRound(ctx, deadLetters{}) // nothing dies here
		return len(svc.accepted()) >= 2
	})
	if got := svc.accepted(); !slices.Equal(got, a[1:]) {
		t.Errorf("accepted %v, want %v in this order, each once", got, a[1:])
	}
	if keys, events := f.parked(); keys != 0 || events != 0 {
		t.Errorf("%d keys and %d events still parked, want none", keys, events)
	}
}

// Eight members bound one destination at once (a rebalance hands its
// partitions over while both drain): five keys are parked, the bound is
// four, and exactly one key, the oldest, is dead-lettered between them,
// each round.
func TestOrderedDestinationBoundEvictsOnceUnderConcurrency(t *testing.T) {
	f := newFixture(t)
	svc := newOrderService(t)
	_, fw := orderedRunner(t, orderedConfig(t, f, svc, ""))
	ctx := context.Background()
	st := store{pool: f.pool}
	for round := range 5 {
		var keys []string
		for i := range 5 {
			key := fmt.Sprintf("pay_bc_%d_%d", round, i)
			id := fmt.Sprintf("ord_bc_%d_%d", round, i)
			keys = append(keys, key)
			f.ingest(id, "payment.succeeded", key)
			if _, err := f.pool.Exec(ctx, `UPDATE inbox SET processing_state = $3 WHERE provider = $1 AND event_id = $2`,
				f.provider, id, schemas.StateSucceeded); err != nil {
				t.Fatal(err)
			}
			if _, err := f.pool.Exec(ctx, `INSERT INTO parked_keys (destination, provider, kafka_key, head_event_id, parked_at)
VALUES ($1, $2, $3, 'head', now() - make_interval(secs => $4))`, fw.Destination(), f.provider, key, 100-i); err != nil {
				t.Fatal(err)
			}
			if _, err := f.pool.Exec(ctx, `INSERT INTO parked_events (destination, provider, kafka_key, event_id, event_type, envelope)
VALUES ($1, $2, $3, $4, 'payment.succeeded', '{}')`, fw.Destination(), f.provider, key, id); err != nil {
				t.Fatal(err)
			}
		}
		start := make(chan struct{})
		var wg sync.WaitGroup
		var mu sync.Mutex
		var deadLettered []string
		dead := func(_ context.Context, reason string, evs []parkedEvent) error {
			mu.Lock()
			defer mu.Unlock()
			for _, p := range evs {
				deadLettered = append(deadLettered, p.ev.ID)
			}
			return nil
		}
		errs := make([]error, 8)
		for m := range errs {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				errs[m] = st.bound(ctx, fw.Destination(), f.provider, 4, 1000, dead)
			}()
		}
		close(start)
		wg.Wait()
		if err := errors.Join(errs...); err != nil {
			t.Fatal(err)
		}
		var left []string
		rows, err := f.pool.Query(ctx, `SELECT kafka_key FROM parked_keys WHERE destination = $1 ORDER BY kafka_key`, fw.Destination())
		if err != nil {
			t.Fatal(err)
		}
		if left, err = pgx.CollectRows(rows, pgx.RowTo[string]); err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(left, keys[1:]) {
			t.Fatalf("round %d: parked keys left %v, want %v (the oldest alone dead-lettered)", round, left, keys[1:])
		}
		if want := []string{fmt.Sprintf("ord_bc_%d_0", round)}; !slices.Equal(deadLettered, want) {
			t.Errorf("round %d: written to the dead-letter topic %v, want %v once", round, deadLettered, want)
		}
		if state := f.inbox(fmt.Sprintf("ord_bc_%d_0", round)).State; state != schemas.StateDead {
			t.Errorf("round %d: the oldest key's event is %s, want dead", round, state)
		}
		if _, err := f.pool.Exec(ctx, `DELETE FROM parked_keys WHERE destination = $1`, fw.Destination()); err != nil {
			t.Fatal(err)
		}
	}
}
