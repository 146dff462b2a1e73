package consumers

import (
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

type tp struct {
	topic     string
	partition int32
}

// span is a run of polled records of one partition, first to last (offsets),
// none finished yet; at is the time of the record at first: its Kafka
// timestamp, or its due time on a retry topic.
type span struct {
	first, last int64
	at          time.Time
}

// partState is what the runner knows about one assigned partition.
type partState struct {
	hw   int64 // high watermark from the latest fetch
	next int64 // offset after the latest finished record (-1: none yet)
	// pending are the polled, unfinished records in offset order: claimed,
	// being handled, waiting for their batch's apply, or held until due.
	pending []span
	lastAt  time.Time // timestamp (due time) of the latest finished record
}

// partitions tracks lag and queue age per assigned partition and exports
// them as gauges on scrape. The queue age is the age of the oldest record
// not yet finished, per partition (Burrow's and Spring Kafka's meaning):
// the first pending span's time while polled records are unfinished, and,
// when every polled record is finished but the high watermark is ahead
// (records not fetched yet), the time of the last finished record, which
// is older than the next one: an upper bound that is exact to the gap
// between two records.
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
			"Now minus the timestamp of the oldest record of the partition not yet processed (fetched or not; "+
				"a record being handled or waiting for its batch's commit counts); on retry topics measured from its due time.",
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

// fetched records a poll of partition k: its high watermark and the
// records first to last, whose first record's time is at.
func (p *partitions) fetched(k tp, hw, first, last int64, at time.Time) {
	p.mu.Lock()
	defer p.mu.Unlock()
	s := p.state(k)
	s.hw = max(s.hw, hw)
	if s.next < 0 {
		s.next = first
	}
	if n := len(s.pending); n > 0 && s.pending[n-1].last >= first {
		first = s.pending[n-1].last + 1 // already pending (a record polled again)
	}
	if first < s.next {
		first = s.next
	}
	if first <= last {
		s.pending = append(s.pending, span{first: first, last: last, at: at})
	}
}

// head sets the exact time of the record at offset, the oldest unfinished
// one of k (a retry record's due time, before it is handled or held).
func (p *partitions) head(k tp, offset int64, at time.Time) {
	p.mu.Lock()
	defer p.mu.Unlock()
	s := p.state(k)
	if len(s.pending) > 0 && s.pending[0].first <= offset && offset <= s.pending[0].last {
		s.pending[0].first, s.pending[0].at = offset, at
	}
}

// done records that every record of k up to offset is finished; at is
// the finished record's time.
func (p *partitions) done(k tp, offset int64, at time.Time) {
	p.mu.Lock()
	defer p.mu.Unlock()
	s := p.state(k)
	s.next, s.lastAt = offset+1, at
	i := 0
	for i < len(s.pending) && s.pending[i].last <= offset {
		i++
	}
	s.pending = s.pending[i:]
	if len(s.pending) > 0 && s.pending[0].first <= offset {
		// The rest of a span: the next record is no older than this one.
		s.pending[0].first = offset + 1
		if at.After(s.pending[0].at) {
			s.pending[0].at = at
		}
	}
}

// ends raises the high watermark of each assigned partition that has
// been polled to its end offset listed by the broker (listEnds): the
// high watermark a poll returns stops moving while the loop waits for a
// batch's commit.
func (p *partitions) ends(ends map[tp]int64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for k, end := range ends {
		if s := p.m[k]; s != nil && end > s.hw {
			s.hw = end
		}
	}
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
		case len(s.pending) > 0:
			age = now.Sub(s.pending[0].at)
		case lag > 0 && !s.lastAt.IsZero():
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
