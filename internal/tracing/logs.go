package tracing

import (
	"context"
	"log/slog"
	"net/http"
	"strings"
	"unicode/utf8"

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
// http.request.header.<name> attributes, each value cut by Truncate (a
// User-Agent or X-Request-Id may be 64 KiB of the sender's choosing).
func RequestHeaders(h http.Header) []attribute.KeyValue {
	var out []attribute.KeyValue
	for _, name := range allowedHeaders {
		if v := h.Get(name); v != "" {
			out = append(out, attribute.String("http.request.header."+strings.ToLower(name), Truncate(v)))
		}
	}
	return out
}

// AttributeValueLimit bounds every string attribute value a span records:
// the provider Setup builds has it as its span limit (the SDK counts code
// points; longer values are cut), and Truncate cuts the attacker-supplied
// values gatehouse records to as many bytes, so a provider built elsewhere
// (FromSDK) records them bounded too. OTEL_SPAN_ATTRIBUTE_VALUE_LENGTH_LIMIT
// may lower it, not raise it.
const AttributeValueLimit = 256

// Truncate cuts v to at most AttributeValueLimit bytes without splitting a
// UTF-8 sequence.
func Truncate(v string) string {
	if len(v) <= AttributeValueLimit {
		return v
	}
	cut := AttributeValueLimit
	for cut > 0 && !utf8.RuneStart(v[cut]) {
		cut--
	}
	return v[:cut]
}
