package main

import (
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/gatehouse/gatehouse/deploy/bench/benchenv"
)

// loadAvg is the 1-minute load average, as the reports print it.
func loadAvg() string { return strconv.FormatFloat(benchenv.LoadAvg(), 'f', 2, 64) }

func ms(d time.Duration) string {
	if d < 0 {
		return "–"
	}
	return fmt.Sprintf("%.1f ms", float64(d.Microseconds())/1000)
}

func report(w io.Writer, o *options, b *bench, rows []result) {
	fmt.Fprintln(w, "## Relay")
	fmt.Fprintln(w)
	fmt.Fprintf(w, "Outbox rows committed → records readable on the topic (`go run ./deploy/bench/relaybench`, `make bench` section `relay`). "+
		"PostgreSQL %s (private cluster, fsync on), Kafka %s (one KRaft node, private), relay in-process with its shipped defaults, "+
		"%d partitions, %d keys, ~300-byte envelopes; writer, relay, consumer, PostgreSQL and Kafka share the machine. "+
		"Latency is commit-to-topic: from the writer's COMMIT returning (ceiling: from the Produce call) to a consumer receiving the record. "+
		"Paced runs last %v; throughput = rows / (last record received − start).\n\n",
		b.PGVersion, b.KafkaVersion, o.partitions, o.keys, o.duration)
	fmt.Fprintln(w, "| path | offered | rows | records/s | p50 | p99 | duplicates | load avg |")
	fmt.Fprintln(w, "|---|---|---:|---:|---:|---:|---:|---:|")
	for _, r := range rows {
		fmt.Fprintf(w, "| %s | %s | %d | %.0f | %s | %s | %d | %s |\n", r.what, r.offered, r.n, r.throughput, ms(r.p50), ms(r.p99), r.dups, r.load)
	}
	fmt.Fprintln(w)
	if o.runs > 1 {
		medians(w, rows)
	}
	drainRatios(w, rows)
	burstRatios(w, rows)
	cpuTable(w, rows)
	fmt.Fprintln(w, "Anchors: Sequin reports 50k ops/s with p99 253 ms from one slot; Debezium Server 20–23k ops/s with p99 ≈ 440 ms. "+
		"Targets on the 2-core machine: ≥ 30k events/s, p99 commit-to-topic ≤ 100 ms at 5k/s.")
}

// medians prints one row per (path, offered) with the median of its runs.
func medians(w io.Writer, rows []result) {
	type key struct{ what, offered string }
	var order []key
	groups := map[key][]result{}
	for _, r := range rows {
		k := key{r.what, r.offered}
		if _, ok := groups[k]; !ok {
			order = append(order, k)
		}
		groups[k] = append(groups[k], r)
	}
	fmt.Fprintln(w, "Medians over the runs above:")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "| path | offered | runs | records/s (median) | p50 (median) | p99 (median) |")
	fmt.Fprintln(w, "|---|---|---:|---:|---:|---:|")
	for _, k := range order {
		g := groups[k]
		tp := median(g, func(r result) float64 { return r.throughput })
		p50 := time.Duration(median(g, func(r result) float64 { return float64(r.p50) }))
		p99 := time.Duration(median(g, func(r result) float64 { return float64(r.p99) }))
		fmt.Fprintf(w, "| %s | %s | %d | %.0f | %s | %s |\n", k.what, k.offered, len(g), tp, ms(p50), ms(p99))
	}
	fmt.Fprintln(w)
}

func median(rs []result, f func(result) float64) float64 {
	v := make([]float64, len(rs))
	for i, r := range rs {
		v[i] = f(r)
	}
	slices.Sort(v)
	if len(v)%2 == 1 {
		return v[len(v)/2]
	}
	return (v[len(v)/2-1] + v[len(v)/2]) / 2
}

// drainRatios prints, per mode, each run's backlog drain rate over the
// producer ceiling's max rate of the same run, and their median.
func drainRatios(w io.Writer, rows []result) {
	ceiling := map[int]float64{}
	for _, r := range rows {
		if strings.HasPrefix(r.what, "franz-go producer") && r.offered == "max" {
			ceiling[r.run] = r.throughput
		}
	}
	ratios := map[string][]result{}
	var modes []string
	for _, r := range rows {
		c := ceiling[r.run]
		if !strings.HasPrefix(r.offered, "backlog") || c == 0 {
			continue
		}
		if _, ok := ratios[r.what]; !ok {
			modes = append(modes, r.what)
		}
		ratios[r.what] = append(ratios[r.what], result{throughput: r.throughput / c})
	}
	if len(modes) == 0 {
		return
	}
	fmt.Fprintln(w, "Backlog drain over the producer ceiling (max) of the same run:")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "| path | runs | ratio per run | median |")
	fmt.Fprintln(w, "|---|---:|---|---:|")
	for _, m := range modes {
		var each []string
		for _, r := range ratios[m] {
			each = append(each, fmt.Sprintf("%.2f", r.throughput))
		}
		fmt.Fprintf(w, "| %s | %d | %s | %.2f |\n", m, len(ratios[m]), strings.Join(each, ", "),
			median(ratios[m], func(r result) float64 { return r.throughput }))
	}
	fmt.Fprintln(w)
}

// burstRatios prints, per mode, each backlog drain over the ceiling burst
// measured just before it (the same moment and record count).
func burstRatios(w io.Writer, rows []result) {
	ratios := map[string][]result{}
	var modes []string
	burst := 0.0
	for _, r := range rows {
		switch {
		case strings.HasPrefix(r.offered, "burst"):
			burst = r.throughput
		case strings.HasPrefix(r.offered, "backlog") && burst > 0:
			if _, ok := ratios[r.what]; !ok {
				modes = append(modes, r.what)
			}
			ratios[r.what] = append(ratios[r.what], result{throughput: r.throughput / burst})
		}
	}
	if len(modes) == 0 {
		return
	}
	fmt.Fprintln(w, "Backlog drain over the producer burst of the same size measured just before it (the ceiling at the same moment):")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "| path | runs | ratio per run | median |")
	fmt.Fprintln(w, "|---|---:|---|---:|")
	for _, m := range modes {
		var each []string
		for _, r := range ratios[m] {
			each = append(each, fmt.Sprintf("%.2f", r.throughput))
		}
		fmt.Fprintf(w, "| %s | %d | %s | %.2f |\n", m, len(ratios[m]), strings.Join(each, ", "),
			median(ratios[m], func(r result) float64 { return r.throughput }))
	}
	fmt.Fprintln(w)
}
