package main

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"golang.org/x/sync/errgroup"

	"github.com/gatehouse/gatehouse/deploy/bench/benchenv"
	"github.com/gatehouse/gatehouse/ingest/inbox"
	"github.com/gatehouse/gatehouse/schemas"
)

// results are the figures the rows refer to, and the rows of cases 2 to 8.
type results struct {
	receiverRate   float64 // closed loop, 16 connections
	receiverEvents int
	fastRate       float64 // case 1: consumer drain, API latency 0
	ceilingSQL     float64
	rows           []string
}

func (r *results) row(format string, args ...any) {
	r.rows = append(r.rows, fmt.Sprintf(format, args...))
}

func (b *bench) runCases(ctx context.Context, res *results) error {
	serve, err := b.start(ctx, "serve", "serve", "")
	if err != nil {
		return err
	}
	defer serve.Stop()
	addr := serve.Public
	o := b.o

	// The receiver is measured on analyzed tables, as in service, filled by
	// a warm-up of a provider no consumer reads.
	warm := benchenv.Load{Addr: addr, Conns: 16, Next: benchenv.NewDeliveries("warmup", addr, []byte(secret), 0).Next}.Closed(ctx, 3*time.Second)
	if _, failed := warm.Counts(); failed > 0 {
		return fmt.Errorf("warm-up: %d deliveries were not acknowledged (last: %s)", failed, warm.LastError)
	}
	if _, err := b.Pool.Exec(ctx, "ANALYZE inbox, outbox, dedupe_keys"); err != nil {
		return fmt.Errorf("analyze: %w", err)
	}
	if err := b.Settle(ctx, b.Pool); err != nil {
		return err
	}
	// Case 1's backlog is the receiver's own max rate run.
	b.Logf("case 1: receiver closed loop for %v, then the consumer drains it", o.receiverFor)
	maxRate := benchenv.Load{Addr: addr, Conns: 16, Next: benchenv.NewDeliveries("maxrate", addr, []byte(secret), 0).Next}.Closed(ctx, o.receiverFor)
	ok, failed := maxRate.Counts()
	if failed > 0 {
		return fmt.Errorf("%d deliveries were not acknowledged (last: %s)", failed, maxRate.LastError)
	}
	res.receiverEvents, res.receiverRate = ok, maxRate.Rate()
	relay, err := b.start(ctx, "relay", "relay", "")
	if err != nil {
		return err
	}
	defer relay.Stop()
	if err := b.waitTopic(ctx, topic("maxrate"), res.receiverEvents); err != nil {
		return err
	}
	if res.fastRate, err = b.drain(ctx, "maxrate", res.receiverEvents); err != nil {
		return err
	}

	b.Logf("case 2: %d events, API latency %v, new objects", o.events, o.apiLatency)
	b.api.latency.Store(int64(o.apiLatency))
	rate, err := b.backlog(ctx, "slow", o.events, 1)
	if err != nil {
		return err
	}
	res.row("2 | consumer drain, API latency %v, %d new objects | **%.0f events/s** | ≥ 2 000", o.apiLatency, o.events, rate)

	b.Logf("case 3: %d events, 10 per object", o.events)
	b.api.reset()
	if rate, err = b.backlog(ctx, "grouped", o.events, 10); err != nil {
		return err
	}
	calls, _ := b.api.reset()
	res.row("3 | API latency %v, 10 events per object arriving together (%d events) | **%.3f API calls per event** (%.0f events/s) | ≤ 0.2",
		o.apiLatency, o.events, float64(calls)/float64(o.events), rate)
	b.api.latency.Store(0)

	// The fake API answers 429 above the limit and the 5 % burst a token
	// bucket of that rate allows in any one second.
	b.Logf("case 4: %d events with api_rate_limit %d", o.limitedEvents, o.rateLimit)
	b.api.limit.Store(int64(o.rateLimit * 105 / 100))
	b.api.reset()
	if rate, err = b.backlog(ctx, "limited", o.limitedEvents, 1); err != nil {
		return err
	}
	_, most := b.api.reset()
	res.row("4 | `api_rate_limit: %d`, %d events, the API answering 429 above 105 %% of it: most requests it saw in any one second; 429 answers | **%d** requests; %d × 429 (%.0f events/s) | ≤ %d; no storm",
		o.rateLimit, o.limitedEvents, most, b.api.tooMany.Load(), rate, o.rateLimit*105/100)
	b.api.limit.Store(0)

	b.Logf("case 5: %.0f events/s for %v end to end", o.rate, o.steadyFor)
	steady, achieved, err := b.endToEnd(ctx, addr, "steady", o.rate, int(o.rate*o.steadyFor.Seconds()), nil)
	if err != nil {
		return err
	}
	res.row("5 | steady %.0f events/s offered (%.0f achieved) for %v through receiver → relay → consumer: 2xx → final, p50 / p99 / max | %s / **%s** / %s | p99 ≤ 250 ms",
		o.rate, achieved, o.steadyFor, benchenv.Ms(steady.Q(.5), 0), benchenv.Ms(steady.Q(.99), 0), benchenv.Ms(steady.Q(1), 0))

	b.Logf("case 6: %d genuine events alone, then among %d foreign records", o.genuine, o.foreign)
	alone, _, err := b.endToEnd(ctx, addr, "alone", o.mixedRate, o.genuine, nil) // the same events and rate, without them
	if err != nil {
		return err
	}
	mixed, _, err := b.endToEnd(ctx, addr, "mixed", o.mixedRate, o.genuine, b.foreignRecords)
	if err != nil {
		return err
	}
	res.row("6 | %d records with no inbox row interleaved with %d genuine events (%.0f/s): genuine 2xx → final, p50 / p99 | %s / %s = **%.2f × the same events' p99 without them** (%s / %s) | ≤ 2 ×",
		o.foreign, o.genuine, o.mixedRate, benchenv.Ms(mixed.Q(.5), 0), benchenv.Ms(mixed.Q(.99), 0), float64(mixed.Q(.99))/float64(max(1, alone.Q(.99))),
		benchenv.Ms(alone.Q(.5), 0), benchenv.Ms(alone.Q(.99), 0))

	b.Logf("case 7: %d events forwarded to a destination answering at once", o.events)
	if rate, err = b.backlog(ctx, "fwdfast", o.events, 1); err != nil {
		return err
	}
	fast := rate
	res.row("7 | forward (Standard Webhooks, concurrency %d) of %d events to a local destination answering at once | %.0f events/s = **%.2f × the receiver** | ≥ 1.0 ×",
		o.apiConcurrency, o.events, rate, rate/res.receiverRate)
	b.Logf("case 8: %d events forwarded to a destination answering after %v", o.events, o.apiLatency)
	b.api.latency.Store(int64(o.apiLatency))
	if rate, err = b.backlog(ctx, "fwdslow", o.events, 1); err != nil {
		return err
	}
	res.row("8 | forward of %d events to a destination answering after %v | **%.0f events/s** | ≥ 2 000", o.events, o.apiLatency, rate)
	b.api.latency.Store(0)
	if got := b.api.delivered.Load(); got < int64(2*o.events) {
		return fmt.Errorf("forward cases: %d deliveries, want %d", got, 2*o.events)
	}
	return b.orderedCases(ctx, res, fast)
}

