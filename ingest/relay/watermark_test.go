package relay

import (
	"testing"
	"time"

	"github.com/jackc/pglogrepl"
)

func TestWatermarkContiguous(t *testing.T) {
	w := newWatermark(100)
	a := w.add(200, time.Unix(1, 0), make([]*Row, 2))
	b := w.add(300, time.Unix(2, 0), make([]*Row, 1))
	c := w.add(400, time.Unix(3, 0), make([]*Row, 1))
	check := func(want pglogrepl.LSN, wantIdle bool) {
		t.Helper()
		got, idle, _ := w.state()
		if got != want || idle != wantIdle {
			t.Fatalf("confirmed %v idle %v, want %v %v", got, idle, want, wantIdle)
		}
	}
	check(100, false)
	w.complete(b) // done out of order: nothing confirmed past a
	check(100, false)
	if _, _, oldest := w.state(); !oldest.Equal(time.Unix(1, 0)) {
		t.Fatalf("oldest pending commit %v, want a's", oldest)
	}
	w.complete(a)
	check(300, false)
	w.complete(c)
	check(400, true)
}

func TestWatermarkKeepaliveOnlyWhenIdle(t *testing.T) {
	w := newWatermark(100)
	if got := w.advanceIdle(150); got != 150 {
		t.Fatalf("idle keepalive: confirmed %v, want 150", got)
	}
	tx := w.add(200, time.Now(), make([]*Row, 1))
	if got := w.advanceIdle(500); got != 150 {
		t.Fatalf("keepalive with a transaction in flight moved the watermark to %v", got)
	}
	w.complete(tx)
	w.setOpen(1) // a transaction is being received
	if got := w.advanceIdle(500); got != 200 {
		t.Fatalf("keepalive during an open transaction moved the watermark to %v", got)
	}
	w.setOpen(0)
	if got := w.advanceIdle(500); got != 500 {
		t.Fatalf("idle keepalive: confirmed %v, want 500", got)
	}
	if got := w.advanceIdle(400); got != 500 {
		t.Fatalf("watermark went backwards to %v", got)
	}
}

func TestRecordMapping(t *testing.T) {
	r := &Row{ID: "0190-id", AggregateType: "stripe", AggregateID: "pi_1", Type: "payment_intent.succeeded",
		Payload: []byte(`{"id":"evt_1","type":"payment_intent.succeeded","created":1700000000,"data":{}}`), EventID: "evt_1",
		Topic: "gatehouse.webhooks.stripe"}
	rec := r.Record("")
	if rec.Topic != r.Topic || string(rec.Key) != "pi_1" || string(rec.Value) != string(r.Payload) {
		t.Fatalf("record %s %s %s", rec.Topic, rec.Key, rec.Value)
	}
	want := map[string]string{"ce_id": "evt_1", "ce_source": "/webhooks/stripe", "ce_type": "payment_intent.succeeded",
		"ce_specversion": "1.0", "content-type": "application/json", "ce_time": "2023-11-14T22:13:20Z",
		"gatehouse_outbox_id": "0190-id", "gatehouse_provider": "stripe"}
	if len(rec.Headers) != len(want) {
		t.Fatalf("%d headers, want %d", len(rec.Headers), len(want))
	}
	for _, h := range rec.Headers {
		if want[h.Key] != string(h.Value) {
			t.Errorf("header %s = %q, want %q", h.Key, h.Value, want[h.Key])
		}
	}
}

func TestPGTimestamp(t *testing.T) {
	for in, want := range map[string]string{
		"2026-11-22 02:14:27.123456+00": "2026-11-22T02:14:27.123456Z",
		"2026-11-22 02:14:27+05:30":     "2026-11-21T20:44:27Z",
	} {
		if got := pgTimestamp(in).UTC().Format(time.RFC3339Nano); got != want {
			t.Errorf("pgTimestamp(%q) = %s, want %s", in, got, want)
		}
	}
}
