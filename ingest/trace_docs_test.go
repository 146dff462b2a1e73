package ingest_test

import (
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/gatehouse/gatehouse/ingest"
	"github.com/gatehouse/gatehouse/internal/tracing"
)

// TestDeliverySpanAttributesDocumented: the attributes docs/TRACING.md
// lists for the delivery span are the ones it records, no more (an
// attribute costs every span CPU in the SDK and the export) and no fewer.
// An accepted delivery with a User-Agent, a Content-Type and an
// X-Request-Id that cannot be the request id, and a delivery refused for
// its signature, record every documented attribute between them but the
// batch's gatehouse.events (TestBatchDeliveriesRecordEachEventOnce's
// provider).
func TestDeliverySpanAttributesDocumented(t *testing.T) {
	b, err := os.ReadFile("../docs/TRACING.md")
	if err != nil {
		t.Fatal(err)
	}
	var row string
	for _, l := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(l, "| `POST /webhooks/<provider>` |") {
			row = l
		}
	}
	if row == "" {
		t.Fatal("docs/TRACING.md has no row for the delivery span")
	}
	// The attribute column, up to its prose ("Nothing twice: ...").
	cols := strings.Split(row, "|")
	attrCol, _, _ := strings.Cut(cols[4], "Nothing twice")
	var documented []string
	for _, m := range regexp.MustCompile("`([a-z_]+(?:\\.[a-z_.-]+)+)`").FindAllStringSubmatch(attrCol, -1) {
		documented = append(documented, m[1])
	}

	sr := tracetest.NewSpanRecorder()
	tp := tracing.FromSDK(sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(sr)))
	h := newHarness(t, func(c *ingest.Config) { c.Tracer = tp })
	body := envelope("evt_attrs", "payment.succeeded", map[string]any{"payment_id": "pay_a"})
	hdr := h.sign("demo", demoSecret, body, h.now, "evt_attrs")
	hdr.Set("User-Agent", "Stripe/1.0")
	hdr.Set("X-Request-Id", "not a request id!")
	hdr.Set("Traceparent", "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01")
	expectStatus(t, h.post("demo", hdr, body), 204)
	bad := h.sign("demo", "not-the-secret", body, h.now, "evt_attrs")
	if r := h.post("demo", bad, body); r.status/100 != 4 {
		t.Fatalf("a delivery signed with another secret: status %d", r.status)
	}

	recorded := map[string]bool{}
	for _, s := range sr.Ended() {
		if s.SpanKind() != trace.SpanKindServer {
			continue
		}
		for _, a := range s.Attributes() {
			recorded[string(a.Key)] = true
		}
	}
	for k := range recorded {
		if !slices.Contains(documented, k) {
			t.Errorf("the delivery span records %s, which docs/TRACING.md does not list", k)
		}
	}
	for _, k := range documented {
		if !recorded[k] && k != "gatehouse.events" {
			t.Errorf("docs/TRACING.md lists %s, which the delivery span did not record", k)
		}
	}
	if len(documented) < 10 {
		t.Errorf("read %d attributes from docs/TRACING.md's delivery span row: %v", len(documented), documented)
	}
}
