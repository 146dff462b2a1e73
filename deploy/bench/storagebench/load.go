package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/gatehouse/gatehouse/ingest"
	"github.com/gatehouse/gatehouse/internal/storage"
)

// layout replaces the migration's partitions by daily ones from ten days
// ago to two days ahead, so the history has partitions to live in and the
// retention pass one to drop.
func layout(ctx context.Context, pool *pgxpool.Pool) error {
	_, err := pool.Exec(ctx, `DO $$ DECLARE r record; d0 timestamptz := date_trunc('day', now()); BEGIN
  FOR r IN SELECT name FROM storage_partitions LOOP EXECUTE format('DROP TABLE %I', r.name); END LOOP;
  DELETE FROM storage_partitions;
  FOR h IN -10..2 LOOP
    PERFORM storage_create_partition('inbox', d0 + make_interval(days => h), d0 + make_interval(days => h + 1));
    PERFORM storage_create_partition('dedupe_keys', d0 + make_interval(days => h), d0 + make_interval(days => h + 1));
  END LOOP;
END $$`)
	if err != nil {
		return fmt.Errorf("partition layout: %w", err)
	}
	return nil
}

// load inserts n earlier events (inbox rows of ~600 bytes with random ids,
// and their keys) spread over the ten past days, in chunks.
func load(ctx context.Context, pool *pgxpool.Pool, n int) error {
	const chunk = 500_000
	for from := 0; from < n; from += chunk {
		to := min(n, from+chunk) - 1
		_, err := pool.Exec(ctx, `WITH g AS (
  SELECT 'evt_' || md5(random()::text || i) AS id, date_trunc('day', now()) - interval '10 days' + (i::float8 / $3) * interval '10 days' AS at, i
  FROM generate_series($1::int, $2::int) i
), k AS (
  INSERT INTO dedupe_keys (provider, event_id, gen) SELECT 'stripe', id, date_trunc('day', at) FROM g
)
INSERT INTO inbox (provider, event_id, event_type, payload, received_at, verified, secret_id, processing_state)
SELECT 'stripe', id, 'payment_intent.succeeded',
  jsonb_build_object('id', id, 'type', 'payment_intent.succeeded', 'created', extract(epoch FROM at)::bigint,
    'data', jsonb_build_object('object', jsonb_build_object('id', 'pi_' || md5(id), 'customer', 'cus_' || (i % 100000),
      'receipt_email', 'customer' || (i % 100000) || '@example.com', 'description', repeat('x', 300)))),
  at, true, 'live', 'succeeded'
FROM g`, from, to, n)
		if err != nil {
			return fmt.Errorf("load history: %w", err)
		}
	}
	// History is old: autovacuum finished with it long ago. Vacuum it now,
	// so the runs do not compete with the vacuum the bulk load triggers.
	if _, err := pool.Exec(ctx, `VACUUM (ANALYZE)`); err != nil {
		return fmt.Errorf("vacuum history: %w", err)
	}
	_, err := pool.Exec(ctx, `CHECKPOINT`)
	return err
}

func tableBytes(ctx context.Context, pool *pgxpool.Pool) map[string]int64 {
	out := map[string]int64{}
	for _, t := range []string{"inbox", "dedupe_keys"} {
		out[t], _ = storage.TableBytes(ctx, pool, t)
	}
	return out
}

type result struct {
	events   int
	elapsed  time.Duration
	walBytes int64
	lat      []time.Duration
	perSec   [][]time.Duration // latencies by second of the run
}

func (r result) rate() float64             { return float64(r.events) / r.elapsed.Seconds() }
func (r result) walPerEvent() float64      { return float64(r.walBytes) / float64(max(1, r.events)) }
func (r result) p(q float64) time.Duration { return quantile(r.lat, q) }

func quantile(d []time.Duration, q float64) time.Duration {
	if len(d) == 0 {
		return 0
	}
	s := slices.Clone(d)
	slices.Sort(s)
	return s[min(len(s)-1, int(q*float64(len(s))))]
}

