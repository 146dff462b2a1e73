package consumers

import (
	"context"
	"encoding/json"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/gatehouse/gatehouse/consumers/event"
	"github.com/gatehouse/gatehouse/ingest/admin"
	"github.com/gatehouse/gatehouse/internal/kafka"
	"github.com/gatehouse/gatehouse/internal/testkit"
	"github.com/gatehouse/gatehouse/schemas"
)

// The same event delivered three times (once by the receiver's dedupe,
// twice more as Kafka duplicates of its record) has one business effect.
func TestSameEventThreeTimesOneEffect(t *testing.T) {
	f := newFixture(t)
	f.api.setPayment("pay_dup", 1, "succeeded")
	if !f.ingest("evt_dup", "payment.succeeded", "pay_dup") {
		t.Fatal("first delivery not new")
	}
	if f.ingest("evt_dup", "payment.succeeded", "pay_dup") {
		t.Fatal("second delivery recorded as new")
	}
	if f.relay() != 1 {
		t.Fatal("want one outbox row")
	}
	// The relay publishes at least once: two more copies of the same record.
	f.republish("")
	f.republish("")
	reg := prometheus.NewRegistry()
	f.start(f.config(reg))
	f.waitState(schemas.StateSucceeded, 30*time.Second, "evt_dup")
	waitFor(t, 30*time.Second, "three records processed", func() bool {
		return testkit.Counter(t, reg, "gatehouse_consumer_records_processed_total", map[string]string{"topic": f.topic}) == 3
	})
	if got := f.effects()["evt_dup"]; got != 1 {
		t.Fatalf("effects = %d, want 1", got)
	}
	if got := testkit.Counter(t, reg, "gatehouse_consumer_records_processed_total", map[string]string{"outcome": OutcomeDuplicate}); got != 2 {
		t.Errorf("duplicates counted = %v, want 2", got)
	}
	if r := f.inbox("evt_dup"); r.Attempts != 1 {
		t.Errorf("attempts = %d, want 1 (duplicates are not attempts)", r.Attempts)
	}
	var data []byte
	if err := f.pool.QueryRow(context.Background(), `SELECT data FROM provider_objects WHERE provider = $1 AND object_id = 'pay_dup'`, f.provider).Scan(&data); err != nil {
		t.Fatal(err)
	}
	var obj map[string]any
	_ = json.Unmarshal(data, &obj)
	if obj["status"] != "succeeded" {
		t.Errorf("projection holds %s, want the object fetched from the API", data)
	}
}

// Version 3 applied, then an event whose fetch returns version 2 (or 3
// again) is ignored as stale and counted.
func TestStaleVersionIgnored(t *testing.T) {
	f := newFixture(t)
	reg := prometheus.NewRegistry()
	f.start(f.config(reg))
	f.api.setPayment("pay_v", 3, "refunded")
	f.ingest("evt_v3", "payment.refunded", "pay_v")
	f.relay()
	f.waitState(schemas.StateSucceeded, 30*time.Second, "evt_v3")
	// A lagging API replica answers the older version 2 for the older event.
	f.api.setPayment("pay_v", 2, "succeeded")
	f.ingest("evt_v2", "payment.succeeded", "pay_v")
	f.relay()
	f.waitState(schemas.StateIgnoredStale, 30*time.Second, "evt_v2")
	var version int64
	var status string
	if err := f.pool.QueryRow(context.Background(), `SELECT version, data->>'status' FROM provider_objects WHERE provider = $1 AND object_id = 'pay_v'`,
		f.provider).Scan(&version, &status); err != nil {
		t.Fatal(err)
	}
	if version != 3 || status != "refunded" {
		t.Fatalf("projection = v%d %s, want v3 refunded", version, status)
	}
	if eff := f.effects(); eff["evt_v3"] != 1 || eff["evt_v2"] != 0 {
		t.Fatalf("effects = %v", eff)
	}
	// Equal version: also stale.
	f.api.setPayment("pay_v", 3, "refunded")
	f.ingest("evt_v3b", "payment.refunded", "pay_v")
	f.relay()
	f.waitState(schemas.StateIgnoredStale, 30*time.Second, "evt_v3b")
	if got := testkit.Counter(t, reg, "gatehouse_consumer_records_processed_total", map[string]string{"outcome": OutcomeStale}); got != 2 {
		t.Errorf("stale counted = %v, want 2", got)
	}
}

