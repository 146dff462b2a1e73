package forward

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gatehouse/gatehouse/consumers/event"
)

// TestDeliverOrderedDoesNotWaitForAnOpenCircuit: while the circuit is
// open, DeliverOrdered fails at once with event.ErrCircuitOpen (no
// request); once a probe is due it is the probe, and a failed probe is
// ErrCircuitOpen too (the event did not fail: the circuit is still open);
// the probe that reaches the destination closes the circuit.
func TestDeliverOrderedDoesNotWaitForAnOpenCircuit(t *testing.T) {
	var down atomic.Bool
	var requests atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		requests.Add(1)
		if down.Load() {
			http.Error(w, "down", http.StatusInternalServerError)
			return
		}
		w.WriteHeader(http.StatusNoContent)
	}))
	defer srv.Close()
	fw, err := NewForwarder(Config{Provider: "ref", URL: srv.URL + "/hooks", Secret: forwardSecret,
		BreakerFailures: 1, BreakerProbe: 100 * time.Millisecond, PerObject: true})
	if err != nil {
		t.Fatal(err)
	}
	if po, onDead, keys, events := fw.Ordering(); !po || onDead != "skip" || keys != 10000 || events != 100000 {
		t.Fatalf("Ordering() = %v %q %d %d, want the defaults", po, onDead, keys, events)
	}
	ev := &event.Event{Provider: "ref", ID: "e1", Type: "payment.succeeded", Envelope: []byte(`{"id":"e1"}`)}
	ctx := context.Background()
	down.Store(true)
	if _, err := fw.DeliverOrdered(ctx, ev, nil); err == nil || errors.Is(err, event.ErrCircuitOpen) {
		t.Fatalf("first failure: %v, want the 500 (it opens the circuit)", err)
	}
	n := requests.Load()
	start := time.Now()
	if _, err := fw.DeliverOrdered(ctx, ev, nil); !errors.Is(err, event.ErrCircuitOpen) || time.Since(start) > 50*time.Millisecond {
		t.Fatalf("while open: %v after %v, want ErrCircuitOpen at once", err, time.Since(start))
	}
	if requests.Load() != n {
		t.Fatal("a request was sent while the circuit is open")
	}
	time.Sleep(120 * time.Millisecond)
	if _, err := fw.DeliverOrdered(ctx, ev, nil); !errors.Is(err, event.ErrCircuitOpen) || requests.Load() != n+1 {
		t.Fatalf("failed probe: %v (%d requests), want one request and ErrCircuitOpen", err, requests.Load()-n)
	}
	down.Store(false)
	time.Sleep(120 * time.Millisecond)
	if _, err := fw.DeliverOrdered(ctx, ev, nil); err != nil {
		t.Fatalf("probe after recovery: %v", err)
	}
	if _, err := fw.DeliverOrdered(ctx, ev, nil); err != nil {
		t.Fatalf("after the circuit closed: %v", err)
	}
}
