package main

import (
	"context"
	"fmt"
	"syscall"
	"time"

	"github.com/gatehouse/gatehouse/deploy/bench/benchenv"
)

// sample is one timed run of one side, with what the database saw.
type sample struct {
	runResult
	xacts    int64 // write transactions (xids) the run consumed
	walBytes int64
	pgCPU    time.Duration // CPU time of all PostgreSQL processes
	appCPU   time.Duration // CPU time of the rest of the side: receiver and load generator, or pgbench
	recvCPU  time.Duration // of which the receiver process (binary mode)
	load     float64       // 1-minute load average of the machine after the run
	// steal is the time the hypervisor gave this VM's CPUs to someone
	// else during the run: a disturbance neither side controls.
	steal time.Duration
	// wakeP99 and wakeMax: how late a 1 ms sleep in the load generator's
	// process woke up during the run (wakeProbe).
	wakeP99, wakeMax time.Duration
	// serverP99 is the p99 of the receiver's own ack histogram over the run
	// (handler start to 204, estimated within its buckets); 0 for pgbench.
	serverP99 time.Duration
}

// cores is d as an average number of busy CPUs over the run.
func (s sample) cores(d time.Duration) float64 {
	if s.elapsed <= 0 {
		return 0
	}
	return max(0, d.Seconds()/s.elapsed.Seconds())
}

// cpuPerEvent is CPU time per acknowledged event in µs.
func cpuPerEvent(d time.Duration, n int) float64 {
	if n == 0 {
		return 0
	}
	return float64(d.Microseconds()) / float64(n)
}

func (s sample) perCommit() float64 {
	if s.xacts == 0 {
		return 0
	}
	return float64(s.n) / float64(s.xacts)
}

// shape is one load shape with the samples of both sides.
type shape struct {
	name      string
	conns     int
	rate      float64 // 0 = closed loop
	recv, pgb []sample
}

// results is everything the report prints.
type results struct {
	b       *bench
	closed  []*shape
	open    *shape
	maxRate float64
}

// cpuMark is the CPU time of the processes of one side (PostgreSQL, this
// process, the receiver) and of the whole machine.
type cpuMark struct {
	benchenv.CPUMark
	recv time.Duration
}

func (b *bench) cpuMark() cpuMark {
	m := cpuMark{CPUMark: b.CPU()}
	if b.recv != nil {
		m.recv, _, _ = benchenv.ProcCPU(b.recv.Pid(), false)
	}
	return m
}

// dbMark is the database position used to count transactions and WAL.
type dbMark struct{ xid, lsn int64 }

func (b *bench) mark(ctx context.Context) (dbMark, error) {
	var m dbMark
	err := b.Pool.QueryRow(ctx,
		`SELECT pg_snapshot_xmax(pg_current_snapshot())::text::bigint, pg_wal_lsn_diff(pg_current_wal_lsn(), '0/0')::bigint`).Scan(&m.xid, &m.lsn)
	return m, err
}

// sampleRun resets the tables, runs f, and checks that the database holds
// exactly one inbox and one outbox row per acknowledged event.
func (b *bench) sampleRun(ctx context.Context, side string, f func() (runResult, error)) (sample, error) {
	if err := b.reset(ctx); err != nil {
		return sample{}, err
	}
	before, err := b.mark(ctx)
	if err != nil {
		return sample{}, err
	}
	hist0, err := b.acks(ctx)
	if err != nil {
		return sample{}, fmt.Errorf("receiver metrics: %w", err)
	}
	cpu0 := b.cpuMark()
	probe := startWakeProbe()
	r, err := f()
	wakeP99, wakeMax := probe.finish()
	cpu1 := b.cpuMark()
	hist1, herr := b.acks(ctx)
	if herr != nil {
		return sample{}, fmt.Errorf("receiver metrics: %w", herr)
	}
	if err != nil {
		return sample{}, fmt.Errorf("%s: %w", side, err)
	}
	if r.errs > 0 {
		return sample{}, fmt.Errorf("%s: %d failed requests (last: %s)", side, r.errs, r.errMsg)
	}
	after, err := b.mark(ctx)
	if err != nil {
		return sample{}, err
	}
	inbox, outbox, err := b.count(ctx)
	if err != nil {
		return sample{}, err
	}
	if inbox != int64(r.n) || outbox != int64(r.n) {
		return sample{}, fmt.Errorf("%s: %d acknowledged events but %d inbox and %d outbox rows", side, r.n, inbox, outbox)
	}
	return sample{
		runResult: r, xacts: after.xid - before.xid, walBytes: after.lsn - before.lsn,
		pgCPU: cpu1.Postgres - cpu0.Postgres, appCPU: cpu1.recv - cpu0.recv + cpu1.Self - cpu0.Self + r.clientCPU,
		recvCPU: cpu1.recv - cpu0.recv, load: benchenv.LoadAvg(),
		steal: cpu1.Steal - cpu0.Steal, wakeP99: wakeP99, wakeMax: wakeMax,
		serverP99: hist1.Quantile(hist0, 0.99),
	}, nil
}

func (b *bench) presign(rate float64) func(time.Time) []byte {
	return presign(b.gen, int(rate*b.o.duration.Seconds()*1.3)+2000)
}

