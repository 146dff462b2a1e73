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
	on, err := b.startReceiver(ctx, b.o.gatehouse, "OTEL_EXPORTER_OTLP_ENDPOINT="+j.OTLPBase, "OTEL_TRACES_SAMPLER=always_on")
	if err != nil {
		return err
	}
	defer on.Stop()
	recvs, names := []*benchenv.Proc{b.recv, on}, []string{"tracing off", "tracing on, 100 % to Jaeger"}
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
		var sides []side
		for i, r := range recvs {
			sides = append(sides, b.closedSide(ctx, names[i], r, c))
		}
		samples, err := b.rotate(ctx, b.o.runs, append(sides, b.pgbenchSide(ctx, "pgbench", c, 0)), func(round int, samples [][]sample) {
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
