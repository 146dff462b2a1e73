package main

import (
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/gatehouse/gatehouse/deploy/bench/benchenv"
)

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
	t := benchenv.NewTable(w, "path", "offered", "rows>", "records/s>", "p50>", "p99>", "duplicates>", "load avg>")
	for _, r := range rows {
		t.Row(r.what, r.offered, r.n, fmt.Sprintf("%.0f", r.throughput), ms(r.p50), ms(r.p99), r.dups, r.load)
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
	t := benchenv.NewTable(w, "path", "offered", "runs>", "records/s (median)>", "p50 (median)>", "p99 (median)>")
	for _, k := range order {
		g := groups[k]
		tp := benchenv.MedianOf(g, func(r result) float64 { return r.throughput })
		p50 := time.Duration(benchenv.MedianOf(g, func(r result) float64 { return float64(r.p50) }))
		p99 := time.Duration(benchenv.MedianOf(g, func(r result) float64 { return float64(r.p99) }))
		t.Row(k.what, k.offered, len(g), fmt.Sprintf("%.0f", tp), ms(p50), ms(p99))
	}
	fmt.Fprintln(w)
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
	rt := ratios{}
	for _, r := range rows {
		if c := ceiling[r.run]; strings.HasPrefix(r.offered, "backlog") && c > 0 {
			rt.add(r.what, r.throughput/c)
		}
	}
	rt.print(w, "Backlog drain over the producer ceiling (max) of the same run:")
}

// burstRatios prints, per mode, each backlog drain over the ceiling burst
// measured just before it (the same moment and record count).
func burstRatios(w io.Writer, rows []result) {
	rt := ratios{}
	burst := 0.0
	for _, r := range rows {
		switch {
		case strings.HasPrefix(r.offered, "burst"):
			burst = r.throughput
		case strings.HasPrefix(r.offered, "backlog") && burst > 0:
			rt.add(r.what, r.throughput/burst)
		}
	}
	rt.print(w, "Backlog drain over the producer burst of the same size measured just before it (the ceiling at the same moment):")
}

// ratios are the per-run ratios of each mode, modes in the order met.
type ratios struct {
	modes []string
	of    map[string][]float64
}

func (rt *ratios) add(mode string, v float64) {
	if rt.of == nil {
		rt.of = map[string][]float64{}
	}
	if _, ok := rt.of[mode]; !ok {
		rt.modes = append(rt.modes, mode)
	}
	rt.of[mode] = append(rt.of[mode], v)
}

func (rt *ratios) print(w io.Writer, title string) {
	if len(rt.modes) == 0 {
		return
	}
	fmt.Fprintf(w, "%s\n\n", title)
	t := benchenv.NewTable(w, "path", "runs>", "ratio per run", "median>")
	for _, m := range rt.modes {
		var each []string
		for _, v := range rt.of[m] {
			each = append(each, fmt.Sprintf("%.2f", v))
		}
		t.Row(m, len(rt.of[m]), strings.Join(each, ", "), fmt.Sprintf("%.2f", benchenv.Median(rt.of[m])))
	}
	fmt.Fprintln(w)
}
