package consumers

import (
	"context"
	"encoding/json"
	"math"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/time/rate"
)

// APIMetrics are the provider-API figures of a consumer: requests sent,
// calls answered by another event's request (coalescing), and time spent
// waiting for the rate limiter or a Retry-After pause.
type APIMetrics struct {
	fetches   *prometheus.CounterVec   // provider
	coalesced *prometheus.CounterVec   // provider
	wait      *prometheus.HistogramVec // provider
}

// NewAPIMetrics builds the metrics and registers them on reg (nil: not
// registered).
func NewAPIMetrics(reg prometheus.Registerer) *APIMetrics {
	m := &APIMetrics{
		fetches: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "gatehouse_consumer_api_requests_total",
			Help: "Requests sent to a provider's API (one per object per batch: coalesced calls are not counted).",
		}, []string{"provider"}),
		coalesced: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "gatehouse_consumer_api_coalesced_total",
			Help: "Handler calls answered by another event's request for the same object in the same batch.",
		}, []string{"provider"}),
		wait: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "gatehouse_consumer_api_limiter_wait_seconds",
			Help:    "Time a request waited for the provider's rate limit (api_rate_limit) or a Retry-After pause.",
			Buckets: []float64{0, .001, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30},
		}, []string{"provider"}),
	}
	if reg != nil {
		reg.MustRegister(m.fetches, m.coalesced, m.wait)
	}
	return m
}

// providerMetrics are APIMetrics curried to one provider.
type providerMetrics struct {
	fetches, coalesced prometheus.Counter
	wait               prometheus.Observer
}

func (m *APIMetrics) forProvider(p string) providerMetrics {
	if m == nil {
		m = NewAPIMetrics(nil)
	}
	return providerMetrics{fetches: m.fetches.WithLabelValues(p), coalesced: m.coalesced.WithLabelValues(p),
		wait: m.wait.WithLabelValues(p)}
}

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

// fetchMemo coalesces the fetches of one batch: the first call for a key
// runs, every other call for it, concurrent or later, gets its answer.
type fetchMemo struct {
	mu    sync.Mutex
	calls map[string]*memoCall
}

type memoCall struct {
	done chan struct{}
	body json.RawMessage
	at   time.Time
	err  error
}

type memoKey struct{}

// withFetchMemo returns ctx carrying a new batch memo.
func withFetchMemo(ctx context.Context) context.Context {
	return context.WithValue(ctx, memoKey{}, &fetchMemo{calls: map[string]*memoCall{}})
}

func memoFrom(ctx context.Context) *fetchMemo {
	m, _ := ctx.Value(memoKey{}).(*fetchMemo)
	return m
}

func (m *fetchMemo) do(key string, coalesced prometheus.Counter, fetch func() (json.RawMessage, time.Time, error)) (json.RawMessage, time.Time, error) {
	m.mu.Lock()
	if c, ok := m.calls[key]; ok {
		m.mu.Unlock()
		<-c.done
		coalesced.Inc()
		return c.body, c.at, c.err
	}
	c := &memoCall{done: make(chan struct{})}
	m.calls[key] = c
	m.mu.Unlock()
	c.body, c.at, c.err = fetch()
	close(c.done)
	return c.body, c.at, c.err
}
