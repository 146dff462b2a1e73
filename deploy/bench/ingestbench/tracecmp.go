package main

import (
	"context"
	"fmt"
	"io"

	"github.com/gatehouse/gatehouse/deploy/bench/benchenv"
	"github.com/gatehouse/gatehouse/internal/testenv"
)

// traceCompare measures what tracing costs the receiver: the same
// `gatehouse serve` binary run twice on the same database, once with
// tracing off (the default) and once exporting every delivery (100 %
// sampling, OTEL_TRACES_SAMPLER=always_on) over OTLP/HTTP to a local
// Jaeger, optionally beside a baseline binary (-baseline: the receiver
// before tracing existed), with pgbench's identical statement as the
// ceiling. Every round runs each side once in a rotating order, so load on
// the shared machine hits all sides alike; it prints medians of
// throughput, the paired per-round ratios on/off (and off/baseline) and
// the receiver's CPU per event.
func (b *bench) traceCompare(ctx context.Context, w io.Writer) error {
	j, err := testenv.StartJaeger(ctx, b.Dir)
	if err != nil {
		return fmt.Errorf("jaeger: %w", err)
	}
	defer j.Stop()
	names := []string{"tracing off", "tracing on, 100 % to Jaeger"}
	on, err := b.startReceiver(ctx, b.o.gatehouse, "OTEL_EXPORTER_OTLP_ENDPOINT="+j.OTLPBase, "OTEL_TRACES_SAMPLER=always_on")
	if err != nil {
		return err
	}
	defer on.Stop()
	recvs := []*benchenv.Proc{b.recv, on}
	if b.o.baseline != "" {
		base, err := b.startReceiver(ctx, b.o.baseline)
		if err != nil {
			return err
		}
		defer base.Stop()
		recvs, names = append(recvs, base), append(names, "baseline "+b.o.baseline)
	}
	fmt.Fprintf(w, "## Tracing\n\nThe receiver (`gatehouse serve`) with tracing off and with every delivery traced (OTEL_TRACES_SAMPLER=always_on, OTLP/HTTP to a local Jaeger %s, in-memory storage, on the same machine), "+
		"%d rounds of %s per side at each concurrency, sides in rotating order beside pgbench running the Writer's statement (the ceiling). PostgreSQL %s (%s). CPU per event is the receiver process's own (user+system) over acknowledged events.\n\n",
		testenv.JaegerModule, b.o.runs, b.o.duration, b.PGVersion, b.settings)
	tb := benchenv.NewTable(w, "connections>", "receiver", "events/s>", "paired ratio to tracing off>", "receiver CPU/event>", "PostgreSQL CPU/event>")
	for _, c := range b.o.conc {
		samples, err := b.rotate(ctx, c, recvs, names, func(round int, samples [][]sample) {
			b.Logf("tracing c=%d round %d: off %.0f/s on %.0f/s", c, round+1,
				samples[0][round].tput(), samples[1][round].tput())
		})
		if err != nil {
			return err
		}
		recvCPU := func(s sample) float64 { return cpuPerEvent(s.recvCPU, s.n) }
		pgCPU := func(s sample) float64 { return cpuPerEvent(s.pgCPU, s.n) }
		for i, name := range names {
			ratio := "1"
			if i > 0 {
				lo, hi, med := paired(samples[i], samples[0])
				ratio = fmt.Sprintf("%.3f (%.3f–%.3f)", med, lo, hi)
			}
			tb.Rowf("%d | %s | %s | %s | %.0f µs | %.0f µs", c, name, benchenv.Thousands(benchenv.MedianOf(samples[i], sample.tput)), ratio,
				benchenv.MedianOf(samples[i], recvCPU), benchenv.MedianOf(samples[i], pgCPU))
		}
		pg := samples[len(recvs)]
		tb.Rowf("%d | pgbench (ceiling) | %s | | | %.0f µs", c, benchenv.Thousands(benchenv.MedianOf(pg, sample.tput)), benchenv.MedianOf(pg, pgCPU))
		fmt.Fprintf(w, "\nCPU per event added by tracing at %d connections (median on − median off): %.0f µs.\n\n", c,
			benchenv.MedianOf(samples[1], recvCPU)-benchenv.MedianOf(samples[0], recvCPU))
	}
	return nil
}

// rotate runs, in every round (-runs) at c connections, each receiver of
// recvs in closed loop and pgbench (the last side) back to back in an order
// rotated by the round, so background load hits all sides alike; it returns
// each side's samples and calls done after every round.
func (b *bench) rotate(ctx context.Context, c int, recvs []*benchenv.Proc, names []string, done func(round int, samples [][]sample)) ([][]sample, error) {
	orig := b.recv
	defer func() { b.recv = orig; b.gen.SetAddr(orig.Public) }()
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
				b.gen.SetAddr(b.recv.Public)
				src := b.presign(b.rate)
				s, err = b.sampleRun(ctx, names[i], func() (runResult, error) { return b.closed(ctx, c, b.o.duration, src) })
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
