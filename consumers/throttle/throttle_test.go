package throttle

import (
	"context"
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// A 429 without Retry-After pauses the flow for a second, a 503 with
// Retry-After for its seconds, and a Stripe-Should-Retry: false answer not
// at all; Concurrency bounds the requests in flight; every admission's
// wait is observed under the flow's name.
func TestFlowPausesAndBounds(t *testing.T) {
	reg := prometheus.NewRegistry()
	m := NewMetrics(reg)
	short := func() (context.Context, context.CancelFunc) {
		return context.WithTimeout(context.Background(), 100*time.Millisecond)
	}

	f := New(Config{Name: "p", Concurrency: 1, Metrics: m})
	f.Pause(http.StatusTooManyRequests, http.Header{"Stripe-Should-Retry": {"false"}})
	ctx, cancel := short()
	release, err := f.Acquire(ctx)
	cancel()
	if err != nil {
		t.Fatalf("after a Stripe-Should-Retry: false answer: %v", err)
	}
	ctx, cancel = short()
	if _, err := f.Acquire(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("a second request beside the one in flight (concurrency 1): %v", err)
	}
	cancel()
	release()

	for _, c := range []struct {
		status int
		h      http.Header
	}{
		{http.StatusTooManyRequests, http.Header{}},
		{http.StatusServiceUnavailable, http.Header{"Retry-After": {"30"}}},
	} {
		f := New(Config{Name: "q", Concurrency: 4, Metrics: m})
		f.Pause(c.status, c.h)
		ctx, cancel := short()
		if _, err := f.Acquire(ctx); !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("%d %v: admitted during the pause: %v", c.status, c.h, err)
		}
		cancel()
	}
	f = New(Config{Name: "r", Concurrency: 4, Metrics: m})
	f.Pause(http.StatusServiceUnavailable, http.Header{}) // a 503 without Retry-After: no pause
	ctx, cancel = short()
	defer cancel()
	if release, err := f.Acquire(ctx); err != nil {
		t.Errorf("503 without Retry-After paused: %v", err)
	} else {
		release()
	}
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	observed := map[string]uint64{}
	for _, mf := range mfs {
		for _, mt := range mf.GetMetric() {
			observed[mt.GetLabel()[0].GetValue()] += mt.GetHistogram().GetSampleCount()
		}
	}
	if observed["p"] != 1 || observed["r"] != 1 {
		t.Errorf("waits observed per flow: %v", observed)
	}
}
