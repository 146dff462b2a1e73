package main

import (
	"context"
	"fmt"
	"io"
	"slices"

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
	type side struct {
		name string
		recv *receiver
	}
	sides := []side{{"tracing off", b.recv}}
	on := *b.o
	on.extraEnv = []string{"OTEL_EXPORTER_OTLP_ENDPOINT=" + j.OTLPBase, "OTEL_TRACES_SAMPLER=always_on"}
	bb := *b
	bb.o = &on
	r, err := startReceiver(ctx, &bb)
	if err != nil {
		return err
	}
	defer r.stop()
	sides = append(sides, side{"tracing on, 100 % to Jaeger", r})
	if b.o.baseline != "" {
		base := *b.o
		base.gatehouse = b.o.baseline
		bb := *b
		bb.o = &base
		r, err := startReceiver(ctx, &bb)
		if err != nil {
			return err
		}
		defer r.stop()
		sides = append(sides, side{"baseline " + b.o.baseline, r})
	}
	orig := b.recv
	defer func() { b.recv = orig }()
	rate := 1000.0
	fmt.Fprintf(w, "## Tracing\n\nThe receiver (`gatehouse serve`) with tracing off and with every delivery traced (OTEL_TRACES_SAMPLER=always_on, OTLP/HTTP to a local Jaeger %s, in-memory storage, on the same machine), "+
		"%d rounds of %s per side at each concurrency, sides in rotating order beside pgbench running the Writer's statement (the ceiling). PostgreSQL %s (%s). CPU per event is the receiver process's own (user+system) over acknowledged events.\n\n",
		testenv.JaegerModule, b.o.runs, b.o.duration, b.PGVersion, b.settings)
	fmt.Fprintf(w, "| connections | receiver | events/s | paired ratio to tracing off | receiver CPU/event | PostgreSQL CPU/event |\n|---:|---|---:|---:|---:|---:|\n")
	for _, c := range b.o.conc {
		samples := make([][]sample, len(sides)+1) // last: pgbench
		for round := range b.o.runs {
			for k := range len(sides) + 1 {
				i := (k + round) % (len(sides) + 1)
				var s sample
				var err error
				if i == len(sides) {
					b.recv = nil
					s, err = b.sampleRun(ctx, "pgbench", func() (runResult, error) {
						return runPgbench(ctx, b.DBURL, b.script, c, b.o.duration, 0)
					})
				} else {
					b.recv = sides[i].recv
					b.gen.SetAddr(b.recv.addr)
					src := b.presign(rate)
					s, err = b.sampleRun(ctx, sides[i].name, func() (runResult, error) {
						return closedLoop(ctx, b.recv.addr, c, b.o.duration, src)
					})
					rate = max(rate, s.tput())
				}
				if err != nil {
					return err
				}
				samples[i] = append(samples[i], s)
			}
			fmt.Fprintf(b.log, "ingestbench: tracing c=%d round %d: off %.0f/s on %.0f/s\n", c, round+1,
				samples[0][round].tput(), samples[1][round].tput())
		}
		recvCPU := func(s sample) float64 { return cpuPerEvent(s.recvCPU, s.n) }
		pgCPU := func(s sample) float64 { return cpuPerEvent(s.pgCPU, s.n) }
		for i, sd := range sides {
			ratio := "1"
			if i > 0 {
				var rs []float64
				for r := range samples[i] {
					rs = append(rs, samples[i][r].tput()/samples[0][r].tput())
				}
				slices.Sort(rs)
				ratio = fmt.Sprintf("%.3f (%.3f–%.3f)", rs[len(rs)/2], rs[0], rs[len(rs)-1])
			}
			fmt.Fprintf(w, "| %d | %s | %s | %s | %.0f µs | %.0f µs |\n", c, sd.name, benchenv.Thousands(benchenv.MedianOf(samples[i], sample.tput)), ratio,
				benchenv.MedianOf(samples[i], recvCPU), benchenv.MedianOf(samples[i], pgCPU))
		}
		pg := samples[len(sides)]
		fmt.Fprintf(w, "| %d | pgbench (ceiling) | %s | | | %.0f µs |\n", c, benchenv.Thousands(benchenv.MedianOf(pg, sample.tput)), benchenv.MedianOf(pg, pgCPU))
		fmt.Fprintf(w, "\nCPU per event added by tracing at %d connections (median on − median off): %.0f µs.\n\n", c,
			benchenv.MedianOf(samples[1], recvCPU)-benchenv.MedianOf(samples[0], recvCPU))
	}
	return nil
}
