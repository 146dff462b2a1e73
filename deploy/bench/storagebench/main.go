// Command storagebench measures what history and retention cost the
// receiver's write (inbox.Writer, closed loop: an empty store against one
// with -history events), retention passes amid runs, and the API's pages.
package main

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/gatehouse/gatehouse/deploy/bench/benchenv"
	"github.com/gatehouse/gatehouse/ingest/inbox"
	"github.com/gatehouse/gatehouse/ingest/upkeep"
	"github.com/gatehouse/gatehouse/internal/config"
	"github.com/gatehouse/gatehouse/internal/storage"
	"github.com/gatehouse/gatehouse/internal/testenv"
)

type options struct {
	benchenv.Options
	history     int           `flag:"history" default:"50000000" help:"earlier events loaded into the history store (about 1 000 bytes of disk each, checked before the load)"`
	days        int           `flag:"days" default:"30" help:"days of history (one inbox partition a day; the default retention is 30 days)"`
	keyInterval time.Duration `flag:"key-interval" default:"24h" help:"width of the dedupe key partitions (storage.key_partition_interval)"`
	keyFilterFP float64       `flag:"key-filters" help:"false positive rate of the key filters built for the history's sealed key partitions (storage.key_filter_false_positives; 0: none)"`
	duration    time.Duration `flag:"d" default:"15s" help:"length of each closed-loop run"`
	runs        int           `flag:"runs" default:"4" help:"interleaved pairs of runs (empty, history), in counterbalanced order"`
	conns       int           `flag:"conns" default:"64" help:"concurrent deliveries"`
	passes      int           `flag:"passes" default:"3" help:"retention passes, each dropping the oldest inbox partition in its own closed-loop run after a steady one"`
	apiSamples  int           `flag:"api-samples" default:"20" help:"samples of each API page timing (0: skip the API timings)"`
}

func main() {
	o := &options{Options: benchenv.Options{Name: "storagebench"}, keyFilterFP: config.DefaultKeyFilterFalsePositives}
	benchenv.Run(helpText, o, func(ctx context.Context, st *benchenv.Stack, stdout io.Writer) error { return run(ctx, st, *o, stdout) })
}

const helpText = "storagebench: what history and retention cost the receiver's write, and the API's pages on the history (docs/BENCHMARKS.md \"Storage\").\n\n" +
	"Example (5 M events, ~4.6 GB, ~10 minutes on 2 cores; the default 50 M need ~48 GB and about 35 minutes): go run ./deploy/bench/storagebench -history 5000000 -days 30 -d 15s\n\nFlags:\n"

