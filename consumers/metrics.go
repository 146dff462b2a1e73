package consumers

import (
	"strconv"
	"sync"
	"time"

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

type tp struct {
	topic     string
	partition int32
}

// partState is what the runner knows about one assigned partition.
type partState struct {
	hw      int64     // high watermark from the latest fetch
	next    int64     // offset after the latest finished record (-1: none yet)
	headAt  time.Time // timestamp (due time on retry topics) of the oldest unfinished record
	hasHead bool
	lastAt  time.Time // timestamp (due time) of the latest finished record
}

// partitions tracks lag and queue age per assigned partition and exports
// them as gauges on scrape.
type partitions struct {
	group string
	now   func() time.Time
	mu    sync.Mutex
	m     map[tp]*partState
	lag   *prometheus.Desc
	age   *prometheus.Desc
}

func newPartitions(group string, now func() time.Time) *partitions {
	return &partitions{
		group: group, now: now, m: map[tp]*partState{},
		lag: prometheus.NewDesc("gatehouse_consumer_lag_records",
			"Records in the partition not yet processed by this consumer (high watermark minus next offset).",
			[]string{"group", "topic", "partition"}, nil),
		age: prometheus.NewDesc("gatehouse_consumer_queue_age_seconds",
			"Now minus the timestamp of the oldest unprocessed record; on retry topics measured from its due time.",
			[]string{"group", "topic", "partition"}, nil),
	}
}

func (p *partitions) state(k tp) *partState {
	s := p.m[k]
	if s == nil {
		s = &partState{next: -1}
		p.m[k] = s
	}
	return s
}

// fetched records the high watermark of a fetch whose first record is at
// offset first.
func (p *partitions) fetched(k tp, hw, first int64) {
	p.mu.Lock()
	s := p.state(k)
	s.hw = hw
	if s.next < 0 {
		s.next = first
	}
	p.mu.Unlock()
}

func (p *partitions) head(k tp, at time.Time) {
	p.mu.Lock()
	s := p.state(k)
	s.headAt, s.hasHead = at, true
	p.mu.Unlock()
}

func (p *partitions) done(k tp, offset int64, at time.Time) {
	p.mu.Lock()
	s := p.state(k)
	s.next, s.lastAt, s.hasHead = offset+1, at, false
	p.mu.Unlock()
}

func (p *partitions) drop(topicParts map[string][]int32) {
	p.mu.Lock()
	for t, ps := range topicParts {
		for _, n := range ps {
			delete(p.m, tp{t, n})
		}
	}
	p.mu.Unlock()
}

// Describe implements prometheus.Collector.
func (p *partitions) Describe(ch chan<- *prometheus.Desc) { ch <- p.lag; ch <- p.age }

// Collect implements prometheus.Collector.
func (p *partitions) Collect(ch chan<- prometheus.Metric) {
	now := p.now()
	p.mu.Lock()
	defer p.mu.Unlock()
	for k, s := range p.m {
		lag := int64(0)
		if s.next >= 0 && s.hw > s.next {
			lag = s.hw - s.next
		}
		age := time.Duration(0)
		switch {
		case s.hasHead:
			age = now.Sub(s.headAt)
		case lag > 0:
			// The next record is newer than the last finished one: an upper bound.
			age = now.Sub(s.lastAt)
		}
		if age < 0 {
			age = 0
		}
		part := strconv.Itoa(int(k.partition))
		ch <- prometheus.MustNewConstMetric(p.lag, prometheus.GaugeValue, float64(lag), p.group, k.topic, part)
		ch <- prometheus.MustNewConstMetric(p.age, prometheus.GaugeValue, age.Seconds(), p.group, k.topic, part)
	}
}
