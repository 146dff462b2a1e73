package consumers

import (
	"context"
	"strconv"

	"github.com/twmb/franz-go/pkg/kgo"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/gatehouse/gatehouse/consumers/event"
	"github.com/gatehouse/gatehouse/internal/tracing"
	"github.com/gatehouse/gatehouse/schemas"
)

// The consumer's spans (docs/TRACING.md#what-is-traced): one per record handled (a
// consumer span, child of the span that published the record: the relay's
// publish span, or the forward span of the attempt before), one per batch
// (linked to its records' spans) with the apply transaction as its child,
// the provider API call (a client span under the event that made it), and
// one producer span per forward to a retry or dead-letter topic, whose
// context the forwarded record carries. With tracing off no span is
// started; a record's context is passed on unchanged.
//
// franz-go's kotel plugin is not used: its hooks start a span per record
// when a fetch buffers it and inject on produce, while a record here is
// handled later (in a batch, or when its retry delay is due), and a forward
// must replace the consumed record's trace headers (traceparent and
// ce_traceparent) rather than add to them. Reading the W3C header here is
// a few lines and keeps one span per handling.

// recordParent returns the trace context a record carries: traceparent,
// else ce_traceparent; "" when none.
func recordParent(rec *kgo.Record) string {
	alt := ""
	for _, h := range rec.Headers {
		switch h.Key {
		case schemas.HeaderTraceparent:
			return string(h.Value)
		case schemas.HeaderCETraceparent:
			alt = string(h.Value)
		}
	}
	return alt
}

func (r *Runner) messagingAttrs(rec *kgo.Record, op string) []attribute.KeyValue {
	return []attribute.KeyValue{
		attribute.String("messaging.system", "kafka"),
		attribute.String("messaging.operation.type", op),
		attribute.String("messaging.destination.name", rec.Topic),
		attribute.String("messaging.destination.partition.id", strconv.Itoa(int(rec.Partition))),
		attribute.Int64("messaging.kafka.offset", rec.Offset),
		attribute.String("messaging.kafka.message.key", string(rec.Key)),
		attribute.String("messaging.consumer.group.name", r.cfg.Group),
	}
}

// startEvent starts the span of one record's handling.
func (r *Runner) startEvent(ctx context.Context, rec *kgo.Record) (context.Context, trace.Span) {
	if !r.tracing {
		return ctx, trace.SpanFromContext(context.Background())
	}
	ctx = tracing.WithParent(ctx, recordParent(rec))
	attrs := r.messagingAttrs(rec, "process")
	h := schemas.Headers(rec)
	attrs = append(attrs, attribute.String("messaging.message.id", h[schemas.HeaderID]),
		attribute.String("gatehouse.provider", h[schemas.HeaderProvider]), attribute.String("gatehouse.event_type", h[schemas.HeaderType]))
	if a := h[schemas.HeaderAttempt]; a != "" {
		attrs = append(attrs, attribute.String("gatehouse.attempt", a))
	}
	return r.tracer.Start(ctx, rec.Topic+" process", trace.WithSpanKind(trace.SpanKindConsumer), trace.WithAttributes(attrs...))
}

// endEvent records the outcome of a record's handling and ends its span.
func endEvent(span trace.Span, outcome string, err error) {
	if !span.IsRecording() {
		return
	}
	span.SetAttributes(attribute.String("gatehouse.outcome", outcome))
	if err != nil {
		span.RecordError(err)
		span.SetAttributes(attribute.String("error.type", event.Classify(err)))
		span.SetStatus(codes.Error, event.Classify(err))
	}
	span.End()
}

// startBatch starts the span of one main-topic batch, linked to the span
// of each of its records.
func (r *Runner) startBatch(ctx context.Context, ws []*work) (context.Context, trace.Span) {
	if !r.tracing {
		return ctx, trace.SpanFromContext(context.Background())
	}
	links := make([]trace.Link, 0, len(ws))
	for _, w := range ws {
		if sc := trace.SpanContextFromContext(w.ctx); sc.IsValid() {
			links = append(links, trace.Link{SpanContext: sc})
		}
	}
	return r.tracer.Start(ctx, "consumer batch", trace.WithNewRoot(), trace.WithSpanKind(trace.SpanKindConsumer), trace.WithLinks(links...),
		trace.WithAttributes(attribute.String("messaging.system", "kafka"), attribute.String("messaging.operation.type", "process"),
			attribute.String("messaging.consumer.group.name", r.cfg.Group), attribute.Int("messaging.batch.message_count", len(ws))))
}

// startApply starts the span of an apply transaction of n events.
func (r *Runner) startApply(ctx context.Context, n int) (context.Context, trace.Span) {
	if !r.tracing {
		return ctx, trace.SpanFromContext(context.Background())
	}
	return r.tracer.Start(ctx, "apply", trace.WithSpanKind(trace.SpanKindClient), trace.WithAttributes(
		attribute.String("db.system.name", "postgresql"), attribute.String("db.operation.name", "apply"),
		attribute.Int("db.operation.batch.size", n)))
}

// endSpan records err on span and ends it.
func endSpan(span trace.Span, err error) {
	if err != nil && span.IsRecording() {
		span.RecordError(err)
		span.SetStatus(codes.Error, "failed")
	}
	span.End()
}

// traceForward starts the producer span of a forward and writes its
// context into out's traceparent and ce_traceparent headers (replacing
// the copies of the consumed record's), so the next attempt is a child of
// this one. With tracing off out keeps the consumed record's headers.
func (r *Runner) traceForward(ctx context.Context, out *kgo.Record, dead bool) trace.Span {
	if !r.tracing {
		return trace.SpanFromContext(context.Background())
	}
	ctx, span := r.tracer.Start(ctx, out.Topic+" publish", trace.WithSpanKind(trace.SpanKindProducer), trace.WithAttributes(
		attribute.String("messaging.system", "kafka"), attribute.String("messaging.operation.type", "send"),
		attribute.String("messaging.destination.name", out.Topic), attribute.Bool("gatehouse.dead_letter", dead)))
	tp := tracing.Traceparent(ctx)
	kept := out.Headers[:0]
	for _, h := range out.Headers {
		if h.Key != schemas.HeaderTraceparent && h.Key != schemas.HeaderCETraceparent {
			kept = append(kept, h)
		}
	}
	out.Headers = append(kept, kgo.RecordHeader{Key: schemas.HeaderTraceparent, Value: []byte(tp)},
		kgo.RecordHeader{Key: schemas.HeaderCETraceparent, Value: []byte(tp)})
	return span
}
