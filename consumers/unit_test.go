package consumers

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/gatehouse/gatehouse/consumers/event"
	"github.com/gatehouse/gatehouse/internal/testkit"
	"github.com/gatehouse/gatehouse/schemas"
)

func TestLadderNext(t *testing.T) {
	l := newLayout(map[string]string{"p": "t"}, []time.Duration{time.Second, time.Minute})
	now := time.Unix(1000, 0)
	cases := []struct {
		topic   string
		attempt int
		class   string
		want    forwarding
	}{
		{"t", 1, event.ClassTransient, forwarding{topic: "t.retry.1", attempt: 2, dueAt: now.Add(time.Second)}},
		{"t.retry.1", 2, event.ClassTransient, forwarding{topic: "t.retry.2", attempt: 3, dueAt: now.Add(time.Minute)}},
		{"t.retry.2", 3, event.ClassTransient, forwarding{topic: "t.dlq", attempt: 3, dead: true}},
		{"t", 1, event.ClassPermanent, forwarding{topic: "t.dlq", attempt: 1, dead: true}},
		{"t.retry.1", 2, event.ClassPermanent, forwarding{topic: "t.dlq", attempt: 2, dead: true}},
	}
	for _, c := range cases {
		if got := l.next(l.roles[c.topic], c.attempt, c.class, now); got != c.want {
			t.Errorf("next(%s, %d, %s) = %+v, want %+v", c.topic, c.attempt, c.class, got, c.want)
		}
	}
	if len(l.consumed()) != 3 || len(l.all()) != 4 {
		t.Errorf("layout topics: consumed %v all %v", l.consumed(), l.all())
	}
}

func TestForwardRecordKeepsOriginAcrossHops(t *testing.T) {
	ts := time.Date(2026, 1, 2, 3, 4, 5, 6, time.UTC)
	rec := &kgo.Record{Topic: "t", Partition: 2, Offset: 41, Timestamp: ts, Key: []byte("k"), Value: []byte(`{}`),
		Headers: []kgo.RecordHeader{{Key: schemas.HeaderID, Value: []byte("e1")}}}
	due := ts.Add(time.Second)
	hop1 := forwardRecord(rec, forwarding{topic: "t.retry.1", attempt: 2, dueAt: due}, event.ClassTransient, errors.New(strings.Repeat("é", 600)))
	hop1.Partition, hop1.Offset, hop1.Timestamp = 0, 7, ts.Add(time.Hour)
	hop2 := forwardRecord(hop1, forwarding{topic: "t.dlq", attempt: 2, dead: true}, event.ClassPermanent, errors.New("404"))
	want := map[string]string{
		schemas.HeaderID: "e1", schemas.HeaderOriginTopic: "t", schemas.HeaderOriginPartition: "2",
		schemas.HeaderOriginOffset: "41", schemas.HeaderOriginTimestamp: ts.Format(time.RFC3339Nano),
		schemas.HeaderAttempt: "2", schemas.HeaderErrorClass: event.ClassPermanent, schemas.HeaderErrorMessage: "404",
	}
	got := schemas.Headers(hop2)
	for k, v := range want {
		if got[k] != v {
			t.Errorf("header %s = %q, want %q", k, got[k], v)
		}
	}
	if _, ok := got[schemas.HeaderDueAt]; ok || len(hop2.Headers) != len(want) {
		t.Errorf("dlq headers = %v", got)
	}
	msg := schemas.Headers(hop1)[schemas.HeaderErrorMessage]
	if len(msg) > maxErrorMessage || !strings.HasPrefix(msg, "é") || strings.ContainsRune(msg, '\uFFFD') {
		t.Errorf("truncated message: %d bytes", len(msg))
	}
	if schemas.Headers(hop1)[schemas.HeaderDueAt] != due.Format(time.RFC3339Nano) || string(hop2.Key) != "k" {
		t.Errorf("hop1 headers %v", schemas.Headers(hop1))
	}
}

func TestRegistryLookup(t *testing.T) {
	r := NewRegistry()
	mk := func(name string) event.Handler {
		return event.HandlerFunc(func(context.Context, *event.Event, *event.Batch) (*event.Effect, error) {
			return &event.Effect{ObjectID: name}, nil
		})
	}
	r.Register("p", "invoice.paid", mk("exact"))
	r.Register("p", "invoice.*", mk("invoice"))
	r.Register("p", "customer.subscription.*", mk("sub"))
	r.Register("q", "*", mk("any"))
	cases := map[[2]string]string{
		{"p", "invoice.paid"}: "exact", {"p", "invoice.voided"}: "invoice", {"p", "customer.subscription.updated"}: "sub",
		{"p", "customer.created"}: "", {"q", "whatever"}: "any", {"r", "invoice.paid"}: "",
	}
	for k, want := range cases {
		h := r.Lookup(k[0], k[1])
		got := ""
		if h != nil {
			e, _ := h.Handle(context.Background(), nil, nil)
			got = e.ObjectID
		}
		if got != want {
			t.Errorf("Lookup(%s, %s) = %q, want %q", k[0], k[1], got, want)
		}
	}
}

