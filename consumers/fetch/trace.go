package fetch

import (
	"context"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
)

// startFetch starts the client span of a provider API call under the span
// in ctx (the event's), with that span's tracer provider: no span when the
// event is not traced. Only the method, the URL (no query, no credentials)
// and the status are recorded, never a header.
func startFetch(ctx context.Context, method, url string) (context.Context, trace.Span) {
	parent := trace.SpanFromContext(ctx)
	if !parent.IsRecording() {
		return ctx, parent
	}
	return parent.TracerProvider().Tracer("github.com/gatehouse/gatehouse/consumers").Start(ctx, method,
		trace.WithSpanKind(trace.SpanKindClient), trace.WithAttributes(
			attribute.String("http.request.method", method), attribute.String("url.full", url)))
}

// endFetch ends a provider API call's span with its status.
func endFetch(span trace.Span, status int, err error) {
	if !span.IsRecording() {
		return
	}
	if status > 0 {
		span.SetAttributes(attribute.Int("http.response.status_code", status))
	}
	if err != nil {
		span.RecordError(err)
		span.SetStatus(codes.Error, "failed")
	}
	span.End()
}
