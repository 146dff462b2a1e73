// Command pipelinebench is docs/BENCHMARKS.md "Sustained pipeline": `gatehouse
// serve`, `relay` and `consume` as processes with a private PostgreSQL and
// Kafka and partitions created and dropped during the run; a closed loop finds
// the receiver's maximum, then an open loop runs at half of it for -d,
// sampling /metrics every 10 s. It fails on the harness only, never on a
// figure.
package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/gatehouse/gatehouse/deploy/bench/benchenv"
	"github.com/gatehouse/gatehouse/internal/demoapi"
)

type options struct {
	benchenv.Options
	duration    time.Duration `flag:"d" default:"10m" help:"length of the open-loop (fixed-rate) phase (at least 1m)"`
	maxD        time.Duration `flag:"max-d" default:"20s" help:"length of the closed-loop phase that finds the receiver's maximum rate"`
	conns       int           `flag:"conns" default:"64" help:"connections of the closed-loop and the open-loop phase"`
	rate        float64       `flag:"rate" help:"open-loop rate in events/s (default half the closed-loop maximum)"`
	interval    time.Duration `flag:"interval" default:"1m" help:"storage.partition_interval (also outbox_partition_interval and the dedupe window)"`
	keyInterval time.Duration `flag:"key-interval" default:"1m" help:"storage.key_partition_interval"`
	retention   time.Duration `flag:"retention" default:"3m" help:"storage.retention (also outbox_retention)"`
	check       time.Duration `flag:"check" default:"10s" help:"storage.check_interval"`
	drain       time.Duration `flag:"drain" default:"3m" help:"longest wait for the relay and consumers to catch up after the closed-loop phase"`
	gatehouse   string        `flag:"gatehouse" default:"bin/gatehouse" help:"gatehouse binary"`
}

func main() {
	o := &options{Options: benchenv.Options{Name: "pipelinebench", Kafka: true}}
	benchenv.Run(help, o, func(ctx context.Context, st *benchenv.Stack, stdout io.Writer) error { return run(ctx, st, o, stdout) })
}

const help = "pipelinebench: serve + relay + consume at a fixed rate (half the receiver's maximum) for -d, with partitions created and dropped during the run.\n\nExample: go run ./deploy/bench/pipelinebench -d 10m\n\nFlags:\n"

// provider is the run's one provider (SPEC.md's reference scheme: no
// redelivery window, so a one-partition dedupe window).
const provider = "bench"

func run(ctx context.Context, st *benchenv.Stack, o *options, stdout io.Writer) error {
	dir := st.Dir // the configuration and the logs, kept with PostgreSQL's data by -keep
	// Without the migration's day-wide partitions, serve's maintenance lays out those of -interval.
	if err := benchenv.DropPartitions(ctx, st.Pool); err != nil {
		return err
	}
	apiURL, stopAPI, err := benchenv.Serve(demoapi.Handler(nil))
	if err != nil {
		return err
	}
	defer stopAPI()
	secret := benchenv.Secret("whsec_bench_", 16)
	cfg, err := benchenv.WriteConfig(dir, "gatehouse.yaml", st.DBURL, fmt.Sprintf(`kafka:
  brokers: [%[1]s]
storage:
  partition_interval: %[2]s
  key_partition_interval: %[3]s
  outbox_partition_interval: %[2]s
  retention: %[4]s
  outbox_retention: %[4]s
  dedupe_window: %[2]s
  check_interval: %[5]s
`, st.Brokers(), o.interval, o.keyInterval, o.retention, o.check),
		benchenv.ProviderYAML(provider, secret, "    api_url: "+apiURL+"\n"))
	if err != nil {
		return err
	}

	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	var procs []*benchenv.Proc
	defer func() {
		for i := len(procs) - 1; i >= 0; i-- {
			procs[i].Stop()
		}
	}()
	for _, sub := range []string{"serve", "relay", "consume"} {
		st.Logf("starting gatehouse %s", sub)
		p, err := benchenv.Gatehouse{Bin: o.gatehouse, Sub: sub, Config: cfg, Log: filepath.Join(dir, sub+".log")}.Start(ctx)
		if err != nil {
			return err
		}
		procs = append(procs, p)
		go func() { // a process that ends during the run ends it
			select {
			case <-p.Done():
				cancel(fmt.Errorf("gatehouse %s exited during the run (log %s)", sub, p.LogPath))
			case <-ctx.Done():
			}
		}()
	}
	sm := &sampler{procs: procs, pool: st.Pool}
	r := &results{o: o, pgVersion: st.PGVersion, kafkaVersion: st.KafkaVersion}
	if err := phases(ctx, st, o, sm, secret, r); err != nil {
		if c := context.Cause(ctx); c != nil && !errors.Is(c, context.Canceled) {
			return c
		}
		return err
	}
	r.print(stdout, procs)
	return nil
}

