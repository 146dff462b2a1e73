package consumers

import (
	"context"
	"math"
	"net/http"
	"strconv"
	"sync"
	"time"

	"golang.org/x/time/rate"
)

// flow admits requests to one provider's API: at most Concurrency in
// flight, at most RateLimit per second, none during a Retry-After pause.
type flow struct {
	sem     chan struct{}
	limiter *rate.Limiter // nil: unlimited
	now     func() time.Time
	m       providerMetrics

	mu    sync.Mutex
	until time.Time // no request before this (Retry-After)
}

func newFlow(cfg APIClientConfig) *flow {
	f := &flow{sem: make(chan struct{}, cfg.Concurrency), now: cfg.Now, m: cfg.Metrics.forProvider(cfg.Provider)}
	if f.now == nil {
		f.now = time.Now
	}
	if cfg.RateLimit > 0 {
		burst := cfg.RateBurst
		if burst <= 0 {
			burst = max(1, int(math.Ceil(cfg.RateLimit/20)))
		}
		f.limiter = rate.NewLimiter(rate.Limit(cfg.RateLimit), burst)
	}
	return f
}

// acquire waits for a request slot, the limiter and any pause; release
// frees the slot.
func (f *flow) acquire(ctx context.Context) (release func(), err error) {
	select {
	case f.sem <- struct{}{}:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	start := f.now()
	for {
		f.mu.Lock()
		wait := f.until.Sub(f.now())
		f.mu.Unlock()
		if wait <= 0 {
			break
		}
		t := time.NewTimer(wait)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			<-f.sem
			return nil, ctx.Err()
		}
	}
	if f.limiter != nil {
		if err := f.limiter.Wait(ctx); err != nil {
			<-f.sem
			return nil, err
		}
	}
	f.m.wait.Observe(f.now().Sub(start).Seconds())
	return func() { <-f.sem }, nil
}

// pause stops requests after a 429 or 503 for its Retry-After (seconds or
// an HTTP date), or one second when the answer names none. Stripe's
// rate-limit answers are 429s with Retry-After; a Stripe-Should-Retry:
// false answer (a request that must not be retried) does not pause.
func (f *flow) pause(status int, h http.Header) {
	if h.Get("Stripe-Should-Retry") == "false" {
		return
	}
	d := time.Duration(0)
	if v := h.Get("Retry-After"); v != "" {
		if n, err := strconv.Atoi(v); err == nil && n >= 0 {
			d = time.Duration(n) * time.Second
		} else if t, err := http.ParseTime(v); err == nil {
			d = t.Sub(f.now())
		}
	}
	if d <= 0 && status == http.StatusTooManyRequests {
		d = time.Second
	}
	d = min(d, time.Minute)
	if d <= 0 {
		return
	}
	f.mu.Lock()
	if until := f.now().Add(d); until.After(f.until) {
		f.until = until
	}
	f.mu.Unlock()
}
