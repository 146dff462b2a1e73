package consumers

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/gatehouse/gatehouse/internal/testkit"
	"github.com/gatehouse/gatehouse/schemas"
)

// The destination goes down under load and its circuit opens: the events
// of keys not parked are parked by key instead of waiting, so the batches
// finish (every event succeeds while the destination is down, offsets
// move); once it is back, the probe and the drain deliver every key's
// events in order, each once.
func TestOrderedDestinationCircuitParksInsteadOfBlocking(t *testing.T) {
	f := newFixture(t)
	svc := newOrderService(t)
	f.start(orderedConfig(t, f, svc, "        breaker_failures: 3\n        breaker_probe: 300ms\n"))
	const keys, per = 20, 3
	byKey := make([][]string, keys)
	for k := range byKey {
		byKey[k] = ids(fmt.Sprintf("ord_c%d_", k), per)
	}
	svc.down.Store(true)
	send := func(round int, keys []int) {
		for _, k := range keys {
			f.ingest(byKey[k][round], "payment.succeeded", fmt.Sprintf("pay_c_%d", k))
		}
		f.relay()
	}
	first := []int{0, 1, 2, 3, 4}
	send(0, first) // their failures open the circuit
	waitFor(t, 30*time.Second, "the circuit to open", func() bool { k, _ := f.parked(); return k >= 3 })
	var rest []int
	for k := len(first); k < keys; k++ {
		rest = append(rest, k)
	}
	send(0, rest)
	for round := 1; round < per; round++ {
		send(round, append(slices.Clone(first), rest...))
	}
	var all []string
	for _, evs := range byKey {
		all = append(all, evs...)
	}
	// while the destination is down, the events finish: parked, or down
	// the retry ladder for the ones that opened the circuit
	waitFor(t, 30*time.Second, "every event parked or a parked key's head", func() bool {
		var n int
		err := f.pool.QueryRow(context.Background(), `SELECT (SELECT count(*) FROM parked_events) +
  (SELECT count(*) FROM parked_keys WHERE head_event_id <> '')`).Scan(&n)
		return err == nil && n == keys*per
	})
	var circuit int
	if err := f.pool.QueryRow(context.Background(), `SELECT count(*) FROM parked_keys WHERE head_event_id = ''`).Scan(&circuit); err != nil || circuit == 0 {
		t.Fatalf("no key parked by the open circuit (%v)", err)
	}
	if got := svc.accepted(); len(got) != 0 {
		t.Fatalf("accepted %v while down", got)
	}
	svc.down.Store(false)
	f.waitState(schemas.StateSucceeded, 60*time.Second, all...)
	waitFor(t, 30*time.Second, "every event to be delivered", func() bool { return len(svc.accepted()) >= keys*per })
	got := svc.accepted()
	for _, evs := range byKey {
		wantInOrder(t, got, evs)
	}
	if len(got) != keys*per {
		t.Errorf("accepted %d deliveries, want %d", len(got), keys*per)
	}
	waitFor(t, 10*time.Second, "the parking to empty", func() bool { k, e := f.parked(); return k == 0 && e == 0 })
}

// A record whose inbox row becomes visible only after its batch claimed it
// (late.go) is re-read before an ordered destination's batch is handled,
// so the key's next record in the batch, whose row was there, is not
// delivered before it.
func TestOrderedDestinationLateInboxRowKeepsTheOrder(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	svc := newOrderService(t)
	cfg := orderedConfig(t, f, svc, "        breaker_failures: 1000\n")
	reg := cfg.Registerer.(*prometheus.Registry)
	f.start(cfg)
	f.sendKey("pay_OLW", "ord_late_warm")
	f.waitState(schemas.StateSucceeded, 30*time.Second, "ord_late_warm")

	f.ingest("ord_late_tmpl", "payment.succeeded", "pay_OL") // a committed row to copy, never published
	f.ingest("ord_late_2", "payment.succeeded", "pay_OL")    // committed, published below by hand
	tx, err := f.pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx) //nolint:errcheck // committed below
	for _, q := range []string{
		`CREATE TEMP TABLE late ON COMMIT DROP AS SELECT * FROM inbox WHERE provider = $1 AND event_id = 'ord_late_tmpl'`,
		`UPDATE late SET event_id = 'ord_late_1' WHERE provider = $1`,
		`INSERT INTO inbox SELECT * FROM late WHERE provider = $1`,
	} {
		if _, err := tx.Exec(ctx, q, f.provider); err != nil {
			t.Fatal(err)
		}
	}
	var recs []*kgo.Record
	for _, id := range []string{"ord_late_1", "ord_late_2"} {
		body, _ := json.Marshal(map[string]any{"id": id, "type": "payment.succeeded",
			"created_at": time.Now().UTC().Format(time.RFC3339), "data": map[string]any{"payment_id": "pay_OL"}})
		recs = append(recs, contractRecord(f.topic, f.provider, id, "payment.succeeded", "pay_OL", "1", body))
	}
	if err := f.prod.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	// the batch claimed ord_late_2's row (and missed ord_late_1's)
	for deadline := time.Now().Add(10 * time.Second); f.inbox("ord_late_2").Attempts == 0; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the records were not claimed")
		}
	}
	time.Sleep(40 * time.Millisecond)
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	f.waitState(schemas.StateSucceeded, 30*time.Second, "ord_late_1", "ord_late_2")
	waitFor(t, 10*time.Second, "both delivered", func() bool { return len(svc.accepted()) >= 3 })
	wantInOrder(t, svc.accepted(), []string{"ord_late_1", "ord_late_2"})
	if got := testkit.Counter(t, reg, "gatehouse_consumer_records_rejected_total", map[string]string{"reason": "no_inbox_row"}); got != 0 {
		t.Errorf("no_inbox_row rejections = %v, want 0 (the row became visible 40 ms after the poll)", got)
	}
}
