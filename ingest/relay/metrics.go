package relay

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
)

type metrics struct {
	sinks sync.Map // topic + "\x00" + path -> *sink

	oldestUnsent prometheus.Gauge
	lagBytes     prometheus.Gauge
	lagSeconds   prometheus.Gauge
	published    *prometheus.CounterVec // topic, path
	errors       *prometheus.CounterVec // topic
	latency      *prometheus.HistogramVec
	active       prometheus.Gauge
	confirmed    prometheus.Gauge
	cursorMoves  prometheus.Counter
}

func newMetrics(reg prometheus.Registerer) *metrics {
	m := &metrics{
		oldestUnsent: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "gatehouse_relay_outbox_oldest_unsent_age_seconds",
			Help: "Age of the oldest outbox row the relay has not published yet (0 when none).",
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
		cursorMoves: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "gatehouse_relay_cursor_moves_total",
			Help: "Times the relay moved its outbox cursor (outbox_cursor) forward: once per published window in poll mode, once per confirmed sample behind the stream.",
		}),
	}
	if reg != nil {
		reg.MustRegister(m.oldestUnsent, m.lagBytes, m.lagSeconds, m.published, m.errors, m.latency,
			m.active, m.confirmed, m.cursorMoves)
	}
	return m
}

// sink holds the metric children of one topic and path, resolved once:
// a record's acknowledgement then costs no label hashing.
type sink struct {
	topic     string
	published prometheus.Counter
	errors    prometheus.Counter
	latency   prometheus.Observer
}

// sink returns the children of topic and path.
func (m *metrics) sink(topic, path string) *sink {
	k := topic + "\x00" + path
	if s, ok := m.sinks.Load(k); ok {
		return s.(*sink)
	}
	s, _ := m.sinks.LoadOrStore(k, &sink{topic: topic, published: m.published.WithLabelValues(topic, path),
		errors: m.errors.WithLabelValues(topic), latency: m.latency.WithLabelValues(path)})
	return s.(*sink)
}

// slowestCursorSQL is the cursor of the relay furthest behind (the
// default cursor while no relay ran yet): the smallest xmax.
const slowestCursorSQL = `SELECT snap::text FROM outbox_cursor ORDER BY slot = '*', pg_snapshot_xmax(snap) LIMIT 1`

// unpublishedSQL reads the outbox rows a cursor ($1) has not passed, in
// the window's two index-friendly parts (cursor.go); %s is the select
// list, %s the per-part ORDER BY/LIMIT.
const unpublishedSQL = `(SELECT %[1]s FROM outbox WHERE txid = ANY(ARRAY(SELECT pg_snapshot_xip($1::pg_snapshot))) %[2]s)
UNION ALL
(SELECT %[1]s FROM outbox WHERE txid >= pg_snapshot_xmax($1::pg_snapshot) %[2]s)`

var (
	oldestSQL  = `SELECT min(created_at) FROM (` + fmt.Sprintf(unpublishedSQL, "created_at", "ORDER BY txid, seq LIMIT 1") + `) p`
	backlogSQL = `SELECT coalesce(sum(n), 0)::bigint, min(oldest) FROM (` + fmt.Sprintf(unpublishedSQL, "count(*) AS n, min(created_at) AS oldest", "") + `) p`
)

// oldestUnpublished is the age in seconds of the first outbox row the
// slowest relay has not published (0 when none).
func oldestUnpublished(ctx context.Context, q Querier) (float64, error) {
	var snap string
	if err := q.QueryRow(ctx, slowestCursorSQL).Scan(&snap); err != nil {
		return 0, fmt.Errorf("outbox cursor: %w", err)
	}
	var oldest *time.Time
	if err := q.QueryRow(ctx, oldestSQL, snap).Scan(&oldest); err != nil {
		return 0, fmt.Errorf("oldest unpublished outbox row: %w", err)
	}
	if oldest == nil {
		return 0, nil
	}
	return max(time.Since(*oldest).Seconds(), 0), nil
}

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
		"Age of the oldest outbox row the relay has not published yet (0 when none).", nil, nil)}
}

func (o *outboxAge) Describe(ch chan<- *prometheus.Desc) { ch <- o.desc }

func (o *outboxAge) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if age, err := oldestUnpublished(ctx, o.pool); err == nil {
		ch <- prometheus.MustNewConstMetric(o.desc, prometheus.GaugeValue, age)
	}
}

// Querier is what Backlog needs of a pool or connection.
type Querier interface {
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

// Backlog reports how many outbox rows the slowest relay has not published
// yet and when the oldest of them was written (nil when none): the log's
// queue, for the console and tools. Its cost grows with the backlog, not
// with the rows kept.
func Backlog(ctx context.Context, q Querier) (n int64, oldest *time.Time, err error) {
	var snap string
	if err := q.QueryRow(ctx, slowestCursorSQL).Scan(&snap); err != nil {
		return 0, nil, fmt.Errorf("outbox cursor: %w", err)
	}
	if err := q.QueryRow(ctx, backlogSQL, snap).Scan(&n, &oldest); err != nil {
		return 0, nil, fmt.Errorf("outbox backlog: %w", err)
	}
	return n, oldest, nil
}