// The API fails twice with transient errors, then recovers: the event goes
// through retry.1 and retry.2 with the ladder headers, is not processed
// before each due time, and succeeds on attempt 3.
func TestRetryLadderRecovers(t *testing.T) {
	f := newFixture(t)
	reg := prometheus.NewRegistry()
	f.start(f.config(reg))
	f.api.setPayment("pay_r", 1, "succeeded")
	f.api.fail("/v1/payments/pay_r", 503, 429)
	f.ingest("evt_r", "payment.succeeded", "pay_r")
	f.relay()
	f.waitState(schemas.StateSucceeded, 30*time.Second, "evt_r")
	if r := f.inbox("evt_r"); r.Attempts != 3 || r.LastError != "" {
		t.Errorf("inbox = %+v, want 3 attempts and no error", r)
	}
	orig := f.readTopic(f.topic, 1, 10*time.Second)[0]
	r1 := f.readTopic(schemas.RetryTopic(f.topic, 1), 1, 10*time.Second)[0]
	r2 := f.readTopic(schemas.RetryTopic(f.topic, 2), 1, 10*time.Second)[0]
	for i, rec := range []*kgo.Record{r1, r2} {
		want := strconv.Itoa(i + 2)
		if got := header(rec, schemas.HeaderAttempt); got != want {
			t.Errorf("retry.%d attempt = %q, want %s", i+1, got, want)
		}
		if header(rec, schemas.HeaderOriginTopic) != f.topic ||
			header(rec, schemas.HeaderOriginPartition) != strconv.Itoa(int(orig.Partition)) ||
			header(rec, schemas.HeaderOriginOffset) != strconv.FormatInt(orig.Offset, 10) ||
			header(rec, schemas.HeaderOriginTimestamp) != orig.Timestamp.UTC().Format(time.RFC3339Nano) {
			t.Errorf("retry.%d origin headers = %v, want the main topic record %s/%d/%d", i+1, rec.Headers, orig.Topic, orig.Partition, orig.Offset)
		}
		if header(rec, schemas.HeaderErrorClass) != event.ClassTransient {
			t.Errorf("retry.%d error class = %q", i+1, header(rec, schemas.HeaderErrorClass))
		}
		if header(rec, schemas.HeaderID) != "evt_r" || string(rec.Key) != "pay_r" || string(rec.Value) != string(orig.Value) {
			t.Errorf("retry.%d lost the event: key %s headers %v", i+1, rec.Key, rec.Headers)
		}
		due, err := time.Parse(time.RFC3339Nano, header(rec, schemas.HeaderDueAt))
		if err != nil {
			t.Fatalf("retry.%d due: %v", i+1, err)
		}
		// The due time is the forwarding time plus the level's delay.
		if d := due.Sub(rec.Timestamp); d < f.delays[i]-50*time.Millisecond || d > f.delays[i]+time.Second {
			t.Errorf("retry.%d due - forwarded = %v, want about %v", i+1, d, f.delays[i])
		}
		// The API saw attempt i+2 only once the record was due.
		reqs := f.api.requests("/v1/payments/pay_r")
		if len(reqs) != 3 {
			t.Fatalf("api requests = %d, want 3", len(reqs))
		}
		if reqs[i+1].Before(due) {
			t.Errorf("attempt %d at %v ran before its due time %v", i+2, reqs[i+1], due)
		}
	}
	if m := header(r1, schemas.HeaderErrorMessage); !contains(m, "503") {
		t.Errorf("retry.1 message = %q, want the 503", m)
	}
	if m := header(r2, schemas.HeaderErrorMessage); !contains(m, "429") {
		t.Errorf("retry.2 message = %q, want the 429", m)
	}
	if got := testkit.Counter(t, reg, "gatehouse_consumer_records_processed_total", map[string]string{"outcome": OutcomeRetried}); got != 2 {
		t.Errorf("retried = %v, want 2", got)
	}
	if got := testkit.Counter(t, reg, "gatehouse_consumer_records_processed_total", map[string]string{"outcome": OutcomeOK, "topic": schemas.RetryTopic(f.topic, 2)}); got != 1 {
		t.Errorf("ok on retry.2 = %v, want 1", got)
	}
	// Lag and queue age per partition, franz-go's client metrics through kprom.
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]bool{}
	for _, mf := range mfs {
		names[mf.GetName()] = true
	}
	for _, n := range []string{"gatehouse_consumer_lag_records", "gatehouse_consumer_queue_age_seconds",
		"gatehouse_consumer_processing_duration_seconds", "gatehouse_consumer_rebalances_total",
		"gatehouse_kafka_consumer_buffered_fetch_records_total", "gatehouse_kafka_consumer_connects_total"} {
		if !names[n] {
			t.Errorf("metric %s not exported", n)
		}
	}
	if lag := testkit.Counter(t, reg, "gatehouse_consumer_lag_records", nil); lag != 0 {
		t.Errorf("lag after success = %v, want 0", lag)
	}
}

