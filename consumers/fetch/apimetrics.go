package fetch

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/gatehouse/gatehouse/consumers/throttle"
)

// Metrics are the provider-API figures of a consumer: requests sent,
// calls answered by another event's request (coalescing), and (Flow) time
// spent waiting for the rate limiter or a Retry-After pause.
type Metrics struct {
	fetches   *prometheus.CounterVec // provider
	coalesced *prometheus.CounterVec // provider
	flow      *throttle.Metrics
}

// NewMetrics builds the metrics and registers them on reg (nil: not
// registered); the limiter's waits go to flow (nil: a histogram of its own,
// registered on reg).
func NewMetrics(reg prometheus.Registerer, flow *throttle.Metrics) *Metrics {
	if flow == nil {
		flow = throttle.NewMetrics(reg)
	}
	m := &Metrics{
		fetches: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "gatehouse_consumer_api_requests_total",
			Help: "Requests sent to a provider's API (one per object per batch: coalesced calls are not counted).",
		}, []string{"provider"}),
		coalesced: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "gatehouse_consumer_api_coalesced_total",
			Help: "Handler calls answered by another event's request for the same object in the same batch.",
		}, []string{"provider"}),
		flow: flow,
	}
	if reg != nil {
		reg.MustRegister(m.fetches, m.coalesced)
	}
	return m
}

// providerMetrics are Metrics curried to one provider.
type providerMetrics struct {
	fetches, coalesced prometheus.Counter
}

func (m *Metrics) forProvider(p string) providerMetrics {
	if m == nil {
		m = NewMetrics(nil, nil)
	}
	return providerMetrics{fetches: m.fetches.WithLabelValues(p), coalesced: m.coalesced.WithLabelValues(p)}
}

// flowMetrics is where the limiter's waits go (nil Metrics: nowhere).
func (m *Metrics) flowMetrics() *throttle.Metrics {
	if m == nil {
		return nil
	}
	return m.flow
}
