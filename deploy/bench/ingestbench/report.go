package main

import (
	"cmp"
	"fmt"
	"io"
	"os"
	"slices"
	"time"

	"github.com/gatehouse/gatehouse/deploy/bench/benchenv"
)

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
	fmt.Fprintf(w, "%d × %s per configuration and side, alternating receiver and pgbench in counterbalanced order (R P, P R, R P, …); tables emptied before the warm-up, analyzed after it (as autovacuum keeps them in service; a table just emptied has no statistics, and the statement's plan for it costs PostgreSQL about twice the CPU) and checkpointed before each run; every run checked for exactly one inbox and one outbox row per 2xx; all benchmark processes at nice %d. Medians.\n\n", b.o.runs, b.o.duration, benchenv.NiceValue())

	tb := benchenv.NewTable(w, "load", "side", "throughput (events/s)>", "p50 ack>", "p99 ack>", "events per commit>", "WAL per event>", "PostgreSQL CPU per event>")
	ratiosMet := true
	for _, c := range res.closed {
		c.rows(tb)
		lo, hi, pm := paired(c.recv, c.pgb)
		mr := med(c.recv, sample.tput) / med(c.pgb, sample.tput)
		ratiosMet = ratiosMet && mr >= 1
		tb.Rowf("| **ratio receiver / pgbench** | **%.2f** (of the medians; paired runs: median %.2f, range %.2f–%.2f) | | | | |", mr, pm, lo, hi)
	}
	if res.open != nil {
		res.open.rows(tb)
	}
	fmt.Fprintf(w, "\nTargets: ratio ≥ 1.0 at every concurrency: %s", benchenv.Verdict(ratiosMet))
	if res.open != nil {
		p99 := med(res.open.recv, sample.p99)
		fmt.Fprintf(w, "; p99 ack ≤ 10 ms at half the maximum rate (%s events/s): %s (median p99 %.2f ms, worst run %.2f ms)",
			benchenv.Thousands(res.open.rate), benchenv.Verdict(p99 <= 10), p99, slices.Max(benchenv.Col(res.open.recv, sample.p99)))
	}
	fmt.Fprintf(w, ".\n")
}

// rows writes the shape's receiver and pgbench rows.
func (c *shape) rows(tb *benchenv.Table) {
	pg := "pgbench, same statement, 1 row per transaction"
	if c.rate > 0 {
		pg = "pgbench -R at the same rate"
	}
	load := c.name
	for _, s := range []struct {
		name string
		ss   []sample
	}{{"gatehouse receiver", c.recv}, {pg, c.pgb}} {
		tb.Rowf("%s | %s | %s | %.2f ms | %.2f ms | %.1f | %s B | %.0f µs", load, s.name, benchenv.Thousands(med(s.ss, sample.tput)),
			med(s.ss, sample.p50), med(s.ss, sample.p99), med(s.ss, sample.perCommit), benchenv.Thousands(med(s.ss, sample.walPer)),
			med(s.ss, sample.pgPer))
		load = ""
	}
}