// phases runs the closed loop, waits for the catch-up, runs the open loop
// while sampling and waits for the catch-up again.
func phases(ctx context.Context, st *benchenv.Stack, o *options, sm *sampler, secret []byte, r *results) error {
	addr := sm.procs[0].Public
	load := benchenv.Load{Addr: addr, Conns: o.conns, Next: benchenv.NewDeliveries(provider, addr, secret, 512).Next}
	st.Logf("closed loop for %s at %d connections", o.maxD, o.conns)
	r.max = load.Closed(ctx, o.maxD)
	if err := context.Cause(ctx); err != nil {
		return err
	}
	r.rate = o.rate
	if r.rate <= 0 {
		r.rate = r.max.Rate() / 2
	}
	if r.rate < 1 {
		return fmt.Errorf("closed loop reached %.1f events/s (%s)", r.max.Rate(), r.max.LastError)
	}
	st.Logf("maximum %.0f events/s; waiting for the relay and consumers to catch up", r.max.Rate())
	var err error
	if r.preDrain, err = waitDrained(ctx, sm, o.drain); err != nil {
		return err
	}
	st.Logf("open loop at %.0f events/s for %s", r.rate, o.duration)
	sm.start = time.Now()
	edge := func() error {
		s, err := sm.take(ctx)
		r.samples = append(r.samples, s)
		return err
	}
	if err := edge(); err != nil {
		return err
	}
	stop := benchenv.Every(ctx, 10*time.Second, func(sctx context.Context) {
		s, err := sm.take(sctx)
		switch {
		case sctx.Err() != nil: // the open loop ended during the sample
		case err != nil:
			st.Logf("sample at %s failed: %v", s.at.Round(time.Second), err)
		default:
			r.samples = append(r.samples, s)
			st.Logf("%s: accepted %.0f, published %.0f, processed %.0f, relay age %.1fs, oldest pending %.1fs, consumer lag %.0f, storage %s, load %.1f",
				s.at.Round(time.Second), s.accepted, s.published, s.processed, s.relayAge, s.pendingAge, s.consumerLag, mib(s.total), s.load)
		}
	})
	r.open = load.Fixed(ctx, r.rate, o.duration)
	stop()
	if err := context.Cause(ctx); err != nil {
		return err
	}
	if err := edge(); err != nil {
		return err
	}
	st.Logf("open loop done; waiting for the relay and consumers to catch up")
	r.postDrain, err = waitDrained(ctx, sm, o.drain)
	return err
}

// waitDrained samples every second until the relay and the consumers have
// caught up with the receiver, for at most limit; it returns how long that
// took (-1: not within limit).
func waitDrained(ctx context.Context, sm *sampler, limit time.Duration) (time.Duration, error) {
	t0 := time.Now()
	err := benchenv.Until(ctx, time.Second, limit, func() (bool, error) {
		s, err := sm.take(ctx) // a failed sample (a timeout on a loaded machine) is retried
		return err == nil && s.relayAge == 0 && s.consumerLag == 0 && s.published >= s.accepted && s.processed >= s.accepted, nil
	})
	if errors.Is(err, benchenv.ErrNotWithin) {
		return -1, nil
	}
	return time.Since(t0), err
}

// warnings is the report's line on a process's WARN and ERROR log lines.
func warnings(p *benchenv.Proc) string {
	raw, _ := os.ReadFile(p.LogPath)
	n, last := 0, ""
	for _, line := range strings.Split(string(raw), "\n") {
		if strings.Contains(line, `"level":"WARN"`) || strings.Contains(line, `"level":"ERROR"`) {
			n, last = n+1, line
		}
	}
	out := fmt.Sprintf("`gatehouse %s` logged %d warnings or errors during the whole run", p.Name, n)
	if len(last) > 300 {
		last = last[:300] + "…"
	}
	if last != "" {
		out += "; the last: `" + last + "`"
	}
	return out + "."
}

