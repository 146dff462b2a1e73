package consumers

import (
	"context"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/gatehouse/gatehouse/ingest/admin"
	"github.com/gatehouse/gatehouse/internal/testkit"
	"github.com/gatehouse/gatehouse/schemas"
)

// TestErasureNoticesAndErasedEventsAreSkipped: an event waiting on the
// retry ladder when it is erased is not fetched again by its retry copy
// (which holds the payload). After an erasure by object, the relay
// publishes the erased event that was still in the outbox (its value the
// erasure marker) and one erasure notice per erased event. The consumers
// fetch none of them: no claim of a notice (it has no inbox row, so it
// never goes down the retry ladder), no fetch, and no projection
// recreated for the object the erasure removed.
func TestErasureNoticesAndErasedEventsAreSkipped(t *testing.T) {
	f := newFixture(t)
	f.delays[0] = 4 * time.Second // the retry copy of evt_rt waits while the erasure runs
	f.api.setPayment("pay_er", 1, "succeeded")
	f.api.setPayment("pay_rt", 1, "succeeded")
	f.api.fail("/v1/payments/pay_rt", 503)
	f.ingest("evt_er_1", "payment.succeeded", "pay_er")
	f.ingest("evt_rt", "payment.succeeded", "pay_rt")
	f.relay()
	reg := prometheus.NewRegistry()
	f.start(f.config(reg))
	f.waitState(schemas.StateSucceeded, 30*time.Second, "evt_er_1")
	f.waitState(schemas.StateRetrying, 30*time.Second, "evt_rt")

	// evt_rt's retry copy, published before the erasure, still holds the
	// payload: the erasure made its row final (skipped), so the copy is a
	// duplicate and the object is not fetched again.
	res, err := admin.Erase(context.Background(), f.pool, admin.Erasure{Provider: f.provider, EventID: "evt_rt", Topic: f.topic, RequestedBy: "test"})
	if err != nil || res.Events != 1 || f.inbox("evt_rt").State != schemas.StateSkipped {
		t.Fatalf("erase evt_rt: %+v %v, state %s", res, err, f.inbox("evt_rt").State)
	}
	waitFor(t, 30*time.Second, "the retry copy processed", func() bool {
		return testkit.Counter(t, reg, "gatehouse_consumer_records_processed_total", map[string]string{"outcome": OutcomeDuplicate}) == 1
	})
	if got := len(f.api.requests("/v1/payments/pay_rt")); got != 1 {
		t.Errorf("API calls for pay_rt = %d, want 1 (the failed one; none after the erasure)", got)
	}

	f.ingest("evt_er_2", "payment.succeeded", "pay_er") // recorded, not yet published
	res, err = admin.Erase(context.Background(), f.pool, admin.Erasure{Provider: f.provider, ObjectID: "pay_er",
		ObjectPaths: []string{"data.payment_id"}, Topic: f.topic, RequestedBy: "test"})
	if err != nil {
		t.Fatal(err)
	}
	if res.Events != 2 || res.Notices != 2 || res.Objects != 1 {
		t.Fatalf("erasure %+v, want 2 events, 2 notices, 1 object", res)
	}
	if n := f.relay(); n != 4 {
		t.Fatalf("relay published %d records, want 4 (the erased event and three notices)", n)
	}
	// evt_er_2's record holds the marker; its row was made skipped by the
	// erasure, so it is a duplicate. The notices are skipped.
	waitFor(t, 30*time.Second, "six records of the main topic processed", func() bool {
		return testkit.Counter(t, reg, "gatehouse_consumer_records_processed_total", map[string]string{"topic": f.topic}) == 6
	})
	if got := testkit.Counter(t, reg, "gatehouse_consumer_records_processed_total", map[string]string{"outcome": OutcomeSkipped}); got != 3 {
		t.Errorf("skipped records = %v, want 3 (the notices)", got)
	}
	if st := f.inbox("evt_er_2").State; st != schemas.StateSkipped {
		t.Errorf("evt_er_2 is %s, want skipped", st)
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
	if got := testkit.Counter(t, reg, "gatehouse_consumer_records_processed_total", map[string]string{"outcome": OutcomeDeadLettered}); got != 0 {
		t.Errorf("dead-lettered records = %v, want 0", got)
	}
}
