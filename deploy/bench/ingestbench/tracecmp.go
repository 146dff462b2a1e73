package main

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/gatehouse/gatehouse/deploy/bench/benchenv"
	"github.com/gatehouse/gatehouse/internal/testenv"
)

// traceCompare measures what tracing costs the receiver: the same binary
// with tracing off and exporting every delivery over OTLP to a local
// Jaeger, beside pgbench's statement (the ceiling), in rotating rounds.
func (b *bench) traceCompare(ctx context.Context, w io.Writer) error {
	j, err := testenv.StartJaeger(ctx, b.Dir)
	if err != nil {
		return fmt.Errorf("jaeger: %w", err)
	}
	defer j.Stop()
	on, err := b.startReceiver(ctx, "OTEL_EXPORTER_OTLP_ENDPOINT="+j.OTLPBase, "OTEL_TRACES_SAMPLER=always_on")
	if err != nil {
		return err
	}
	defer on.Stop()
	// Fill the emptied tables and analyze them, as in measure.
	maxC := b.o.conc[len(b.o.conc)-1]
	if _, err := b.sampleRun(ctx, "warm-up", func() (sample, error) { return b.closed(ctx, maxC, 3*time.Second, presign(b.gen, 0, 0)) }); err != nil {
		return err
	}
	if err := benchenv.Analyze(ctx, b.Pool); err != nil {
		return err
	}
	fmt.Fprintf(w, "## Tracing\n\nThe receiver (`gatehouse serve`) with tracing off and with every delivery traced (OTEL_TRACES_SAMPLER=always_on, OTLP/HTTP to a local Jaeger %s, in-memory storage, on the same machine), "+
		"%d rounds of %s per side at each concurrency, sides in rotating order beside pgbench running the Writer's statement (the ceiling). PostgreSQL %s (%s). CPU per event is the receiver process's own (user+system) over acknowledged events; Jaeger's is the collector's, on the same 2 cores, which the receiver and PostgreSQL share with it.\n\n",
		testenv.JaegerModule, b.o.runs, b.o.duration, b.PGVersion, b.settings)
	tb := benchenv.NewTable(w, "connections>", "receiver", "events/s>", "paired ratio to tracing off>", "receiver CPU/event>", "PostgreSQL CPU/event>", "Jaeger CPU/event>")
	for _, c := range b.o.conc {
		sides := []side{b.closedSide(ctx, "tracing off", b.recv, c), b.closedSide(ctx, "tracing on, 100 % to Jaeger", on, c), b.pgbenchSide(ctx, "pgbench", c, 0)}
		collector := collectorCPU(sides, j.Pid())
		ss, err := b.rotate(ctx, b.o.runs, sides, func(round int, ss [][]sample) {
			b.Logf("tracing c=%d round %d: off %.0f/s on %.0f/s", c, round+1, ss[0][round].tput(), ss[1][round].tput())
		})
		if err != nil {
			return err
		}
		lo, hi, ratio := paired(ss[1], ss[0])
		tb.Rowf("%d | %s | %s | 1 | %.0f µs | %.0f µs | %.0f µs", c, sides[0].name, benchenv.Thousands(med(ss[0], sample.tput)), med(ss[0], sample.recvPer), med(ss[0], sample.pgPer),
			collector.per(0, ss[0]))
		tb.Rowf("%d | %s | %s | %.3f (%.3f–%.3f) | %.0f µs | %.0f µs | %.0f µs", c, sides[1].name, benchenv.Thousands(med(ss[1], sample.tput)), ratio, lo, hi,
			med(ss[1], sample.recvPer), med(ss[1], sample.pgPer), collector.per(1, ss[1]))
		tb.Rowf("%d | pgbench (ceiling) | %s | | | %.0f µs | ", c, benchenv.Thousands(med(ss[2], sample.tput)), med(ss[2], sample.pgPer))
		fmt.Fprintf(w, "\nCPU per event added by tracing at %d connections (median on − median off): %.0f µs.\n\n", c, med(ss[1], sample.recvPer)-med(ss[0], sample.recvPer))
		if err := b.traceAtRate(ctx, w, c, 0.5*med(ss[1], sample.tput), on, j.Pid()); err != nil {
			return err
		}
	}
	return nil
}

// traceAtRate runs both receivers at the same fixed rate (requests due every
// 1/rate s, sent over up to c connections), so the CPU per event of the two
// sides is compared at one load: closed loop, the traced side runs slower,
// and a process's fixed work per second is spread over fewer events.
func (b *bench) traceAtRate(ctx context.Context, w io.Writer, c int, rate float64, on *benchenv.Proc, collectorPid int) error {
	fixed := func(name string, recv *benchenv.Proc) side {
		return side{name: name, recv: recv, run: func(src func(time.Time) []byte) (sample, error) {
			return fromLoad(benchenv.Load{Addr: recv.Public, Conns: c, Next: src}.Fixed(ctx, rate, b.o.duration), ctx.Err())
		}}
	}
	sides := []side{fixed("tracing off", b.recv), fixed("tracing on, 100 % to Jaeger", on)}
	collector := collectorCPU(sides, collectorPid)
	ss, err := b.rotate(ctx, b.o.runs, sides, func(round int, ss [][]sample) {
		b.Logf("tracing c=%d at %.0f/s round %d: receiver CPU per event off %.0f µs on %.0f µs", c, rate, round+1, ss[0][round].recvPer(), ss[1][round].recvPer())
	})
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "The same receivers at one fixed rate, %s events/s (half the traced side's closed-loop median; latency from each request's due time) over up to %d connections, %d rounds of %s per side:\n\n",
		benchenv.Thousands(rate), c, b.o.runs, b.o.duration)
	tb := benchenv.NewTable(w, "connections>", "receiver", "events/s>", "p99 ack>", "receiver CPU/event>", "PostgreSQL CPU/event>", "Jaeger CPU/event>")
	for k, sd := range sides {
		tb.Rowf("%d | %s | %s | %.2f ms | %.0f µs | %.0f µs | %.0f µs", c, sd.name, benchenv.Thousands(med(ss[k], sample.tput)), med(ss[k], sample.p99),
			med(ss[k], sample.recvPer), med(ss[k], sample.pgPer), collector.per(k, ss[k]))
	}
	fmt.Fprintf(w, "\nReceiver CPU per event added by tracing at the same rate (median on − median off): %.0f µs.\n\n", med(ss[1], sample.recvPer)-med(ss[0], sample.recvPer))
	return nil
}

// collectorRuns is the collector's CPU time over each run of each side, in
// the order of the side's samples.
type collectorRuns [][]time.Duration

// collectorCPU wraps each side's run to record the CPU time the process pid
// (the collector) used during it.
func collectorCPU(sides []side, pid int) collectorRuns {
	runs := make(collectorRuns, len(sides))
	for k := range sides {
		run := sides[k].run
		sides[k].run = func(src func(time.Time) []byte) (sample, error) {
			c0, _, _ := benchenv.ProcCPU(pid, false)
			s, err := run(src)
			c1, _, _ := benchenv.ProcCPU(pid, false)
			runs[k] = append(runs[k], c1-c0)
			return s, err
		}
	}
	return runs
}

// per is side k's median collector CPU per acknowledged event, in µs.
func (r collectorRuns) per(k int, ss []sample) float64 {
	var v []float64
	for i, d := range r[k] {
		if i < len(ss) {
			v = append(v, ss[i].perEvent(d))
		}
	}
	return benchenv.Median(v)
}