// mib formats b in MiB.
func mib(b int64) string { return fmt.Sprintf("%.1f MiB", float64(b)/(1<<20)) }

// tables are those the run follows the size of: every table the pipeline writes for each event.
var tables = []string{"inbox", "dedupe_keys", "outbox", "processed_events", "provider_object_changes", "provider_objects"}

// sample is one reading of the pipeline's processes and database; a gauge no
// process exported is NaN.
type sample struct {
	at               time.Duration      // since the open-loop phase started
	accepted         float64            // serve: gatehouse_webhook_deliveries_total{outcome="accepted"}
	published        float64            // relay: gatehouse_relay_records_published_total
	processed        float64            // consume: gatehouse_consumer_records_processed_total (every outcome)
	outcomes         map[string]float64 // consume: the same by outcome
	relayAge         float64            // gatehouse_relay_outbox_oldest_unsent_age_seconds (the relay's)
	consumerLag      float64            // sum of gatehouse_consumer_lag_records
	pendingAge       float64            // age of the oldest inbox row pending or processing: accepted, not yet finished by a consumer
	created, dropped float64            // gatehouse_storage_partitions_{created,dropped}_total, every process
	bytes            map[string]int64   // table → bytes (with indexes, TOAST, partitions): gatehouse_storage_table_bytes
	total            int64              // the sum of bytes
	load             float64            // 1-minute load average
}

// sampler reads the three processes (serve, relay, consume) and the database.
type sampler struct {
	procs []*benchenv.Proc
	pool  *pgxpool.Pool
	start time.Time // of the open loop
}

// take reads a sample.
func (sm *sampler) take(ctx context.Context) (sample, error) {
	s := sample{at: time.Since(sm.start), load: benchenv.LoadAvg(), bytes: map[string]int64{}}
	ctx, cancel := context.WithTimeout(ctx, 8*time.Second)
	defer cancel()
	var fs []benchenv.Families
	for _, p := range sm.procs {
		f, err := benchenv.Scrape(ctx, p.Admin)
		if err != nil {
			return s, err
		}
		fs = append(fs, f)
		s.created += f.Sum("gatehouse_storage_partitions_created_total")
		s.dropped += f.Sum("gatehouse_storage_partitions_dropped_total")
		for _, t := range tables { // as the process's storage maintenance last measured them (every check_interval)
			b := int64(f.Sum("gatehouse_storage_table_bytes", "table", t))
			s.bytes[t], s.total = s.bytes[t]+b, s.total+b
		}
	}
	sv, rl, co := fs[0], fs[1], fs[2]
	s.accepted = sv.Sum("gatehouse_webhook_deliveries_total", "outcome", "accepted")
	s.published = rl.Sum("gatehouse_relay_records_published_total")
	s.processed = co.Sum("gatehouse_consumer_records_processed_total")
	s.outcomes = co.By("gatehouse_consumer_records_processed_total", "outcome")
	s.relayAge = rl.Max("gatehouse_relay_outbox_oldest_unsent_age_seconds")
	s.consumerLag = co.Sum("gatehouse_consumer_lag_records")
	// The consumers' queue age from the database (the inbox's
	// (processing_state, received_at) index), whatever their gauge says.
	if err := sm.pool.QueryRow(ctx, `SELECT coalesce(extract(epoch FROM now() - min(received_at)), 0)::float8
FROM inbox WHERE processing_state IN ('pending', 'processing')`).Scan(&s.pendingAge); err != nil {
		return s, fmt.Errorf("oldest pending inbox row: %w", err)
	}
	return s, nil
}

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

// near returns the (first) sample taken closest to t.
func (r *results) near(t time.Duration) sample {
	return slices.MinFunc(r.samples, func(a, b sample) int { return cmp.Compare((a.at - t).Abs(), (b.at - t).Abs()) })
}

// perSecond is the rate of f from a to b.
func perSecond(a, b sample, f func(sample) float64) float64 {
	if d := (b.at - a.at).Seconds(); d > 0 {
		return (f(b) - f(a)) / d
	}
	return math.NaN()
}

// meanMax formats the mean and the largest of f over the samples from a to b,
// without the NaN of a gauge no process exported ("n/a" when no sample has a
// value).
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

