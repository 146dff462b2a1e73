package relay

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/gatehouse/gatehouse/ingest/inbox"
	"github.com/gatehouse/gatehouse/schemas"
)

// testExactEventTime writes events through the receiver's own atomic write
// (inbox.Writer: inbox + outbox in one statement) with creation times of
// every precision a provider gives, and checks that ce_time on Kafka is the
// text the receiver was given, byte for byte: nanoseconds are not cut to
// PostgreSQL's microseconds, seconds get no invented fraction, an offset
// stays. A row without event_time (another writer's) takes the envelope's
// created_at, exactly too.
func testExactEventTime(t *testing.T, e *env) {
	e.start()
	w, err := inbox.NewWriter(e.pool, 1, 8)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	times := []string{
		"2026-11-20T10:15:41.314187999Z",    // nanoseconds (Go, Shopify's Triggered-At)
		"2026-11-20T10:15:41Z",              // whole seconds (Stripe's created, Slack's event_time)
		"2026-11-20T10:15:41.100Z",          // trailing zeros as written
		"2026-11-20T12:15:41.3141879+02:00", // seven digits and an offset (.NET senders)
		"2021-07-14T02:44:51.572Z",          // milliseconds (Zoom's event_ts)
	}
	var evs []event
	for i, text := range times {
		ev := event{Key: fmt.Sprintf("t_%d", i), Topic: e.topic, EventID: fmt.Sprintf("evt_time_%d_%s", i, randHex(3))}
		at, err := time.Parse(time.RFC3339Nano, text)
		if err != nil {
			t.Fatal(err)
		}
		body := fmt.Sprintf(`{"id":%q,"type":"test.changed","created_at":%q,"data":{"object_id":%q}}`, ev.EventID, text, ev.Key)
		out, err := w.Write(context.Background(), inbox.Record{Provider: "prov", EventID: ev.EventID, Type: "test.changed",
			CreatedAt: &at, EventTime: text, Payload: []byte(body), SecretID: "s1", AggregateID: ev.Key, Topic: e.topic})
		if err != nil || !out.New {
			t.Fatalf("write %s: %v (new=%v)", ev.EventID, err, out.New)
		}
		ev.ID = out.OutboxID.String()
		evs = append(evs, ev)
	}
	// Another writer's row, without event_time: ce_time from the envelope.
	bare := e.newEvents("t_bare", 1, 1)[0]
	const bareTime = "2026-11-20T10:15:41.000000001Z"
	if _, err := e.pool.Exec(context.Background(), `INSERT INTO outbox (id, aggregatetype, aggregateid, type, payload, event_id, topic)
		VALUES ($1, 'prov', $2, 'test.changed', $3::jsonb, $4, $5)`, bare.ID, bare.Key,
		fmt.Sprintf(`{"id":%q,"type":"test.changed","created_at":%q}`, bare.EventID, bareTime), bare.EventID, bare.Topic); err != nil {
		t.Fatal(err)
	}
	g := collect(t, e.brokers, []string{e.topic}, append(evs, bare), 30*time.Second)
	for i, ev := range evs {
		r := g.recs[g.firsts[ev.ID]]
		if got := header(r, schemas.HeaderTime); got != times[i] {
			t.Errorf("ce_time = %q, want exactly %q", got, times[i])
		}
		rec, err := schemas.Decode(r)
		if err != nil || rec.TimeText != times[i] {
			t.Errorf("Decode: TimeText %q, err %v; want %q", rec.TimeText, err, times[i])
		}
	}
	if got := header(g.recs[g.firsts[bare.ID]], schemas.HeaderTime); got != bareTime {
		t.Errorf("ce_time of a row without event_time = %q, want the envelope's %q", got, bareTime)
	}
}
