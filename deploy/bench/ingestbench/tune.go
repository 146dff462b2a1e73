package main

import (
	"context"
	"fmt"
	"io"
	"slices"

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
		o := *b.o
		o.gatehouse, o.workers = "", n
		bb := *b
		bb.o = &o
		r, err := startReceiver(ctx, &bb)
		if err != nil {
			return err
		}
		defer r.stop()
		recvs[i] = r
	}
	rate := 1000.0
	fmt.Fprintf(w, "| connections | Writer workers | events/s | paired ratio to pgbench | events per commit | PostgreSQL CPU/event | receiver+client CPU/event |\n|---:|---:|---:|---:|---:|---:|---:|\n")
	for _, c := range b.o.conc {
		samples := make([][]sample, len(workers)+1) // last: pgbench
		for round := range b.o.runs {
			for k := range len(workers) + 1 {
				i := (k + round) % (len(workers) + 1)
				var s sample
				var err error
				if i == len(workers) {
					s, err = b.sampleRun(ctx, "pgbench", func() (runResult, error) {
						return runPgbench(ctx, b.DBURL, b.script, c, b.o.duration, 0)
					})
				} else {
					b.gen.SetAddr(recvs[i].addr)
					src := b.presign(rate)
					s, err = b.sampleRun(ctx, "receiver", func() (runResult, error) {
						return closedLoop(ctx, recvs[i].addr, c, b.o.duration, src)
					})
					rate = max(rate, s.tput())
				}
				if err != nil {
					return err
				}
				samples[i] = append(samples[i], s)
			}
			fmt.Fprintf(b.log, "ingestbench: tune c=%d round %d done\n", c, round+1)
		}
		pg := samples[len(workers)]
		for i, n := range workers {
			var ratios []float64
			for r := range samples[i] {
				ratios = append(ratios, samples[i][r].tput()/pg[r].tput())
			}
			slices.Sort(ratios)
			fmt.Fprintf(w, "| %d | %d | %s | %.2f (%.2f–%.2f) | %.1f | %.0f µs | %.0f µs |\n", c, n,
				benchenv.Thousands(benchenv.MedianOf(samples[i], sample.tput)), ratios[len(ratios)/2], ratios[0], ratios[len(ratios)-1],
				benchenv.MedianOf(samples[i], sample.perCommit),
				benchenv.MedianOf(samples[i], func(s sample) float64 { return cpuPerEvent(s.pgCPU, s.n) }),
				benchenv.MedianOf(samples[i], func(s sample) float64 { return cpuPerEvent(s.appCPU, s.n) }))
		}
		fmt.Fprintf(w, "| %d | pgbench | %s | | 1.0 | %.0f µs | %.0f µs |\n", c, benchenv.Thousands(benchenv.MedianOf(pg, sample.tput)),
			benchenv.MedianOf(pg, func(s sample) float64 { return cpuPerEvent(s.pgCPU, s.n) }),
			benchenv.MedianOf(pg, func(s sample) float64 { return cpuPerEvent(s.appCPU, s.n) }))
	}
	return nil
}
