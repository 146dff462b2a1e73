package tracing

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"unicode/utf8"

	"go.opentelemetry.io/otel/attribute"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
)

// TestAttributeValuesAreBounded: the provider Setup builds cuts every
// string attribute value to AttributeValueLimit, whoever records it, and
// RequestHeaders truncates the attacker-supplied headers itself (a
// provider built elsewhere may have no limit), without splitting a UTF-8
// sequence.
func TestAttributeValuesAreBounded(t *testing.T) {
	huge := strings.Repeat("é", 32<<10) // 64 KiB
	sr := tracetest.NewSpanRecorder()
	sdk := newSDK(sdktrace.AlwaysSample(), nil, sdktrace.WithSpanProcessor(sr))
	_, span := sdk.Tracer("t").Start(context.Background(), "s", trace.WithAttributes(attribute.String("user_agent.original", huge)))
	span.End()
	if n := len(sr.Ended()); n != 1 {
		t.Fatalf("%d spans", n)
	}
	for _, a := range sr.Ended()[0].Attributes() { // the SDK counts characters
		if v := a.Value.AsString(); utf8.RuneCountInString(v) > AttributeValueLimit || !utf8.ValidString(v) {
			t.Errorf("attribute %s recorded with %d characters, want at most %d", a.Key, utf8.RuneCountInString(v), AttributeValueLimit)
		}
	}
	h := http.Header{}
	h.Set("Content-Type", huge)
	h.Set("X-Request-Id", strings.Repeat("r", 64<<10))
	got := RequestHeaders(h)
	if len(got) != 2 {
		t.Fatalf("headers %v", got)
	}
	for _, a := range got {
		if v := a.Value.AsString(); len(v) > AttributeValueLimit || !utf8.ValidString(v) {
			t.Errorf("%s: %d bytes, want at most %d", a.Key, len(v), AttributeValueLimit)
		}
	}
	if s := Truncate("short"); s != "short" {
		t.Errorf("Truncate(short) = %q", s)
	}
}
