package relay

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
)

type metrics struct {
	oldestUnsent prometheus.Gauge
	lagBytes     prometheus.Gauge
	lagSeconds   prometheus.Gauge
	published    *prometheus.CounterVec // topic, path
	errors       *prometheus.CounterVec // topic
	latency      *prometheus.HistogramVec
	active       prometheus.Gauge
	confirmed    prometheus.Gauge
	marked       prometheus.Counter
	retried      prometheus.Counter
	unmatched    prometheus.Counter
	cleaned      prometheus.Counter
}

func newMetrics(reg prometheus.Registerer) *metrics {
	m := &metrics{
		oldestUnsent: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "gatehouse_relay_outbox_oldest_unsent_age_seconds",
			Help: "Age of the oldest outbox row not yet marked published (0 when none).",
		}),
		lagBytes: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "gatehouse_relay_slot_lag_bytes",
			Help: "WAL bytes between the current WAL position and the slot's confirmed flush LSN.",
		}),
		lagSeconds: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "gatehouse_relay_slot_lag_seconds",
			Help: "Age of the oldest committed transaction received from the slot but not yet confirmed (0 when none).",
		}),
		published: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "gatehouse_relay_records_published_total",
			Help: "Outbox rows acknowledged by Kafka, by topic and path (stream, dispatcher, poll).",
		}, []string{"topic", "path"}),
		errors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "gatehouse_relay_publish_errors_total",
			Help: "Records Kafka failed to acknowledge (they are retried from the slot or the outbox).",
		}, []string{"topic"}),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "gatehouse_relay_commit_to_produce_seconds",
			Help:    "From the outbox row's commit (stream: commit time; poll: insert time) to Kafka's acknowledgement.",
			Buckets: []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60},
		}, []string{"path"}),
		active: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "gatehouse_relay_active",
			Help: "1 while this process holds the relay lock and publishes, 0 while it waits.",
		}),
		confirmed: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "gatehouse_relay_confirmed_lsn",
			Help: "Last LSN this relay confirmed to PostgreSQL (as a number).",
		}),
		marked: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "gatehouse_relay_rows_finished_total",
			Help: "Published outbox rows deleted or marked published (relay.on_published).",
		}),
		retried: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "gatehouse_relay_finish_retries_total",
			Help: "Published rows the stream found no row for on a first delete or mark (the commit was streamed before it was visible) and looked for again.",
		}),
		unmatched: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "gatehouse_relay_rows_unmatched_total",
			Help: "Published rows whose delete or mark found no row even after retries: another path had published them too (a duplicate record on the topic).",
		}),
		cleaned: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "gatehouse_relay_rows_deleted_total",
			Help: "Rows marked published deleted after relay.retain_published (on_published: mark).",
		}),
	}
	if reg != nil {
		reg.MustRegister(m.oldestUnsent, m.lagBytes, m.lagSeconds, m.published, m.errors, m.latency,
			m.active, m.confirmed, m.marked, m.retried, m.unmatched, m.cleaned)
	}
	return m
}

// outboxAgeSQL is the age of the oldest outbox row not yet published.
const outboxAgeSQL = `SELECT coalesce(extract(epoch FROM now() - (
	SELECT created_at FROM outbox WHERE published_at IS NULL ORDER BY seq LIMIT 1)), 0)::float8`

// outboxAge exports gatehouse_relay_outbox_oldest_unsent_age_seconds from
// a process that is not the relay (serve), measured at each scrape, so the
// backlog alert still sees the outbox grow when every relay is down.
type outboxAge struct {
	desc *prometheus.Desc
	pool *pgxpool.Pool
}

// NewOutboxAgeCollector measures the outbox's oldest unsent row at each
// scrape (within two seconds; nothing is exported when the query fails).
// Register it in processes that do not run a Relay.
func NewOutboxAgeCollector(pool *pgxpool.Pool) prometheus.Collector {
	return &outboxAge{pool: pool, desc: prometheus.NewDesc("gatehouse_relay_outbox_oldest_unsent_age_seconds",
		"Age of the oldest outbox row not yet marked published (0 when none).", nil, nil)}
}

func (o *outboxAge) Describe(ch chan<- *prometheus.Desc) { ch <- o.desc }

func (o *outboxAge) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	var age float64
	if err := o.pool.QueryRow(ctx, outboxAgeSQL).Scan(&age); err == nil {
		ch <- prometheus.MustNewConstMetric(o.desc, prometheus.GaugeValue, max(age, 0))
	}
}
