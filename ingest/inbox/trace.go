package inbox

import (
	"context"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/gatehouse/gatehouse/internal/tracing"
)

// startWrite starts the span of one coalesced inbox+outbox statement: a
// database client span of its own, linked to the span of each delivery it
// carries (a statement serves many deliveries, each in its own trace).
func (w *Writer) startWrite(rows []*pending) (context.Context, trace.Span) {
	if !w.tracing {
		return context.Background(), trace.SpanFromContext(context.Background())
	}
	links := make([]trace.Link, 0, len(rows))
	for _, p := range rows {
		// No attribute on the link: the delivery's span it points to
		// carries the event id (each would cost the span an attribute per
		// event in the SDK and in the export).
		if l, ok := tracing.LinkTo(p.rec.Traceparent); ok {
			links = append(links, l)
		}
	}
	return w.tracer.Start(context.Background(), "INSERT inbox outbox", trace.WithNewRoot(), trace.WithSpanKind(trace.SpanKindClient),
		trace.WithLinks(links...), trace.WithAttributes(
			attribute.String("db.system.name", "postgresql"),
			attribute.String("db.operation.name", "INSERT"),
			attribute.String("db.collection.name", "inbox"),
			attribute.String("db.query.summary", "INSERT inbox outbox"),
			attribute.Int("db.operation.batch.size", len(rows)),
		))
}

// SetTracer makes w record a span per statement (internal/tracing); call
// it before the first Write. Default: no spans.
func (w *Writer) SetTracer(tp trace.TracerProvider) {
	w.tracer, w.tracing = tracing.Tracer(tp, "ingest"), tracing.Recording(tp)
}
