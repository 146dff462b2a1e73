package main

import (
	"cmp"
	"context"
	"fmt"
	"syscall"
	"time"

	"github.com/gatehouse/gatehouse/deploy/bench/benchenv"
)

func fromLoad(l benchenv.LoadResult, err error) (sample, error) {
	ok, failed := l.Counts()
	return sample{n: ok, elapsed: l.Elapsed, lat: l.Latencies(), errs: failed, errMsg: l.LastError}, err
}

// closed keeps conns requests in flight for d (benchenv.Load.Closed).
func (b *bench) closed(ctx context.Context, conns int, d time.Duration, src func(time.Time) []byte) (sample, error) {
	return fromLoad(benchenv.Load{Addr: b.recv.Public, Conns: conns, Next: src}.Closed(ctx, d), ctx.Err())
}

// sample is one timed run of one side, with what the database saw.
type sample struct {
	n        int // acknowledged events (2xx, or pgbench transactions)
	elapsed  time.Duration
	lat      *benchenv.Hist // of the acknowledged events
	errs     int
	errMsg   string
	xacts    int64 // write transactions (xids) the run consumed
	walBytes int64
	pgCPU    time.Duration // CPU time of all PostgreSQL processes
	recvCPU  time.Duration // CPU time of the receiver process
	load     float64       // 1-minute load average of the machine after the run
}

func (s sample) tput() float64 { return float64(s.n) / s.elapsed.Seconds() }

// ms is the q-quantile of the run's ack latency in milliseconds.
func (s sample) ms(q float64) float64 { return benchenv.Millis(s.lat.Q(q)) }
func (s sample) p50() float64         { return s.ms(0.5) }
func (s sample) p99() float64         { return s.ms(0.99) }

// perEvent is CPU time per acknowledged event in µs.
func (s sample) perEvent(d time.Duration) float64 {
	return float64(d.Microseconds()) / float64(max(s.n, 1))
}

func (s sample) pgPer() float64   { return s.perEvent(s.pgCPU) }
func (s sample) recvPer() float64 { return s.perEvent(s.recvCPU) }
func (s sample) walPer() float64  { return float64(s.walBytes) / float64(max(s.n, 1)) }

func (s sample) perCommit() float64 { return float64(s.n) / float64(max(s.xacts, 1)) }

// med is the median of f over the samples.
func med(ss []sample, f func(sample) float64) float64 { return benchenv.MedianOf(ss, f) }

// shape is one load shape with the samples of both sides.
type shape struct {
	name      string
	rate      float64 // 0 = closed loop
	recv, pgb []sample
}

// results is everything the report prints.
type results struct {
	b      *bench
	closed []*shape
	open   *shape
	single *singleResult // single.go
	cold   []coldRow     // cold.go
	roll   *rollResult   // roll.go
}

// sampleRun checkpoints, runs f, and checks that the run added exactly one
// inbox and one outbox row per acknowledged event.
func (b *bench) sampleRun(ctx context.Context, side string, f func() (sample, error)) (sample, error) {
	if err := b.reset(ctx); err != nil {
		return sample{}, err
	}
	// The transactions and WAL a run used, and the rows it left.
	const pos = `SELECT pg_snapshot_xmax(pg_current_snapshot())::text::bigint, pg_wal_lsn_diff(pg_current_wal_lsn(), '0/0')::bigint,
		(SELECT count(*) FROM inbox), (SELECT count(*) FROM outbox), (SELECT count(*) FROM ` + singleTable + `)`
	var xid0, lsn0, xid1, lsn1, inbox0, outbox0, single0, inbox, outbox, single int64
	if err := b.Pool.QueryRow(ctx, pos).Scan(&xid0, &lsn0, &inbox0, &outbox0, &single0); err != nil {
		return sample{}, err
	}
	pg0, recv0 := b.PostgresCPU(), b.recvCPU()
	r, err := f()
	pg1, recv1 := b.PostgresCPU(), b.recvCPU()
	if err != nil {
		return sample{}, fmt.Errorf("%s: %w", side, err)
	}
	if r.errs > 0 {
		return sample{}, fmt.Errorf("%s: %d failed requests (last: %s)", side, r.errs, r.errMsg)
	}
	if err := b.Pool.QueryRow(ctx, pos).Scan(&xid1, &lsn1, &inbox, &outbox, &single); err != nil {
		return sample{}, err
	}
	// A run writes events (an inbox and an outbox row each) or, pgbench's
	// single-row side, rows of singleTable only.
	n, in, out, one := int64(r.n), inbox-inbox0, outbox-outbox0, single-single0
	if (in != n || out != n || one != 0) && (one != n || in != 0 || out != 0) {
		return sample{}, fmt.Errorf("%s: %d acknowledged events or transactions but %d new inbox, %d new outbox and %d new %s rows", side, r.n, in, out, one, singleTable)
	}
	r.xacts, r.walBytes, r.pgCPU, r.recvCPU = xid1-xid0, lsn1-lsn0, pg1-pg0, recv1-recv0
	r.load = benchenv.LoadAvg()
	return r, nil
}

// recvCPU is the CPU time of the receiver under test (0 without one).
func (b *bench) recvCPU() time.Duration {
	if b.recv == nil {
		return 0
	}
	t, _, _ := benchenv.ProcCPU(b.recv.Pid(), false)
	return t
}

// presign hands out enough requests of src built before the run, so the
// load generator's signing stays off the measured path.
func presign(src *benchenv.Deliveries, rate float64, d time.Duration) func(time.Time) []byte {
	return benchenv.Presign(src.Next, int(rate*d.Seconds()*1.3)+2000)
}

