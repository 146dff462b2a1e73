package consumers

import "github.com/prometheus/client_golang/prometheus"

// APIMetrics are the provider-API figures of a consumer: requests sent,
// calls answered by another event's request (coalescing), and time spent
// waiting for the rate limiter or a Retry-After pause.
type APIMetrics struct {
	fetches   *prometheus.CounterVec   // provider
	coalesced *prometheus.CounterVec   // provider
	wait      *prometheus.HistogramVec // provider

	forwards    *prometheus.CounterVec   // provider, destination, result
	forwardTime *prometheus.HistogramVec // provider, destination
	circuitOpen *prometheus.GaugeVec     // destination (DestinationKey)
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
		forwards: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "gatehouse_consumer_forwards_total",
			Help: "Deliveries to a forward destination by result: delivered (2xx), refused (a permanent answer), failed (5xx, 408, 429, timeout, network), dropped (the entry's transform cancelled it), transform_failed (the transform threw, timed out or returned no webhook: dead-lettered).",
		}, []string{"provider", "destination", "result"}),
		forwardTime: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "gatehouse_consumer_forward_duration_seconds",
			Help:    "Time from sending a delivery to its answer.",
			Buckets: []float64{.001, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10},
		}, []string{"provider", "destination"}),
		circuitOpen: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "gatehouse_consumer_forward_circuit_open",
			Help: "1 while a forward destination's circuit is open: its deliveries wait (paused, not dropped) for a probe to succeed. One circuit per destination (scheme://host:port/path), shared by every forward entry naming it.",
		}, []string{"destination"}),
	}
	if reg != nil {
		reg.MustRegister(m.fetches, m.coalesced, m.wait, m.forwards, m.forwardTime, m.circuitOpen)
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

// forwardMetrics are APIMetrics curried to one provider's forward entry.
type forwardMetrics struct {
	results  *prometheus.CounterVec
	duration prometheus.Observer
	labels   [2]string
}

func (m *APIMetrics) forForward(provider, dest string) forwardMetrics {
	if m == nil {
		m = NewAPIMetrics(nil)
	}
	return forwardMetrics{results: m.forwards, duration: m.forwardTime.WithLabelValues(provider, dest),
		labels: [2]string{provider, dest}}
}

func (f forwardMetrics) result(r string) {
	f.results.WithLabelValues(f.labels[0], f.labels[1], r).Inc()
}
