package inbox

import "testing"

func queued(q *writeQueue, prov string, n int) {
	for range n {
		q.push(&pending{rec: Record{Provider: prov}})
	}
}

func provsOf(ps []*pending) map[string]int {
	m := map[string]int{}
	for _, p := range ps {
		m[p.rec.Provider]++
	}
	return m
}

// A quiet provider's delivery goes into the next statement, not behind
// every row a flooding provider queued before it.
func TestWriteQueueServesProvidersInTurn(t *testing.T) {
	q := newWriteQueue(4)
	queued(q, "flood", 400)
	queued(q, "quiet", 1)
	got := provsOf(q.take(nil, 64))
	if got["quiet"] != 1 || got["flood"] != 63 {
		t.Fatalf("first batch %v, want quiet 1 and flood 63", got)
	}
	if q.len() != 337 {
		t.Fatalf("%d left, want 337", q.len())
	}
	// Providers not reached in a batch come first in the next.
	q = newWriteQueue(1)
	for _, p := range []string{"a", "b", "c"} {
		queued(q, p, 2)
	}
	if got := provsOf(q.take(nil, 2)); got["a"] != 1 || got["b"] != 1 {
		t.Fatalf("first batch %v, want a and b", got)
	}
	if b := q.take(nil, 1); b[0].rec.Provider != "c" {
		t.Fatalf("second batch starts with %s, want c (not reached before)", b[0].rec.Provider)
	}
	// Each provider's deliveries leave in the order they came.
	q = newWriteQueue(1)
	for i := range 5 {
		q.push(&pending{rec: Record{Provider: "a", EventID: string(rune('0' + i))}})
	}
	for i, p := range q.take(nil, 5) {
		if p.rec.EventID != string(rune('0'+i)) {
			t.Fatalf("delivery %d is %s", i, p.rec.EventID)
		}
	}
	if q.len() != 0 || len(q.turn) != 0 || len(q.lines) != 0 {
		t.Fatalf("an empty queue holds %d, turn %v, lines %d", q.len(), q.turn, len(q.lines))
	}
}