func run(ctx context.Context, st *benchenv.Stack, o options, stdout io.Writer) error {
	histURL, err := testenv.CreateDatabase(ctx, st.PG.AdminURL(), true)
	if err != nil {
		return err
	}
	hist, err := pgxpool.New(ctx, histURL)
	if err != nil {
		return fmt.Errorf("open history database: %w", err)
	}
	defer hist.Close()
	if _, err := layout(ctx, st.Pool, o); err != nil {
		return err
	}
	past, err := layout(ctx, hist, o)
	if err != nil {
		return err
	}
	if err := diskFor(st.Dir, o.history); err != nil {
		return err
	}
	st.Logf("loading %d earlier events into the history store (%d days, key partitions %s)", o.history, o.days, o.keyInterval)
	if err := load(ctx, hist, o, past, st.Logf); err != nil {
		return err
	}
	bytes, filtered := map[string]int64{}, 0
	// The empty store's (empty) sealed partitions get filters too: the stores
	// differ by their history only.
	for _, pool := range []*pgxpool.Pool{st.Pool, hist} {
		if err := pool.AcquireFunc(ctx, func(c *pgxpool.Conn) error {
			built, err := upkeep.BuildKeyFilters(ctx, c.Conn(), o.keyFilterFP)
			filtered = len(built)
			return err
		}); err != nil {
			return fmt.Errorf("key filters: %w", err)
		}
	}
	for _, t := range []string{"inbox", "dedupe_keys", "dedupe_key_filters"} {
		bytes[t], _ = storage.TableBytes(ctx, hist, t)
	}
	st.Logf("loaded: inbox %s, dedupe_keys %s; %d key filters", mib(bytes["inbox"]), mib(bytes["dedupe_keys"]), filtered)

	for _, pool := range []*pgxpool.Pool{st.Pool, hist} { // a warm-up fills the written tables
		if _, err := closedLoop(ctx, st, pool, o, nil); err != nil {
			return err
		}
		if err := benchenv.Analyze(ctx, pool); err != nil {
			return err
		}
	}
	var runs [2][]result // empty, history
	for i := range o.runs {
		// Counterbalanced (empty first, then history first, …): the second
		// run of a pair meets the first's WAL and dirty buffers.
		for _, k := range [][]int{{0, 1}, {1, 0}}[i%2] {
			pool := []*pgxpool.Pool{st.Pool, hist}[k]
			st.Logf("run %d/%d: %s", i+1, o.runs, []string{"empty", "history"}[k])
			r, err := closedLoop(ctx, st, pool, o, nil)
			if err != nil {
				return err
			}
			runs[k] = append(runs[k], r)
		}
	}
	var passes []passPair
	for i := range max(o.passes, 1) {
		st.Logf("retention pass %d/%d during a run on the history store", i+1, max(o.passes, 1))
		var p passPair
		for _, mid := range []func(context.Context){nil, func(ctx context.Context) { p.dropped, p.err = dropOldest(ctx, hist) }} {
			r, err := closedLoop(ctx, st, hist, o, mid)
			if err != nil {
				return err
			}
			p.steady, p.during = p.during, r
		}
		passes = append(passes, p)
	}
	report(stdout, o, bytes, filtered, runs[0], runs[1], passes, st.PGVersion)
	if o.apiSamples > 0 {
		st.Logf("API pages on the history store")
		return apiBench(ctx, stdout, hist, o)
	}
	return nil
}

// mib formats b in MiB.
func mib(b int64) string { return fmt.Sprintf("%.0f MiB", float64(b)/(1<<20)) }

// result is one closed-loop run.
type result struct {
	benchenv.LoadResult
	walBytes       int64
	pgCPU          time.Duration // PostgreSQL's, over the run
	blksRead       int64         // blocks the database read into shared buffers (from the OS or the disk)
	blksHit        int64         // blocks it found in shared buffers
	midFrom, midTo time.Duration // when mid ran, from the start of the run
	lat            *benchenv.Hist
}

// walPerEvent is the WAL written per acknowledged event.
func (r result) walPerEvent() float64 { return r.perEvent(float64(r.walBytes)) }

// perEvent divides v by the acknowledged events.
func (r result) perEvent(v float64) float64 {
	ok, _ := r.Counts()
	return v / float64(max(1, ok))
}

// closedLoop runs o.conns deliveries of new ids at once through one Writer
// for o.duration (benchenv.Loop), from a settled machine; mid runs halfway.
func closedLoop(ctx context.Context, st *benchenv.Stack, pool *pgxpool.Pool, o options, mid func(context.Context)) (result, error) {
	if err := st.Settle(ctx, pool); err != nil {
		return result{}, err
	}
	w, err := inbox.NewWriter(pool, 1, 64)
	if err != nil {
		return result{}, err
	}
	defer w.Close()
	// The key filters built at load, in memory before the first delivery
	// (serve loads them in the background).
	if _, _, err := w.RefreshKeyFilters(ctx); err != nil {
		return result{}, err
	}
	var lsn0, lsn1, read0, hit0 int64
	counters := `SELECT pg_current_wal_lsn() - '0/0', blks_read, blks_hit FROM pg_stat_database WHERE datname = current_database()`
	if err := pool.QueryRow(ctx, counters).Scan(&lsn0, &read0, &hit0); err != nil {
		return result{}, err
	}
	cpu0 := st.PostgresCPU()
	payload := []byte(`{"id":"x","type":"payment_intent.succeeded","data":{"object":{"id":"pi_1","customer":"cus_1","receipt_email":"a@example.com","description":"` + strings.Repeat("x", 300) + `"}}}`)
	var res result
	var wg sync.WaitGroup
	start := time.Now()
	if mid != nil {
		wg.Go(func() {
			time.Sleep(o.duration / 2)
			res.midFrom = time.Since(start)
			mid(ctx)
			res.midTo = time.Since(start)
		})
	}
	lr := benchenv.Loop(ctx, o.conns, o.duration, func(int) error {
		id := fmt.Sprintf("evt_%016x%016x", rand.Uint64(), rand.Uint64())
		now := time.Now()
		_, err := w.Write(ctx, inbox.Record{Provider: "stripe", EventID: id, Type: "payment_intent.succeeded", CreatedAt: &now,
			Payload: payload, SecretID: "live", AggregateID: "pi_1", Topic: "gatehouse.webhooks.stripe"})
		return err
	})
	wg.Wait()
	res.LoadResult, res.lat = lr, lr.Latencies()
	if _, failed := res.Counts(); failed > 0 {
		return res, fmt.Errorf("write: %d failed (last: %s)", failed, res.LastError)
	}
	res.pgCPU = st.PostgresCPU() - cpu0
	// pg_stat_database is flushed by each backend at most once a second.
	time.Sleep(1100 * time.Millisecond)
	err = pool.QueryRow(ctx, counters).Scan(&lsn1, &res.blksRead, &res.blksHit)
	res.walBytes, res.blksRead, res.blksHit = lsn1-lsn0, res.blksRead-read0, res.blksHit-hit0
	return res, err
}