// drain consumes prov's pre-loaded topic until n events are final and
// returns n over the time from the first claim to the last processed_at.
func (b *bench) drain(ctx context.Context, prov string, n int) (float64, error) {
	stop, err := b.startConsumer(ctx, prov)
	if err != nil {
		return 0, err
	}
	defer stop()
	if err := b.waitFinal(ctx, prov, n, 10*time.Minute); err != nil {
		return 0, err
	}
	// An ordered destination's parked event goes out once its inbox row is
	// final, when the drain reaches it: the consumer runs until none is
	// left (cases 11 and 12 then count every delivery).
	err = benchenv.Until(ctx, 100*time.Millisecond, 2*time.Minute, func() (bool, error) {
		var parked int
		err := b.Pool.QueryRow(ctx, `SELECT count(*) FROM parked_events WHERE provider = $1`, prov).Scan(&parked)
		return err == nil && parked == 0, err
	})
	if err != nil {
		return 0, fmt.Errorf("%s: parked events still undelivered after 2 minutes: %w", prov, err)
	}
	var span float64
	err = b.Pool.QueryRow(ctx, `SELECT extract(epoch FROM max(processed_at) - min(processing_started_at))::float8 FROM inbox WHERE provider = $1`, prov).Scan(&span)
	return float64(n) / span, err
}

