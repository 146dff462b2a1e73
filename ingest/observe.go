package ingest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"log/slog"
	"net/http"
	"regexp"
	"strconv"
	"sync"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/gatehouse/gatehouse/internal/tracing"
)

// delivery is one delivery being served: where it is answered, and what
// its metrics, its log line and its span report once it is.
type delivery struct {
	ep    *endpoint
	w     http.ResponseWriter
	span  trace.Span
	start time.Time

	requestID, eventID, typ, queueID, state, reason string
	outcome                                         DeliveryOutcome
	secretID                                        string
	verified, batch                                 bool
	status, attempt, events                         int
	writeTime                                       time.Duration // the atomic write's, for the admission's estimate
	err                                             error
	attrs                                           *spanAttrs // the span's, until it ends (tracing on)
}

// begin starts observing a delivery admitted past the cheap refusals: its
// request id (answered in X-Request-Id) and its span.
func (r *Receiver) begin(w http.ResponseWriter, req *http.Request, ep *endpoint) (context.Context, *delivery) {
	d := &delivery{ep: ep, w: w, start: r.cfg.Now(), requestID: requestID(req)}
	w.Header().Set("X-Request-Id", d.requestID)
	ctx, span := r.startDelivery(req, d)
	d.span = span
	return ctx, d
}

// end observes the answered delivery, once: its counter and latency, the
// console's rollup, its log line and its span.
func (r *Receiver) end(ctx context.Context, d *delivery) {
	name := d.ep.name
	r.m.deliveries.WithLabelValues(name, string(d.outcome)).Inc()
	lat := time.Since(d.start)
	tracing.Observe(ctx, r.m.ackLatency.WithLabelValues(name, strconv.Itoa(d.status)), lat.Seconds())
	r.cfg.Rollup.Observe(name, string(d.outcome), d.status, lat)
	r.logDelivery(ctx, name, d)
	endDelivery(d.span, d)
}

func (r *Receiver) logDelivery(ctx context.Context, provider string, d *delivery) {
	attrs := []slog.Attr{
		slog.String("provider", provider), slog.String("event_id", d.eventID), slog.String("type", d.typ),
		slog.Bool("verified", d.verified), slog.Int("response_status", d.status), slog.String("queue_id", d.queueID),
		slog.String("processing_state", d.state), slog.Int("attempt", d.attempt), slog.String("request_id", d.requestID),
		slog.String("outcome", string(d.outcome)),
	}
	if d.reason != "" {
		attrs = append(attrs, slog.String("reason", d.reason))
	}
	if d.batch {
		attrs = append(attrs, slog.Int("events", d.events)) // a batch: event_id is its first event's
	}
	level := slog.LevelInfo
	if d.err != nil {
		level = slog.LevelError
		attrs = append(attrs, slog.String("err", d.err.Error()))
	} else if d.status >= 400 {
		level = slog.LevelWarn
	}
	r.cfg.Logger.LogAttrs(ctx, level, "webhook delivery", attrs...)
}

var safeRequestID = regexp.MustCompile(`^[A-Za-z0-9._:-]{1,64}$`)

