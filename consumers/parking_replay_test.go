package consumers

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/gatehouse/gatehouse/consumers/forward"
	"github.com/gatehouse/gatehouse/ingest/admin"
	"github.com/gatehouse/gatehouse/schemas"
)

// A replay to an ordered destination is delivered as what it is: A1 is
// delivered, A2 fails and parks the key, and A1 is replayed meanwhile. The
// replay is parked behind A2 (it is A's latest record) and delivered after
// it, marked Gatehouse-Replay: true with A1's original receipt time; the
// first deliveries carry no such header.
func TestOrderedDestinationReplayIsMarked(t *testing.T) {
	f := newFixture(t)
	f.delays = []time.Duration{time.Second, 2 * time.Second, 4 * time.Second}
	svc := newOrderService(t)
	a := ids("ord_rp_", 2)
	svc.fail(a[1], -1)
	f.start(orderedConfig(t, f, svc, "        breaker_failures: 1000\n"))
	f.sendKey("pay_RP", a...)
	f.waitState(schemas.StateSucceeded, 30*time.Second, a[0])
	waitFor(t, 30*time.Second, "A to be parked behind A2", func() bool { k, _ := f.parked(); return k == 1 })
	target := admin.ReplayTarget{Topic: f.topic, AggregateIDPath: []string{"data.payment_id"}}
	if _, err := admin.Replay(context.Background(), f.pool, target, admin.ReplayRequest{Provider: f.provider, EventID: a[0], Force: true, RequestedBy: "test"}); err != nil {
		t.Fatal(err)
	}
	f.relay()
	waitFor(t, 30*time.Second, "the replay to be parked", func() bool {
		var replay bool
		_ = f.pool.QueryRow(context.Background(), `SELECT replay FROM parked_events WHERE event_id = $1`, a[0]).Scan(&replay)
		return replay
	})
	svc.fail(a[1], 0)
	waitFor(t, 30*time.Second, "A2 and the replay to be delivered", func() bool { return len(svc.accepted()) >= 3 })
	if got := svc.accepted(); !slices.Equal(got, []string{a[0], a[1], a[0]}) {
		t.Fatalf("accepted %v, want A1, A2, then A1's replay", got)
	}
	svc.mu.Lock()
	defer svc.mu.Unlock()
	for i, h := range svc.hdrs {
		if got, want := h.Get(forward.HeaderReplay), map[bool]string{true: "true"}[i == 2]; got != want {
			t.Errorf("delivery %d: %s %q, want %q", i+1, forward.HeaderReplay, got, want)
		}
	}
	at, err := time.Parse(time.RFC3339Nano, svc.hdrs[2].Get(forward.HeaderOriginalReceivedAt))
	var received time.Time
	if qerr := f.pool.QueryRow(context.Background(), `SELECT received_at FROM inbox WHERE provider = $1 AND event_id = $2`, f.provider, a[0]).Scan(&received); qerr != nil {
		t.Fatal(qerr)
	}
	if err != nil || !at.Equal(received) {
		t.Errorf("%s %v (%v), want A1's received_at %v", forward.HeaderOriginalReceivedAt, at, err, received)
	}
}
