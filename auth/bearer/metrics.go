package bearer

import "github.com/prometheus/client_golang/prometheus"

type metrics struct {
	verifications  *prometheus.CounterVec
	jwksFetches    *prometheus.CounterVec
	introspections *prometheus.CounterVec
}

func newMetrics(reg prometheus.Registerer) *metrics {
	m := &metrics{
		verifications: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "gatehouse_bearer_verifications_total",
			Help: "Bearer tokens checked, by result (ok, invalid, unavailable).",
		}, []string{"result"}),
		jwksFetches: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "gatehouse_bearer_jwks_fetches_total",
			Help: "JWKS fetches of trusted issuers, by result.",
		}, []string{"result"}),
		introspections: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "gatehouse_bearer_introspections_total",
			Help: "RFC 7662 introspection calls, by result (ok, error).",
		}, []string{"result"}),
	}
	if reg != nil {
		reg.MustRegister(m.verifications, m.jwksFetches, m.introspections)
	}
	return m
}
