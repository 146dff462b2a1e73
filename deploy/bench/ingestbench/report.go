package main

import (
	"cmp"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/gatehouse/gatehouse/deploy/bench/benchenv"
)

func medianMs(ss []sample, q float64) string {
	return fmt.Sprintf("%.2f ms", benchenv.MedianOf(ss, func(s sample) float64 { return float64(s.pct(q)) / float64(time.Millisecond) }))
}

// paired is the minimum, maximum and median of the per-run throughput
// ratios a[i]/b[i] of runs made side by side.
func paired(a, b []sample) (lo, hi, med float64) {
	var r []float64
	for i := range min(len(a), len(b)) {
		r = append(r, a[i].tput()/b[i].tput())
	}
	return benchenv.Spread(r)
}

func (res *results) print(w io.Writer) {
	b := res.b
	fmt.Fprintf(w, "## Webhook receiver\n\n")
	fmt.Fprintf(w, "Receiver: `gatehouse serve` binary (Writer defaults of cmd/gatehouse/serve.go, GOMAXPROCS=%s). PostgreSQL %s, private cluster on local disk (%s). ",
		cmp.Or(os.Getenv("GOMAXPROCS"), "default"), b.PGVersion, b.settings)
	fmt.Fprintf(w, "Events: unique, %d-byte JSON bodies signed with the reference scheme, sent over HTTP/1.1 keep-alive connections; ack latency is measured by the client from request write to 204. ", len(b.gen.Body(1_000_000_000_000, time.Now())))
	fmt.Fprintf(w, "pgbench runs the Writer's statement captured from the wire (one row per transaction, `-M prepared -j 2`, `plan_cache_mode=force_generic_plan` so it is not re-planned per transaction) on the same database. ")
	fmt.Fprintf(w, "%d × %s per configuration and side, alternating receiver and pgbench in counterbalanced order (R P, P R, R P, …); tables truncated and checkpointed before each run; every run checked for exactly one inbox and one outbox row per 2xx; all benchmark processes at nice %d. Medians.\n\n", b.o.runs, b.o.duration, benchenv.NiceValue())

	tb := benchenv.NewTable(w, "load", "side", "throughput (events/s)>", "p50 ack>", "p99 ack>", "events per commit>", "WAL per event>", "PostgreSQL CPU per event>", "client-side CPU per event>")
	for _, c := range res.closed {
		res.rows(tb, c)
		lo, hi, med := paired(c.recv, c.pgb)
		mr := benchenv.MedianOf(c.recv, sample.tput) / benchenv.MedianOf(c.pgb, sample.tput)
		tb.Rowf("| **ratio receiver / pgbench** | **%.2f** (of the medians; paired runs: median %.2f, range %.2f–%.2f) | | | | | |", mr, med, lo, hi)
	}
	if res.open != nil {
		res.rows(tb, res.open)
	}
	fmt.Fprintf(w, "\nTargets: ratio ≥ 1.0 at every concurrency: %s", benchenv.Verdict(res.ratiosMet()))
	if res.open != nil {
		p99 := benchenv.MedianOf(res.open.recv, func(s sample) float64 { return float64(s.pct(0.99)) / float64(time.Millisecond) })
		fmt.Fprintf(w, "; p99 ack ≤ 10 ms at half the maximum rate (%s events/s): %s (median p99 %.2f ms, worst run %s)",
			benchenv.Thousands(res.open.rate), benchenv.Verdict(p99 <= 10), p99, ms(worst(res.open.recv, 0.99)))
	}
	fmt.Fprintf(w, ".\n\n<details><summary>Per run</summary>\n\n")
	tb = benchenv.NewTable(w, "load", "run>", "receiver events/s>", "receiver p99>", "pgbench tps>", "pgbench p99>", "ratio>", "load average after the pair>",
		"receiver run: CPU stolen by the hypervisor (cores)>", "receiver run: wake-up delay of a 1 ms sleep in the load generator, p99 / max>", "receiver p99 by gatehouse's own ack histogram>")
	for _, c := range append(res.closed, res.open) {
		if c == nil {
			continue
		}
		for i := range min(len(c.recv), len(c.pgb)) {
			r, p := c.recv[i], c.pgb[i]
			tb.Rowf("%s | %d | %s | %s | %s | %s | %.2f | %.1f | %.2f | %s / %s | %s", c.name, i+1, benchenv.Thousands(r.tput()), ms(r.pct(0.99)), benchenv.Thousands(p.tput()), ms(p.pct(0.99)), r.tput()/p.tput(), max(r.load, p.load), r.cores(r.steal), ms(r.wakeP99), ms(r.wakeMax), ms(r.serverP99))
		}
	}
	fmt.Fprintf(w, "\n</details>\n")
}

func (res *results) rows(tb *benchenv.Table, c *shape) {
	pg := "pgbench, same statement, 1 row per transaction"
	if c.rate > 0 {
		pg = "pgbench -R at the same rate"
	}
	for i, side := range []struct {
		name string
		ss   []sample
	}{{"gatehouse receiver", c.recv}, {pg, c.pgb}} {
		load := ""
		if i == 0 {
			load = c.name
		}
		tb.Rowf("%s | %s | %s | %s | %s | %.1f | %s B | %.0f µs | %.0f µs", load, side.name,
			benchenv.Thousands(benchenv.MedianOf(side.ss, sample.tput)), medianMs(side.ss, 0.5), medianMs(side.ss, 0.99),
			benchenv.MedianOf(side.ss, sample.perCommit), benchenv.Thousands(benchenv.MedianOf(side.ss, func(s sample) float64 { return float64(s.walBytes) / float64(s.n) })),
			benchenv.MedianOf(side.ss, func(s sample) float64 { return cpuPerEvent(s.pgCPU, s.n) }),
			benchenv.MedianOf(side.ss, func(s sample) float64 { return cpuPerEvent(s.appCPU, s.n) }))
	}
}

func (res *results) ratiosMet() bool {
	for _, c := range res.closed {
		if benchenv.MedianOf(c.recv, sample.tput)/benchenv.MedianOf(c.pgb, sample.tput) < 1 {
			return false
		}
	}
	return true
}

func worst(ss []sample, q float64) time.Duration {
	var w time.Duration
	for _, s := range ss {
		w = max(w, s.pct(q))
	}
	return w
}