// A permanent failure (404 from the API) goes to the dead-letter topic at
// once with its headers, and the inbox row becomes dead. Replaying it after
// the cause is fixed succeeds.
func TestPermanentFailureDeadLetterAndReplay(t *testing.T) {
	f := newFixture(t)
	reg := prometheus.NewRegistry()
	f.start(f.config(reg))
	f.ingest("evt_p", "payment.succeeded", "pay_missing")
	f.relay()
	f.waitState(schemas.StateDead, 30*time.Second, "evt_p")
	r := f.inbox("evt_p")
	if r.Attempts != 1 || r.LastErrorClass != event.ClassPermanent || !contains(r.LastError, "404") {
		t.Errorf("inbox = %+v, want one attempt, permanent, 404", r)
	}
	dlq := f.readTopic(schemas.DeadLetterTopic(f.topic), 1, 10*time.Second)[0]
	if header(dlq, schemas.HeaderAttempt) != "1" || header(dlq, schemas.HeaderErrorClass) != event.ClassPermanent ||
		header(dlq, schemas.HeaderOriginTopic) != f.topic || header(dlq, schemas.HeaderDueAt) != "" ||
		header(dlq, schemas.HeaderID) != "evt_p" || !contains(header(dlq, schemas.HeaderErrorMessage), "404") {
		t.Errorf("dlq headers = %v", dlq.Headers)
	}
	if got := testkit.Counter(t, reg, "gatehouse_consumer_records_processed_total", map[string]string{"outcome": OutcomeDeadLettered}); got != 1 {
		t.Errorf("dead_lettered = %v, want 1", got)
	}

	// Bulk selection sees it; a replay re-enqueues it through the outbox.
	dead, err := admin.FindDead(context.Background(), f.pool, admin.DeadFilter{Provider: f.provider, Type: "payment.succeeded"})
	if err != nil || len(dead) != 1 || dead[0].EventID != "evt_p" {
		t.Fatalf("admin.FindDead = %v, %v", dead, err)
	}
	if other, _ := admin.FindDead(context.Background(), f.pool, admin.DeadFilter{Type: "invoice.paid"}); len(other) != 0 {
		t.Fatalf("type filter ignored: %v", other)
	}
	f.api.setPayment("pay_missing", 1, "succeeded")
	target := admin.ReplayTarget{Topic: f.topic, AggregateIDPath: []string{"data.payment_id"}}
	res, err := admin.Replay(context.Background(), f.pool, target, admin.ReplayRequest{Provider: f.provider, EventID: "evt_p", RequestedBy: "test"})
	if err != nil {
		t.Fatal(err)
	}
	if res.PreviousState != schemas.StateDead || res.PrevAttempts != 1 {
		t.Errorf("replay result = %+v", res)
	}
	if r := f.inbox("evt_p"); r.State != schemas.StatePending || r.Attempts != 0 || r.Replays != 1 || r.LastError != "" {
		t.Errorf("after replay inbox = %+v, want pending, 0 attempts, 1 replay", r)
	}
	var agg string
	if err := f.pool.QueryRow(context.Background(), `SELECT aggregateid FROM outbox WHERE id = $1`, res.OutboxID).Scan(&agg); err != nil || agg != "pay_missing" {
		t.Fatalf("replay outbox row aggregateid = %q, %v", agg, err)
	}
	if n := f.relay(); n != 1 {
		t.Fatalf("relay published %d rows, want the replay's one", n)
	}
	f.waitState(schemas.StateSucceeded, 30*time.Second, "evt_p")
	if eff := f.effects(); eff["evt_p"] != 1 {
		t.Errorf("effects = %v", eff)
	}
	// A finished event is not replayed without --force.
	_, err = admin.Replay(context.Background(), f.pool, target, admin.ReplayRequest{Provider: f.provider, EventID: "evt_p", RequestedBy: "test"})
	if !errors.Is(err, admin.ErrNotReplayable) {
		t.Errorf("replay of a succeeded event: %v, want ErrNotReplayable", err)
	}
	if _, err := admin.Replay(context.Background(), f.pool, target, admin.ReplayRequest{Provider: f.provider, EventID: "nope"}); !errors.Is(err, admin.ErrNotFound) {
		t.Errorf("replay of an unknown event: %v, want ErrNotFound", err)
	}
	var replays int
	_ = f.pool.QueryRow(context.Background(), `SELECT count(*) FROM replays WHERE event_id = 'evt_p' AND previous_state = 'dead'`).Scan(&replays)
	if replays != 1 {
		t.Errorf("replays rows = %d, want 1", replays)
	}
}

