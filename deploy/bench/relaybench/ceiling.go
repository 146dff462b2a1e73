package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/google/uuid"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/gatehouse/gatehouse/deploy/bench/benchenv"
)

// ceilingWhat is the path column of the ceiling's rows.
const ceilingWhat = "franz-go producer → broker (ceiling)"

// ceiling runs a plain franz-go producer (its defaults, acks=all, the
// relay's linger and buffer) straight to the broker with the relay's
// records: paced at rate, or flat out for the run length when rate is 0.
func (b *bench) ceiling(ctx context.Context, rate int) (result, error) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Kafka.Brokers...), kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.ProducerLinger(time.Millisecond), kgo.MaxBufferedRecords(50_000))
	if err != nil {
		return result{}, err
	}
	defer cl.Close()
	offered := "max"
	if rate > 0 {
		offered = fmt.Sprintf("%d/s", rate)
	}
	return b.onTopic(ctx, ceilingWhat, offered, "ceiling", b.o.duration+2*time.Minute, rate > 0, nil, func(topic string, s *stamps) (int, error) {
		produce := func(rs []row) {
			ids := make([]string, len(rs))
			for i, r := range rs {
				ids[i] = r.id
			}
			s.markSent(ids, time.Now())
			for _, r := range rs {
				// The relay's value, key and the headers it always writes.
				cl.Produce(ctx, &kgo.Record{Topic: topic, Key: []byte(r.key), Value: r.payload, Headers: []kgo.RecordHeader{
					{Key: "ce_id", Value: []byte("evt_" + r.id[:18])}, {Key: "ce_source", Value: []byte("/webhooks/bench")},
					{Key: "ce_type", Value: []byte("payment.succeeded")}, {Key: "ce_specversion", Value: []byte("1.0")},
					{Key: "content-type", Value: []byte("application/json")}, {Key: "gatehouse_outbox_id", Value: []byte(r.id)},
					{Key: "gatehouse_provider", Value: []byte("bench")}}}, nil)
			}
		}
		if rate > 0 {
			return benchenv.Pace(ctx, float64(rate), b.o.duration, func(n int) error { produce(b.rows(n)); return nil })
		}
		n := 0
		for start := time.Now(); time.Since(start) < b.o.duration; n += 20_000 {
			produce(b.rows(20_000))
		}
		return n, nil
	})
}

type row struct {
	id, key string
	payload []byte
	at      string // the envelope's created_at, the row's event_time
}

func (b *bench) rows(n int) []row {
	out := make([]row, n)
	now := time.Now().UTC().Truncate(time.Second).Format(time.RFC3339)
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
