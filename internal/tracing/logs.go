package tracing

import (
	"context"
	"log/slog"
	"net/http"
	"strings"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/gatehouse/gatehouse/internal/text"
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
	if !exemplarDue(v) {
		o.Observe(v)
		return
	}
	if id := TraceID(ctx); id != "" {
		if eo, ok := o.(prometheus.ExemplarObserver); ok {
			eo.ObserveWithExemplar(v, prometheus.Labels{"trace_id": id})
			return
		}
	}
	o.Observe(v)
}

// exemplarEvery is the least time between two exemplars of ordinary
// observations; an observation of at least exemplarSlow seconds always
// gets one. A histogram keeps one exemplar per bucket and Prometheus
// scrapes it every few seconds, so an exemplar on every observation
// (a label map and an exemplar allocated per delivery) mostly replaced one
// no scrape saw; the slow ones, which an operator follows to a trace, are
// never skipped.
const (
	exemplarEvery = 50 * time.Millisecond
	exemplarSlow  = 0.1
)

var lastExemplar atomic.Int64 // unix nanoseconds

func exemplarDue(v float64) bool {
	if v >= exemplarSlow {
		return true
	}
	now := time.Now().UnixNano()
	last := lastExemplar.Load()
	return now-last >= int64(exemplarEvery) && lastExemplar.CompareAndSwap(last, now)
}

// allowedHeaders are the only request headers a span may record as
// http.request.header.<name>: none of them can hold a secret.
// Authorization, cookies, signature and token headers and bodies are never
// recorded. User-Agent is recorded once, as user_agent.original (the
// semantic conventions' attribute), and Content-Length not at all: each
// attribute costs every span an allocation in the SDK and another in the
// exporter.
var allowedHeaders = []string{"Content-Type", "X-Request-Id"}

// headerKeys are the attribute keys of allowedHeaders, built once.
var headerKeys = func() []attribute.Key {
	out := make([]attribute.Key, len(allowedHeaders))
	for i, name := range allowedHeaders {
		out[i] = attribute.Key("http.request.header." + strings.ToLower(name))
	}
	return out
}()

// RequestHeaders returns the allow-listed headers of h as
// http.request.header.<name> attributes, each value cut by Truncate (a
// User-Agent or X-Request-Id may be 64 KiB of the sender's choosing).
func RequestHeaders(h http.Header) []attribute.KeyValue { return AppendRequestHeaders(nil, h) }

// AppendRequestHeaders is RequestHeaders appending to dst.
func AppendRequestHeaders(dst []attribute.KeyValue, h http.Header) []attribute.KeyValue {
	for i, name := range allowedHeaders {
		if v := h.Get(name); v != "" {
			dst = append(dst, headerKeys[i].String(Truncate(v)))
		}
	}
	return dst
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
func Truncate(v string) string { return text.Truncate(v, AttributeValueLimit) }
