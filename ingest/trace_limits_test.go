package ingest_test

import (
	"strings"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/gatehouse/gatehouse/ingest"
	"github.com/gatehouse/gatehouse/internal/tracing"
)

// TestDeliverySpanBoundsAttackerHeaders: a delivery with a 64 KiB
// User-Agent and a 64 KiB X-Request-Id (both attacker-supplied) is
// recorded with every attribute value at most tracing.AttributeValueLimit
// bytes, even by a tracer provider that sets no limit of its own.
func TestDeliverySpanBoundsAttackerHeaders(t *testing.T) {
	sr := tracetest.NewSpanRecorder()
	tp := tracing.FromSDK(sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(sr))) // no span limits
	h := newHarness(t, func(c *ingest.Config) { c.Tracer = tp })
	body := envelope("evt_big_headers", "payment.succeeded", map[string]any{"payment_id": "pay_b"})
	hdr := h.sign("demo", demoSecret, body, h.now, "evt_big_headers")
	hdr.Set("User-Agent", strings.Repeat("u", 64<<10))
	hdr.Set("X-Request-Id", strings.Repeat("r", 64<<10))
	expectStatus(t, h.post("demo", hdr, body), 204)
	var server sdktrace.ReadOnlySpan
	for _, s := range sr.Ended() {
		if s.SpanKind() == trace.SpanKindServer {
			server = s
		}
	}
	if server == nil {
		t.Fatalf("no delivery span: %v", sr.Ended())
	}
	seen := 0
	for _, a := range server.Attributes() {
		v := a.Value.Emit()
		if len(v) > tracing.AttributeValueLimit {
			t.Errorf("attribute %s recorded with %d bytes, want at most %d", a.Key, len(v), tracing.AttributeValueLimit)
		}
		if strings.HasPrefix(v, "uuuu") || strings.HasPrefix(v, "rrrr") {
			seen++
		}
	}
	if seen < 2 { // user_agent.original and http.request.header.x-request-id: kept, cut
		t.Errorf("%d truncated header attributes, want 2", seen)
	}
}