func (b *bench) measure(ctx context.Context) (*results, error) {
	res := &results{b: b}
	maxC := b.o.conc[len(b.o.conc)-1]
	// Start from a quiet disk: write back what the build, initdb and the
	// migrations left dirty, not during the first runs.
	syscall.Sync()
	const warmup = 3 * time.Second
	b.Logf("warm-up %s per side at %d connections", warmup, maxC)
	warm, err := b.sampleRun(ctx, "receiver warm-up", func() (sample, error) {
		return b.closed(ctx, maxC, warmup, presign(b.gen, 0, 0))
	})
	if err != nil {
		return nil, err
	}
	b.rate = warm.tput()
	if _, err := b.sampleRun(ctx, "pgbench warm-up", func() (sample, error) {
		return runPgbench(ctx, b.DBURL, b.script, maxC, warmup, 0)
	}); err != nil {
		return nil, err
	}
	if err := benchenv.Analyze(ctx, b.Pool); err != nil {
		return nil, err
	}
	maxRate := 0.0
	for _, c := range b.o.conc {
		ss, err := b.rotate(ctx, b.o.runs, []side{b.closedSide(ctx, "receiver", b.recv, c), b.pgbenchSide(ctx, "pgbench", c, 0)}, func(i int, ss [][]sample) {
			r, p := ss[0][i], ss[1][i]
			b.Logf("c=%d run %d: receiver %.0f/s p99 %.2f ms (%.1f events/commit, CPU/event pg %.0fµs receiver %.0fµs) | pgbench %.0f/s p99 %.2f ms (CPU/event pg %.0fµs) | ratio %.2f | load %.1f",
				c, i+1, r.tput(), r.p99(), r.perCommit(), r.pgPer(), r.recvPer(), p.tput(), p.p99(), p.pgPer(), r.tput()/p.tput(), p.load)
		})
		if err != nil {
			return nil, err
		}
		res.closed = append(res.closed, &shape{name: fmt.Sprintf("closed loop, %d connections", c), recv: ss[0], pgb: ss[1]})
		maxRate = max(maxRate, med(ss[0], sample.tput))
	}
	if b.o.openRuns == 0 {
		return res, nil
	}
	// Poisson arrivals at half the maximum; latency runs from each request's
	// scheduled time, so the wait for a free connection counts (as pgbench -R).
	half := maxRate / 2
	open := side{name: "receiver open loop", recv: b.recv, run: func(src func(time.Time) []byte) (sample, error) {
		l := benchenv.Load{Addr: b.recv.Public, Conns: b.o.openConns, Next: src}.Poisson(ctx, half, b.o.duration)
		return fromLoad(l, ctx.Err())
	}}
	ss, err := b.rotate(ctx, b.o.openRuns, []side{open, b.pgbenchSide(ctx, "pgbench -R", b.o.openConns, half)}, func(i int, ss [][]sample) {
		r, p := ss[0][i], ss[1][i]
		b.Logf("open loop %.0f/s run %d: receiver p50 %.2f ms p99 %.2f ms | pgbench -R p50 %.2f ms p99 %.2f ms", half, i+1, r.p50(), r.p99(), p.p50(), p.p99())
	})
	name := fmt.Sprintf("open loop (Poisson), %.0f events/s = ½ max, up to %d connections", half, b.o.openConns)
	res.open = &shape{name: name, rate: half, recv: ss[0], pgb: ss[1]}
	return res, err
}

// side is one side of a comparison: its receiver (nil: pgbench), its
// deliveries (nil: the reference scheme's) and its run, given them presigned.
type side struct {
	name string
	recv *benchenv.Proc
	src  *benchenv.Deliveries
	run  func(src func(time.Time) []byte) (sample, error)
}

// closedSide runs recv in closed loop at c connections for -d.
func (b *bench) closedSide(ctx context.Context, name string, recv *benchenv.Proc, c int) side {
	return side{name: name, recv: recv, run: func(src func(time.Time) []byte) (sample, error) { return b.closed(ctx, c, b.o.duration, src) }}
}

// pgbenchSide runs the Writer's statement with c clients for -d (at rate
// transactions/s when rate > 0).
func (b *bench) pgbenchSide(ctx context.Context, name string, c int, rate float64) side {
	return side{name: name, run: func(func(time.Time) []byte) (sample, error) {
		return runPgbench(ctx, b.DBURL, b.script, c, b.o.duration, rate)
	}}
}

// rotate runs every side once a round in an order rotated by the round (A
// B C, B C A, …: a fading disturbance must not always hit the same side)
// and returns each side's samples, calling done after every round.
func (b *bench) rotate(ctx context.Context, rounds int, sides []side, done func(round int, samples [][]sample)) ([][]sample, error) {
	orig := b.recv
	defer func() { b.recv = orig; b.gen.SetAddr(orig.Public) }()
	samples := make([][]sample, len(sides))
	for round := range rounds {
		for k := range sides {
			i := (k + round) % len(sides)
			sd := sides[i]
			var src func(time.Time) []byte
			if b.recv = sd.recv; sd.recv != nil {
				b.gen.SetAddr(sd.recv.Public)
				src = presign(cmp.Or(sd.src, b.gen), b.rate, b.o.duration) // before the run: its CPU is not the run's
			}
			s, err := b.sampleRun(ctx, sd.name, func() (sample, error) { return sd.run(src) })
			if err != nil {
				return nil, err
			}
			if sd.recv != nil {
				b.rate = max(b.rate, s.tput())
			}
			samples[i] = append(samples[i], s)
		}
		done(round, samples)
	}
	return samples, nil
}