func requestID(req *http.Request) string {
	if v := req.Header.Get("X-Request-Id"); safeRequestID.MatchString(v) {
		return v
	}
	b := make([]byte, 12)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// spanOf is what an endpoint's delivery spans share, built once: their
// name and the attributes that name the provider.
type spanOf struct {
	name            string
	route, provider attribute.KeyValue
}

func newSpanOf(provider string) spanOf {
	return spanOf{name: "POST /webhooks/" + provider, route: attribute.String("http.route", "/webhooks/"+provider),
		provider: attribute.String("gatehouse.provider", provider)}
}

// spanAttrs holds a delivery span's attributes from its start to its end,
// when they are set in one call (each SetAttributes takes the span's lock
// and grows its attribute slice again). Pooled: the SDK copies them.
type spanAttrs struct{ kv []attribute.KeyValue }

// maxSpanAttrs is how many attributes a delivery span may hold: those of
// startDelivery and endDelivery together.
const maxSpanAttrs = 18

var spanAttrsPool = sync.Pool{New: func() any { return &spanAttrs{kv: make([]attribute.KeyValue, 0, maxSpanAttrs)} }}

// startDelivery starts the delivery's server span, always the root of a
// new trace: a provider's traceparent header is attacker-controlled, so it
// is never a parent, only a link. Recorded (docs/TRACING.md, checked by
// TestDeliverySpanAttributesDocumented): the HTTP server attributes, the
// allow-listed request headers (the sender's User-Agent and X-Request-Id
// cut to tracing.AttributeValueLimit bytes; X-Request-Id only when it is
// not the delivery's request id, gatehouse.request_id) and the provider;
// never the body, the signature headers, Authorization or cookies. Every
// attribute costs each span, in the SDK and in the OTLP export, about a
// microsecond of CPU: none is recorded twice (url.path is http.route, the
// listener's url.scheme the same for every delivery). The attributes known
// now are gathered in d and set with those of its end (endDelivery). With
// tracing off it returns the request's context and its no-op span, at no
// cost.
func (r *Receiver) startDelivery(req *http.Request, d *delivery) (context.Context, trace.Span) {
	if !r.tracing {
		return req.Context(), trace.SpanFromContext(req.Context())
	}
	ep := d.ep
	ctx, span := r.tracer.Start(req.Context(), ep.span.name, trace.WithNewRoot(), trace.WithSpanKind(trace.SpanKindServer))
	if !span.IsRecording() { // not sampled: nothing to gather
		return ctx, span
	}
	if l, ok := tracing.LinkTo(req.Header.Get("Traceparent"), attribute.String("gatehouse.link", "provider traceparent (untrusted)")); ok {
		span.AddLink(l)
	}
	d.attrs = spanAttrsPool.Get().(*spanAttrs)
	kv := append(d.attrs.kv[:0],
		attribute.String("http.request.method", req.Method),
		ep.span.route,
		attribute.String("server.address", req.Host),
		attribute.String("network.peer.address", req.RemoteAddr),
		ep.span.provider,
	)
	if v := protocolVersion(req); v != "" {
		kv = append(kv, attribute.String("network.protocol.version", v))
	}
	if ua := req.UserAgent(); ua != "" {
		kv = append(kv, attribute.String("user_agent.original", tracing.Truncate(ua)))
	}
	n := len(kv)
	kv = tracing.AppendRequestHeaders(kv, req.Header)
	for i := n; i < len(kv); i++ {
		if kv[i].Key == requestIDHeader && kv[i].Value.AsString() == d.requestID { // recorded as gatehouse.request_id
			kv = append(kv[:i], kv[i+1:]...)
			break
		}
	}
	d.attrs.kv = kv
	return ctx, span
}

const requestIDHeader = attribute.Key("http.request.header.x-request-id")

// protocolVersion is network.protocol.version: the HTTP version of req.
func protocolVersion(req *http.Request) string {
	switch {
	case req.ProtoMajor == 1 && req.ProtoMinor == 1:
		return "1.1"
	case req.ProtoMajor == 2:
		return "2"
	case req.ProtoMajor == 1 && req.ProtoMinor == 0:
		return "1.0"
	case req.ProtoMajor == 3:
		return "3"
	}
	return ""
}

// endDelivery records the delivery's result on its span, with the
// attributes gathered at its start, and ends it.
func endDelivery(span trace.Span, d *delivery) {
	if !span.IsRecording() || d.attrs == nil {
		return
	}
	kv := append(d.attrs.kv,
		attribute.Int("http.response.status_code", d.status),
		attribute.String("gatehouse.outcome", string(d.outcome)),
		attribute.Bool("gatehouse.verified", d.verified),
		attribute.String("gatehouse.request_id", d.requestID),
	)
	if d.eventID != "" {
		kv = append(kv, attribute.String("gatehouse.event_id", d.eventID))
	}
	if d.typ != "" {
		kv = append(kv, attribute.String("gatehouse.event_type", d.typ))
	}
	if d.secretID != "" {
		kv = append(kv, attribute.String("gatehouse.secret_id", d.secretID))
	}
	if d.reason != "" {
		kv = append(kv, attribute.String("gatehouse.reason", d.reason))
	}
	if d.batch {
		kv = append(kv, attribute.Int("gatehouse.events", d.events))
	}
	span.SetAttributes(kv...)
	clear(kv)
	d.attrs.kv = kv[:0]
	spanAttrsPool.Put(d.attrs)
	d.attrs = nil
	if d.status >= 500 {
		span.SetStatus(codes.Error, string(d.outcome))
	}
	span.End()
}