func TestDecodeRejectsBrokenRecords(t *testing.T) {
	good := contractRecord("t", "p", "e1", "payment.succeeded", "k", "o", []byte(`{"id":"e1","data":{"payment_id":"x"}}`))
	ev, err := decode(good, "p")
	if err != nil || ev.ID != "e1" || ev.Attempt != 1 || ev.ObjectKey != "k" {
		t.Fatalf("decode good: %+v %v", ev, err)
	}
	if v, ok := ev.Path("payment_id"); !ok || v != "x" {
		t.Errorf("Path = %q %v", v, ok)
	}
	strip := func(key string) *kgo.Record {
		r := *good
		r.Headers = nil
		for _, h := range good.Headers {
			if h.Key != key {
				r.Headers = append(r.Headers, h)
			}
		}
		return &r
	}
	notJSON := *good
	notJSON.Value = []byte("{")
	badAttempt := *good
	badAttempt.Headers = append(append([]kgo.RecordHeader(nil), good.Headers...), kgo.RecordHeader{Key: schemas.HeaderAttempt, Value: []byte("x")})
	for name, rec := range map[string]*kgo.Record{
		"no provider": strip(schemas.HeaderProvider), "no id": strip(schemas.HeaderID), "no type": strip(schemas.HeaderType),
		"not json": &notJSON, "bad attempt": &badAttempt,
	} {
		if _, err := decode(rec, "p"); err == nil || event.Classify(err) != event.ClassPermanent {
			t.Errorf("%s: %v, want a permanent error", name, err)
		}
	}
	if _, err := decode(good, "other"); err == nil {
		t.Error("record of another provider accepted")
	}
}

func TestLagAndQueueAgeGauges(t *testing.T) {
	now := time.Unix(10_000, 0)
	p := newPartitions("g", func() time.Time { return now })
	reg := prometheus.NewRegistry()
	reg.MustRegister(p)
	gauge := func(name, topic string) float64 {
		return testkit.Counter(t, reg, name, map[string]string{"topic": topic, "partition": "0", "group": "g"})
	}
	check := func(what, topic string, lag, age float64) {
		t.Helper()
		if l, a := gauge("gatehouse_consumer_lag_records", topic), gauge("gatehouse_consumer_queue_age_seconds", topic); l != lag || a != age {
			t.Errorf("%s: lag %v age %v, want %v and %v", what, l, a, lag, age)
		}
	}
	main, retry := tp{"t", 0}, tp{"t.retry.1", 0}
	// Five records polled from offset 10 (the first written 30s ago), in
	// progress; the high watermark says 20 exist.
	p.fetched(main, 20, 10, 14, now.Add(-30*time.Second))
	check("in progress", "t", 10, 30)
	// The next poll (written 1s ago) is handled while the first batch
	// waits for its commit: the age stays the oldest unfinished record's.
	p.fetched(main, 20, 15, 19, now.Add(-time.Second))
	check("second batch polled", "t", 10, 30)
	// The first batch is finished: the second batch's first record is the oldest.
	for o := int64(10); o <= 14; o++ {
		p.done(main, o, now.Add(-20*time.Second))
	}
	check("first batch done", "t", 5, 1)
	// A record polled again (a redelivery) is not counted twice.
	p.fetched(main, 20, 15, 19, now)
	p.done(main, 19, now.Add(-time.Second))
	check("caught up", "t", 0, 0)
	// Records written but not fetched yet: at most as young as the last finished one.
	p.fetched(main, 30, 25, 24, now) // an empty range only moves the high watermark
	check("not fetched", "t", 10, 1)
	// The broker's end offset, listed while the loop polls nothing, raises
	// the lag; a partition never polled is not reported.
	p.ends(map[tp]int64{main: 35, {"t", 1}: 9})
	check("end offset", "t", 15, 1)
	if n := testkit.Counter(t, reg, "gatehouse_consumer_lag_records", map[string]string{"topic": "t", "partition": "1"}); n != 0 {
		t.Errorf("partition never polled reported a lag of %v", n)
	}
	// A retry record held until its due time in 10s: lag 1, age 0; 25s
	// later it is 15s overdue.
	p.fetched(retry, 1, 0, 0, now.Add(10*time.Second))
	p.head(retry, 0, now.Add(10*time.Second))
	check("held", "t.retry.1", 1, 0)
	now = now.Add(25 * time.Second)
	check("overdue", "t.retry.1", 1, 15)
	p.drop(map[string][]int32{"t.retry.1": {0}})
	if n := testkit.Counter(t, reg, "gatehouse_consumer_lag_records", map[string]string{"topic": "t.retry.1"}); n != 0 {
		t.Errorf("revoked partition still exported")
	}
}
