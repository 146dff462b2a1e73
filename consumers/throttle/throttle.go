// Package throttle admits requests to one remote service: a concurrency
// bound, a rate limit and the pauses a 429 or 503 asks for. The provider
// API client (consumers/fetch) and the forward destinations
// (consumers/forward) each hold one Flow per service.
package throttle

import (
	"context"
	"math"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/time/rate"
)

// Metrics is the time requests waited for a flow, per flow name
// (gatehouse_consumer_api_limiter_wait_seconds): one histogram that every
// flow of a process reports to.
type Metrics struct {
	wait *prometheus.HistogramVec
}

// NewMetrics builds the histogram and registers it on reg (nil: not
// registered).
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{wait: prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "gatehouse_consumer_api_limiter_wait_seconds",
		Help:    "Time a request waited for the provider's rate limit (api_rate_limit) or a Retry-After pause.",
		Buckets: []float64{0, .001, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30},
	}, []string{"provider"})}
	if reg != nil {
		reg.MustRegister(m.wait)
	}
	return m
}

// Config configures a Flow.
type Config struct {
	// Name labels the flow's wait figures: a provider, or
	// "forward:<destination>".
	Name string
	// Concurrency bounds requests in flight; required (> 0).
	Concurrency int
	// RateLimit is requests per second (0: unlimited) with a burst of
	// RateBurst (default: 5% of RateLimit rounded up, at least 1, so no
	// one-second window sees more than 105% of the limit).
	RateLimit float64
	RateBurst int
	Metrics   *Metrics         // nil: not reported
	Now       func() time.Time // default time.Now
}

// Flow admits requests to one service: at most Concurrency in flight, at
// most RateLimit per second, none during a Retry-After pause.
type Flow struct {
	sem     chan struct{}
	limiter *rate.Limiter // nil: unlimited
	now     func() time.Time
	wait    prometheus.Observer

	mu    sync.Mutex
	until time.Time // no request before this (Retry-After)
}

// New returns the flow of cfg.
func New(cfg Config) *Flow {
	if cfg.Metrics == nil {
		cfg.Metrics = NewMetrics(nil)
	}
	f := &Flow{sem: make(chan struct{}, cfg.Concurrency), now: cfg.Now, wait: cfg.Metrics.wait.WithLabelValues(cfg.Name)}
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

// Acquire waits for a request slot, the limiter and any pause; release
// frees the slot.
func (f *Flow) Acquire(ctx context.Context) (release func(), err error) {
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
	f.wait.Observe(f.now().Sub(start).Seconds())
	return func() { <-f.sem }, nil
}

// Pause stops requests after a 429 or 503 for its Retry-After (seconds or
// an HTTP date), or one second when the answer names none. Stripe's
// rate-limit answers are 429s with Retry-After; a Stripe-Should-Retry:
// false answer (a request that must not be retried) does not pause.
func (f *Flow) Pause(status int, h http.Header) {
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

// Now is the flow's clock.
func (f *Flow) Now() time.Time { return f.now() }
