package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/gatehouse/gatehouse/deploy/bench/benchenv"
	"github.com/gatehouse/gatehouse/ingest/relay"
	"github.com/gatehouse/gatehouse/internal/config"
	"github.com/gatehouse/gatehouse/wiring"
)

// result is one row of the table.
type result struct {
	run        int // which repetition (-runs) it belongs to
	what       string
	offered    string
	n          int
	throughput float64       // records/s
	p50, p99   time.Duration // <0: not measured
	dups       int
	load       string            // 1-minute load average when the run ended
	cpu        *benchenv.CPUMark // CPU of the benchmark's processes (max and backlog runs)
}

// stamps records when each id was committed (or produced) and received.
type stamps struct {
	mu       sync.Mutex
	sent     map[string]time.Time
	recv     map[string]time.Time
	records  int
	lastRecv time.Time
	first    time.Time // first record received
}

func newStamps() *stamps { return &stamps{sent: map[string]time.Time{}, recv: map[string]time.Time{}} }

func (s *stamps) markSent(ids []string, at time.Time) {
	s.mu.Lock()
	for _, id := range ids {
		s.sent[id] = at
	}
	s.mu.Unlock()
}

// consume reads topic from its start until want records (distinct ids) were
// received or ctx ends.
func (b *bench) consume(ctx context.Context, topic string, s *stamps, want func() int) error {
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
			return fmt.Errorf("consume %s: %w (have %d of %d)", topic, ctx.Err(), len(s.recv), want())
		}
		s.mu.Lock()
		fs.EachRecord(func(r *kgo.Record) {
			s.records++
			for _, h := range r.Headers {
				if h.Key == "gatehouse_outbox_id" {
					if _, ok := s.recv[string(h.Value)]; !ok {
						s.recv[string(h.Value)] = now
						s.lastRecv = now
						if s.first.IsZero() {
							s.first = now
						}
					}
				}
			}
		})
		n := len(s.recv)
		s.mu.Unlock()
		if w := want(); w > 0 && n >= w {
			return nil
		}
	}
}

// warmUp gives a new consumer time to load the new topic's metadata and
// start fetching, so its start-up is not counted as latency.
func warmUp() { time.Sleep(2 * time.Second) }

func summarize(what, offered string, s *stamps, n int, elapsed time.Duration, withLatency bool) result {
	r := result{what: what, offered: offered, n: n, p50: -1, p99: -1, load: benchenv.LoadAvgText()}
	s.mu.Lock()
	defer s.mu.Unlock()
	r.dups = s.records - len(s.recv)
	if elapsed > 0 {
		r.throughput = float64(n) / elapsed.Seconds()
	}
	if withLatency {
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
	return r
}

// startRelay runs a relay of mode until the returned stop is called.
func (b *bench) startRelay(ctx context.Context, mode string) (func(), error) {
	cfg, err := config.Parse(nil, func(string) string { return "" })
	if err != nil {
		return nil, err
	}
	cfg.Relay.Mode, cfg.Relay.Slot, cfg.Relay.Publication = mode, "bench_"+mode, "gatehouse_outbox"
	cfg.Kafka.Brokers, cfg.Kafka.Partitions, cfg.Kafka.ReplicationFactor = b.Kafka.Brokers, int32(b.o.partitions), 1
	rc, kc := wiring.Relay(cfg), wiring.RelayKafka(cfg)
	return benchenv.Relay(ctx, relay.Config{Pool: b.Pool, DatabaseURL: b.DBURL, Relay: rc, Kafka: kc,
		Logger: slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))})
}

// relayRuns measures one mode: paced runs, a max run and a backlog drain.
func (b *bench) relayRuns(ctx context.Context, mode string) ([]result, error) {
	var out []result
	what := "relay, " + mode
	// Every section starts from a vacuumed outbox and a checkpoint, so the
	// dead rows another section left behind are not charged to this one.
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
	measure := func(offered string, latency bool, write func(topic string, s *stamps) (int, error)) (result, error) {
		s, n, start, err := b.onTopic(ctx, mode, b.o.duration+5*time.Minute, nil, write)
		if err != nil {
			return result{}, err
		}
		r := summarize(what, offered, s, n, s.lastRecv.Sub(start), latency)
		b.Logf("%s %s: %d rows, %.0f records/s p50 %v p99 %v dups %d", what, offered, n, r.throughput, r.p50, r.p99, r.dups)
		return r, nil
	}
	for _, rate := range b.o.rates {
		r, err := measure(fmt.Sprintf("%d/s", rate), true, func(topic string, s *stamps) (int, error) {
			return benchenv.Pace(ctx, float64(rate), b.o.duration, func(n int) error {
				ids, err := b.insert(ctx, topic, b.rows(n))
				s.markSent(ids, time.Now())
				return err
			})
		})
		if err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	r, err := measure(fmt.Sprintf("max (%d writers × %d rows/tx)", b.o.writers, b.o.batch), true, func(topic string, s *stamps) (int, error) {
		return b.writeFlatOut(ctx, topic, s)
	})
	if err != nil {
		return nil, err
	}
	out = append(out, r)
	if b.o.backlog > 0 {
		stop()
		topic, err := b.newTopic(ctx, mode+"-backlog")
		if err != nil {
			return nil, err
		}
		if mode == relay.ModeReplication {
			if err := b.createBareSlot(ctx); err != nil {
				return nil, err
			}
		}
		for left := b.o.backlog; left > 0; left -= b.o.batch {
			if _, err := b.insert(ctx, topic, b.rows(min(left, b.o.batch))); err != nil {
				return nil, err
			}
		}
		burst, err := b.ceilingBurst(ctx, b.o.backlog, mode)
		if err != nil {
			return nil, err
		}
		out = append(out, burst)
		s := newStamps()
		cctx, cancel := context.WithTimeout(ctx, 10*time.Minute)
		defer cancel()
		done := make(chan error, 1)
		go func() { done <- b.consume(cctx, topic, s, func() int { return b.o.backlog }) }()
		warmUp()
		endProfile, err := b.profileOnce()
		if err != nil {
			return nil, err
		}
		start := time.Now()
		cpu0 := b.CPU()
		if stop, err = b.startRelay(ctx, mode); err != nil {
			return nil, err
		}
		ready := time.Since(start)
		err = <-done
		cpu := b.CPU().Since(cpu0)
		endProfile()
		if err != nil {
			return nil, err
		}
		r := summarize(what, fmt.Sprintf("backlog of %d rows", b.o.backlog), s, b.o.backlog, s.lastRecv.Sub(start), false)
		r.cpu = &cpu
		b.Logf("%s backlog: %.0f records/s (relay ready after %v, first record after %v); %s", what, r.throughput,
			ready.Round(time.Millisecond), s.first.Sub(start).Round(time.Millisecond), cpuLog(cpu, b.o.backlog))
		out = append(out, r)
	}
	if mode == relay.ModeReplication {
		// Leave no slot pinning WAL behind for the next mode.
		stop()
		stop = func() {}
		if b.o.backlog > 0 {
			// With the relay stopped: nothing else runs beside it.
			bare, err := b.bareDrain(ctx, b.o.backlog)
			if err != nil {
				return nil, err
			}
			out = append(out, bare)
		}
		if err := b.dropSlot(ctx, "bench_replication"); err != nil {
			return nil, err
		}
	}
	return out, nil
}
