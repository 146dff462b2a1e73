package forward

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gatehouse/gatehouse/consumers/event"
)

// TestBreakerCancelledProbeReleasesTheSlot: a probe whose context ends
// while the destination is still answering leaves the circuit open but
// frees the probe slot, so once the destination recovers the next delivery
// is admitted as a probe and closes the circuit (it used to wait for ever
// with open=true probing=true).
func TestBreakerCancelledProbeReleasesTheSlot(t *testing.T) {
	var mode atomic.Int32 // 0: fail, 1: hang until the request ends, 2: deliver
	hung := make(chan struct{}, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body) // so the server notices the client going away
		switch mode.Load() {
		case 0:
			http.Error(w, "down", http.StatusInternalServerError)
		case 1:
			hung <- struct{}{}
			<-r.Context().Done()
		default:
			w.WriteHeader(http.StatusNoContent)
		}
	}))
	defer srv.Close()
	fw, err := NewForwarder(Config{Provider: "ref", URL: srv.URL + "/hooks", Secret: forwardSecret,
		BreakerFailures: 1, BreakerProbe: 20 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	ev := func(id string) *event.Event {
		return &event.Event{Provider: "ref", ID: id, Type: "payment.succeeded", Envelope: []byte(`{"id":"` + id + `"}`)}
	}
	if err := fw.Deliver(context.Background(), ev("e1"), nil); event.Classify(err) != event.ClassTransient {
		t.Fatalf("first delivery: %v, want a transient failure that opens the circuit", err)
	}
	// The probe hangs at the destination; its context ends meanwhile.
	mode.Store(1)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- fw.Deliver(ctx, ev("e2"), nil) }()
	select {
	case <-hung:
	case <-time.After(5 * time.Second):
		t.Fatal("no probe reached the destination")
	}
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled probe: %v, want context.Canceled", err)
	}
	// The destination recovers: the next delivery is the probe.
	mode.Store(2)
	ctx2, cancel2 := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel2()
	if err := fw.Deliver(ctx2, ev("e3"), nil); err != nil {
		fw.d.br.mu.Lock()
		open, probing := fw.d.br.open, fw.d.br.probing
		fw.d.br.mu.Unlock()
		t.Fatalf("delivery after recovery: %v (open=%v probing=%v)", err, open, probing)
	}
	if fw.d.br.open {
		t.Error("circuit still open after a delivered probe")
	}
}

// TestBreakerAbandonedProbeWakesWaiters: abandon frees the slot and wakes
// a delivery already waiting behind the probe.
func TestBreakerAbandonedProbeWakesWaiters(t *testing.T) {
	b := newBreaker(1, time.Hour, time.Now, nil)
	b.failed(false) // opens; the first probe is an hour away
	b.mu.Lock()
	b.probeAt = time.Now()
	b.mu.Unlock()
	probe, err := b.admit(context.Background())
	if err != nil || !probe {
		t.Fatalf("admit = %v, %v; want the probe", probe, err)
	}
	got := make(chan bool, 1)
	go func() {
		p, _ := b.admit(context.Background())
		got <- p
	}()
	time.Sleep(20 * time.Millisecond)
	b.abandon(true)
	select {
	case p := <-got:
		if !p {
			t.Error("the waiting delivery was admitted, but not as the probe")
		}
	case <-time.After(3 * time.Second):
		t.Fatal("the waiting delivery was not woken by the abandoned probe")
	}
}
