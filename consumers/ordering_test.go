package consumers

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gatehouse/gatehouse/consumers/event"
	"github.com/gatehouse/gatehouse/schemas"
)

// Events of one object among many others are applied in offset order, and
// the events of one object in one batch share one fetch (coalescing): with
// an API whose every fetch returns a newer version, each batch applies the
// state it fetched once, to the object's first event of the batch, and its
// other events are ignored_stale. The effect log of the object therefore
// holds one change per fetch, versions increasing in event order.
func TestOneObjectInOrderAmongParallelKeys(t *testing.T) {
	f := newFixture(t)
	f.api.setPayment("pay_seq", 0, "open")
	f.api.mu.Lock()
	f.api.bump["/v1/payments/pay_seq"] = true
	f.api.delay = 5 * time.Millisecond
	f.api.mu.Unlock()
	var evs []string
	for i := 0; i < 5; i++ {
		id := "evt_seq_" + strconv.Itoa(i)
		f.ingest(id, "payment.updated", "pay_seq")
		evs = append(evs, id)
		for j := 0; j < 4; j++ {
			other := "pay_other_" + strconv.Itoa(i*4+j)
			f.api.setPayment(other, 1, "succeeded")
			f.ingest("evt_o_"+strconv.Itoa(i*4+j), "payment.succeeded", other)
			evs = append(evs, "evt_o_"+strconv.Itoa(i*4+j))
		}
	}
	f.relay() // one batch: the consumer sees them together
	f.start(f.config(nil))
	f.waitState(schemas.StateSucceeded, 30*time.Second, evs[1:5]...)
	waitFor(t, 30*time.Second, "every pay_seq event final", func() bool {
		for i := 0; i < 5; i++ {
			if !schemas.Final(f.inbox("evt_seq_" + strconv.Itoa(i)).State) {
				return false
			}
		}
		return true
	})
	if st := f.inbox("evt_seq_0").State; st != schemas.StateSucceeded {
		t.Errorf("the object's first event is %s, want succeeded", st)
	}
	fetches := len(f.api.requests("/v1/payments/pay_seq"))
	rows, err := f.pool.Query(context.Background(), `SELECT event_id, coalesce(old_version, 0), new_version FROM provider_object_changes
WHERE object_id = 'pay_seq' ORDER BY id`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	changes, lastEvent, lastVersion := 0, -1, int64(0)
	for rows.Next() {
		var id string
		var oldV, newV int64
		if err := rows.Scan(&id, &oldV, &newV); err != nil {
			t.Fatal(err)
		}
		n, _ := strconv.Atoi(strings.TrimPrefix(id, "evt_seq_"))
		if n <= lastEvent || newV <= lastVersion || oldV != lastVersion {
			t.Errorf("change %d: %s v%d→v%d after evt_seq_%d at v%d: not in event order", changes, id, oldV, newV, lastEvent, lastVersion)
		}
		lastEvent, lastVersion = n, newV
		changes++
	}
	if changes == 0 || changes != fetches {
		t.Errorf("%d changes of pay_seq for %d fetches of it; want one change per fetch", changes, fetches)
	}
	if fetches >= 5 {
		t.Errorf("pay_seq fetched %d times for 5 events delivered together: no coalescing", fetches)
	}
}

// A record can reach the consumer an instant before its inbox row is
// visible (logical decoding streams a commit before other sessions see it):
// it is not dead-lettered but retried, and succeeds once the row is there.
func TestRecordBeforeInboxRowIsVisible(t *testing.T) {
	f := newFixture(t)
	f.api.setPayment("pay_early", 1, "succeeded")
	f.delays = []time.Duration{3 * time.Second, 3 * time.Second, 3 * time.Second} // the row surely appears before attempt 2
	f.start(f.config(nil))
	body := []byte(`{"id":"evt_early","type":"payment.succeeded","data":{"payment_id":"pay_early"}}`)
	rec := contractRecord(f.topic, f.provider, "evt_early", "payment.succeeded", "pay_early", "00000000-0000-0000-0000-000000000002", body)
	if err := f.prod.ProduceSync(context.Background(), rec).FirstErr(); err != nil {
		t.Fatal(err)
	}
	r1 := f.readTopic(schemas.RetryTopic(f.topic, 1), 1, 20*time.Second)[0]
	if header(r1, schemas.HeaderErrorClass) != event.ClassTransient {
		t.Fatalf("retry.1 headers %v", r1.Headers)
	}
	f.ingest("evt_early", "payment.succeeded", "pay_early") // the row becomes visible
	f.waitState(schemas.StateSucceeded, 30*time.Second, "evt_early")
	if r := f.inbox("evt_early"); r.Attempts != 1 {
		t.Errorf("attempts = %d, want 1 (the first claim found no row)", r.Attempts)
	}
	if n := f.effects()["evt_early"]; n != 1 {
		t.Errorf("effects = %d, want 1", n)
	}
}
