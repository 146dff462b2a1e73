// Command storagebench measures what history and retention cost the receiver's write (docs/STORAGE.md): ingest.Writer (as
// in `gatehouse serve`) in a closed loop on an empty store and on one with -history earlier events, interleaved -runs times;
// then -passes retention passes, each amid a run on the history store; last, the API's list pages on the history store:
//
//	go run ./deploy/bench/storagebench [-history 5000000] [-days 30] [-d 15s] [-runs 3] [-passes 3]
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
	"github.com/gatehouse/gatehouse/ingest"
	"github.com/gatehouse/gatehouse/internal/config"
	"github.com/gatehouse/gatehouse/internal/storage"
	"github.com/gatehouse/gatehouse/internal/testenv"
)

type options struct {
	benchenv.Options
	history     int           `flag:"history" default:"5000000" help:"earlier events loaded into the history store"`
	days        int           `flag:"days" default:"30" help:"days of history (one inbox partition a day; the default retention is 30 days)"`
	keyInterval time.Duration `flag:"key-interval" default:"24h" help:"width of the dedupe key partitions (storage.key_partition_interval)"`
	keyFilterFP float64       `flag:"key-filters" help:"false positive rate of the key filters built for the history's sealed key partitions (storage.key_filter_false_positives; 0: none)"`
	loadWorkers int           `flag:"load-workers" default:"2" help:"partitions loaded at once"`
	duration    time.Duration `flag:"d" default:"15s" help:"length of each closed-loop run"`
	runs        int           `flag:"runs" default:"3" help:"interleaved pairs of runs (empty, history)"`
	conns       int           `flag:"conns" default:"64" help:"concurrent deliveries"`
	passes      int           `flag:"passes" default:"3" help:"retention passes, each dropping the oldest inbox partition in its own closed-loop run after a steady one"`
	apiSamples  int           `flag:"api-samples" default:"20" help:"samples of each API page timing (0: skip the API timings)"`
}

func main() {
	o := &options{Options: benchenv.Options{Name: "storagebench"}, keyFilterFP: config.DefaultKeyFilterFalsePositives}
	benchenv.Run(helpText, o, func(ctx context.Context, st *benchenv.Stack, stdout io.Writer) error { return run(ctx, st, *o, stdout) })
}

const helpText = "storagebench: what history and retention cost the receiver's write, and the API's pages on the history (docs/BENCHMARKS.md \"Storage\").\n\n" +
	"Example (5 M events, ~4 GB, ~10 minutes on 2 cores): go run ./deploy/bench/storagebench -history 5000000 -days 30 -d 15s\n\nFlags:\n"

func run(ctx context.Context, st *benchenv.Stack, o options, stdout io.Writer) error {
	histURL, err := testenv.CreateDatabase(ctx, st.PG.AdminURL(), true)
	if err != nil {
		return err
	}
	empty := st.Pool
	hist, err := pgxpool.New(ctx, histURL)
	if err != nil {
		return fmt.Errorf("open history database: %w", err)
	}
	defer hist.Close()
	if _, err := layout(ctx, empty, o); err != nil {
		return err
	}
	past, err := layout(ctx, hist, o)
	if err != nil {
		return err
	}
	st.Logf("loading %d earlier events into the history store (%d days, key partitions %s)", o.history, o.days, o.keyInterval)
	if err := load(ctx, hist, o, past, st.Logf); err != nil {
		return err
	}
	bytes, filtered := map[string]int64{}, 0
	// The empty store's (empty) sealed partitions get filters too: the stores differ by their history only.
	for _, pool := range []*pgxpool.Pool{empty, hist} {
		if err := pool.AcquireFunc(ctx, func(c *pgxpool.Conn) error {
			built, err := ingest.BuildKeyFilters(ctx, c.Conn(), o.keyFilterFP)
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

	var runs [2][]result // empty, history
	for i := range o.runs {
		for k, pool := range []*pgxpool.Pool{empty, hist} {
			st.Logf("run %d/%d: %s", i+1, o.runs, []string{"empty", "history"}[k])
			r, err := closedLoop(ctx, pool, o, nil)
			if err != nil {
				return err
			}
			runs[k] = append(runs[k], r)
		}
	}
	var passes []passPair
	for i := range max(o.passes, 1) {
		st.Logf("retention pass %d/%d during a run on the history store", i+1, max(o.passes, 1))
		// Each run starts right after a checkpoint (one comes every ~30 s of WAL here and stalls commits), not to measure one.
		var p passPair
		for _, mid := range []func(context.Context){nil, func(ctx context.Context) { p.dropped, p.err = dropOldest(ctx, hist) }} {
			if _, err := hist.Exec(ctx, `CHECKPOINT`); err != nil {
				return err
			}
			r, err := closedLoop(ctx, hist, o, mid)
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
	midFrom, midTo time.Duration // when mid ran, from the start of the run
	lat            *benchenv.Hist
}

// walPerEvent is the WAL written per acknowledged event.
func (r result) walPerEvent() float64 {
	ok, _ := r.Counts()
	return float64(r.walBytes) / float64(max(1, ok))
}

// closedLoop runs o.conns deliveries of new random ids at once through one Writer (as serve does) for o.duration, each
// sending the next as soon as its previous one is acknowledged (benchenv.Loop); mid, when set, runs once halfway.
func closedLoop(ctx context.Context, pool *pgxpool.Pool, o options, mid func(context.Context)) (result, error) {
	w, err := ingest.NewWriter(pool, 1, 64)
	if err != nil {
		return result{}, err
	}
	defer w.Close()
	// The key filters built at load, in memory before the first delivery (serve loads them in the background).
	if _, _, err := w.RefreshKeyFilters(ctx); err != nil {
		return result{}, err
	}
	var lsn0, lsn1 int64
	walLSN := `SELECT pg_current_wal_lsn() - '0/0'`
	if err := pool.QueryRow(ctx, walLSN).Scan(&lsn0); err != nil {
		return result{}, err
	}
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
		_, err := w.Write(ctx, ingest.Record{Provider: "stripe", EventID: id, Type: "payment_intent.succeeded", CreatedAt: &now,
			Payload: payload, SecretID: "live", AggregateID: "pi_1", Topic: "gatehouse.webhooks.stripe"})
		return err
	})
	wg.Wait()
	res.LoadResult, res.lat = lr, lr.Latencies()
	if _, failed := res.Counts(); failed > 0 {
		return res, fmt.Errorf("write: %d failed (last: %s)", failed, res.LastError)
	}
	err = pool.QueryRow(ctx, walLSN).Scan(&lsn1)
	res.walBytes = lsn1 - lsn0
	return res, err
}

// dropOldest runs a maintenance pass whose retention expires the inbox's oldest (daily) partition and nothing younger; it
// returns the partitions dropped.
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
