package schemas

import (
	"bytes"
	"strconv"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// encodeOneAllocPerValue is Encode as it was before its values shared one
// buffer: the reference the wire format must keep matching.
func encodeOneAllocPerValue(r Record) *kgo.Record {
	h := make([]kgo.RecordHeader, 0, 12)
	add := func(k, v string) { h = append(h, kgo.RecordHeader{Key: k, Value: []byte(v)}) }
	add(HeaderID, r.EventID)
	add(HeaderSource, "/webhooks/"+r.Provider)
	add(HeaderType, r.Type)
	add(HeaderSpecVersion, SpecVersion)
	add(HeaderContentType, "application/json")
	switch {
	case r.TimeText != "":
		add(HeaderTime, r.TimeText)
	case !r.Time.IsZero():
		add(HeaderTime, r.Time.UTC().Format(time.RFC3339Nano))
	}
	add(HeaderOutboxID, r.OutboxID)
	add(HeaderProvider, r.Provider)
	if !r.ReceivedAt.IsZero() {
		add(HeaderReceivedAt, r.ReceivedAt.UTC().Format(receivedAtLayout))
	}
	if r.Attempt > 1 {
		add(HeaderAttempt, strconv.Itoa(r.Attempt))
	}
	if r.Traceparent != "" {
		add(HeaderTraceparent, r.Traceparent)
		add(HeaderCETraceparent, r.Traceparent)
	}
	return &kgo.Record{Topic: r.Topic, Key: []byte(r.Key), Value: r.Payload, Headers: h}
}

// TestEncodeByteIdentical: Encode writes exactly the key and headers
// (names, values, order, empty-but-present values) of the one-allocation-
// per-value encoder it replaced, for every optional header combination,
// and a header value cannot be grown into its neighbour.
func TestEncodeByteIdentical(t *testing.T) {
	at := time.Date(2026, 11, 25, 16, 30, 1, 123456789, time.FixedZone("x", 3600))
	for i, r := range []Record{
		{},
		{Topic: "gatehouse.webhooks.ref", Key: "pay_1", Provider: "ref", EventID: "evt_1", Type: "payment.succeeded",
			OutboxID: "0190-id", Payload: []byte(`{"id":"evt_1"}`)},
		{Key: "k", Provider: "stripe", EventID: "evt_2", Type: "t", Time: at, OutboxID: "o", Attempt: 3, ReceivedAt: at},
		{Key: "k", Provider: "stripe", EventID: "evt_3", Type: "t", TimeText: "2026-01-01T00:00:00Z", Time: at,
			OutboxID: "o", ReceivedAt: at, Traceparent: "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01", Attempt: 12},
		{Key: "ключ", Provider: "p", EventID: "é", Type: "t", TimeText: "1700000000.5", Traceparent: "tp"},
	} {
		got, want := r.Encode(), encodeOneAllocPerValue(r)
		if got.Topic != want.Topic || !bytes.Equal(got.Key, want.Key) || (got.Key == nil) != (want.Key == nil) ||
			!bytes.Equal(got.Value, want.Value) || len(got.Headers) != len(want.Headers) {
			t.Fatalf("record %d: got %+v, want %+v", i, got, want)
		}
		for j := range want.Headers {
			g, w := got.Headers[j], want.Headers[j]
			if g.Key != w.Key || !bytes.Equal(g.Value, w.Value) || (g.Value == nil) != (w.Value == nil) {
				t.Fatalf("record %d header %d: got %s=%q, want %s=%q", i, j, g.Key, g.Value, w.Key, w.Value)
			}
		}
		if len(got.Headers) > 1 {
			_ = append(got.Headers[0].Value, "XXXX"...)
			_ = append(got.Key, "XXXX"...)
			if !bytes.Equal(got.Headers[1].Value, want.Headers[1].Value) || !bytes.Equal(got.Headers[0].Value, want.Headers[0].Value) {
				t.Fatalf("record %d: appending to one value changed another", i)
			}
		}
	}
}

func BenchmarkEncode(b *testing.B) {
	r := Record{Topic: "gatehouse.webhooks.bench", Key: "pay_00042", Provider: "bench", EventID: "evt_0b7c3f0e-1111-4222",
		Type: "payment.succeeded", TimeText: "2026-11-25T18:27:44Z", OutboxID: "0b7c3f0e-1111-4222-8333-944445555666",
		Payload: []byte(`{}`), ReceivedAt: time.Now()}
	b.ReportAllocs()
	for b.Loop() {
		_ = r.Encode()
	}
}