// print writes the section; procs are serve, relay and consume, for their warnings.
func (r *results) print(w io.Writer, procs []*benchenv.Proc) {
	o := r.o
	first, last := r.samples[0], r.samples[len(r.samples)-1]
	m1, lastFrom := r.near(time.Minute), r.near(last.at-time.Minute)
	all := r.open.Latencies()
	ok, failed := r.open.Counts()
	loads := benchenv.Col(r.samples, func(s sample) float64 { return s.load })
	drainText := func(d time.Duration) string {
		if d < 0 {
			return fmt.Sprintf("not caught up within %s", o.drain)
		}
		return fmt.Sprintf("caught up in %s", d.Round(time.Second))
	}
	p99 := func(from, to time.Duration) string { // of the open loop's 2xx latencies of the requests due in [from, to)
		h := benchenv.NewHist()
		for _, a := range r.open.Acks {
			if a.OK() && a.Due >= from && a.Due < to {
				h.Record(a.Latency)
			}
		}
		return benchenv.Ms(h.Q(0.99), 2)
	}
	orNone := func(s, prefix string) string {
		if s == "" {
			return "none"
		}
		return prefix + s
	}

	fmt.Fprintf(w, "## Sustained pipeline\n\n")
	fmt.Fprintf(w, "`go run ./deploy/bench/pipelinebench %s`: `gatehouse serve`, `relay` and `consume` as separate processes with PostgreSQL %s (fsync on) "+
		"and Kafka %s on this machine; partition_interval %s, key_partition_interval %s, retention %s, check_interval %s. Load average during the open loop: mean %.1f, max %.1f.\n\n",
		strings.Join(os.Args[1:], " "), r.pgVersion, r.kafkaVersion, o.interval, o.keyInterval, o.retention, o.check,
		benchenv.Sum(loads)/float64(len(loads)), slices.Max(loads))
	_, maxFailed := r.max.Counts()
	fmt.Fprintf(w, "Closed loop (%s, %d connections, relay and consumers running): **%.0f events/s** (%d non-2xx); then %s. "+
		"Open loop: **%.0f events/s** for %s over %d connections, one request due every %s whatever the answers, latency from the due time: "+
		"%d answered 2xx, %d not (%s). After the open loop the relay and consumers %s.\n\n",
		o.maxD, o.conns, r.max.Rate(), maxFailed, drainText(r.preDrain),
		r.rate, o.duration, o.conns, time.Duration(float64(time.Second)/r.rate), ok, failed, orNone(r.open.LastError, "last: "),
		drainText(r.postDrain))

	tb := benchenv.NewTable(w, "stage", "first minute: events/s", "first minute: queue age mean / max", "last minute: events/s", "last minute: queue age mean / max")
	acc := func(s sample) float64 { return s.accepted }
	pub := func(s sample) float64 { return s.published }
	pro := func(s sample) float64 { return s.processed }
	relayAge := func(s sample) float64 { return s.relayAge }
	pending := func(s sample) float64 { return s.pendingAge }
	cLag := func(s sample) float64 { return s.consumerLag }
	tb.Rowf("receiver (accepted) | %.0f | ack p99 %s | %.0f | ack p99 %s",
		perSecond(first, m1, acc), p99(0, time.Minute), perSecond(lastFrom, last, acc), p99(o.duration-time.Minute, o.duration))
	tb.Rowf("relay (published to Kafka) | %.0f | oldest unpublished outbox row %s | %.0f | %s",
		perSecond(first, m1, pub), r.meanMax(first, m1, relayAge, " s"), perSecond(lastFrom, last, pub), r.meanMax(lastFrom, last, relayAge, " s"))
	tb.Rowf("consumers (processed) | %.0f | oldest unfinished (pending or processing) inbox row %s; lag %s | %.0f | %s; lag %s",
		perSecond(first, m1, pro), r.meanMax(first, m1, pending, " s"), r.meanMax(first, m1, cLag, " records"),
		perSecond(lastFrom, last, pro), r.meanMax(lastFrom, last, pending, " s"), r.meanMax(lastFrom, last, cLag, " records"))
	fmt.Fprintln(w)

	// Table sizes; the last third of a 10-minute run is long after the
	// retention horizon: a bounded table no longer grows.
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
