package consumers

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/gatehouse/gatehouse/consumers/event"
	"github.com/gatehouse/gatehouse/internal/settings"
	"github.com/gatehouse/gatehouse/internal/tracing"
	"github.com/gatehouse/gatehouse/schemas"
)

// TestForwardKeepsTraceContext: a record forwarded to a retry or
// dead-letter topic keeps its trace context: with tracing off the consumed
// record's traceparent and ce_traceparent are copied; with tracing on both
// are replaced by the forward span's, a child of the event's span, so the
// next attempt continues the same trace.
func TestForwardKeepsTraceContext(t *testing.T) {
	const tp = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	rec := &kgo.Record{Topic: "t", Headers: []kgo.RecordHeader{{Key: schemas.HeaderCETraceparent, Value: []byte(tp)},
		{Key: schemas.HeaderTraceparent, Value: []byte(tp)}, {Key: schemas.HeaderID, Value: []byte("evt_1")}}}
	f := forwarding{topic: "t.retry.1", attempt: 2, dueAt: time.Now()}

	off := &Runner{tracer: tracing.Tracer(nil, "consumers")}
	out := forwardRecord(rec, f, event.ClassTransient, errors.New("503"))
	off.traceForward(context.Background(), out, false).End()
	if h := schemas.Headers(out); h["traceparent"] != tp || h["ce_traceparent"] != tp {
		t.Errorf("tracing off: %v", h)
	}

	sr := tracetest.NewSpanRecorder()
	p := tracing.FromSDK(sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(sr)))
	on := &Runner{tracer: tracing.Tracer(p, "consumers"), tracing: true, cfg: Config{Consumers: settings.Consumers{Group: "g"}}}
	ctx, ev := on.startEvent(context.Background(), rec)
	out = forwardRecord(rec, f, event.ClassTransient, errors.New("503"))
	on.traceForward(ctx, out, false).End()
	endEvent(ev, OutcomeRetried, errors.New("503"))
	spans := sr.Ended()
	if len(spans) != 2 {
		t.Fatalf("%d spans", len(spans))
	}
	fwd, event := spans[0], spans[1]
	want := "00-4bf92f3577b34da6a3ce929d0e0e4736-" + fwd.SpanContext().SpanID().String() + "-01"
	h := schemas.Headers(out)
	if h["traceparent"] != want || h["ce_traceparent"] != want {
		t.Errorf("tracing on: %v, want %s", h, want)
	}
	n := 0
	for _, x := range out.Headers {
		if x.Key == schemas.HeaderTraceparent || x.Key == schemas.HeaderCETraceparent {
			n++
		}
	}
	if n != 2 {
		t.Errorf("%d trace headers on the forwarded record, want 2", n)
	}
	if fwd.Parent().SpanID() != event.SpanContext().SpanID() || event.Parent().SpanID().String() != "00f067aa0ba902b7" {
		t.Error("forward span is not the event span's child, or the event span not the record's")
	}
	// ce_traceparent alone (a producer that writes only the CloudEvents
	// extension) is picked up too.
	alone := &kgo.Record{Headers: []kgo.RecordHeader{{Key: schemas.HeaderCETraceparent, Value: []byte(tp)}}}
	if recordParent(alone) != tp {
		t.Error("ce_traceparent not picked up")
	}
}
