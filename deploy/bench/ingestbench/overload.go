package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"slices"
	"time"

	"github.com/gatehouse/gatehouse/deploy/bench/benchenv"
)

// The overload mode (-overload): provider B's open loop of -rate events a
// second, alone and then beside an attack (provider A's closed-loop flood
// of -flood connections, -slow-body and -slow-header connections trickling
// to B's endpoint), alternating; every 2xx is then looked up in the inbox.

// overloadRun is one run of the overload mode.
type overloadRun struct {
	a, b      benchenv.LoadResult
	peakRSSKB int64
}

// bConns bounds provider B's open loop, as a provider's own pool would.
const bConns = 256

func overload(ctx context.Context, st *benchenv.Stack, o *options, stdout io.Writer) error {
	secret := []byte("whsec_overload_bench_secret")
	path, err := benchenv.WriteConfig(st.Dir, "overload.yaml", st.DBURL, "", benchenv.ProviderYAML("a", secret, "")+benchenv.ProviderYAML("b", secret, ""))
	if err != nil {
		return err
	}
	g, err := benchenv.Gatehouse{Bin: o.gatehouse, Sub: "serve", Config: path, Log: os.DevNull}.Start(ctx)
	if err != nil {
		return err
	}
	defer g.Stop()
	a := benchenv.Load{Addr: g.Public, Conns: o.flood, Next: benchenv.NewDeliveries("a", g.Public, secret, 0).Next, IDs: true}
	b := benchenv.Load{Addr: g.Public, Conns: bConns, Next: benchenv.NewDeliveries("b", g.Public, secret, 0).Next, IDs: true}
	load := benchenv.LoadAvg()
	if o.budgetOnly {
		return budgetReport(ctx, stdout, st, o, budgetSection(ctx, st, g, o, b))
	}
	var alone, over []overloadRun
	for i := range o.runs {
		st.Logf("run %d/%d: B alone", i+1, o.runs)
		alone = append(alone, overloadOnce(ctx, g, o, a, b, false))
		st.Logf("run %d/%d: B beside A's flood and %d+%d slow connections", i+1, o.runs, o.slowB, o.slowH)
		over = append(over, overloadOnce(ctx, g, o, a, b, true))
	}
	time.Sleep(time.Second)
	acked, missing := 0, 0
	for _, r := range append(alone, over...) {
		for prov, l := range map[string]benchenv.LoadResult{"a": r.a, "b": r.b} {
			n, m, err := missingFromInbox(ctx, st, prov, l)
			if err != nil {
				return err
			}
			acked, missing = acked+n, missing+m
		}
	}
	hwmKB := benchenv.StatusKB(g.Pid(), "VmHWM:")
	var budget [][]budgetRun
	if len(o.budgetConns) > 0 {
		budget = budgetSection(ctx, st, g, o, b)
	}
	overloadReport(stdout, o, st, load, alone, over, acked, missing, hwmKB)
	if budget != nil {
		return budgetReport(ctx, stdout, st, o, budget)
	}
	return nil
}

// overloadOnce runs B alone, or beside the attack.
func overloadOnce(ctx context.Context, g *benchenv.Proc, o *options, a, b benchenv.Load, attack bool) overloadRun {
	var r overloadRun
	stopRSS := benchenv.Every(ctx, 50*time.Millisecond, func(context.Context) {
		r.peakRSSKB = max(r.peakRSSKB, benchenv.StatusKB(g.Pid(), "VmRSS:"))
	})
	done := make(chan struct{}, 3)
	if attack {
		// The slow clients aim at B's own endpoint: without B's secret they
		// must not take B's slots.
		d := o.duration + time.Second
		go func() { slowClients(ctx, g.Public, "b", o.slowB, true, d); done <- struct{}{} }()
		go func() { slowClients(ctx, g.Public, "b", o.slowH, false, d); done <- struct{}{} }()
		go func() { r.a = a.Closed(ctx, d); done <- struct{}{} }()
		time.Sleep(500 * time.Millisecond) // the attack is under way when B starts
	}
	r.b = b.Fixed(ctx, float64(o.rate), o.duration)
	if attack {
		for range 3 {
			<-done
		}
	}
	stopRSS()
	return r
}

// missingFromInbox counts prov's acknowledged events in l and those not in the inbox.
func missingFromInbox(ctx context.Context, st *benchenv.Stack, prov string, l benchenv.LoadResult) (acked, missing int, err error) {
	var ids []string
	for _, x := range l.Acks {
		if x.OK() {
			ids = append(ids, x.ID)
		}
	}
	var found int
	if err := st.Pool.QueryRow(ctx, `SELECT count(*) FROM inbox WHERE provider = $1 AND event_id = ANY($2)`, prov, ids).Scan(&found); err != nil {
		return 0, 0, fmt.Errorf("look up acknowledged events: %w", err)
	}
	return len(ids), len(ids) - found, nil
}

