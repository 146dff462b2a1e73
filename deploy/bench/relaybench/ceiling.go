package main

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/gatehouse/gatehouse/deploy/bench/benchenv"
)

// ceilingClient is the plain franz-go producer of the ceiling rows: its
// defaults, acks=all, the relay's linger and buffer.
func (b *bench) ceilingClient() (*kgo.Client, error) {
	return kgo.NewClient(kgo.SeedBrokers(b.Kafka.Brokers...), kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.ProducerLinger(time.Millisecond), kgo.MaxBufferedRecords(50_000))
}

// ceilingRecord is the record the ceiling writes for r: the relay's value,
// key and the headers it always writes.
func ceilingRecord(topic string, r row) *kgo.Record {
	return &kgo.Record{Topic: topic, Key: []byte(r.key), Value: r.payload, Headers: []kgo.RecordHeader{
		{Key: "ce_id", Value: []byte("evt_" + r.id[:18])}, {Key: "ce_source", Value: []byte("/webhooks/bench")},
		{Key: "ce_type", Value: []byte("payment.succeeded")}, {Key: "ce_specversion", Value: []byte("1.0")},
		{Key: "content-type", Value: []byte("application/json")}, {Key: "gatehouse_outbox_id", Value: []byte(r.id)},
		{Key: "gatehouse_provider", Value: []byte("bench")}}}
}

// ceiling runs the franz-go producer straight to the broker: paced at rate,
// or flat out for the run length when rate is 0.
func (b *bench) ceiling(ctx context.Context, rate int) (result, error) {
	cl, err := b.ceilingClient()
	if err != nil {
		return result{}, err
	}
	defer cl.Close()
	offered := "max"
	if rate > 0 {
		offered = fmt.Sprintf("%d/s", rate)
	}
	var cpu0 benchenv.CPUMark
	s, total, start, err := b.onTopic(ctx, "ceiling", b.o.duration+2*time.Minute, nil, func(topic string, s *stamps) (int, error) {
		produce := func(rs []row) {
			ids := make([]string, len(rs))
			for i, r := range rs {
				ids[i] = r.id
			}
			s.markSent(ids, time.Now())
			for _, r := range rs {
				cl.Produce(ctx, ceilingRecord(topic, r), nil)
			}
		}
		cpu0 = b.CPU()
		if rate > 0 {
			return benchenv.Pace(ctx, float64(rate), b.o.duration, func(n int) error { produce(b.rows(n)); return nil })
		}
		n := 0
		for start := time.Now(); time.Since(start) < b.o.duration; n += 20_000 {
			produce(b.rows(20_000))
		}
		return n, nil
	})
	if err != nil {
		return result{}, err
	}
	r := summarize("franz-go producer → broker (ceiling)", offered, s, total, s.lastRecv.Sub(start), rate > 0)
	b.Logf("ceiling %s: %.0f records/s p50 %v p99 %v", offered, r.throughput, r.p50, r.p99)
	if rate == 0 {
		u := b.CPU().Since(cpu0)
		r.cpu = &u
		b.Logf("ceiling %s: %s", offered, cpuLog(u, total))
	}
	return r, nil
}

// burstOffered is the offered column of the ceiling measured right before
// a drain: the same number of records, produced at once.
const burstOffered = "burst of %d records, just before the %s drain"

// ceilingBurst produces n records (built before the clock starts) as fast
// as the producer takes them, right before a backlog drain, so the drain
// has a ceiling measured at the same moment: on a shared machine the
// flat-out ceiling of the run's start swings with the load by 5x.
func (b *bench) ceilingBurst(ctx context.Context, n int, mode string) (result, error) {
	cl, err := b.ceilingClient()
	if err != nil {
		return result{}, err
	}
	defer cl.Close()
	var recs []*kgo.Record
	var cpu0 benchenv.CPUMark
	s, _, start, err := b.onTopic(ctx, "ceiling-burst", 5*time.Minute, func(topic string) {
		for _, r := range b.rows(n) {
			recs = append(recs, ceilingRecord(topic, r))
		}
	}, func(string, *stamps) (int, error) {
		cpu0 = b.CPU()
		for _, rec := range recs {
			cl.Produce(ctx, rec, nil)
		}
		return n, nil
	})
	if err != nil {
		return result{}, err
	}
	u := b.CPU().Since(cpu0)
	r := summarize("franz-go producer → broker (ceiling)", fmt.Sprintf(burstOffered, n, mode), s, n, s.lastRecv.Sub(start), false)
	r.cpu = &u
	b.Logf("ceiling burst before the %s drain: %.0f records/s; %s", mode, r.throughput, cpuLog(u, n))
	return r, nil
}

// onTopic makes a new topic named after prefix, calls prepare with it
// (when not nil), starts a consumer reading it from its start, waits for
// the consumer to be fetching, and then runs write: the run starts then.
// It returns when the consumer has received the n records write reports
// having written, or fails after limit.
func (b *bench) onTopic(ctx context.Context, prefix string, limit time.Duration, prepare func(topic string), write func(topic string, s *stamps) (n int, err error)) (s *stamps, n int, start time.Time, err error) {
	topic, err := b.newTopic(ctx, prefix)
	if err != nil {
		return nil, 0, start, err
	}
	if prepare != nil {
		prepare(topic)
	}
	s = newStamps()
	var mu sync.Mutex
	total := 0
	cctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- b.consume(cctx, topic, s, func() int { mu.Lock(); defer mu.Unlock(); return total }) }()
	warmUp()
	start = time.Now()
	if n, err = write(topic, s); err != nil {
		return nil, 0, start, err
	}
	mu.Lock()
	total = n
	mu.Unlock()
	return s, n, start, <-done
}
