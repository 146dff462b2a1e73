package reconcile

import "github.com/prometheus/client_golang/prometheus"

// Metrics are the reconciliation figures of a process, per provider.
type Metrics struct {
	missing     *prometheus.CounterVec
	passes      *prometheus.CounterVec
	duration    *prometheus.HistogramVec
	lastSuccess *prometheus.GaugeVec
	apiErrors   *prometheus.CounterVec
}

// NewMetrics builds the reconciliation metrics and registers them on reg
// (nil: not registered):
//
//   - gatehouse_reconcile_missing_total{provider,way}: events the provider
//     recorded that the inbox lacked (way: backfill or redeliver)
//   - gatehouse_reconcile_passes_total{provider,result}: passes, ok or failed
//   - gatehouse_reconcile_pass_duration_seconds{provider}
//   - gatehouse_reconcile_last_success_timestamp_seconds{provider}
//   - gatehouse_reconcile_api_errors_total{provider}: calls to the
//     provider's API that failed (an answer other than 2xx, a transport
//     error, a malformed page)
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		missing: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "gatehouse_reconcile_missing_total",
			Help: "Events the provider recorded that the inbox lacked, found by reconciliation, per way (backfill, redeliver)."},
			[]string{"provider", "way"}),
		passes: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "gatehouse_reconcile_passes_total",
			Help: "Reconciliation passes, per result (ok, failed)."}, []string{"provider", "result"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "gatehouse_reconcile_pass_duration_seconds",
			Help:    "Duration of a reconciliation pass.",
			Buckets: []float64{.1, .5, 1, 5, 15, 60, 300, 900, 3600}}, []string{"provider"}),
		lastSuccess: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "gatehouse_reconcile_last_success_timestamp_seconds",
			Help: "Unix time of the end of the last successful reconciliation pass."}, []string{"provider"}),
		apiErrors: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "gatehouse_reconcile_api_errors_total",
			Help: "Calls to a provider's API by reconciliation that failed."}, []string{"provider"}),
	}
	if reg != nil {
		reg.MustRegister(m.missing, m.passes, m.duration, m.lastSuccess, m.apiErrors)
	}
	return m
}
