package consumers

import (
	"context"
	"encoding/json"
	"strconv"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/gatehouse/gatehouse/internal/testkit"
	"github.com/gatehouse/gatehouse/schemas"
)

// produceAt ingests the events ids (one payment each) and publishes their
// records itself, as the relay writes them but with the Kafka timestamp
// at. It returns the partition of each.
func (f *fixture) produceAt(at time.Time, ids ...string) map[string]int32 {
	f.t.Helper()
	parts := map[string]int32{}
	for _, id := range ids {
		f.api.setPayment("pay_"+id, 1, "succeeded")
		f.ingest(id, "payment.succeeded", "pay_"+id)
		var topic, prov, typ, key, outboxID, payload string
		err := f.pool.QueryRow(context.Background(), `SELECT topic, aggregatetype, type, aggregateid, id::text, payload::text
			FROM outbox WHERE event_id = $1`, id).Scan(&topic, &prov, &typ, &key, &outboxID, &payload)
		if err != nil {
			f.t.Fatal(err)
		}
		rec := contractRecord(topic, prov, id, typ, key, outboxID, []byte(payload))
		rec.Timestamp = at
		res := f.prod.ProduceSync(context.Background(), rec)
		if err := res.FirstErr(); err != nil {
			f.t.Fatal(err)
		}
		parts[id] = res[0].Record.Partition
	}
	return parts
}

// gauges returns a gauge of reg per partition of topic.
func gauges(t *testing.T, reg *prometheus.Registry, name, topic string) map[int32]float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[int32]float64{}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			l := map[string]string{}
			for _, p := range m.GetLabel() {
				l[p.GetName()] = p.GetValue()
			}
			if l["topic"] == topic {
				n, _ := strconv.Atoi(l["partition"])
				out[int32(n)] = m.GetGauge().GetValue()
			}
		}
	}
	return out
}

// A lagging group: a batch written a minute ago is claimed and handled but
// its commit is held up (the effect log is locked), while the next poll's
// fresh records are claimed and handled beside it. The queue age of every
// partition holding a record of the first batch must be that record's age
// (about 60 s), not the fresh batch's (it read ~0: the age followed the
// newest polled batch, and nothing bounded how far polls ran ahead of the
// commits); records written after the loop stopped polling count in the
// lag; once everything is applied the age falls to 0.
func TestQueueAgeIsTheOldestUnfinishedRecords(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	old := f.produceAt(time.Now().Add(-time.Minute), ids("old-", 12)...)
	lock, err := f.pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer lock.Rollback(ctx) //nolint:errcheck // committed below
	if _, err := lock.Exec(ctx, `LOCK TABLE provider_object_changes IN EXCLUSIVE MODE`); err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewRegistry()
	f.start(f.config(reg))
	f.waitState(schemas.StateProcessing, 30*time.Second, ids("old-", 12)...)
	f.produceAt(time.Now(), ids("new-", 30)...)
	// The fresh records are polled and handled beside the held commit (or
	// wait in the client: at most one commit runs beside the loop).
	time.Sleep(2 * time.Second)
	// Records the loop has not polled (it waits for the held commit) count
	// in the lag too: the end offsets are listed every endsEvery.
	f.produceAt(time.Now(), ids("later-", 20)...)
	waitFor(t, 3*endsEvery, "lag of every unfinished record", func() bool {
		return testkit.Counter(t, reg, "gatehouse_consumer_lag_records", map[string]string{"topic": f.topic}) == 12+30+20
	})
	ages := gauges(t, reg, "gatehouse_consumer_queue_age_seconds", f.topic)
	lags := gauges(t, reg, "gatehouse_consumer_lag_records", f.topic)
	for id, p := range old {
		if ages[p] < 55 || ages[p] > 120 {
			t.Errorf("partition %d holds unfinished %s written 60s ago: queue age %.3f s, lag %v", p, id, ages[p], lags[p])
		}
		if lags[p] < 1 {
			t.Errorf("partition %d: lag %v with unfinished records", p, lags[p])
		}
	}
	if err := lock.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	f.waitState(schemas.StateSucceeded, 30*time.Second, append(append(ids("old-", 12), ids("new-", 30)...), ids("later-", 20)...)...)
	waitFor(t, 10*time.Second, "queue age back to 0", func() bool {
		for _, a := range gauges(t, reg, "gatehouse_consumer_queue_age_seconds", f.topic) {
			if a != 0 {
				return false
			}
		}
		return true
	})
}

// The relay can publish a record before its inbox row is visible (the
// commit is flushed, and so streamed, before PostgreSQL makes it visible).
// Here the row's transaction commits 40 ms after the consumers polled the
// record: they must find the row by reading again, not send the record
// down the retry ladder (one re-read after 10 ms did).
func TestInboxRowVisibleLateIsNotRetried(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	reg := prometheus.NewRegistry()
	f.start(f.config(reg))
	// A committed row to copy, and a record that makes sure the group is up.
	f.produceAt(time.Now(), "warm")
	f.waitState(schemas.StateSucceeded, 30*time.Second, "warm")

	f.api.setPayment("pay_late", 1, "succeeded")
	f.ingest("tmpl", "payment.succeeded", "pay_late")
	tx, err := f.pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx) //nolint:errcheck // committed below
	for _, q := range []string{
		`CREATE TEMP TABLE late ON COMMIT DROP AS SELECT * FROM inbox WHERE provider = $1 AND event_id = 'tmpl'`,
		`UPDATE late SET event_id = 'late' WHERE provider = $1`,
		`INSERT INTO inbox SELECT * FROM late WHERE provider = $1`,
	} {
		if _, err := tx.Exec(ctx, q, f.provider); err != nil {
			t.Fatal(err)
		}
	}
	body, _ := json.Marshal(map[string]any{"id": "late", "type": "payment.succeeded",
		"created_at": time.Now().UTC().Format(time.RFC3339), "data": map[string]any{"payment_id": "pay_late"}})
	rec := contractRecord(f.topic, f.provider, "late", "payment.succeeded", "pay_late", "1", body)
	res := f.prod.ProduceSync(ctx, rec)
	if err := res.FirstErr(); err != nil {
		t.Fatal(err)
	}
	part := strconv.Itoa(int(res[0].Record.Partition))
	waitFor(t, 10*time.Second, "the record polled", func() bool {
		return testkit.Counter(t, reg, "gatehouse_consumer_lag_records", map[string]string{"topic": f.topic, "partition": part}) > 0 ||
			testkit.Counter(t, reg, "gatehouse_consumer_records_processed_total", map[string]string{"topic": f.topic}) > 1
	})
	time.Sleep(40 * time.Millisecond)
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	f.waitState(schemas.StateSucceeded, 30*time.Second, "late")
	if got := testkit.Counter(t, reg, "gatehouse_consumer_records_rejected_total", map[string]string{"reason": "no_inbox_row"}); got != 0 {
		t.Errorf("no_inbox_row rejections = %v, want 0 (the row became visible 40 ms after the poll)", got)
	}
	if got := testkit.Counter(t, reg, "gatehouse_consumer_records_processed_total", map[string]string{"outcome": OutcomeRetried}); got != 0 {
		t.Errorf("retried = %v, want 0", got)
	}
	if row := f.inbox("late"); row.Attempts != 1 {
		t.Errorf("attempts = %d, want 1", row.Attempts)
	}
}