// answered is the latency of every answered request (any status), and
// refused of the 503 and 429 answers, with those lacking Retry-After.
func answered(l benchenv.LoadResult) (all, refused *benchenv.Hist, noRetry int) {
	all, refused = benchenv.NewHist(), benchenv.NewHist()
	for _, x := range l.Acks {
		if x.Status == 0 {
			continue
		}
		all.Record(x.Latency)
		if x.Status == 503 || x.Status == 429 {
			refused.Record(x.Latency)
			if !x.RetryAfter {
				noRetry++
			}
		}
	}
	return all, refused, noRetry
}

func overloadReport(w io.Writer, o *options, st *benchenv.Stack, load float64, alone, over []overloadRun, acked, missing int, hwmKB int64) {
	type f = func(r overloadRun) float64
	med := func(rs []overloadRun, f f) float64 { return benchenv.MedianOf(rs, f) }
	sum := func(rs []overloadRun, f f) int { return int(benchenv.Sum(benchenv.Col(rs, f))) }
	bQ := func(q float64) f {
		return func(r overloadRun) float64 { all, _, _ := answered(r.b); return benchenv.Millis(all.Q(q)) }
	}
	aRefusal := func(q float64) f {
		return func(r overloadRun) float64 { _, ref, _ := answered(r.a); return benchenv.Millis(ref.Q(q)) }
	}
	bErr := func(r overloadRun) float64 { _, f := r.b.Counts(); return float64(f) }
	aloneP99, overP99 := med(alone, bQ(0.99)), med(over, bQ(0.99))
	fmt.Fprintf(w, "## Under overload\n\n")
	fmt.Fprintf(w, "`gatehouse serve` (defaults: ingest.max_in_flight 256, per provider max_in_flight 64 and reserved_in_flight 16, "+
		"min_body_rate 16 KiB/s after 2 s, read_header_timeout 5 s, max_connections 4096) on PostgreSQL %s (fsync on), "+
		"the load generators on the same machine. %d interleaved pairs of %v runs: provider B alone at %d events/s (open loop, latency from each request's due time, up to %d connections), "+
		"then B at the same rate beside provider A flooding closed-loop with %d connections, %d connections sending a body "+
		"at 1 byte/s and %d sending their headers at 1 byte/s, both to B's endpoint (without B's secret). Medians of the runs; load average at start %.2f.\n\n",
		st.PGVersion, o.runs, o.duration, o.rate, bConns, o.flood, o.slowB, o.slowH, load)
	t := benchenv.NewTable(w, "provider B", "alone", "beside the attack", "ratio", "target")
	t.Row("p99 ack latency", fmt.Sprintf("%.2f ms", aloneP99), fmt.Sprintf("%.2f ms", overP99), fmt.Sprintf("%.2f×", overP99/max(aloneP99, 1e-9)), "≤ 2×")
	t.Row("errors (non-2xx or failed), all runs", sum(alone, bErr), sum(over, bErr), "", 0)
	fmt.Fprintln(w)
	t = benchenv.NewTable(w, "provider A (flood) and the slow clients, per run (median)", "value", "target")
	t.Row("A's refusals (503/429): p50 / p99 / slowest", fmt.Sprintf("%.2f / %.2f / %.2f ms", med(over, aRefusal(0.5)), med(over, aRefusal(0.99)),
		slices.Max(benchenv.Col(over, aRefusal(1)))), "held about ingest.refusal_hold (500 ms), so a closed-loop flood waits instead of spinning")
	t.Row("A's refusals without Retry-After, all runs", sum(over, func(r overloadRun) float64 { _, _, n := answered(r.a); return float64(n) }), 0)
	t.Row("gatehouse peak RSS: B alone / under attack / whole run (VmHWM)", fmt.Sprintf("%.0f / %.0f / %.0f MB",
		med(alone, func(r overloadRun) float64 { return float64(r.peakRSSKB) / 1024 }),
		slices.Max(benchenv.Col(over, func(r overloadRun) float64 { return float64(r.peakRSSKB) / 1024 })), float64(hwmKB)/1024), "≤ 150 MB")
	t.Row("events acknowledged (A and B, all runs) / missing from the inbox", fmt.Sprintf("%d / %d", acked, missing), "0 missing")
	fmt.Fprintf(w, "\nCommand: `make bench BENCH_ONLY=overload` (`deploy/bench/40-overload.sh -runs %d -d %v`).\n", o.runs, o.duration)
}
