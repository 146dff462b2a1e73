package relay

import (
	"context"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/gatehouse/gatehouse/internal/tracing"
	"github.com/gatehouse/gatehouse/schemas"
)

// TestPublishTraceHeaders: the record carries traceparent and
// ce_traceparent: the publish span's context, child of the stored one, with
// tracing on; the stored context unchanged with tracing off; none for a row
// recorded untraced.
func TestPublishTraceHeaders(t *testing.T) {
	const stored = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	row := &Row{ID: "0190-id", AggregateType: "demo", AggregateID: "pay_1", Type: "payment.succeeded",
		Payload: []byte(`{"id":"evt_1"}`), EventID: "evt_1", Topic: "gatehouse.webhooks.demo", Traceparent: stored}
	headers := func(rec *kgo.Record) map[string]string { return schemas.Headers(rec) }

	off := &Relay{tracer: tracing.Tracer(nil, "relay")}
	rec, end := off.startPublish(context.Background(), row, pathStream)
	end(rec, nil)
	if h := headers(rec); h["traceparent"] != stored || h["ce_traceparent"] != stored {
		t.Errorf("tracing off: headers %v, want the stored context", h)
	}
	bare := *row
	bare.Traceparent = ""
	rec, _ = off.startPublish(context.Background(), &bare, pathPoll)
	if h := headers(rec); h["traceparent"] != "" || h["ce_traceparent"] != "" {
		t.Errorf("untraced row: headers %v", h)
	}

	sr := tracetest.NewSpanRecorder()
	tp := tracing.FromSDK(sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(sr)))
	on := &Relay{tracer: tracing.Tracer(tp, "relay"), tracing: true}
	rec, end = on.startPublish(context.Background(), row, pathStream)
	rec.Partition, rec.Offset = 3, 42
	end(rec, nil)
	spans := sr.Ended()
	if len(spans) != 1 {
		t.Fatalf("%d spans", len(spans))
	}
	s := spans[0]
	want := "00-4bf92f3577b34da6a3ce929d0e0e4736-" + s.SpanContext().SpanID().String() + "-01"
	if h := headers(rec); h["traceparent"] != want || h["ce_traceparent"] != want {
		t.Errorf("tracing on: headers %v, want %s", h, want)
	}
	if s.Parent().SpanID().String() != "00f067aa0ba902b7" {
		t.Errorf("publish span's parent %s, want the stored span", s.Parent().SpanID())
	}
	attrs := map[string]string{}
	for _, a := range s.Attributes() {
		attrs[string(a.Key)] = a.Value.Emit()
	}
	if attrs["messaging.system"] != "kafka" || attrs["messaging.destination.partition.id"] != "3" || attrs["messaging.kafka.offset"] != "42" {
		t.Errorf("attributes %v", attrs)
	}
}
