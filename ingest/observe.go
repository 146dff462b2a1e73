package ingest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"log/slog"
	"net/http"
	"regexp"
	"strconv"
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
}

// begin starts observing a delivery admitted past the cheap refusals: its
// request id (answered in X-Request-Id) and its span.
func (r *Receiver) begin(w http.ResponseWriter, req *http.Request, ep *endpoint) (context.Context, *delivery) {
	d := &delivery{ep: ep, w: w, start: r.cfg.Now(), requestID: requestID(req)}
	w.Header().Set("X-Request-Id", d.requestID)
	ctx, span := r.startDelivery(req, ep)
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

// startDelivery starts the delivery's server span, always the root of a
// new trace: a provider's traceparent header is attacker-controlled, so it
// is never a parent, only a link. Recorded: the HTTP server attributes, the
// allow-listed request headers (the sender's User-Agent and X-Request-Id
// cut to tracing.AttributeValueLimit bytes) and the provider; never the body, the
// signature headers, Authorization or cookies. With tracing off it returns
// the request's context and its no-op span, at no cost.
func (r *Receiver) startDelivery(req *http.Request, ep *endpoint) (context.Context, trace.Span) {
	if !r.tracing {
		return req.Context(), trace.SpanFromContext(req.Context())
	}
	attrs := append([]attribute.KeyValue{
		attribute.String("http.request.method", req.Method),
		attribute.String("http.route", "/webhooks/"+ep.name),
		attribute.String("url.path", req.URL.Path),
		attribute.String("url.scheme", scheme(req)),
		attribute.String("server.address", req.Host),
		attribute.String("network.peer.address", req.RemoteAddr),
		attribute.String("user_agent.original", tracing.Truncate(req.UserAgent())),
		attribute.String("gatehouse.provider", ep.name),
	}, tracing.RequestHeaders(req.Header)...)
	opts := []trace.SpanStartOption{trace.WithNewRoot(), trace.WithSpanKind(trace.SpanKindServer), trace.WithAttributes(attrs...)}
	if l, ok := tracing.LinkTo(req.Header.Get("Traceparent"), attribute.String("gatehouse.link", "provider traceparent (untrusted)")); ok {
		opts = append(opts, trace.WithLinks(l))
	}
	return r.tracer.Start(req.Context(), "POST /webhooks/"+ep.name, opts...)
}

func scheme(req *http.Request) string {
	if req.TLS != nil {
		return "https"
	}
	return "http"
}

// endDelivery records the delivery's result on its span and ends it.
func endDelivery(span trace.Span, d *delivery) {
	if !span.IsRecording() {
		return
	}
	// One call with every attribute: each SetAttributes takes the span's
	// lock and may grow its attribute slice again.
	attrs := make([]attribute.KeyValue, 0, 10)
	attrs = append(attrs,
		attribute.Int("http.response.status_code", d.status),
		attribute.Bool("gatehouse.verified", d.verified),
		attribute.String("gatehouse.outcome", string(d.outcome)),
		attribute.String("gatehouse.event_id", d.eventID),
		attribute.String("gatehouse.event_type", d.typ),
		attribute.String("gatehouse.queue_id", d.queueID),
		attribute.String("gatehouse.request_id", d.requestID),
	)
	if d.secretID != "" {
		attrs = append(attrs, attribute.String("gatehouse.secret_id", d.secretID))
	}
	if d.reason != "" {
		attrs = append(attrs, attribute.String("gatehouse.reason", d.reason))
	}
	if d.batch {
		attrs = append(attrs, attribute.Int("gatehouse.events", d.events))
	}
	span.SetAttributes(attrs...)
	if d.status >= 500 {
		span.SetStatus(codes.Error, string(d.outcome))
	}
	span.End()
}
