package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/google/uuid"

	"github.com/gatehouse/gatehouse/deploy/bench/benchenv"
)

type row struct {
	id, key string
	payload []byte
	at      string // the envelope's created_at, the row's event_time
}

func (b *bench) rows(n int) []row {
	out := make([]row, n)
	at := time.Now().UTC().Truncate(time.Second)
	now := at.Format(time.RFC3339)
	for i := range out {
		key := fmt.Sprintf("pay_%05d", rand.IntN(b.o.keys))
		id := uuid.NewString()
		// The envelope the receiver writes, built by appending (every value
		// is plain ASCII): encoding/json over a map here cost the benchmark
		// more CPU than the relay it measures.
		p := make([]byte, 0, 320)
		p = append(p, `{"id":"evt_`...)
		p = append(p, id[:18]...)
		p = append(p, `","type":"payment.succeeded","created_at":"`...)
		p = append(p, now...)
		p = append(p, `","data":{"payment_id":"`...)
		p = append(p, key...)
		p = append(p, `","amount":4200,"currency":"eur","customer":"cus_`...)
		p = append(p, key[4:]...)
		p = append(p, `","description":"benchmark event with a realistic envelope size"}}`...)
		out[i] = row{id: id, key: key, payload: p, at: now}
	}
	return out
}

// insertSQL writes rows as the receiver does (event_time from the
// envelope's created_at).
const insertSQL = `INSERT INTO outbox (id, aggregatetype, aggregateid, type, payload, event_id, topic, event_time)
SELECT id, 'bench', key, 'payment.succeeded', p::jsonb, 'evt_' || left(id::text, 18), $4, at
FROM unnest($1::uuid[], $2::text[], $3::text[], $5::text[]) AS t(id, key, p, at)`

func (b *bench) insert(ctx context.Context, topic string, rs []row) ([]string, error) {
	ids, keys, ps, ats := make([]string, len(rs)), make([]string, len(rs)), make([]string, len(rs)), make([]string, len(rs))
	for i, r := range rs {
		ids[i], keys[i], ps[i], ats[i] = r.id, r.key, string(r.payload), r.at
	}
	_, err := b.Pool.Exec(ctx, insertSQL, ids, keys, ps, topic, ats)
	return ids, err
}

// writeFlatOut runs the max run's writers: o.writers goroutines committing
// o.batch-row transactions back to back for o.duration. It returns the rows
// committed.
func (b *bench) writeFlatOut(ctx context.Context, topic string, s *stamps) (int, error) {
	r := benchenv.Loop(ctx, b.o.writers, b.o.duration, func(int) error {
		ids, err := b.insert(ctx, topic, b.rows(b.o.batch))
		s.markSent(ids, time.Now())
		return err
	})
	ok, failed := r.Counts()
	if failed > 0 {
		return ok * b.o.batch, fmt.Errorf("%d of %d transactions failed (last: %s)", failed, ok+failed, r.LastError)
	}
	return ok * b.o.batch, nil
}

// writersAlone measures the max run's writers with no relay and no slot:
// the rate at which the benchmark can commit outbox rows at all, the bound
// of every "max" row. The rows are truncated afterwards so no relay
// publishes them.
func (b *bench) writersAlone(ctx context.Context) (result, error) {
	var slots int
	if err := b.Pool.QueryRow(ctx, `SELECT count(*) FROM pg_replication_slots`).Scan(&slots); err != nil {
		return result{}, err
	}
	if slots > 0 {
		return result{}, fmt.Errorf("writers alone: %d replication slots exist; the measurement needs none", slots)
	}
	s := newStamps()
	start := time.Now()
	n, err := b.writeFlatOut(ctx, "bench.writers-alone", s)
	if err != nil {
		return result{}, err
	}
	elapsed := time.Since(start)
	if _, err := b.Pool.Exec(ctx, `TRUNCATE outbox`); err != nil {
		return result{}, err
	}
	r := result{what: "PostgreSQL writers alone (no relay, no slot)", offered: fmt.Sprintf("max (%d writers × %d rows/tx)", b.o.writers, b.o.batch),
		n: n, throughput: float64(n) / elapsed.Seconds(), p50: -1, p99: -1, load: benchenv.LoadAvgText()}
	b.Logf("writers alone: %d rows, %.0f rows/s", n, r.throughput)
	return r, nil
}
