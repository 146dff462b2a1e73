package consumers

import (
	"fmt"
	"testing"
	"time"

	"github.com/gatehouse/gatehouse/ingest/admin"
	"github.com/gatehouse/gatehouse/schemas"
)

// An event goes to two destinations; one answers 500 to its first
// deliveries. The retries go only to that one: the healthy destination
// gets each event exactly once (not once per attempt), the failing one
// once it answers 2xx, and forward_deliveries records both.
func TestForwardRetryGoesOnlyToFailedDestinations(t *testing.T) {
	healthy, flaky := newTeamService(t), newTeamService(t)
	flaky.Fails.Store(6)
	pl := refForwardPipeline(t, fmt.Sprintf(`      - url: %s
        secret: env:FWD_SECRET
        breaker_failures: 100
      - url: %s
        secret: env:FWD_SECRET
        breaker_failures: 100
`, healthy.URL(), flaky.URL()))
	evs := ids("multi_", 4)
	for _, id := range evs {
		pl.sendRef(id, "pay_"+id)
	}
	pl.waitState(schemas.StateSucceeded, 60*time.Second, evs...)
	retried := 0
	for _, id := range evs {
		if pl.inbox(id).Attempts > 1 {
			retried++
		}
	}
	if retried == 0 {
		t.Fatal("no event needed a retry: the 500s were not seen")
	}
	got, _ := healthy.Counts()
	flakyGot, _ := flaky.Counts()
	for _, id := range evs {
		if got["ref:"+id] != 1 || flakyGot["ref:"+id] != 1 {
			t.Errorf("%s delivered %d times to the healthy and %d to the flaky destination, want once each",
				id, got["ref:"+id], flakyGot["ref:"+id])
		}
	}
	if n := healthy.Seen.Load(); n != int64(len(evs)) {
		t.Errorf("the healthy destination saw %d requests for %d events: a retry went to it again", n, len(evs))
	}
	var rows int
	if err := pl.pool.QueryRow(t.Context(), `SELECT count(*) FROM forward_deliveries WHERE provider = 'ref'`).Scan(&rows); err != nil {
		t.Fatal(err)
	}
	if rows != 2*len(evs) {
		t.Errorf("forward_deliveries has %d rows, want %d (each event, each destination)", rows, 2*len(evs))
	}
	// A forced replay forgets the deliveries: both destinations get the
	// event again.
	target := admin.ReplayTarget{Topic: pl.topic, AggregateIDPath: []string{"data.payment_id"}}
	if _, err := admin.Replay(t.Context(), pl.pool, target, admin.ReplayRequest{Provider: "ref", EventID: evs[0], Force: true, RequestedBy: "test"}); err != nil {
		t.Fatal(err)
	}
	pl.relay()
	deadline := time.Now().Add(30 * time.Second)
	for {
		got, _ := healthy.Counts()
		flakyGot, _ := flaky.Counts()
		if got["ref:"+evs[0]] == 2 && flakyGot["ref:"+evs[0]] == 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after a forced replay: %d and %d deliveries of %s, want 2 each", got["ref:"+evs[0]], flakyGot["ref:"+evs[0]], evs[0])
		}
		time.Sleep(50 * time.Millisecond)
	}
}
