package schemas

import (
	"errors"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

func TestRecordRoundTrip(t *testing.T) {
	in := Record{Topic: "gatehouse.webhooks.ref", Key: "pay_1", Provider: "ref", EventID: "evt_1", Type: "payment.succeeded",
		Time: time.Date(2026, 1, 2, 3, 4, 5, 500, time.UTC), OutboxID: "0190-id", Payload: []byte(`{"id":"evt_1","data":{}}`), Attempt: 3}
	out, err := Decode(in.Encode())
	if err != nil {
		t.Fatal(err)
	}
	if out.Topic != in.Topic || out.Key != in.Key || out.Provider != in.Provider || out.EventID != in.EventID ||
		out.Type != in.Type || !out.Time.Equal(in.Time) || out.OutboxID != in.OutboxID || string(out.Payload) != string(in.Payload) ||
		out.Attempt != 3 {
		t.Fatalf("round trip: got %+v, want %+v", out, in)
	}
	main := in
	main.Attempt, main.Time = 0, time.Time{}
	rec := main.Encode()
	if h := Headers(rec); h[HeaderAttempt] != "" || h[HeaderTime] != "" || h[HeaderSource] != "/webhooks/ref" {
		t.Fatalf("main-topic headers: %v", h)
	}
	if got, _ := Decode(rec); got.Attempt != 1 || !got.Time.IsZero() {
		t.Fatalf("main-topic record decodes to attempt %d time %v", got.Attempt, got.Time)
	}
}

// TestReceivedAtHeader: gatehouse_received_at carries the inbox row's
// received_at at PostgreSQL's precision (microseconds) and reads back
// equal; a record without it, or with a value that is not a time, decodes
// with ReceivedAt zero (a hint, never a reason to refuse the record).
func TestReceivedAtHeader(t *testing.T) {
	at := time.Date(2026, 11, 25, 16, 30, 1, 123456000, time.FixedZone("x", 3600))
	r := Record{Provider: "p", EventID: "e", Type: "t.x", OutboxID: "o", Payload: []byte(`{}`), ReceivedAt: at}
	rec := r.Encode()
	if v := Headers(rec)[HeaderReceivedAt]; v != "2026-11-25T15:30:01.123456Z" {
		t.Fatalf("%s = %q, want UTC with microseconds", HeaderReceivedAt, v)
	}
	got, err := Decode(rec)
	if err != nil || !got.ReceivedAt.Equal(at) {
		t.Fatalf("decoded ReceivedAt %v (%v), want %v", got.ReceivedAt, err, at)
	}
	r.ReceivedAt = time.Time{}
	if h := Headers(r.Encode()); h[HeaderReceivedAt] != "" {
		t.Fatalf("header written without a time: %q", h[HeaderReceivedAt])
	}
	rec = r.Encode()
	set(rec, HeaderReceivedAt, "yesterday")
	if got, err := Decode(rec); err != nil || !got.ReceivedAt.IsZero() {
		t.Fatalf("unparsable hint: %v, %v; want the record with ReceivedAt zero", got.ReceivedAt, err)
	}
}

func TestDecodeRefusesBrokenRecords(t *testing.T) {
	good := Record{Key: "k", Provider: "p", EventID: "e", Type: "t.x", OutboxID: "o", Payload: []byte(`{}`)}
	cases := map[string]func(*kgo.Record){
		"no provider":  func(r *kgo.Record) { drop(r, HeaderProvider) },
		"no id":        func(r *kgo.Record) { drop(r, HeaderID) },
		"no type":      func(r *kgo.Record) { drop(r, HeaderType) },
		"bad attempt":  func(r *kgo.Record) { set(r, HeaderAttempt, "0") },
		"text attempt": func(r *kgo.Record) { set(r, HeaderAttempt, "two") },
		"bad time":     func(r *kgo.Record) { set(r, HeaderTime, "yesterday") },
		"not json":     func(r *kgo.Record) { r.Value = []byte("{not json") },
		"json array":   func(r *kgo.Record) { r.Value = []byte(`[1]`) },
		"empty value":  func(r *kgo.Record) { r.Value = nil },
	}
	for name, mutate := range cases {
		rec := good.Encode()
		mutate(rec)
		if _, err := Decode(rec); !errors.Is(err, ErrMalformedRecord) {
			t.Errorf("%s: err = %v, want ErrMalformedRecord", name, err)
		}
	}
}

func drop(r *kgo.Record, key string) {
	out := r.Headers[:0]
	for _, h := range r.Headers {
		if h.Key != key {
			out = append(out, h)
		}
	}
	r.Headers = out
}

func set(r *kgo.Record, key, v string) {
	drop(r, key)
	r.Headers = append(r.Headers, kgo.RecordHeader{Key: key, Value: []byte(v)})
}
