package consumers

import (
	"github.com/prometheus/client_golang/prometheus"
)

// metrics are the consumer's own series; kprom adds the client's.
type metrics struct {
	processed  *prometheus.CounterVec   // group, topic, partition, outcome
	duration   *prometheus.HistogramVec // group, topic, outcome
	rebalances *prometheus.CounterVec   // group, kind (assigned, revoked, lost)
	lastPoll   *prometheus.GaugeVec     // group
	batchSize  *prometheus.HistogramVec // group
	rejected   *prometheus.CounterVec   // group, topic, reason
}

func newMetrics(reg prometheus.Registerer, parts *partitions) *metrics {
	m := &metrics{
		processed: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "gatehouse_consumer_records_processed_total",
			Help: "Records processed, by outcome: ok, retried, dead_lettered, stale_ignored, duplicate, skipped.",
		}, []string{"group", "topic", "partition", "outcome"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "gatehouse_consumer_processing_duration_seconds",
			Help:    "Time to process one record (API fetch, projection write, forwarding).",
			Buckets: []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10},
		}, []string{"group", "topic", "outcome"}),
		rebalances: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "gatehouse_consumer_rebalances_total",
			Help: "Group rebalance callbacks, by kind: assigned, revoked, lost.",
		}, []string{"group", "kind"}),
		lastPoll: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "gatehouse_consumer_last_poll_timestamp_seconds",
			Help: "Unix time of the consumer's latest poll; a stuck poll loop stops advancing it.",
		}, []string{"group"}),
		batchSize: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "gatehouse_consumer_batch_size_records",
			Help:    "Main-topic records processed as one batch (one claim statement, one apply transaction).",
			Buckets: []float64{1, 2, 5, 10, 25, 50, 100, 250, 500, 1000, 2500},
		}, []string{"group"}),
		rejected: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "gatehouse_consumer_records_rejected_total",
			Help: "Records sent on without processing, by reason: no_inbox_row (no verified inbox row: a topic shared with another deployment, a restored database, a forged record).",
		}, []string{"group", "topic", "reason"}),
	}
	if reg != nil {
		reg.MustRegister(m.processed, m.duration, m.rebalances, m.lastPoll, m.batchSize, m.rejected, parts)
	}
	return m
}
