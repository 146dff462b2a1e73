package main

import (
	"fmt"
	"io"
	"maps"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/gatehouse/gatehouse/deploy/bench/benchenv"
)

// results is everything one run measured.
type results struct {
	o                       *options
	pgVersion, kafkaVersion string
	max                     benchenv.LoadResult // the closed-loop phase
	rate                    float64             // the open-loop rate
	preDrain, postDrain     time.Duration       // catch-up after each phase (-1: not within -drain)
	open                    benchenv.LoadResult
	samples                 []sample // ordered by at; the first at the open loop's start, the last at its end
}

// near returns the sample taken closest to t.
func (r *results) near(t time.Duration) sample {
	best := r.samples[0]
	for _, s := range r.samples {
		if (s.at - t).Abs() < (best.at - t).Abs() {
			best = s
		}
	}
	return best
}

// perSecond is the rate of f from a to b.
func perSecond(a, b sample, f func(sample) float64) float64 {
	if d := (b.at - a.at).Seconds(); d > 0 {
		return (f(b) - f(a)) / d
	}
	return math.NaN()
}

// meanMax formats the mean and the largest of f over the samples from a to b, without the NaN of a gauge no process
// exported ("n/a" when no sample has a value).
func (r *results) meanMax(a, b sample, f func(sample) float64, unit string) string {
	var v []float64
	for _, s := range r.samples {
		if x := f(s); s.at >= a.at && s.at <= b.at && !math.IsNaN(x) {
			v = append(v, x)
		}
	}
	if len(v) == 0 {
		return "n/a"
	}
	return fmt.Sprintf("%.1f / %.1f%s", benchenv.Sum(v)/float64(len(v)), slices.Max(v), unit)
}

// p99 is the 99th percentile of the open loop's 2xx latencies of the requests due in [from, to).
func (r *results) p99(from, to time.Duration) string {
	h := benchenv.NewHist()
	for _, a := range r.open.Acks {
		if a.OK() && a.Due >= from && a.Due < to {
			h.Record(a.Latency)
		}
	}
	return benchenv.Ms(h.Q(0.99), 2)
}

// drainText says how long a catch-up took.
func drainText(d time.Duration, limit time.Duration) string {
	if d < 0 {
		return fmt.Sprintf("not caught up within %s", limit)
	}
	return fmt.Sprintf("caught up in %s", d.Round(time.Second))
}

