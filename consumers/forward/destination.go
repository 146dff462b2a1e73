package forward

import (
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/gatehouse/gatehouse/consumers/throttle"
)

// destination is one service that events are forwarded to, shared by every
// forward entry whose URL has its key (redact.DestinationKey): one circuit
// breaker, one concurrency bound and rate limit, one connection pool. Two
// entries that point at one service so stop together when it is down and
// together respect its limits.
type destination struct {
	key    string
	limits destLimits
	http   *http.Client
	flow   *throttle.Flow
	br     *breaker
	open   prometheus.Gauge
}

// destLimits are the settings a destination takes from its forward
// entries; every entry naming the destination must agree on them.
type destLimits struct {
	Timeout         time.Duration
	Concurrency     int
	RateLimit       float64
	RateBurst       int
	BreakerFailures int
	BreakerProbe    time.Duration
}

// Destinations shares destinations among forwarders (Config.Shared):
// the first forwarder of a key creates its destination, the others join it.
// Its zero value is not usable: NewDestinations.
type Destinations struct {
	metrics *Metrics
	mu      sync.Mutex
	m       map[string]*destination
}

// NewDestinations returns an empty set reporting to metrics (nil: none).
func NewDestinations(metrics *Metrics) *Destinations {
	return &Destinations{metrics: metrics, m: map[string]*destination{}}
}

// get returns the destination of key, created with limits when new. It
// fails when the destination exists with other limits.
func (ds *Destinations) get(key string, l destLimits, tr http.RoundTripper, now func() time.Time) (*destination, error) {
	ds.mu.Lock()
	defer ds.mu.Unlock()
	if d, ok := ds.m[key]; ok {
		if d.limits != l {
			return nil, fmt.Errorf("forward destination %s: timeout, concurrency, rate_limit, rate_burst, breaker_failures and "+
				"breaker_probe differ from an earlier entry's (%+v, here %+v): entries naming one destination share its limits, "+
				"so give them the same values", key, d.limits, l)
		}
		return d, nil
	}
	d := newDestination(key, l, tr, now, ds.metrics)
	ds.m[key] = d
	return d, nil
}

func newDestination(key string, l destLimits, tr http.RoundTripper, now func() time.Time, metrics *Metrics) *destination {
	if tr == nil {
		t := http.DefaultTransport.(*http.Transport).Clone()
		t.MaxIdleConns = l.Concurrency * 2
		t.MaxIdleConnsPerHost = l.Concurrency
		tr = t
	}
	if metrics == nil {
		metrics = NewMetrics(nil, nil)
	}
	d := &destination{key: key, limits: l,
		http: &http.Client{Timeout: l.Timeout, Transport: tr, CheckRedirect: func(*http.Request, []*http.Request) error {
			return http.ErrUseLastResponse
		}},
		flow: throttle.New(throttle.Config{Name: "forward:" + key, Concurrency: l.Concurrency,
			RateLimit: l.RateLimit, RateBurst: l.RateBurst, Metrics: metrics.flow, Now: now}),
		open: metrics.circuitOpen.WithLabelValues(key),
	}
	d.br = newBreaker(l.BreakerFailures, l.BreakerProbe, now, func(open bool) {
		v := 0.0
		if open {
			v = 1
		}
		d.open.Set(v)
	})
	return d
}
