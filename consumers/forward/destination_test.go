package forward

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/gatehouse/gatehouse/consumers/event"
	"github.com/gatehouse/gatehouse/internal/redact"
	"github.com/gatehouse/gatehouse/internal/testkit"
)

func TestDestinationKey(t *testing.T) {
	for raw, want := range map[string]string{
		"http://Svc.Example/hooks":                            "http://svc.example/…#435632a4",
		"http://svc.example:80/hooks?entry=2":                 "http://svc.example/…#435632a4",
		"https://user:pw@svc.example/hooks#x":                 "https://svc.example/…#435632a4",
		"https://svc.example:8443":                            "https://svc.example:8443/",
		"https://svc.example/":                                "https://svc.example/",
		"HTTP://[::1]:9000/a%2Fb":                             "http://[::1]:9000/…#62367424",
		"http://[::1]/a%2Fb":                                  "http://[::1]/…#62367424",
		"http://svc.example/hooks/":                           "http://svc.example/…#45adb830",
		"http://svc.example:8080/other?entry=1":               "http://svc.example:8080/…#bf2faee2",
		"https://svc.example:443/hooks?entry=3":               "https://svc.example/…#435632a4",
		"http://svc.example.other.example/hooks":              "http://svc.example.other.example/…#435632a4",
		"https://Hooks.Slack.com/services/T0/B0/XXXX?token=t": "https://hooks.slack.com/…#e248725e",
	} {
		if got, err := redact.DestinationKey(raw); err != nil || got != want {
			t.Errorf("redact.DestinationKey(%q) = %q, %v; want %q", raw, got, err, want)
		}
	}
	for _, bad := range []string{"", "/hooks", "svc.example/hooks", "://x", "hooks.slack.com/services/T0/B0/XXXX"} {
		if _, err := redact.DestinationKey(bad); err == nil || strings.Contains(err.Error(), "XXXX") || strings.Contains(err.Error(), "hooks") {
			t.Errorf("redact.DestinationKey(%q): %v, want an error without the URL", bad, err)
		}
	}
}

// Two forward entries naming one destination (the same scheme, host, port
// and path; another query) share one circuit: once the first entry's
// failures open it, the second entry's deliveries wait without a request,
// while an entry to another, healthy destination keeps delivering.
func TestForwardEntriesShareTheDestinationCircuit(t *testing.T) {
	var downSeen, upSeen atomic.Int64
	down := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		downSeen.Add(1)
		http.Error(w, "down", http.StatusInternalServerError)
	}))
	defer down.Close()
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		upSeen.Add(1)
		w.WriteHeader(http.StatusNoContent)
	}))
	defer up.Close()
	reg := prometheus.NewRegistry()
	metrics := NewMetrics(reg, nil)
	shared := NewDestinations(metrics)
	mk := func(url, typ string) *Forwarder {
		fw, err := NewForwarder(Config{Provider: "ref", URL: url, Secret: forwardSecret, Types: []string{typ},
			BreakerFailures: 3, BreakerProbe: time.Hour, Shared: shared, Metrics: metrics})
		if err != nil {
			t.Fatal(err)
		}
		return fw
	}
	first, second := mk(down.URL+"/hooks?entry=1", "payment.*"), mk(down.URL+"/hooks?entry=2", "invoice.*")
	healthy := mk(up.URL+"/hooks", "*")
	if first.Destination() != second.Destination() || first.Destination() == healthy.Destination() {
		t.Fatalf("destinations %s, %s, %s", first.Destination(), second.Destination(), healthy.Destination())
	}
	ev := func(id, typ string) *event.Event {
		return &event.Event{Provider: "ref", ID: id, Type: typ, Envelope: []byte(`{"id":"` + id + `","type":"` + typ + `"}`)}
	}
	for i := range 3 {
		if err := first.Deliver(context.Background(), ev("p"+strconv.Itoa(i), "payment.succeeded"), nil); event.Classify(err) != event.ClassTransient {
			t.Fatalf("delivery %d to the failing destination: %v", i, err)
		}
	}
	if n := testkit.Counter(t, reg, "gatehouse_consumer_forward_circuit_open", map[string]string{"destination": first.Destination()}); n != 1 {
		t.Fatalf("circuit_open = %v after 3 failures, want 1", n)
	}
	before := downSeen.Load()
	// The second entry's delivery waits (no request) for the probe, an hour
	// away; the healthy destination takes its deliveries meanwhile.
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	var wg sync.WaitGroup
	var waited error
	wg.Add(1)
	go func() {
		defer wg.Done()
		waited = second.Deliver(ctx, ev("i1", "invoice.paid"), nil)
	}()
	for i := range 5 {
		if err := healthy.Deliver(context.Background(), ev("h"+strconv.Itoa(i), "invoice.paid"), nil); err != nil {
			t.Errorf("healthy destination: %v", err)
		}
	}
	wg.Wait()
	if !errors.Is(waited, context.DeadlineExceeded) {
		t.Errorf("second entry's delivery: %v, want it to wait for the shared circuit", waited)
	}
	if n := downSeen.Load() - before; n != 0 {
		t.Errorf("%d requests to the destination while its circuit was open", n)
	}
	if upSeen.Load() != 5 {
		t.Errorf("healthy destination got %d deliveries, want 5", upSeen.Load())
	}
	if n := testkit.Counter(t, reg, "gatehouse_consumer_forward_circuit_open", map[string]string{"destination": healthy.Destination()}); n != 0 {
		t.Errorf("healthy destination's circuit_open = %v", n)
	}
	// Entries naming one destination must agree on its limits.
	_, err := NewForwarder(Config{Provider: "other", URL: down.URL + "/hooks", Secret: forwardSecret, Concurrency: 8,
		BreakerFailures: 3, BreakerProbe: time.Hour, Shared: shared, Metrics: metrics})
	if err == nil || !strings.Contains(err.Error(), "differ from an earlier entry") {
		t.Errorf("conflicting limits: %v", err)
	}
}
