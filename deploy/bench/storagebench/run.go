package main

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/gatehouse/gatehouse/deploy/bench/benchenv"
	"github.com/gatehouse/gatehouse/ingest"
	"github.com/gatehouse/gatehouse/internal/storage"
)

func tableBytes(ctx context.Context, pool *pgxpool.Pool) map[string]int64 {
	out := map[string]int64{}
	for _, t := range []string{"inbox", "dedupe_keys"} {
		out[t], _ = storage.TableBytes(ctx, pool, t)
	}
	return out
}

type result struct {
	benchenv.LoadResult
	walBytes int64
	keyScans int64 // index scans of the key partitions (keyScans)
	// midFrom, midTo: when mid ran, from the start of the run.
	midFrom, midTo time.Duration
	lat            *benchenv.Hist
	perSec         []*benchenv.Hist // latencies by second of the run
}

func (r result) events() int               { ok, _ := r.Counts(); return ok }
func (r result) rate() float64             { return r.Rate() }
func (r result) walPerEvent() float64      { return float64(r.walBytes) / float64(max(1, r.events())) }
func (r result) scansPerEvent() float64    { return float64(r.keyScans) / float64(max(1, r.events())) }
func (r result) p(q float64) time.Duration { return r.lat.Q(q) }

// closedLoop runs o.conns deliveries at once through one Writer (as serve
// does) for o.duration, each sending the next new random id as soon as its
// previous one is acknowledged (benchenv.Loop). mid, when set, runs once
// halfway.
func closedLoop(ctx context.Context, pool *pgxpool.Pool, o options, mid func(context.Context)) (result, error) {
	w, err := ingest.NewWriter(pool, 1, 64)
	if err != nil {
		return result{}, err
	}
	defer w.Close()
	// The key filters the history's sealed partitions got at load, in
	// memory before the first delivery (serve loads them in the background).
	if _, _, err := w.RefreshKeyFilters(ctx); err != nil {
		return result{}, err
	}
	var lsn0, lsn1, scans0, scans1 int64
	walLSN := `SELECT pg_current_wal_lsn() - '0/0'`
	if err := pool.QueryRow(ctx, walLSN).Scan(&lsn0); err != nil {
		return result{}, err
	}
	if err := pool.QueryRow(ctx, keyScans).Scan(&scans0); err != nil {
		return result{}, err
	}
	payload := []byte(`{"id":"x","type":"payment_intent.succeeded","data":{"object":{"id":"pi_1","customer":"cus_1","receipt_email":"a@example.com","description":"` + strings.Repeat("x", 300) + `"}}}`)
	seed := uint64(time.Now().UnixNano())
	rngs := make([]*rand.Rand, o.conns)
	for c := range rngs {
		rngs[c] = rand.New(rand.NewPCG(uint64(c), seed))
	}
	var res result
	var midFrom, midTo time.Duration
	midDone := make(chan struct{})
	start := time.Now()
	go func() {
		defer close(midDone)
		if mid != nil {
			time.Sleep(o.duration / 2)
			midFrom = time.Since(start)
			mid(ctx)
			midTo = time.Since(start)
		}
	}()
	res.LoadResult = benchenv.Loop(ctx, o.conns, o.duration, func(c int) error {
		id := fmt.Sprintf("evt_%016x%016x", rngs[c].Uint64(), rngs[c].Uint64())
		now := time.Now()
		_, err := w.Write(ctx, ingest.Record{Provider: "stripe", EventID: id, Type: "payment_intent.succeeded", CreatedAt: &now,
			Payload: payload, SecretID: "live", AggregateID: "pi_1", Topic: "gatehouse.webhooks.stripe"})
		return err
	})
	<-midDone
	res.midFrom, res.midTo = midFrom, midTo
	res.lat, res.perSec = res.Latencies(), res.PerSecond()
	if _, failed := res.Counts(); failed > 0 {
		return res, fmt.Errorf("write: %d failed (last: %s)", failed, res.LastError)
	}
	if err := pool.QueryRow(ctx, walLSN).Scan(&lsn1); err != nil {
		return res, err
	}
	res.walBytes = lsn1 - lsn0
	w.Close() // its backend's statistics are flushed as it exits
	err = benchenv.Until(ctx, 100*time.Millisecond, 5*time.Second, func() (bool, error) {
		err := pool.QueryRow(ctx, keyScans).Scan(&scans1)
		return scans1 > scans0, err
	})
	if err != nil && !errors.Is(err, benchenv.ErrNotWithin) {
		return res, err
	}
	res.keyScans = scans1 - scans0
	return res, nil
}

// keyScans counts the index scans of the dedupe key partitions: a new
// id's probes of the partitions that may hold it, plus the unique check
// of its insert into the current one.
const keyScans = `SELECT coalesce(sum(idx_scan), 0)::bigint FROM pg_stat_user_indexes WHERE relname LIKE 'dedupe\_keys\_%'`

type passResult struct {
	took    time.Duration
	dropped []string
	err     error
}

// dropOldest runs ingest's maintenance pass with retentions that expire
// the oldest partition of the inbox (one day) and, with keys, of the
// dedupe keys, and nothing younger. With the defaults an inbox partition
// goes every day, and so does a key partition.
func dropOldest(ctx context.Context, pool *pgxpool.Pool, o options, keys bool) passResult {
	var r passResult
	t := time.Now()
	var tables []storage.Table
	parents := []string{"inbox"}
	if keys {
		parents = append(parents, "dedupe_keys")
	}
	for _, parent := range parents {
		var secs float64
		if r.err = pool.QueryRow(ctx, `SELECT extract(epoch FROM now() - min(ends))::float8 FROM storage_partitions WHERE parent = $1`, parent).Scan(&secs); r.err != nil {
			return r
		}
		tables = append(tables, storage.Table{Name: parent, Retention: time.Duration(secs*float64(time.Second)) - time.Hour})
	}
	if keys {
		tables[1].Interval = o.keyInterval
	}
	m, err := storage.New(storage.Config{Pool: pool, Stage: "bench", Interval: 24 * time.Hour, Ahead: 1, Partitioned: tables})
	if err != nil {
		r.err = err
		return r
	}
	res, err := m.Pass(ctx)
	r.took, r.err, r.dropped = time.Since(t), err, res.Dropped
	return r
}
