package consumers

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/gatehouse/gatehouse/schemas"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/gatehouse/gatehouse/internal/testkit"
)

// Two members of one group under a steady stream of events: the second
// joins halfway, the first leaves later. Every event succeeds and every
// effect happens exactly once across both rebalances.
func TestTwoConsumersRebalanceUnderLoad(t *testing.T) {
	f := newFixture(t)
	const n = 300
	evs := ids("evt_rb_", n)
	for i := range evs {
		f.api.setPayment(fmt.Sprintf("pay_rb_%d", i), 1, "succeeded")
	}
	f.api.mu.Lock()
	f.api.delay = 2 * time.Millisecond
	f.api.mu.Unlock()
	regA, regB := prometheus.NewRegistry(), prometheus.NewRegistry()
	_, stopA := f.start(f.config(regA))
	produced := 0
	produce := func(upTo int) {
		for ; produced < upTo; produced++ {
			f.ingest(evs[produced], "payment.succeeded", fmt.Sprintf("pay_rb_%d", produced))
			if produced%10 == 9 {
				f.relay()
				time.Sleep(20 * time.Millisecond)
			}
		}
		f.relay()
	}
	produce(100)
	waitFor(t, 30*time.Second, "the first member to process records", func() bool {
		return testkit.Counter(t, regA, "gatehouse_consumer_records_processed_total", nil) > 0
	})
	f.start(f.config(regB))
	produce(200)
	// B has joined once it holds partitions. Which ones is the sticky
	// balancer's choice (it may hand B only retry-topic partitions, which
	// carry nothing here), so B's processing is checked after A leaves.
	waitFor(t, 30*time.Second, "the second member to be assigned partitions", func() bool {
		return testkit.Counter(t, regB, "gatehouse_consumer_rebalances_total", map[string]string{"kind": "assigned"}) > 0
	})
	stopA()
	produce(n)
	f.waitState(schemas.StateSucceeded, 90*time.Second, evs...)
	eff := f.effects()
	for _, id := range evs {
		if eff[id] != 1 {
			t.Errorf("event %s applied %d times, want 1", id, eff[id])
		}
	}
	a := testkit.Counter(t, regA, "gatehouse_consumer_records_processed_total", nil)
	b := testkit.Counter(t, regB, "gatehouse_consumer_records_processed_total", nil)
	if a == 0 || b == 0 || a+b < n {
		t.Errorf("processed by A=%v B=%v, want both > 0 and at least %d together", a, b, n)
	}
	if testkit.Counter(t, regB, "gatehouse_consumer_rebalances_total", map[string]string{"kind": "assigned"}) < 2 {
		t.Errorf("member B saw fewer than two assignments (join, then A's departure)")
	}
	var processed int
	_ = f.pool.QueryRow(context.Background(), `SELECT count(*) FROM processed_events`).Scan(&processed)
	if processed != n {
		t.Errorf("processed_events = %d, want %d", processed, n)
	}
}