// foreignRecords produces o.foreign records with no inbox row to the
// "mixed" topic, spread over the genuine events' time.
func (b *bench) foreignRecords(ctx context.Context) error {
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Kafka.Brokers...), kgo.ProducerLinger(time.Millisecond))
	if err != nil {
		return err
	}
	defer cl.Close()
	o, i := b.o, 0
	span := time.Duration(float64(o.genuine)/o.mixedRate*float64(time.Second)) + time.Second
	produce := func(n int) error {
		for range min(n, o.foreign-i) {
			id := "foreign_" + strconv.Itoa(i)
			cl.Produce(ctx, schemas.Record{Topic: topic("mixed"), Key: "pay_" + id, Provider: "mixed", EventID: id, Type: "payment.succeeded",
				OutboxID: "00000000-0000-0000-0000-000000000000", Payload: body(id, "pay_"+id, time.Now())}.Encode(), nil)
			i++
		}
		return nil
	}
	_, err = benchenv.Pace(ctx, float64(o.foreign)/span.Seconds(), span, produce)
	_ = produce(o.foreign) // what the last tick left
	return cmp.Or(err, cl.Flush(ctx))
}

func body(id, object string, now time.Time) []byte {
	b, _ := json.Marshal(map[string]any{"id": id, "type": "payment.succeeded", "created_at": now.UTC().Format(time.RFC3339),
		"data": map[string]any{"payment_id": object, "amount": 1999, "currency": "eur"}})
	return b
}

// backlog writes n events of prov, perObject about each object, through
// the Writer 64 at a time, waits for the relay to publish them and drains them.
func (b *bench) backlog(ctx context.Context, prov string, n, perObject int) (float64, error) {
	w, err := inbox.NewWriter(b.Pool, 4, 64)
	if err != nil {
		return 0, err
	}
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(64)
	for i := range n {
		g.Go(func() error {
			id, now, obj := prov+"_"+strconv.Itoa(i), time.Now(), "pay_"+prov+"_"+strconv.Itoa(i/perObject)
			_, err := w.Write(gctx, inbox.Record{Provider: prov, EventID: id, Type: "payment.succeeded", CreatedAt: &now,
				Payload: body(id, obj, now), SecretID: "bench", AggregateID: obj, Topic: topic(prov)})
			return err
		})
	}
	err = g.Wait()
	w.Close()
	if err != nil {
		return 0, err
	}
	if err := b.waitTopic(ctx, topic(prov), n); err != nil {
		return 0, err
	}
	return b.drain(ctx, prov, n)
}

// waitTopic waits until topic holds at least n records.
func (b *bench) waitTopic(ctx context.Context, topic string, n int) error {
	err := benchenv.Until(ctx, 100*time.Millisecond, 5*time.Minute, func() (bool, error) {
		ends, err := b.Admin.ListEndOffsets(ctx, topic)
		total := int64(0)
		ends.Each(func(o kadm.ListedOffset) { total += o.Offset })
		return err == nil && total >= int64(n), nil
	})
	if err != nil {
		return fmt.Errorf("relay did not publish %d records to %s within 5 minutes: %w", n, topic, err)
	}
	return nil
}

