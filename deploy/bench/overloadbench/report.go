package main

import (
	"fmt"
	"io"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/gatehouse/gatehouse/deploy/bench/benchenv"
)

func pct(d []time.Duration, p float64) time.Duration {
	if len(d) == 0 {
		return 0
	}
	s := slices.Clone(d)
	slices.Sort(s)
	return s[min(len(s)-1, int(p*float64(len(s))))]
}

func median(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	s := slices.Clone(v)
	sort.Float64s(s)
	return s[len(s)/2]
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// failures is what a client saw fail: transport errors and non-2xx answers.
func (o *outcome) failures() int {
	n := o.errors
	for code, c := range o.codes {
		if code/100 != 2 {
			n += c
		}
	}
	return n
}

func (o *outcome) sent() int {
	n := o.errors
	for _, c := range o.codes {
		n += c
	}
	return n
}

func report(w io.Writer, o options, st *benchenv.Stack, g *gatehouse, load float64, alone, over []result, acked, missing int, hwmKB int64) {
	col := func(rs []result, f func(r result) float64) []float64 {
		out := make([]float64, len(rs))
		for i, r := range rs {
			out[i] = f(r)
		}
		return out
	}
	bP50 := func(r result) float64 { return ms(pct(r.b.lat, 0.5)) }
	bP99 := func(r result) float64 { return ms(pct(r.b.lat, 0.99)) }
	bErr := func(r result) float64 { return float64(r.b.failures()) }
	aloneP99, overP99 := median(col(alone, bP99)), median(col(over, bP99))
	fmt.Fprintln(w, "## Under overload")
	fmt.Fprintln(w)
	limits := "defaults: ingest.max_in_flight 256, per provider max_in_flight 64 and reserved_in_flight 16"
	if o.maxInFlight > 0 || o.share > 0 {
		limits = fmt.Sprintf("ingest.max_in_flight %d, per provider max_in_flight %d (0: default)", o.maxInFlight, o.share)
	}
	fmt.Fprintf(w, "`gatehouse serve` (%s, "+
		"min_body_rate 16 KiB/s after 2 s, read_header_timeout 5 s, max_connections 4096) on PostgreSQL %s (fsync on), "+
		"the load generators on the same machine. %d interleaved pairs of %v runs: provider B alone at %d events/s (open loop), "+
		"then B at the same rate beside provider A flooding closed-loop with %d connections, %d connections sending a body "+
		"at 1 byte/s and %d sending their headers at 1 byte/s, both to B's endpoint (without B's secret). Medians of the runs; load average at start %.2f.\n\n",
		limits, st.PGVersion, o.runs, o.d, o.rate, o.flood, o.slowB, o.slowH, load)
	fmt.Fprintln(w, "| provider B | alone | beside the attack | ratio | target |")
	fmt.Fprintln(w, "|---|---|---|---|---|")
	fmt.Fprintf(w, "| p50 ack latency | %.2f ms | %.2f ms | %.2f× | |\n", median(col(alone, bP50)), median(col(over, bP50)), median(col(over, bP50))/max(median(col(alone, bP50)), 1e-9))
	fmt.Fprintf(w, "| p99 ack latency | %.2f ms | %.2f ms | %.2f× | ≤ 2× |\n", aloneP99, overP99, overP99/max(aloneP99, 1e-9))
	fmt.Fprintf(w, "| errors (non-2xx or failed), all runs | %d | %d | | 0 |\n", int(sum(col(alone, bErr))), int(sum(col(over, bErr))))
	fmt.Fprintf(w, "| answers, all runs | %s | %s | | |\n", codes(alone, func(r result) *outcome { return r.b }), codes(over, func(r result) *outcome { return r.b }))
	fmt.Fprintf(w, "| events sent, all runs | %d | %d | | |\n", int(sum(col(alone, func(r result) float64 { return float64(r.b.sent()) }))),
		int(sum(col(over, func(r result) float64 { return float64(r.b.sent()) }))))
	fmt.Fprintln(w)
	fmt.Fprintln(w, "| provider A (flood) and the slow clients, per run (median) | value | target |")
	fmt.Fprintln(w, "|---|---|---|")
	fmt.Fprintf(w, "| A's requests answered per second | %.0f | |\n", median(col(over, func(r result) float64 { return float64(len(r.a.lat)) / (o.d + time.Second).Seconds() })))
	fmt.Fprintf(w, "| A's answers | %s | |\n", codes(over, func(r result) *outcome { return r.a }))
	fmt.Fprintf(w, "| A's refusals (503/429): p50 / p99 / slowest | %.2f / %.2f / %.2f ms | every one ≤ 50 ms |\n",
		median(col(over, func(r result) float64 { return ms(pct(r.a.refusals, 0.5)) })),
		median(col(over, func(r result) float64 { return ms(pct(r.a.refusals, 0.99)) })),
		slices.Max(col(over, func(r result) float64 { return ms(pct(r.a.refusals, 1)) })))
	fmt.Fprintf(w, "| A's refusals without Retry-After, all runs | %d | 0 |\n", int(sum(col(over, func(r result) float64 { return float64(r.a.noRetry) }))))
	fmt.Fprintf(w, "| slow-body connections opened / cut with 408 | %.0f / %.0f | |\n",
		median(col(over, func(r result) float64 { return float64(r.body.conns.Load()) })), median(col(over, func(r result) float64 { return float64(r.body.cut408.Load()) })))
	fmt.Fprintf(w, "| slow-header connections opened / closed by gatehouse | %.0f / %.0f | |\n",
		median(col(over, func(r result) float64 { return float64(r.header.conns.Load()) })),
		median(col(over, func(r result) float64 { return float64(r.header.closed.Load() + r.header.cut408.Load()) })))
	fmt.Fprintf(w, "| gatehouse peak RSS: B alone / under attack / whole run (VmHWM) | %.0f / %.0f / %.0f MB | ≤ 150 MB |\n",
		median(col(alone, func(r result) float64 { return float64(r.peakRSSKB) / 1024 })),
		slices.Max(col(over, func(r result) float64 { return float64(r.peakRSSKB) / 1024 })), float64(hwmKB)/1024)
	fmt.Fprintf(w, "| events acknowledged (A and B, all runs) / missing from the inbox | %d / %d | 0 missing |\n", acked, missing)
	fmt.Fprintln(w)
	fmt.Fprintf(w, "Command: `make bench BENCH_ONLY=overload` (`%s`).\n", strings.Join([]string{"deploy/bench/40-overload.sh", fmt.Sprintf("-runs %d -d %v", o.runs, o.d)}, " "))
}

func sum(v []float64) float64 {
	t := 0.0
	for _, x := range v {
		t += x
	}
	return t
}

// codes is one client's answers over all runs, by status.
func codes(rs []result, of func(result) *outcome) string {
	all := map[int]int{}
	errs := 0
	for _, r := range rs {
		for c, n := range of(r).codes {
			all[c] += n
		}
		errs += of(r).errors
	}
	keys := make([]int, 0, len(all))
	for c := range all {
		keys = append(keys, c)
	}
	sort.Ints(keys)
	var parts []string
	for _, c := range keys {
		parts = append(parts, fmt.Sprintf("%d × %d", all[c], c))
	}
	if errs > 0 {
		parts = append(parts, fmt.Sprintf("%d failed", errs))
	}
	return strings.Join(parts, ", ")
}
