// Command storagebench measures what history and retention cost the
// receiver's write (README "Retention"): ingest.Writer (the code of
// `gatehouse serve`, one worker, batches of up to 64) driven closed-loop by
// -conns concurrent deliveries of new random event ids, in the same run
// against
//
//   - an empty store, and
//   - a store holding -history earlier events spread over -days daily inbox
//     partitions, with their dedupe keys in partitions -key-interval wide
//     (storage.key_partition_interval). The history is generated in bulk:
//     Stripe-like envelopes (~450 bytes) with random base62 ids over four
//     providers, COPYed into plain tables, indexed afterwards (a sorted
//     build), vacuumed, analyzed and attached, -load-workers partitions at
//     a time; the time it took is printed,
//
// interleaved -runs times; it reports events/s, WAL bytes per event
// (pg_current_wal_lsn before and after) and ack p50/p99, and the ratios.
// Then a retention pass that drops the oldest partitions of the history
// runs in the middle of a closed-loop run: its throughput against the
// steady runs and the worst one-second ack p99 against the steady p99.
// Last, the API's and the console's list pages (api.Inbox.ListEvents) are
// timed on the history store: first and deep keyset pages, with and
// without filters, median of -api-samples.
// PostgreSQL starts privately with fsync on and default shared_buffers
// (128 MB) through deploy/bench/benchenv. Usage:
//
//	go run ./deploy/bench/storagebench [-history 5000000] [-days 30] [-key-interval 24h] [-key-filters 0.01] [-d 15s] [-runs 3] [-conns 64] [-api-samples 20]
package main

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/gatehouse/gatehouse/deploy/bench/benchenv"
	"github.com/gatehouse/gatehouse/ingest"
	"github.com/gatehouse/gatehouse/internal/config"
	"github.com/gatehouse/gatehouse/internal/storage"
	"github.com/gatehouse/gatehouse/internal/testenv"
)

type options struct {
	benchenv.Options
	sharedBuf   string        `flag:"shared-buffers" help:"PostgreSQL's shared_buffers (default: testenv's 128MB, PostgreSQL's own default)"`
	history     int           `flag:"history" default:"5000000" help:"earlier events loaded into the history store"`
	days        int           `flag:"days" default:"30" help:"days of history (one inbox partition a day; the default retention is 30 days)"`
	keyInterval time.Duration `flag:"key-interval" default:"24h" help:"width of the dedupe key partitions (storage.key_partition_interval)"`
	keyFilterFP float64       `flag:"key-filters" help:"false positive rate of the key filters built for the history's sealed key partitions (storage.key_filter_false_positives; 0: none)"`
	loadWorkers int           `flag:"load-workers" default:"2" help:"partitions loaded at once"`
	duration    time.Duration `flag:"d" default:"15s" help:"length of each closed-loop run"`
	runs        int           `flag:"runs" default:"3" help:"interleaved pairs of runs (empty, history)"`
	conns       int           `flag:"conns" default:"64" help:"concurrent deliveries"`
	passes      int           `flag:"passes" default:"3" help:"retention passes, each in its own closed-loop run after a steady one: odd ones drop the oldest inbox partition (daily with the defaults), even ones also the oldest key partition (daily too with the defaults)"`
	apiSamples  int           `flag:"api-samples" default:"20" help:"samples of each API page timing (0: skip the API timings)"`
}

func main() {
	o := &options{Options: benchenv.Options{Name: "storagebench"}, keyFilterFP: config.DefaultKeyFilterFalsePositives}
	benchenv.Run(helpText, o, func(ctx context.Context, st *benchenv.Stack, stdout io.Writer) error { return run(ctx, st, *o, stdout) })
}

// Validate completes the options once parsed (benchenv.Parse): PostgreSQL
// starts with -shared-buffers.
func (o *options) Validate() error {
	if o.sharedBuf != "" {
		o.PGSettings = map[string]string{"shared_buffers": o.sharedBuf}
	}
	return nil
}

const helpText = `storagebench measures what history and retention cost the receiver's write
(README "Retention"): throughput and WAL per event against an empty store and a
store with -history earlier events, a retention pass during a closed-loop run,
and the API's list pages on the history store. It starts its own PostgreSQL.

Example (5 M events of history, ~4 GB, about 10 minutes on 2 cores):

  go run ./deploy/bench/storagebench -history 5000000 -days 30 -d 15s -runs 3 -passes 3

Flags:
`

