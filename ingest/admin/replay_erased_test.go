package admin

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/gatehouse/gatehouse/ingest/inbox"
)

// TestReplayAfterEraseKeepsKeyAndTime: after an erasure by object, a
// forced replay of the erased event is keyed like the event's original
// outbox row (the object's id, so the marker lands in the object's
// partition after its other records) with its event_time (ce_time), though
// the payload, now the marker, holds neither. An erased event whose
// original outbox row is gone is refused, not published under another key.
func TestReplayAfterEraseKeepsKeyAndTime(t *testing.T) {
	ctx := context.Background()
	base, w := newTestWriter(t, 0)
	for _, id := range []string{"evt_demo_1", "evt_demo_2"} {
		now := time.Now()
		payload := `{"id":"` + id + `","created_at":"2026-11-20T10:15:41.5Z","data":{"payment_id":"pay_123","email":"r@example.com"}}`
		if out := writeOne(t, w, inbox.Record{Provider: "demo", EventID: id, Type: "payment.succeeded", CreatedAt: &now, EventTime: "2026-11-20T10:15:41.5Z",
			Payload: []byte(payload), SecretID: "s", AggregateID: "pay_123", Topic: "topic"}); !out.New {
			t.Fatalf("%s not new", id)
		}
	}
	if _, err := Erase(ctx, base, Erasure{Provider: "demo", ObjectID: "pay_123", ObjectPaths: []string{"data.payment_id"}, RequestedBy: "op"}); err != nil {
		t.Fatal(err)
	}
	target := ReplayTarget{Topic: "topic", AggregateIDPath: []string{"data.payment_id"}}
	res, err := Replay(ctx, base, target, ReplayRequest{Provider: "demo", EventID: "evt_demo_1", Force: true, RequestedBy: "op"})
	if err != nil {
		t.Fatal(err)
	}
	var key, payload string
	var eventTime *string
	if err := base.QueryRow(ctx, `SELECT aggregateid, event_time, payload::text FROM outbox WHERE id = $1`, res.OutboxID).Scan(&key, &eventTime, &payload); err != nil {
		t.Fatal(err)
	}
	if key != "pay_123" || eventTime == nil || *eventTime != "2026-11-20T10:15:41.5Z" {
		t.Errorf("replay of the erased event keyed %q with event_time %v, want pay_123 and 2026-11-20T10:15:41.5Z (payload %s)", key, eventTime, payload)
	}
	mustExec(t, base, `DELETE FROM outbox WHERE event_id = 'evt_demo_2'`) // as if its partition was dropped
	_, err = Replay(ctx, base, target, ReplayRequest{Provider: "demo", EventID: "evt_demo_2", Force: true, RequestedBy: "op"})
	if !errors.Is(err, ErrNotReplayable) {
		t.Errorf("replay of an erased event without its original outbox row: %v, want ErrNotReplayable", err)
	}
	if n := count(t, base, `SELECT count(*) FROM outbox WHERE event_id = 'evt_demo_2'`); n != 0 {
		t.Errorf("%d outbox rows of evt_demo_2 after a refused replay", n)
	}
}

// TestReplayOnlyDeadReplaysEachEventOnce: two replays of one dead event
// with OnlyDead (a failure issue's replay), at once, re-enqueue it once;
// the other is ErrNotDead.
func TestReplayOnlyDeadReplaysEachEventOnce(t *testing.T) {
	ctx := context.Background()
	base, w := newTestWriter(t, 0)
	now := time.Now()
	if out := writeOne(t, w, inbox.Record{Provider: "demo", EventID: "dead_1", Type: "t", CreatedAt: &now, Payload: []byte(`{"id":"dead_1"}`),
		SecretID: "s", AggregateID: "a", Topic: "topic"}); !out.New {
		t.Fatal("not new")
	}
	mustExec(t, base, `UPDATE inbox SET processing_state = 'dead' WHERE event_id = 'dead_1'`)
	errs := make(chan error, 2)
	for range 2 {
		go func() {
			_, err := Replay(ctx, base, ReplayTarget{Topic: "topic"}, ReplayRequest{Provider: "demo", EventID: "dead_1", OnlyDead: true, RequestedBy: "op"})
			errs <- err
		}()
	}
	var ok, notDead int
	for range 2 {
		switch err := <-errs; {
		case err == nil:
			ok++
		case errors.Is(err, ErrNotDead):
			notDead++
		default:
			t.Fatal(err)
		}
	}
	if ok != 1 || notDead != 1 || count(t, base, `SELECT count(*) FROM outbox WHERE event_id = 'dead_1'`) != 2 {
		t.Errorf("%d replayed, %d not dead; want 1 and 1, and one outbox row besides the original", ok, notDead)
	}
}
