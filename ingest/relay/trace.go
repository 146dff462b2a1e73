package relay

import (
	"context"
	"strconv"

	"github.com/twmb/franz-go/pkg/kgo"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/gatehouse/gatehouse/internal/tracing"
)

// startPublish returns the Kafka record of row with the context of its
// publish span (a producer span, child of the delivery's span stored in
// outbox.traceparent) in traceparent and ce_traceparent, and the function
// that ends the span from the produce callback. With tracing off the span
// is a no-op that still carries the stored context, so a trace begun by a
// traced receiver goes on through an untraced relay; a row recorded with
// tracing off gets no trace headers.
func (r *Relay) startPublish(ctx context.Context, row *Row, path string) (*kgo.Record, func(*kgo.Record, error)) {
	if row.Traceparent == "" && !r.tracing {
		return row.Record(""), func(*kgo.Record, error) {}
	}
	ctx = tracing.WithParent(ctx, row.Traceparent)
	ctx, span := r.tracer.Start(ctx, row.Topic+" publish", trace.WithSpanKind(trace.SpanKindProducer),
		trace.WithAttributes(
			attribute.String("messaging.system", "kafka"),
			attribute.String("messaging.operation.type", "send"),
			attribute.String("messaging.destination.name", row.Topic),
			attribute.String("messaging.message.id", row.EventID),
			attribute.String("messaging.kafka.message.key", row.AggregateID),
			attribute.String("gatehouse.provider", row.AggregateType),
			attribute.String("gatehouse.outbox_id", row.ID),
			attribute.String("gatehouse.relay.path", path),
		))
	rec := row.Record(tracing.Traceparent(ctx))
	return rec, func(rec *kgo.Record, err error) {
		if err != nil {
			span.RecordError(err)
			span.SetStatus(codes.Error, "produce failed")
		} else {
			span.SetAttributes(attribute.String("messaging.destination.partition.id", strconv.Itoa(int(rec.Partition))),
				attribute.Int64("messaging.kafka.offset", rec.Offset))
		}
		span.End()
	}
}
