package main

import (
	"context"
	"fmt"
	"io"

	"github.com/gatehouse/gatehouse/deploy/bench/benchenv"
)

// tune compares Writer settings on a shared, noisy machine: it starts one
// in-process receiver per worker count and, in every round, runs each of
// them and pgbench back to back in a rotating order, so background load
// hits all settings alike. It prints medians of throughput, of the paired
// ratio to pgbench, of events per commit and of CPU per event.
func (b *bench) tune(ctx context.Context, workers []int, w io.Writer) error {
	recvs := make([]*receiver, len(workers))
	for i, n := range workers {
		r, err := b.startWith(ctx, func(o *options) { o.gatehouse, o.workers = "", n })
		if err != nil {
			return err
		}
		defer r.stop()
		recvs[i] = r
	}
	tb := benchenv.NewTable(w, "connections>", "Writer workers>", "events/s>", "paired ratio to pgbench>", "events per commit>", "PostgreSQL CPU/event>", "receiver+client CPU/event>")
	for _, c := range b.o.conc {
		samples, err := b.rotate(ctx, c, recvs, nil, func(round int, _ [][]sample) {
			fmt.Fprintf(b.log, "ingestbench: tune c=%d round %d done\n", c, round+1)
		})
		if err != nil {
			return err
		}
		pg := samples[len(workers)]
		for i, n := range workers {
			lo, hi, med := paired(samples[i], pg)
			tb.Rowf("%d | %d | %s | %.2f (%.2f–%.2f) | %.1f | %.0f µs | %.0f µs", c, n,
				benchenv.Thousands(benchenv.MedianOf(samples[i], sample.tput)), med, lo, hi,
				benchenv.MedianOf(samples[i], sample.perCommit),
				benchenv.MedianOf(samples[i], func(s sample) float64 { return cpuPerEvent(s.pgCPU, s.n) }),
				benchenv.MedianOf(samples[i], func(s sample) float64 { return cpuPerEvent(s.appCPU, s.n) }))
		}
		tb.Rowf("%d | pgbench | %s | | 1.0 | %.0f µs | %.0f µs", c, benchenv.Thousands(benchenv.MedianOf(pg, sample.tput)),
			benchenv.MedianOf(pg, func(s sample) float64 { return cpuPerEvent(s.pgCPU, s.n) }),
			benchenv.MedianOf(pg, func(s sample) float64 { return cpuPerEvent(s.appCPU, s.n) }))
	}
	return nil
}

// rotate runs, in every round (-runs) at c connections, each receiver of
// recvs in closed loop and pgbench (the last side) back to back in an order
// rotated by the round, so background load hits all sides alike; it returns
// each side's samples and calls done after every round.
func (b *bench) rotate(ctx context.Context, c int, recvs []*receiver, names []string, done func(round int, samples [][]sample)) ([][]sample, error) {
	orig := b.recv
	defer func() { b.recv = orig; b.gen.SetAddr(orig.addr) }()
	samples := make([][]sample, len(recvs)+1)
	for round := range b.o.runs {
		for k := range len(recvs) + 1 {
			i := (k + round) % (len(recvs) + 1)
			var s sample
			var err error
			if i == len(recvs) {
				b.recv = nil
				s, err = b.sampleRun(ctx, "pgbench", func() (runResult, error) {
					return runPgbench(ctx, b.DBURL, b.script, c, b.o.duration, 0)
				})
			} else {
				b.recv = recvs[i]
				b.gen.SetAddr(b.recv.addr)
				src := b.presign(b.rate)
				name := "receiver"
				if names != nil {
					name = names[i]
				}
				s, err = b.sampleRun(ctx, name, func() (runResult, error) {
					return closedLoop(ctx, b.recv.addr, c, b.o.duration, src)
				})
				b.rate = max(b.rate, s.tput())
			}
			if err != nil {
				return nil, err
			}
			samples[i] = append(samples[i], s)
		}
		done(round, samples)
	}
	return samples, nil
}

// startWith starts another receiver on the same database, with the
// options changed by change.
func (b *bench) startWith(ctx context.Context, change func(*options)) (*receiver, error) {
	o := *b.o
	change(&o)
	bb := *b
	bb.o = &o
	return startReceiver(ctx, &bb)
}
