package tracing

import (
	"context"
	"log/slog"
	"net/http"
	"strings"

	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"
)

// LogHandler wraps h so that every record logged with a context holding a
// valid span context carries trace_id and span_id (the per-delivery and
// per-event lines are logged with their span's context). Without a span
// the record is passed through unchanged.
func LogHandler(h slog.Handler) slog.Handler { return logHandler{h} }

type logHandler struct{ slog.Handler }

func (l logHandler) Handle(ctx context.Context, r slog.Record) error {
	if sc := trace.SpanContextFromContext(ctx); sc.IsValid() {
		r = r.Clone()
		r.AddAttrs(slog.String("trace_id", sc.TraceID().String()), slog.String("span_id", sc.SpanID().String()))
	}
	return l.Handler.Handle(ctx, r)
}

func (l logHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	return logHandler{l.Handler.WithAttrs(attrs)}
}

func (l logHandler) WithGroup(name string) slog.Handler { return logHandler{l.Handler.WithGroup(name)} }

// Observe records v on o, with the trace id of ctx's sampled span as an
// exemplar when there is one and o supports exemplars (exposed in the
// OpenMetrics format of /metrics).
func Observe(ctx context.Context, o prometheus.Observer, v float64) {
	if id := TraceID(ctx); id != "" {
		if eo, ok := o.(prometheus.ExemplarObserver); ok {
			eo.ObserveWithExemplar(v, prometheus.Labels{"trace_id": id})
			return
		}
	}
	o.Observe(v)
}

// allowedHeaders are the only request headers a span may record: none of
// them can hold a secret. Authorization, cookies, signature and token
// headers and bodies are never recorded.
var allowedHeaders = []string{"Content-Type", "User-Agent", "Content-Length", "X-Request-Id"}

// RequestHeaders returns the allow-listed headers of h as
// http.request.header.<name> attributes.
func RequestHeaders(h http.Header) []attribute.KeyValue {
	var out []attribute.KeyValue
	for _, name := range allowedHeaders {
		if v := h.Get(name); v != "" {
			out = append(out, attribute.String("http.request.header."+strings.ToLower(name), v))
		}
	}
	return out
}
