package ingest_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"strings"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/gatehouse/gatehouse/ingest"
	"github.com/gatehouse/gatehouse/ingest/inbox"
	"github.com/gatehouse/gatehouse/internal/tracing"
)

// TestDeliveryTrace: with tracing on, a delivery is the root of a new trace
// (the provider's traceparent is only a link), carries the verification
// result and the secret id but no secret or Authorization header, links to
// the span of the statement that wrote it, and its context is stored with
// the inbox row and the outbox job; the delivery's log line carries its
// trace id. With tracing off nothing is stored.
func TestDeliveryTrace(t *testing.T) {
	sr := tracetest.NewSpanRecorder()
	tp := tracing.FromSDK(sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(sr)))
	h := newHarness(t, func(c *ingest.Config) {
		c.Tracer = tp
		c.Writer.(*inbox.Writer).SetTracer(tp)
		c.Logger = slog.New(tracing.LogHandler(c.Logger.Handler()))
	})
	const providerTrace = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
	body := envelope("evt_traced", "payment.succeeded", map[string]any{"payment_id": "pay_t"})
	hdr := h.sign("demo", demoSecret, body, h.now, "evt_traced")
	hdr.Set("Traceparent", providerTrace)
	hdr.Set("Authorization", "Bearer hostile_token_1")
	expectStatus(t, h.post("demo", hdr, body), 204)

	var server, write sdktrace.ReadOnlySpan
	for _, s := range sr.Ended() {
		switch s.SpanKind() {
		case trace.SpanKindServer:
			server = s
		case trace.SpanKindClient:
			write = s
		}
	}
	if server == nil || write == nil {
		t.Fatalf("spans: %v", sr.Ended())
	}
	if server.Parent().IsValid() || server.SpanContext().TraceID().String() == "0af7651916cd43dd8448eb211c80319c" {
		t.Error("the provider's traceparent became the delivery's parent")
	}
	linked := func(s sdktrace.ReadOnlySpan, to trace.SpanContext) bool {
		for _, l := range s.Links() {
			if l.SpanContext.SpanID() == to.SpanID() {
				return true
			}
		}
		return false
	}
	if len(server.Links()) != 2 || server.Links()[0].SpanContext.TraceID().String() != "0af7651916cd43dd8448eb211c80319c" {
		t.Errorf("delivery links %v: want the provider's traceparent and the write", server.Links())
	}
	if !linked(server, write.SpanContext()) || !linked(write, server.SpanContext()) {
		t.Error("delivery and write span are not linked both ways")
	}
	attrs := map[string]string{}
	for _, a := range server.Attributes() {
		attrs[string(a.Key)] = a.Value.Emit()
		if strings.Contains(a.Value.Emit(), demoSecret) || strings.Contains(a.Value.Emit(), "hostile_token_1") || strings.Contains(strings.ToLower(string(a.Key)), "authorization") {
			t.Errorf("attribute %s holds a secret", a.Key)
		}
	}
	for k, v := range map[string]string{"gatehouse.verified": "true", "gatehouse.secret_id": "current", "gatehouse.event_id": "evt_traced",
		"http.response.status_code": "204", "gatehouse.provider": "demo", "http.request.method": "POST"} {
		if attrs[k] != v {
			t.Errorf("attribute %s = %q, want %q", k, attrs[k], v)
		}
	}
	want := "00-" + server.SpanContext().TraceID().String() + "-" + server.SpanContext().SpanID().String() + "-01"
	var inboxTP, outboxTP string
	if err := h.pool.QueryRow(context.Background(), `SELECT i.traceparent, o.traceparent FROM inbox i JOIN outbox o USING (event_id) WHERE event_id = 'evt_traced'`).Scan(&inboxTP, &outboxTP); err != nil {
		t.Fatal(err)
	}
	if inboxTP != want || outboxTP != want {
		t.Errorf("stored %q / %q, want %q", inboxTP, outboxTP, want)
	}
	found := false
	for _, l := range strings.Split(h.logs.String(), "\n") {
		var rec map[string]any
		if json.Unmarshal([]byte(l), &rec) == nil && rec["msg"] == "webhook delivery" && rec["trace_id"] == server.SpanContext().TraceID().String() {
			found = true
		}
	}
	if !found {
		t.Errorf("no delivery log line with the trace id:\n%s", h.logs)
	}

	// Tracing off (the default harness): no trace context is stored.
	off := newHarness(t)
	expectStatus(t, off.send("evt_untraced", map[string]any{"payment_id": "pay_u"}), 204)
	if n := off.count("outbox", "event_id = 'evt_untraced' AND traceparent IS NULL"); n != 1 {
		t.Errorf("tracing off: %d untraced outbox rows, want 1", n)
	}
}