// Transient failures that never recover run through the whole ladder and
// end in the dead-letter topic with the last attempt number. An
// undecodable record is dead-lettered at once.
func TestExhaustedRetriesAndUndecodable(t *testing.T) {
	f := newFixture(t)
	f.delays = []time.Duration{100 * time.Millisecond, 100 * time.Millisecond}
	l := newLayout(map[string]string{f.provider: f.topic}, f.delays)
	if _, err := kafka.EnsureTopics(context.Background(), kadm.NewClient(f.prod), nil, kafka.TopicSpec{Partitions: 3}, l.all()...); err != nil {
		t.Fatal(err)
	}
	f.start(f.config(nil))
	f.api.setPayment("pay_x", 1, "succeeded")
	f.api.fail("/v1/payments/pay_x", 500, 500, 500)
	f.ingest("evt_x", "payment.succeeded", "pay_x")
	f.relay()
	f.waitState(schemas.StateDead, 30*time.Second, "evt_x")
	if r := f.inbox("evt_x"); r.Attempts != 3 || r.LastErrorClass != event.ClassTransient {
		t.Errorf("inbox = %+v, want 3 attempts, transient", r)
	}
	// Not JSON at all: permanent, straight to the DLQ.
	bad := contractRecord(f.topic, f.provider, "evt_bad", "payment.succeeded", "k", "00000000-0000-0000-0000-000000000000", []byte("{not json"))
	if err := f.prod.ProduceSync(context.Background(), bad).FirstErr(); err != nil {
		t.Fatal(err)
	}
	// A record for an event gatehouse never stored as verified (forged onto
	// the topic): nothing is done; it runs through the ladder and dies.
	forged := contractRecord(f.topic, f.provider, "evt_forged", "payment.succeeded", "pay_x", "00000000-0000-0000-0000-000000000001",
		[]byte(`{"id":"evt_forged","type":"payment.succeeded","data":{"payment_id":"pay_x"}}`))
	if err := f.prod.ProduceSync(context.Background(), forged).FirstErr(); err != nil {
		t.Fatal(err)
	}
	recs := f.readTopic(schemas.DeadLetterTopic(f.topic), 3, 30*time.Second)
	byID := map[string]*kgo.Record{}
	for _, r := range recs {
		byID[header(r, schemas.HeaderID)] = r
	}
	if r := byID["evt_x"]; r == nil || header(r, schemas.HeaderAttempt) != "3" || header(r, schemas.HeaderErrorClass) != event.ClassTransient ||
		header(r, schemas.HeaderOriginTopic) != f.topic {
		t.Errorf("exhausted record in dlq: %v", r)
	}
	if r := byID["evt_bad"]; r == nil || header(r, schemas.HeaderErrorClass) != event.ClassPermanent || header(r, schemas.HeaderAttempt) != "1" {
		t.Errorf("undecodable record in dlq: %v", r)
	}
	if r := byID["evt_forged"]; r == nil || header(r, schemas.HeaderAttempt) != "3" || !contains(header(r, schemas.HeaderErrorMessage), "no verified inbox row") {
		t.Errorf("forged record in dlq: %v", r)
	}
	if n := f.effects()["evt_forged"]; n != 0 {
		t.Errorf("forged event applied %d times", n)
	}
}

func contains(s, sub string) bool { return strings.Contains(s, sub) }

func waitFor(t *testing.T, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