func run(ctx context.Context, st *benchenv.Stack, o options, stdout io.Writer) error {
	histURL, err := testenv.CreateDatabase(ctx, st.PG.AdminURL(), true)
	if err != nil {
		return err
	}
	empty, hist := st.Pool, openPool(ctx, histURL)
	if hist == nil {
		return fmt.Errorf("open history database")
	}
	defer hist.Close()
	if _, err := layout(ctx, empty, o, false); err != nil {
		return err
	}
	past, err := layout(ctx, hist, o, true)
	if err != nil {
		return err
	}
	st.Logf("loading %d earlier events into the history store (%d days, key partitions %s)", o.history, o.days, o.keyInterval)
	t0 := time.Now()
	if err := load(ctx, hist, o, past, st.Logf); err != nil {
		return err
	}
	loadTook := time.Since(t0)
	bytes := tableBytes(ctx, hist)
	st.Logf("loaded in %s: inbox %s, dedupe_keys %s", loadTook.Round(time.Second), mib(bytes["inbox"]), mib(bytes["dedupe_keys"]))
	t0 = time.Now()
	filters, err := buildFilters(ctx, hist, o)
	if err != nil {
		return err
	}
	// The empty store's sealed partitions (empty) get theirs too: the
	// stores differ by their history only.
	if _, err := buildFilters(ctx, empty, o); err != nil {
		return err
	}
	filterTook := time.Since(t0)
	bytes["dedupe_key_filters"], _ = storage.TableBytes(ctx, hist, "dedupe_key_filters")
	st.Logf("key filters of %d sealed key partitions built in %s", len(filters), filterTook.Round(time.Second))
	probes, err := keyProbes(ctx, hist)
	if err != nil {
		return err
	}
	l := loaded{bytes: bytes, took: loadTook, probes: probes, filtered: len(filters), filterTook: filterTook}

	var emptyRuns, histRuns []result
	for i := range o.runs {
		for _, c := range []struct {
			name string
			pool *pgxpool.Pool
			out  *[]result
		}{{"empty", empty, &emptyRuns}, {"history", hist, &histRuns}} {
			st.Logf("run %d/%d: %s", i+1, o.runs, c.name)
			r, err := closedLoop(ctx, c.pool, o, nil)
			if err != nil {
				return err
			}
			*c.out = append(*c.out, r)
		}
	}
	var passes []passPair
	for i := range max(o.passes, 1) {
		st.Logf("retention pass %d/%d during a run on the history store", i+1, max(o.passes, 1))
		// Each run of a pair starts right after a checkpoint: at these
		// rates one comes every ~30 s of WAL (max_wal_size), and its
		// fsyncs stall commits for up to ~150 ms on this machine, in any
		// run; so neither run of a pair holds one by chance and the other
		// not, and what the pass costs is not the checkpoint's cost.
		if _, err := hist.Exec(ctx, `CHECKPOINT`); err != nil {
			return err
		}
		steady, err := closedLoop(ctx, hist, o, nil)
		if err != nil {
			return err
		}
		var pass passResult
		keys := i%2 == 1 // every other pass also drops a key partition
		if _, err := hist.Exec(ctx, `CHECKPOINT`); err != nil {
			return err
		}
		during, err := closedLoop(ctx, hist, o, func(ctx context.Context) { pass = dropOldest(ctx, hist, o, keys) })
		if err != nil {
			return err
		}
		passes = append(passes, passPair{steady, during, pass})
	}
	report(stdout, o, l, emptyRuns, histRuns, passes, benchenv.LoadAvg(), st.PGVersion)
	if o.apiSamples > 0 {
		st.Logf("API pages on the history store")
		ts, err := apiBench(ctx, hist, o)
		if err != nil {
			return err
		}
		reportAPI(stdout, o, ts)
	}
	return nil
}

// keyProbes is how many key partitions the receiver's check of a new id
// (a key lifetime of ingest.DefaultKeyLifetime) reads: those that can hold
// a live key (insertSQL's fresh CTE).
func keyProbes(ctx context.Context, pool *pgxpool.Pool) (int, error) {
	var n int
	err := pool.QueryRow(ctx, `SELECT count(*) FROM storage_partitions WHERE parent = 'dedupe_keys'
  AND ends > now() - make_interval(secs => $1) - (SELECT max(ends - starts) FROM storage_partitions WHERE parent = 'dedupe_keys')
  AND starts < now() + interval '2 minutes'`, ingest.DefaultKeyLifetime.Seconds()).Scan(&n)
	if err != nil {
		return 0, fmt.Errorf("count key partitions probed: %w", err)
	}
	return n, nil
}

// buildFilters builds the key filters of the history's sealed key
// partitions as ingest's maintenance would (ingest.BuildKeyFilters).
func buildFilters(ctx context.Context, pool *pgxpool.Pool, o options) ([]string, error) {
	c, err := pool.Acquire(ctx)
	if err != nil {
		return nil, err
	}
	defer c.Release()
	built, err := ingest.BuildKeyFilters(ctx, c.Conn(), o.keyFilterFP)
	if err != nil {
		return nil, fmt.Errorf("key filters: %w", err)
	}
	return built, nil
}

func openPool(ctx context.Context, url string) *pgxpool.Pool {
	p, err := pgxpool.New(ctx, url)
	if err != nil {
		return nil
	}
	return p
}

func mib(b int64) string { return fmt.Sprintf("%.0f MiB", float64(b)/(1<<20)) }
