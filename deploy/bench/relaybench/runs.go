package main

import (
	"context"
	"fmt"
	"log/slog"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/gatehouse/gatehouse/deploy/bench/benchenv"
	"github.com/gatehouse/gatehouse/ingest/relay"
	"github.com/gatehouse/gatehouse/internal/kafka"
)

// bench holds what every run shares.
type bench struct {
	*benchenv.Stack
	o      *options
	runSeq int
}

// result is one row of the table.
type result struct {
	what       string
	offered    string
	n          int
	throughput float64       // records/s
	p50, p99   time.Duration // <0: not measured
	dups       int
}

// stamps records when each id was committed (or produced) and received.
type stamps struct {
	mu       sync.Mutex
	sent     map[string]time.Time
	recv     map[string]time.Time
	records  int
	lastRecv time.Time
}

func (s *stamps) markSent(rs []row, at time.Time) {
	s.mu.Lock()
	for _, r := range rs {
		s.sent[r.id] = at
	}
	s.mu.Unlock()
}

// consume reads topic until want distinct records (0: not known yet) came.
func (b *bench) consume(ctx context.Context, topic string, s *stamps, want *atomic.Int64) error {
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Kafka.Brokers...), kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchMaxWait(200*time.Millisecond))
	if err != nil {
		return err
	}
	defer cl.Close()
	for {
		pctx, pcancel := context.WithTimeout(ctx, 300*time.Millisecond)
		fs := cl.PollFetches(pctx)
		pcancel()
		now := time.Now()
		if ctx.Err() != nil {
			return fmt.Errorf("consume %s: %w (have %d of %d)", topic, ctx.Err(), len(s.recv), want.Load())
		}
		s.mu.Lock()
		fs.EachRecord(func(r *kgo.Record) {
			s.records++
			for _, h := range r.Headers {
				if _, seen := s.recv[string(h.Value)]; h.Key == "gatehouse_outbox_id" && !seen {
					s.recv[string(h.Value)], s.lastRecv = now, now
				}
			}
		})
		n := len(s.recv)
		s.mu.Unlock()
		if w := want.Load(); w > 0 && int64(n) >= w {
			return nil
		}
	}
}

// onTopic makes a fresh topic, calls prepare with it (when set), starts a
// consumer and then write; it returns the row once the consumer has
// received the n records write reports, or fails after limit.
func (b *bench) onTopic(ctx context.Context, what, offered, prefix string, limit time.Duration, latency bool,
	prepare func(topic string) error, write func(topic string, s *stamps) (n int, err error)) (result, error) {
	b.runSeq++
	topic := fmt.Sprintf("bench.%02d.%s", b.runSeq, prefix)
	if _, err := kafka.EnsureTopics(ctx, b.Admin, slog.New(slog.DiscardHandler),
		kafka.TopicSpec{Partitions: int32(b.o.partitions), ReplicationFactor: 1}, topic); err != nil {
		return result{}, err
	}
	if prepare != nil {
		if err := prepare(topic); err != nil {
			return result{}, err
		}
	}
	s := &stamps{sent: map[string]time.Time{}, recv: map[string]time.Time{}}
	var total atomic.Int64
	cctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- b.consume(cctx, topic, s, &total) }()
	time.Sleep(2 * time.Second)
	start := time.Now()
	n, err := write(topic, s)
	if err != nil {
		return result{}, err
	}
	total.Store(int64(n))
	if err := <-done; err != nil {
		return result{}, err
	}
	r := result{what: what, offered: offered, n: n, p50: -1, p99: -1, dups: s.records - len(s.recv)}
	if el := s.lastRecv.Sub(start); el > 0 {
		r.throughput = float64(n) / el.Seconds()
	}
	if latency {
		h := benchenv.NewHist()
		for id, at := range s.recv {
			if c, ok := s.sent[id]; ok {
				h.Record(at.Sub(c))
			}
		}
		if h.N() > 0 {
			r.p50, r.p99 = h.Q(0.5), h.Q(0.99)
		}
	}
	b.Logf("%s %s: %d rows, %.0f records/s p50 %v p99 %v dups %d", what, offered, n, r.throughput, r.p50, r.p99, r.dups)
	return r, nil
}

// startRelay runs `gatehouse relay` in mode until the returned stop is called.
func (b *bench) startRelay(ctx context.Context, mode string) (func(), error) {
	name := "relay-" + mode
	path, err := benchenv.WriteConfig(b.Dir, name+".yaml", b.DBURL,
		fmt.Sprintf("kafka:\n  brokers: [%s]\n  partitions: %d\nrelay:\n  mode: %s\n  slot: bench_%s\n", b.Brokers(), b.o.partitions, mode, mode), "")
	if err != nil {
		return nil, err
	}
	p, err := benchenv.Gatehouse{Bin: b.o.gatehouse, Sub: "relay", Config: path, Log: filepath.Join(b.Dir, name+".log")}.Start(ctx)
	if err != nil {
		return nil, err
	}
	return p.Stop, nil
}

// relayRuns measures one mode: paced runs and a backlog drain.
func (b *bench) relayRuns(ctx context.Context, mode string) ([]result, error) {
	var out []result
	what := "relay, " + mode
	// No mode pays for the dead rows or dirty pages of the one before.
	for _, q := range []string{`VACUUM (ANALYZE) outbox`, `CHECKPOINT`} {
		if _, err := b.Pool.Exec(ctx, q); err != nil {
			return nil, fmt.Errorf("%s: %w", q, err)
		}
	}
	stop, err := b.startRelay(ctx, mode)
	if err != nil {
		return nil, err
	}
	defer func() { stop() }()
	limit := b.o.duration + 5*time.Minute
	for _, rate := range b.o.rates {
		r, err := b.onTopic(ctx, what, fmt.Sprintf("%d/s", rate), mode, limit, true, nil, func(topic string, s *stamps) (int, error) {
			return benchenv.Pace(ctx, float64(rate), b.o.duration, func(n int) error {
				rs := b.rows(n)
				err := b.insert(ctx, topic, rs)
				s.markSent(rs, time.Now())
				return err
			})
		})
		if err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	if b.o.backlog > 0 {
		// The backlog is written with the relay stopped; the run starts it.
		r, err := b.onTopic(ctx, what, fmt.Sprintf("backlog of %d rows", b.o.backlog), mode+"-backlog", 10*time.Minute, false,
			func(topic string) error {
				stop()
				stop = func() {}
				for left := b.o.backlog; left > 0; left -= b.o.batch {
					if err := b.insert(ctx, topic, b.rows(min(left, b.o.batch))); err != nil {
						return err
					}
				}
				return nil
			},
			func(string, *stamps) (int, error) {
				restarted, err := b.startRelay(ctx, mode)
				if err == nil {
					stop = restarted
				}
				return b.o.backlog, err
			})
		if err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	if mode == relay.ModeReplication {
		// Leave no slot pinning WAL behind for the next mode.
		stop()
		stop = func() {}
		if err := b.dropSlot(ctx, "bench_replication"); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// dropSlot drops a slot once a stopped relay's walsender has gone.
func (b *bench) dropSlot(ctx context.Context, slot string) error {
	var last error
	err := benchenv.Until(ctx, 200*time.Millisecond, 30*time.Second, func() (bool, error) {
		_, last = b.Pool.Exec(ctx, `SELECT pg_drop_replication_slot(slot_name) FROM pg_replication_slots WHERE slot_name = $1`, slot)
		return last == nil, nil
	})
	if err != nil {
		return fmt.Errorf("drop replication slot %s: %w (%v)", slot, err, last)
	}
	return nil
}