// print writes the section; procs are serve, relay and consume, for their warnings.
func (r *results) print(w io.Writer, procs []*benchenv.Proc) {
	o := r.o
	first, last := r.samples[0], r.samples[len(r.samples)-1]
	m1, lastFrom := r.near(time.Minute), r.near(last.at-time.Minute)
	all := r.open.Latencies()
	ok, failed := r.open.Counts()
	loads := benchenv.Col(r.samples, func(s sample) float64 { return s.load })

	fmt.Fprintf(w, "## Sustained pipeline\n\n")
	fmt.Fprintf(w, "`go run ./deploy/bench/pipelinebench %s`: `gatehouse serve`, `relay` and `consume` as separate processes with PostgreSQL %s (fsync on) "+
		"and Kafka %s on this machine; partition_interval %s, key_partition_interval %s, retention %s, check_interval %s. Load average during the open loop: mean %.1f, max %.1f.\n\n",
		strings.Join(o.args, " "), r.pgVersion, r.kafkaVersion, o.interval, o.keyInterval, o.retention, o.check,
		benchenv.Sum(loads)/float64(len(loads)), slices.Max(loads))
	_, maxFailed := r.max.Counts()
	fmt.Fprintf(w, "Closed loop (%s, %d connections, relay and consumers running): **%.0f events/s** (%d non-2xx); then %s. "+
		"Open loop: **%.0f events/s** for %s over %d connections, one request due every %s whatever the answers, latency from the due time: "+
		"%d answered 2xx, %d not (%s). After the open loop the relay and consumers %s.\n\n",
		o.maxD, o.conns, r.max.Rate(), maxFailed, drainText(r.preDrain, o.drain),
		r.rate, o.duration, o.conns, time.Duration(float64(time.Second)/r.rate), ok, failed, orNone(r.open.LastError, "last: "),
		drainText(r.postDrain, o.drain))

	tb := benchenv.NewTable(w, "stage", "first minute: events/s", "first minute: queue age mean / max", "last minute: events/s", "last minute: queue age mean / max")
	acc := func(s sample) float64 { return s.accepted }
	pub := func(s sample) float64 { return s.published }
	pro := func(s sample) float64 { return s.processed }
	relayAge := func(s sample) float64 { return s.relayAge }
	pending := func(s sample) float64 { return s.pendingAge }
	cLag := func(s sample) float64 { return s.consumerLag }
	tb.Rowf("receiver (accepted) | %.0f | ack p99 %s | %.0f | ack p99 %s",
		perSecond(first, m1, acc), r.p99(0, time.Minute), perSecond(lastFrom, last, acc), r.p99(o.duration-time.Minute, o.duration))
	tb.Rowf("relay (published to Kafka) | %.0f | oldest unpublished outbox row %s | %.0f | %s",
		perSecond(first, m1, pub), r.meanMax(first, m1, relayAge, " s"), perSecond(lastFrom, last, pub), r.meanMax(lastFrom, last, relayAge, " s"))
	tb.Rowf("consumers (processed) | %.0f | oldest unfinished (pending or processing) inbox row %s; lag %s | %.0f | %s; lag %s",
		perSecond(first, m1, pro), r.meanMax(first, m1, pending, " s"), r.meanMax(first, m1, cLag, " records"),
		perSecond(lastFrom, last, pro), r.meanMax(lastFrom, last, pending, " s"), r.meanMax(lastFrom, last, cLag, " records"))
	fmt.Fprintln(w)

	// Table sizes; the last third of a 10-minute run is long after the retention horizon: a bounded table no longer grows.
	third := r.near(last.at - last.at/3)
	tb = benchenv.NewTable(w, "table", "start of open loop", "end of first minute", "end of run",
		fmt.Sprintf("growth over the last %s", (last.at-third.at).Round(time.Second)))
	row := func(name, format string, f func(sample) int64) {
		tb.Rowf(name+" | %s | %s | "+format+" | %+.1f MiB", mib(f(first)), mib(f(m1)), mib(f(last)), float64(f(last)-f(third))/(1<<20))
	}
	for _, t := range tables {
		row(t, "%s", func(s sample) int64 { return s.bytes[t] })
	}
	row("**total**", "**%s**", func(s sample) int64 { return s.total })
	fmt.Fprintf(w, "\nPartitions during the open loop: **%.0f created, %.0f dropped** (gatehouse_storage_partitions_created/dropped_total of every process).\n\n",
		last.created-first.created, last.dropped-first.dropped)
	fmt.Fprintf(w, "Ack latency of the open loop (2xx answers, from the due time, at the load generator): p50 %s, p99 **%s**, p99.9 %s, max %s.\n\n",
		benchenv.Ms(all.Q(0.5), 2), benchenv.Ms(all.Q(0.99), 2), benchenv.Ms(all.Q(0.999), 2), benchenv.Ms(all.Q(1), 2))
	var outcomes []string
	for _, k := range slices.Sorted(maps.Keys(last.outcomes)) {
		outcomes = append(outcomes, fmt.Sprintf("%s %.0f", k, last.outcomes[k]-first.outcomes[k]))
	}
	fmt.Fprintf(w, "During the open loop: events accepted %.0f; consumer records by outcome: %s.\n",
		last.accepted-first.accepted, orNone(strings.Join(outcomes, ", "), ""))
	for _, p := range procs {
		fmt.Fprintf(w, "\n%s\n", warnings(p))
	}
}

// orNone is s after prefix, or "none" when s is empty.
func orNone(s, prefix string) string {
	if s == "" {
		return "none"
	}
	return prefix + s
}
