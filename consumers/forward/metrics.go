package forward

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/gatehouse/gatehouse/consumers/throttle"
)

// Metrics are the forward figures of a consumer: deliveries by result,
// their duration, each destination's circuit, and (flow) time spent
// waiting for a destination's rate limit or a Retry-After pause.
type Metrics struct {
	forwards    *prometheus.CounterVec   // provider, destination, result
	forwardTime *prometheus.HistogramVec // provider, destination
	circuitOpen *prometheus.GaugeVec     // destination (DestinationKey)
	flow        *throttle.Metrics
}

// NewMetrics builds the metrics and registers them on reg (nil: not
// registered); the limiter's waits go to flow (nil: a histogram of its own,
// registered on reg).
func NewMetrics(reg prometheus.Registerer, flow *throttle.Metrics) *Metrics {
	if flow == nil {
		flow = throttle.NewMetrics(reg)
	}
	m := &Metrics{
		forwards: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "gatehouse_consumer_forwards_total",
			Help: "Deliveries to a forward destination by result: delivered (2xx), refused (a permanent answer), failed (5xx, 408, 429, timeout, network), dropped (the entry's transform cancelled it), transform_failed (the transform threw, exhausted its time, memory or stack, or returned no webhook: dead-lettered).",
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
		flow: flow,
	}
	if reg != nil {
		reg.MustRegister(m.forwards, m.forwardTime, m.circuitOpen)
	}
	return m
}

// forwardMetrics are Metrics curried to one provider's forward entry.
type forwardMetrics struct {
	results  *prometheus.CounterVec
	duration prometheus.Observer
	labels   [2]string
}

func (m *Metrics) forForward(provider, dest string) forwardMetrics {
	if m == nil {
		m = NewMetrics(nil, nil)
	}
	return forwardMetrics{results: m.forwards, duration: m.forwardTime.WithLabelValues(provider, dest),
		labels: [2]string{provider, dest}}
}

func (f forwardMetrics) result(r string) {
	f.results.WithLabelValues(f.labels[0], f.labels[1], r).Inc()
}