// dropOldest runs a maintenance pass whose retention expires the inbox's
// oldest partition only, and returns the partitions dropped.
func dropOldest(ctx context.Context, pool *pgxpool.Pool) ([]string, error) {
	var secs float64
	if err := pool.QueryRow(ctx, `SELECT extract(epoch FROM now() - min(ends))::float8 FROM storage_partitions WHERE parent = 'inbox'`).Scan(&secs); err != nil {
		return nil, err
	}
	m, err := storage.New(storage.Config{Pool: pool, Stage: "bench", Interval: 24 * time.Hour, Ahead: 1,
		Partitioned: []storage.Table{{Name: "inbox", Retention: time.Duration(secs*float64(time.Second)) - time.Hour}}})
	if err != nil {
		return nil, err
	}
	res, err := m.Pass(ctx)
	return res.Dropped, err
}

// passPair is a steady run and the run with a retention pass in its middle
// (which took during.midTo - during.midFrom).
type passPair struct {
	steady, during result
	dropped        []string // by the pass
	err            error    // the pass's
}

// report writes the section's runs and retention passes; bytes are the history
// store's table sizes, filtered its sealed key partitions with a key filter.
func report(w io.Writer, o options, bytes map[string]int64, filtered int, empty, hist []result, passes []passPair, pgVersion string) {
	fmt.Fprintf(w, "## Storage\n\n")
	fmt.Fprintf(w, "`go run ./deploy/bench/storagebench -history %d -days %d -key-interval %s -key-filters %g -d %s -runs %d -passes %d -conns %d` (PostgreSQL %s, fsync on, shared_buffers 128 MB; load average %.1f at the end).\n\n",
		o.history, o.days, o.keyInterval, o.keyFilterFP, o.duration, o.runs, len(passes), o.conns, pgVersion, benchenv.LoadAvg())
	fmt.Fprintf(w, "History store: %d earlier events over %d daily inbox partitions: inbox %s, dedupe_keys %s; key partitions %s wide, of which %d sealed ones have a key filter at %g false positives (%s), probed only when it may hold the id.\n\n",
		o.history, o.days, mib(bytes["inbox"]), mib(bytes["dedupe_keys"]), o.keyInterval, filtered, o.keyFilterFP, mib(bytes["dedupe_key_filters"]))
	tb := benchenv.NewTable(w, "pair", "empty events/s", "history events/s", "ratio", "empty WAL B/event", "history WAL B/event", "WAL ratio", "empty p50/p99 ms", "history p50/p99 ms")
	var ratios, walRatios []float64
	for i := range empty {
		e, h := empty[i], hist[i]
		r, wr := h.Rate()/e.Rate(), h.walPerEvent()/e.walPerEvent()
		ratios, walRatios = append(ratios, r), append(walRatios, wr)
		tb.Rowf("%d | %.0f | %.0f | %.2f | %.0f | %.0f | %.2f | %s / %s | %s / %s", i+1, e.Rate(), h.Rate(), r,
			e.walPerEvent(), h.walPerEvent(), wr, ms(e.lat.Q(0.5)), ms(e.lat.Q(0.99)), ms(h.lat.Q(0.5)), ms(h.lat.Q(0.99)))
	}
	fmt.Fprintf(w, "\nMedian throughput ratio (history / empty): **%.2f**; median WAL-per-event ratio: **%.2f** (targets ≥ 0.95 and ≤ 1.1).\n\n", benchenv.Median(ratios), benchenv.Median(walRatios))
	costs(w, empty, hist)
	fmt.Fprintf(w, "Retention passes, each in the middle of a %s closed-loop run on the history store, after a steady run of the same length:\n\n", o.duration)
	tb = benchenv.NewTable(w, "pass", "dropped", "took", "steady events/s", "steady p99 ms", "with the pass events/s", "p99 while the pass ran ms", "throughput ratio", "p99 ratio while the pass ran")
	var thr, spike []float64
	for i, p := range passes {
		// The p99 of the acks completed from the second the pass started in to
		// the second after the one it ended in.
		from, to := p.during.midFrom.Truncate(time.Second), p.during.midTo.Truncate(time.Second)+2*time.Second
		h := benchenv.NewHist()
		for _, a := range p.during.Acks {
			if at := a.Due + a.Latency; a.OK() && at >= from && at < to {
				h.Record(a.Latency)
			}
		}
		around := h.Q(0.99)
		tr, sr := p.during.Rate()/p.steady.Rate(), float64(around)/float64(max(1, p.steady.lat.Q(0.99)))
		thr, spike = append(thr, tr), append(spike, sr)
		dropped := fmt.Sprint(p.dropped)
		if p.err != nil {
			dropped += " (error: " + p.err.Error() + ")"
		}
		tb.Rowf("%d | %s | %s | %.0f | %s | %.0f | %s | %.2f | %.2f", i+1, dropped, (p.during.midTo - p.during.midFrom).Round(time.Millisecond),
			p.steady.Rate(), ms(p.steady.lat.Q(0.99)), p.during.Rate(), ms(around), tr, sr)
	}
	fmt.Fprintf(w, "\nOver the %d passes that dropped an inbox partition only (daily with the defaults): median throughput with the pass / steady **%.2f** (target ≥ 0.95); median p99 of the acks while the pass ran (the seconds from its start to one after its end) / the steady run's p99 **%.2f** (target ≤ 2).\n",
		len(thr), benchenv.Median(thr), benchenv.Median(spike))
}