func (b *bench) measure(ctx context.Context) (*results, error) {
	res := &results{b: b}
	maxC := b.o.conc[len(b.o.conc)-1]
	// Start from a quiet disk: write back what the build, initdb and the
	// migrations left dirty in the page cache, instead of letting the kernel
	// do it during the first runs.
	syscall.Sync()
	b.Logf("warm-up %s per side at %d connections", b.o.warmup, maxC)
	warm, err := b.sampleRun(ctx, "receiver warm-up", func() (runResult, error) {
		return b.closed(ctx, maxC, b.o.warmup, presign(b.gen, 1000))
	})
	if err != nil {
		return nil, err
	}
	b.rate = warm.tput()
	if _, err := b.sampleRun(ctx, "pgbench warm-up", func() (runResult, error) {
		return runPgbench(ctx, b.DBURL, b.script, maxC, b.o.warmup, 0)
	}); err != nil {
		return nil, err
	}
	conc := b.o.conc
	if b.o.runs == 0 {
		conc = nil // the open loop only
	}
	for _, c := range conc {
		ss, err := b.rotate(ctx, b.o.runs, []side{b.closedSide(ctx, "receiver", b.recv, c), b.pgbenchSide(ctx, "pgbench", c, 0)}, func(i int, ss [][]sample) {
			r, p := ss[0][i], ss[1][i]
			b.Logf("c=%d run %d: receiver %.0f/s p99 %s (%.1f events/commit, CPU/event pg %.0fµs app %.0fµs of which receiver %.0fµs) | pgbench %.0f/s p99 %s (CPU/event pg %.0fµs app %.0fµs) | ratio %.2f | load %.1f",
				c, i+1, r.tput(), ms(r.pct(0.99)), r.perCommit(), cpuPerEvent(r.pgCPU, r.n), cpuPerEvent(r.appCPU, r.n), cpuPerEvent(r.recvCPU, r.n),
				p.tput(), ms(p.pct(0.99)), cpuPerEvent(p.pgCPU, p.n), cpuPerEvent(p.appCPU, p.n), r.tput()/p.tput(), p.load)
		})
		if err != nil {
			return nil, err
		}
		res.closed = append(res.closed, &shape{name: fmt.Sprintf("closed loop, %d connections", c), conns: c, recv: ss[0], pgb: ss[1]})
		res.maxRate = max(res.maxRate, benchenv.MedianOf(ss[0], sample.tput))
	}
	if b.o.openRuns == 0 {
		return res, nil
	}
	half := res.maxRate / 2
	name := fmt.Sprintf("open loop (Poisson), %.0f events/s = ½ max, up to %d connections", half, b.o.openConns)
	if b.o.openRate > 0 {
		half = b.o.openRate
		name = fmt.Sprintf("open loop (Poisson), %.0f events/s, up to %d connections", half, b.o.openConns)
	}
	open := side{"receiver open loop", b.recv, func(src func(time.Time) []byte) (runResult, error) {
		return b.open(ctx, b.o.openConns, half, b.o.duration, src)
	}}
	ss, err := b.rotate(ctx, b.o.openRuns, []side{open, b.pgbenchSide(ctx, "pgbench -R", b.o.openConns, half)}, func(i int, ss [][]sample) {
		r, p := ss[0][i], ss[1][i]
		b.Logf("open loop %.0f/s run %d: receiver p50 %s p99 %s (gatehouse's own histogram: p99 %s; load generator woken late: p99 %s, max %s) | pgbench -R p50 %s p99 %s",
			half, i+1, ms(r.pct(0.5)), ms(r.pct(0.99)), ms(r.serverP99), ms(r.wakeP99), ms(r.wakeMax), ms(p.pct(0.5)), ms(p.pct(0.99)))
	})
	res.open = &shape{name: name, conns: b.o.openConns, rate: half, recv: ss[0], pgb: ss[1]}
	return res, err
}

// side is one side of a comparison: its receiver (nil: pgbench's) and its
// run, given requests presigned for that receiver.
type side struct {
	name string
	recv *benchenv.Proc
	run  func(src func(time.Time) []byte) (runResult, error)
}

// closedSide runs recv in closed loop at c connections for -d.
func (b *bench) closedSide(ctx context.Context, name string, recv *benchenv.Proc, c int) side {
	return side{name, recv, func(src func(time.Time) []byte) (runResult, error) { return b.closed(ctx, c, b.o.duration, src) }}
}

// pgbenchSide runs the Writer's statement with c clients for -d (at rate
// transactions/s when rate > 0).
func (b *bench) pgbenchSide(ctx context.Context, name string, c int, rate float64) side {
	return side{name: name, run: func(func(time.Time) []byte) (runResult, error) {
		return runPgbench(ctx, b.DBURL, b.script, c, b.o.duration, rate)
	}}
}

// rotate runs every side once a round, for rounds rounds, in an order
// rotated by the round (A B, B A, … for two sides; A B C, B C A, C A B, …
// for three), and returns each side's samples, calling done after every
// round. With a fixed order, a disturbance that fades during the benchmark
// (the page cache of the build and initdb being written back, another job
// winding down) always hits the first side of every round harder;
// measured here, the first pairs' receiver ran at 60–80 % of its later
// throughput with more CPU per event on every process.
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
				src = b.presign(b.rate) // before the run: its CPU is not the run's
			}
			s, err := b.sampleRun(ctx, sd.name, func() (runResult, error) { return sd.run(src) })
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

func ms(d time.Duration) string { return benchenv.Ms(d, 2) }