// closedLoop runs o.conns deliveries at once through one Writer (as serve
// does) for o.duration, each sending the next new random id as soon as its
// previous one is acknowledged. mid, when set, runs once halfway.
func closedLoop(ctx context.Context, pool *pgxpool.Pool, o options, mid func(context.Context)) (result, error) {
	w, err := ingest.NewWriter(pool, 1, 64)
	if err != nil {
		return result{}, err
	}
	defer w.Close()
	var lsn0, lsn1 int64
	walLSN := `SELECT pg_current_wal_lsn() - '0/0'`
	if err := pool.QueryRow(ctx, walLSN).Scan(&lsn0); err != nil {
		return result{}, err
	}
	secs := int(o.duration/time.Second) + 2
	var (
		mu     sync.Mutex
		res    = result{perSec: make([][]time.Duration, secs)}
		stop   atomic.Bool
		wg     sync.WaitGroup
		failed atomic.Value
		start  = time.Now()
	)
	payload := []byte(`{"id":"x","type":"payment_intent.succeeded","data":{"object":{"id":"pi_1","customer":"cus_1","receipt_email":"a@example.com","description":"` + strings.Repeat("x", 300) + `"}}}`)
	for c := range o.conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(c), uint64(start.UnixNano())))
			var local []time.Duration
			var localSec []int
			for !stop.Load() {
				id := fmt.Sprintf("evt_%016x%016x", rng.Uint64(), rng.Uint64())
				now := time.Now()
				t := time.Now()
				_, err := w.Write(ctx, ingest.Record{Provider: "stripe", EventID: id, Type: "payment_intent.succeeded", CreatedAt: &now,
					Payload: payload, SecretID: "live", AggregateID: "pi_1", Topic: "gatehouse.webhooks.stripe"})
				if err != nil {
					failed.Store(err)
					return
				}
				d := time.Since(t)
				local = append(local, d)
				localSec = append(localSec, int(time.Since(start)/time.Second))
			}
			mu.Lock()
			res.events += len(local)
			res.lat = append(res.lat, local...)
			for i, d := range local {
				if s := localSec[i]; s < secs {
					res.perSec[s] = append(res.perSec[s], d)
				}
			}
			mu.Unlock()
		}()
	}
	if mid != nil {
		time.Sleep(o.duration / 2)
		mid(ctx)
		time.Sleep(o.duration - time.Since(start))
	} else {
		time.Sleep(o.duration)
	}
	stop.Store(true)
	wg.Wait()
	res.elapsed = time.Since(start)
	if err, _ := failed.Load().(error); err != nil {
		return res, fmt.Errorf("write: %w", err)
	}
	if err := pool.QueryRow(ctx, walLSN).Scan(&lsn1); err != nil {
		return res, err
	}
	res.walBytes = lsn1 - lsn0
	return res, nil
}

type passResult struct {
	took    time.Duration
	dropped []string
	err     error
}

// dropOldestDay runs ingest's maintenance pass with a retention that
// expires the oldest day of the history: one inbox partition and one key
// partition are dropped.
func dropOldestDay(ctx context.Context, pool *pgxpool.Pool) passResult {
	var r passResult
	t := time.Now()
	// The oldest partitions end nine days ago: a retention of 9 days
	// minus an hour expires them and nothing younger.
	m, err := storage.New(storage.Config{Pool: pool, Stage: "bench", Interval: 24 * time.Hour, Ahead: 1,
		Partitioned: []storage.Table{{Name: "inbox", Retention: 9*24*time.Hour - time.Hour}, {Name: "dedupe_keys", Retention: 9*24*time.Hour - time.Hour}}})
	if err != nil {
		r.err = err
		return r
	}
	res, err := m.Pass(ctx)
	r.took, r.err, r.dropped = time.Since(t), err, res.Dropped
	return r
}