// endToEnd sends total deliveries of prov at rate per second (beside runs too)
// and returns the times from each 2xx to processed_at, and the rate.
func (b *bench) endToEnd(ctx context.Context, addr, prov string, rate float64, total int, beside func(context.Context) error) (*benchenv.Hist, float64, error) {
	stop, err := b.startConsumer(ctx, prov)
	if err != nil {
		return nil, 0, err
	}
	defer stop()
	// The run starts once the consumer has joined its group and fetches: a
	// first delivery is final.
	gen := benchenv.NewDeliveries(prov, addr, []byte(secret), 0)
	if status, msg, err := benchenv.NewConn(addr).Do(gen.Next(time.Now())); err != nil || status/100 != 2 {
		return nil, 0, fmt.Errorf("first delivery: %d %s %v", status, msg, err)
	}
	if err := b.waitFinal(ctx, prov, 1, time.Minute); err != nil {
		return nil, 0, err
	}
	done := make(chan error, 1)
	go func() {
		if beside != nil {
			done <- beside(ctx)
		}
		close(done)
	}()
	d := time.Duration(float64(total) / rate * float64(time.Second))
	r := benchenv.Load{Addr: addr, Conns: 512, Next: gen.Next, IDs: true}.Fixed(ctx, rate, d)
	if _, failed := r.Counts(); failed > 0 {
		return nil, 0, fmt.Errorf("%d deliveries were not acknowledged (last: %s)", failed, r.LastError)
	}
	if err := <-done; err != nil {
		return nil, 0, err
	}
	if err := b.waitFinal(ctx, prov, len(r.Acks)+1, 5*time.Minute); err != nil {
		return nil, 0, err
	}
	acked := make(map[string]time.Time, len(r.Acks))
	for _, a := range r.Acks {
		acked[a.ID] = r.Start.Add(a.Due + a.Latency)
	}
	rows, err := b.Pool.Query(ctx, `SELECT event_id, processed_at FROM inbox WHERE provider = $1 AND processed_at IS NOT NULL`, prov)
	if err != nil {
		return nil, 0, err
	}
	h, id, at := benchenv.NewHist(), "", time.Time{}
	_, err = pgx.ForEachRow(rows, []any{&id, &at}, func() error {
		if t, ok := acked[id]; ok {
			h.Record(at.Sub(t))
		}
		return nil
	})
	return h, r.Rate(), err
}

// waitFinal waits until n events of prov are in a final state.
func (b *bench) waitFinal(ctx context.Context, prov string, n int, timeout time.Duration) error {
	var done int
	err := benchenv.Until(ctx, 50*time.Millisecond, timeout, func() (bool, error) {
		err := b.Pool.QueryRow(ctx, `SELECT count(*) FROM inbox WHERE provider = $1
AND processing_state = ANY($2)`, prov, schemas.FinalStates()).Scan(&done)
		return err == nil && done >= n, err
	})
	if err != nil {
		return fmt.Errorf("%s: only %d of %d events final after %v: %w", prov, done, n, timeout, err)
	}
	return nil
}

// pgbenchScript is one batch of :batch events with consumers/store_batch.go's
// statements (TestBenchSQLCallsProductionSignatures, internal/layout, checks
// their argument counts): one claim, then one transaction of applies.
const pgbenchScript = `SELECT nextval('consumerbench_seq') AS id \gset
SELECT count(*) FROM consumers_claim_many(array_fill('pgb'::text, ARRAY[(:batch)::int]),
  ARRAY(SELECT 'pgb_' || ((:id)::int * (:batch)::int + g) FROM generate_series(1, (:batch)::int) g), array_fill(now(), ARRAY[(:batch)::int]));
BEGIN;
SELECT count(consumers_apply('pgb', 'pgb_' || ((:id)::int * (:batch)::int + g), 'payment.succeeded', 'pay_pgb_' || ((:id)::int * (:batch)::int + g), 'payment', 1,
  '{"id":"pay","object":"payment","version":1,"status":"succeeded","amount":1999}', now())) FROM generate_series(1, (:batch)::int) g;
COMMIT;
`

// ceilingSQL runs pgbench with the consumer's batched statements (one
// client, as a consumer applies one batch at a time) in events per second.
func (b *bench) ceilingSQL(ctx context.Context) (float64, error) {
	batch := b.o.maxPoll
	txns := max(4, b.o.events/batch)
	n := (txns + 2) * batch
	if _, err := b.Pool.Exec(ctx, `CREATE SEQUENCE consumerbench_seq`); err != nil {
		return 0, fmt.Errorf("pgbench sequence: %w", err)
	}
	if _, err := b.Pool.Exec(ctx, `INSERT INTO inbox (provider, event_id, event_type, payload, verified, secret_id)
SELECT 'pgb', 'pgb_' || i, 'payment.succeeded', '{"id":"x"}', true, 'bench' FROM generate_series(1, $1::int) i`, n); err != nil {
		return 0, fmt.Errorf("pgbench rows: %w", err)
	}
	script := filepath.Join(b.Dir, "consumer.sql")
	if err := os.WriteFile(script, []byte(pgbenchScript), 0o644); err != nil {
		return 0, err
	}
	tps, err := benchenv.Pgbench(ctx, nil, "-n", "-M", "prepared", "-c", "1", "-D", "batch="+strconv.Itoa(batch),
		"-t", strconv.Itoa(txns), "-f", script, b.DBURL)
	return tps * float64(batch), err
}