// costs writes what each pair's runs cost PostgreSQL per event: CPU (the
// whole cluster's, autovacuum included) and shared-buffer blocks found (hit)
// and read in (from the OS cache or the disk), so what grows with the history
// shows.
func costs(w io.Writer, empty, hist []result) {
	fmt.Fprintf(w, "What the same runs cost PostgreSQL per event (CPU of the whole cluster; shared-buffer blocks of the run's database found in shared buffers and read into them):\n\n")
	tb := benchenv.NewTable(w, "pair", "empty CPU µs", "history CPU µs", "CPU ratio", "empty blocks hit", "history blocks hit", "empty blocks read", "history blocks read")
	var cpu []float64
	for i := range empty {
		e, h := empty[i], hist[i]
		ec, hc := e.perEvent(float64(e.pgCPU.Microseconds())), h.perEvent(float64(h.pgCPU.Microseconds()))
		cpu = append(cpu, hc/max(ec, 1e-9))
		tb.Rowf("%d | %.0f | %.0f | %.2f | %.1f | %.1f | %.2f | %.2f", i+1, ec, hc, hc/max(ec, 1e-9),
			e.perEvent(float64(e.blksHit)), h.perEvent(float64(h.blksHit)), e.perEvent(float64(e.blksRead)), h.perEvent(float64(h.blksRead)))
	}
	fmt.Fprintf(w, "\nMedian PostgreSQL CPU per event ratio (history / empty): **%.2f**.\n\n", benchenv.Median(cpu))
}

// ms formats d in milliseconds, without the unit.
func ms(d time.Duration) string { return fmt.Sprintf("%.1f", benchenv.Millis(d)) }
