package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/gatehouse/gatehouse/deploy/bench/benchenv"
	"github.com/gatehouse/gatehouse/ingest"
	"github.com/gatehouse/gatehouse/internal/storage"
)

type result struct {
	benchenv.LoadResult
	walBytes int64
	// midFrom, midTo: when mid ran, from the start of the run.
	midFrom, midTo time.Duration
	lat            *benchenv.Hist
}

func (r result) walPerEvent() float64 {
	ok, _ := r.Counts()
	return float64(r.walBytes) / float64(max(1, ok))
}

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
	var lsn0, lsn1 int64
	walLSN := `SELECT pg_current_wal_lsn() - '0/0'`
	if err := pool.QueryRow(ctx, walLSN).Scan(&lsn0); err != nil {
		return result{}, err
	}
	payload := []byte(`{"id":"x","type":"payment_intent.succeeded","data":{"object":{"id":"pi_1","customer":"cus_1","receipt_email":"a@example.com","description":"` + strings.Repeat("x", 300) + `"}}}`)
	seed := uint64(time.Now().UnixNano())
	rngs := make([]*rand.Rand, o.conns)
	for c := range rngs {
		rngs[c] = rand.New(rand.NewPCG(uint64(c), seed))
	}
	var res result
	midDone := make(chan struct{})
	start := time.Now()
	go func() {
		defer close(midDone)
		if mid != nil {
			time.Sleep(o.duration / 2)
			res.midFrom = time.Since(start)
			mid(ctx)
			res.midTo = time.Since(start)
		}
	}()
	lr := benchenv.Loop(ctx, o.conns, o.duration, func(c int) error {
		id := fmt.Sprintf("evt_%016x%016x", rngs[c].Uint64(), rngs[c].Uint64())
		now := time.Now()
		_, err := w.Write(ctx, ingest.Record{Provider: "stripe", EventID: id, Type: "payment_intent.succeeded", CreatedAt: &now,
			Payload: payload, SecretID: "live", AggregateID: "pi_1", Topic: "gatehouse.webhooks.stripe"})
		return err
	})
	<-midDone
	res.LoadResult, res.lat = lr, lr.Latencies()
	if _, failed := res.Counts(); failed > 0 {
		return res, fmt.Errorf("write: %d failed (last: %s)", failed, res.LastError)
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
