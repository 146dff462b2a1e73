package consumers

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/gatehouse/gatehouse/internal/testkit"
	"github.com/gatehouse/gatehouse/schemas"
)

// A record of an ordered destination whose inbox row becomes visible only
// after its batch gave up re-reading it (150 ms) goes down the retry
// ladder, and its key's later events wait behind it instead of overtaking
// it: a key not parked is parked behind it (pay_LN: 1 late, 2 in the
// batch), and a key already parked keeps its place among the parked
// events (pay_LP: 0 fails once, 1 late, 2). Each key's events arrive in
// order, each once.
func TestOrderedDestinationMissingInboxRowParksItsKey(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	svc := newOrderService(t)
	svc.fail("ord_lp_0", 1)
	cfg := orderedConfig(t, f, svc, "        breaker_failures: 1000\n")
	reg := cfg.Registerer.(*prometheus.Registry)
	f.start(cfg)
	f.sendKey("pay_LW", "ord_lt_warm")
	f.waitState(schemas.StateSucceeded, 30*time.Second, "ord_lt_warm")

	f.ingest("ord_lt_tmpl", "payment.succeeded", "pay_LT") // a committed row to copy, never published
	for _, id := range []string{"ord_ln_2", "ord_lp_0", "ord_lp_2"} {
		f.ingest(id, "payment.succeeded", "pay_LT") // committed, published below by hand under their keys
	}
	tx, err := f.pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx) //nolint:errcheck // committed below
	for _, id := range []string{"ord_ln_1", "ord_lp_1"} {
		lateInboxRow(t, tx, f.provider, "ord_lt_tmpl", id)
	}
	var recs []*kgo.Record
	for _, e := range []struct{ id, key string }{
		{"ord_ln_1", "pay_LN"}, {"ord_ln_2", "pay_LN"}, {"ord_lp_0", "pay_LP"}, {"ord_lp_1", "pay_LP"}, {"ord_lp_2", "pay_LP"},
	} {
		body, _ := json.Marshal(map[string]any{"id": e.id, "type": "payment.succeeded",
			"created_at": time.Now().UTC().Format(time.RFC3339), "data": map[string]any{"payment_id": e.key}})
		recs = append(recs, contractRecord(f.topic, f.provider, e.id, "payment.succeeded", e.key, "1", body))
	}
	if err := f.prod.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, "the records to be claimed", func() bool {
		return f.inbox("ord_ln_2").Attempts > 0 && f.inbox("ord_lp_2").Attempts > 0
	})
	waitFor(t, 10*time.Second, "the late records to be given up on", func() bool {
		return testkit.Counter(t, reg, "gatehouse_consumer_records_rejected_total", map[string]string{"reason": "no_inbox_row"}) == 2
	})
	time.Sleep(300 * time.Millisecond) // the first retry misses the row too
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	f.waitState(schemas.StateSucceeded, 30*time.Second, "ord_ln_1", "ord_ln_2", "ord_lp_0", "ord_lp_1", "ord_lp_2")
	waitFor(t, 10*time.Second, "every event delivered", func() bool { return len(svc.accepted()) >= 6 })
	wantInOrder(t, svc.accepted(), []string{"ord_ln_1", "ord_ln_2"})
	wantInOrder(t, svc.accepted(), []string{"ord_lp_0", "ord_lp_1", "ord_lp_2"})
	waitFor(t, 10*time.Second, "the parking to empty", func() bool { k, e := f.parked(); return k == 0 && e == 0 })
}

// lateInboxRow inserts, in tx, the inbox row of id copied from tmpl's: a
// row committed when tx is.
func lateInboxRow(t *testing.T, tx pgx.Tx, provider, tmpl, id string) {
	t.Helper()
	ctx := context.Background()
	if _, err := tx.Exec(ctx, `CREATE TEMP TABLE IF NOT EXISTS late ON COMMIT DROP AS SELECT * FROM inbox WHERE false`); err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(ctx, `INSERT INTO late SELECT * FROM inbox WHERE provider = $1 AND event_id = $2`, provider, tmpl); err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(ctx, `UPDATE late SET event_id = $3 WHERE provider = $1 AND event_id = $2`, provider, tmpl, id); err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(ctx, `INSERT INTO inbox SELECT * FROM late WHERE provider = $1 AND event_id = $2`, provider, id); err != nil {
		t.Fatal(err)
	}
}
