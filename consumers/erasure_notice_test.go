package consumers

import (
	"context"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/gatehouse/gatehouse/ingest"
	"github.com/gatehouse/gatehouse/schemas"
)

// TestErasureNoticesAndErasedEventsAreSkipped: after an erasure by object,
// the relay publishes the erased event that was still in the outbox (its
// value the erasure marker) and one erasure notice per erased event. The
// consumers skip all of them: no claim of a notice (it has no inbox row,
// so it never goes down the retry ladder), no fetch, and no projection
// recreated for the object the erasure removed.
func TestErasureNoticesAndErasedEventsAreSkipped(t *testing.T) {
	f := newFixture(t)
	f.api.setPayment("pay_er", 1, "succeeded")
	f.ingest("evt_er_1", "payment.succeeded", "pay_er")
	f.relay()
	reg := prometheus.NewRegistry()
	f.start(f.config(reg))
	f.waitState(schemas.StateSucceeded, 30*time.Second, "evt_er_1")

	f.ingest("evt_er_2", "payment.succeeded", "pay_er") // recorded, not yet published
	res, err := ingest.Erase(context.Background(), f.pool, ingest.Erasure{Provider: f.provider, ObjectID: "pay_er",
		ObjectPaths: []string{"data.payment_id"}, Topic: f.topic, RequestedBy: "test"})
	if err != nil {
		t.Fatal(err)
	}
	if res.Events != 2 || res.Notices != 2 || res.Objects != 1 {
		t.Fatalf("erasure %+v, want 2 events, 2 notices, 1 object", res)
	}
	if n := f.relay(); n != 3 {
		t.Fatalf("relay published %d records, want 3 (the erased event and two notices)", n)
	}
	f.waitState(schemas.StateSkipped, 30*time.Second, "evt_er_2")
	waitFor(t, 30*time.Second, "four records processed", func() bool {
		return counter(t, reg, "gatehouse_consumer_records_processed_total", map[string]string{"topic": f.topic}) == 4
	})
	if got := counter(t, reg, "gatehouse_consumer_records_processed_total", map[string]string{"outcome": OutcomeSkipped}); got != 3 {
		t.Errorf("skipped records = %v, want 3", got)
	}
	if got := len(f.api.requests("/v1/payments/pay_er")); got != 1 {
		t.Errorf("API calls for pay_er = %d, want 1 (none after the erasure)", got)
	}
	var objects, processed int
	if err := f.pool.QueryRow(context.Background(), `SELECT (SELECT count(*) FROM provider_objects WHERE provider = $1),
  (SELECT count(*) FROM processed_events WHERE provider = $1 AND event_id LIKE 'erasure:%')`, f.provider).Scan(&objects, &processed); err != nil {
		t.Fatal(err)
	}
	if objects != 0 || processed != 0 {
		t.Errorf("after the erasure: %d projections (want 0), %d notices recorded as processed events (want 0)", objects, processed)
	}
	for _, o := range []string{OutcomeRetried, OutcomeDeadLettered} {
		if got := counter(t, reg, "gatehouse_consumer_records_processed_total", map[string]string{"outcome": o}); got != 0 {
			t.Errorf("%s records = %v, want 0", o, got)
		}
	}
}
