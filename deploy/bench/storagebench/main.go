// Command storagebench measures what history and retention cost the
// receiver's write (README "Retention"): ingest.Writer (the code of
// `gatehouse serve`, one worker, batches of up to 64) driven closed-loop by
// -conns concurrent deliveries of new random event ids, in the same run
// against
//
//   - an empty store, and
//   - a store holding -history earlier events (inbox rows of ~600 bytes and
//     their dedupe keys, random ids, spread over ten daily partitions,
//     loaded in bulk with INSERT … SELECT generate_series),
//
// interleaved -runs times; it reports events/s, WAL bytes per event
// (pg_current_wal_lsn before and after) and ack p50/p99, and the ratios.
// Then a retention pass that drops the oldest day of the history runs in
// the middle of a closed-loop run: its throughput against the steady runs
// and the worst one-second ack p99 against the steady p99. PostgreSQL
// starts privately with fsync on and default shared_buffers (128 MB)
// through deploy/bench/benchenv. Usage:
//
//	go run ./deploy/bench/storagebench [-history 5000000] [-d 15s] [-runs 3] [-conns 64]
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/gatehouse/gatehouse/deploy/bench/benchenv"
	"github.com/gatehouse/gatehouse/internal/testenv"
)

type options struct {
	history  int
	duration time.Duration
	runs     int
	conns    int
}

func main() { benchenv.Main("storagebench", run) }

func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	var o options
	fs := flag.NewFlagSet("storagebench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.IntVar(&o.history, "history", 5_000_000, "earlier events loaded into the history store")
	fs.DurationVar(&o.duration, "d", 15*time.Second, "length of each closed-loop run")
	fs.IntVar(&o.runs, "runs", 3, "interleaved pairs of runs (empty, history)")
	fs.IntVar(&o.conns, "conns", 64, "concurrent deliveries")
	if err := fs.Parse(args); err != nil {
		return err
	}
	st, err := benchenv.Start(ctx, benchenv.Options{Name: "storagebench"}, stderr)
	if err != nil {
		return err
	}
	defer st.Close()
	histURL, err := testenv.CreateDatabase(ctx, st.PG.AdminURL(), true)
	if err != nil {
		return err
	}
	empty, hist := st.Pool, openPool(ctx, histURL)
	if hist == nil {
		return fmt.Errorf("open history database")
	}
	defer hist.Close()
	for _, p := range []*pgxpool.Pool{empty, hist} {
		if err := layout(ctx, p); err != nil {
			return err
		}
	}
	st.Logf("loading %d earlier events into the history store", o.history)
	t0 := time.Now()
	if err := load(ctx, hist, o.history); err != nil {
		return err
	}
	bytes := tableBytes(ctx, hist)
	st.Logf("loaded in %s: inbox %s, dedupe_keys %s", time.Since(t0).Round(time.Second), mib(bytes["inbox"]), mib(bytes["dedupe_keys"]))

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
	st.Logf("retention pass during a run on the history store")
	steady, err := closedLoop(ctx, hist, o, nil)
	if err != nil {
		return err
	}
	var pass passResult
	during, err := closedLoop(ctx, hist, o, func(ctx context.Context) { pass = dropOldestDay(ctx, hist) })
	if err != nil {
		return err
	}
	report(stdout, o, bytes, emptyRuns, histRuns, steady, during, pass, benchenv.LoadAvg(), st.PGVersion)
	return nil
}

func openPool(ctx context.Context, url string) *pgxpool.Pool {
	p, err := pgxpool.New(ctx, url)
	if err != nil {
		return nil
	}
	return p
}

func mib(b int64) string { return fmt.Sprintf("%.0f MiB", float64(b)/(1<<20)) }
