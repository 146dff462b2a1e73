package ingest

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/gatehouse/gatehouse/ingest/upkeep"
)

type metrics struct {
	deliveries  *prometheus.CounterVec
	verifyFails *prometheus.CounterVec
	duplicates  *prometheus.CounterVec
	secret      *prometheus.CounterVec
	ackLatency  *prometheus.HistogramVec
	noAggregate *prometheus.CounterVec
	refused     *prometheus.CounterVec
}

func newMetrics(reg prometheus.Registerer) *metrics {
	m := &metrics{
		deliveries: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "gatehouse_webhook_deliveries_total",
			Help: "Webhook deliveries by provider and outcome (accepted, duplicate, rejected_signature, bad_request, too_large, unavailable).",
		}, []string{"provider", "outcome"}),
		verifyFails: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "gatehouse_webhook_verification_failures_total",
			Help: "Signature verification failures by provider and reason.",
		}, []string{"provider", "reason"}),
		duplicates: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "gatehouse_webhook_duplicates_total",
			Help: "Deliveries of an event already in the inbox.",
		}, []string{"provider"}),
		secret: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "gatehouse_webhook_secret_matched_total",
			Help: "Verified deliveries by the id of the secret that matched; an old secret can retire when its counter stops growing.",
		}, []string{"provider", "secret_id"}),
		ackLatency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "gatehouse_webhook_ack_seconds",
			Help:    "Time from request start to the response of a webhook delivery.",
			Buckets: upkeep.AckBuckets[:],
		}, []string{"provider", "status"}),
		noAggregate: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "gatehouse_webhook_aggregate_id_missing_total",
			Help: "Events whose aggregate_id_path matched nothing; they are keyed by event id instead.",
		}, []string{"provider"}),
		refused: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "gatehouse_webhook_refused_total",
			Help: "Deliveries refused to protect the edge, by provider and reason: over_share (the provider at its max_in_flight), saturated (no shared slot: the write path is behind), too_large (413), slow_body (408).",
		}, []string{"provider", "reason"}),
	}
	if reg != nil {
		reg.MustRegister(m.deliveries, m.verifyFails, m.duplicates, m.secret, m.ackLatency, m.noAggregate, m.refused)
	}
	return m
}
