package tracing

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
)

func env(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

func TestSetupOffByDefault(t *testing.T) {
	for name, e := range map[string]map[string]string{
		"nothing set":   {},
		"sdk disabled":  {"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318", "OTEL_SDK_DISABLED": "true"},
		"exporter none": {"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318", "OTEL_TRACES_EXPORTER": "none"},
	} {
		p, err := Setup(context.Background(), Settings{}, "gatehouse-test", env(e))
		if err != nil || p.Enabled() || Recording(p) {
			t.Errorf("%s: enabled=%v err=%v, want off", name, p.Enabled(), err)
		}
		// Off costs no span: the tracer is the no-op one.
		_, span := Tracer(p, "ingest").Start(context.Background(), "x")
		if span.IsRecording() || span.SpanContext().IsValid() {
			t.Errorf("%s: a span was recorded with tracing off", name)
		}
	}
}

func TestSetupFromEnvironment(t *testing.T) {
	p, err := Setup(context.Background(), Settings{}, "gatehouse-test", env(map[string]string{
		"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318", "OTEL_TRACES_SAMPLER": "always_on"}))
	if err != nil || !p.Enabled() {
		t.Fatalf("OTEL_EXPORTER_OTLP_ENDPOINT set: enabled=%v err=%v", p.Enabled(), err)
	}
	_ = p.Shutdown(context.Background())
	for name, e := range map[string]map[string]string{
		"bad sampler":  {"OTEL_TRACES_SAMPLER": "sometimes"},
		"bad ratio":    {"OTEL_TRACES_SAMPLER_ARG": "2"},
		"bad exporter": {"OTEL_TRACES_EXPORTER": "zipkin"},
		"bad endpoint": {"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "localhost:4318"},
	} {
		if _, err := Setup(context.Background(), Settings{Enabled: true}, "gatehouse-test", env(e)); err == nil {
			t.Errorf("%s accepted", name)
		}
	}
}

func TestResourceAttributes(t *testing.T) {
	got := resourceAttributes("deployment.environment=prod, team=pay%20ments,broken")
	if len(got) != 2 || got[1].Value.AsString() != "pay ments" {
		t.Fatalf("%v", got)
	}
}

func TestTraceparentRoundTrip(t *testing.T) {
	const tp = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	ctx := WithParent(context.Background(), tp)
	if got := Traceparent(ctx); got != tp {
		t.Fatalf("Traceparent = %q, want %q", got, tp)
	}
	for _, bad := range []string{"", "00-zz-00f067aa0ba902b7-01", "00-00000000000000000000000000000000-00f067aa0ba902b7-01"} {
		if _, err := Parse(bad); err == nil {
			t.Errorf("Parse(%q) accepted", bad)
		}
		if Traceparent(WithParent(context.Background(), bad)) != "" {
			t.Errorf("WithParent(%q) gave a context", bad)
		}
	}
	if _, ok := LinkTo("garbage"); ok {
		t.Error("LinkTo accepted garbage")
	}
}

func recorder() (*Provider, *tracetest.SpanRecorder) {
	sr := tracetest.NewSpanRecorder()
	return FromSDK(sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(sr))), sr
}

func TestLogHandlerAddsTraceIDs(t *testing.T) {
	var buf bytes.Buffer
	log := slog.New(LogHandler(slog.NewJSONHandler(&buf, nil))).With("component", "x")
	p, _ := recorder()
	ctx, span := Tracer(p, "test").Start(context.Background(), "op")
	log.InfoContext(ctx, "with span")
	span.End()
	log.Info("without span")
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	var first, second map[string]any
	_ = json.Unmarshal([]byte(lines[0]), &first)
	_ = json.Unmarshal([]byte(lines[1]), &second)
	if first["trace_id"] != span.SpanContext().TraceID().String() || first["span_id"] != span.SpanContext().SpanID().String() {
		t.Errorf("line with a span: %s", lines[0])
	}
	if _, ok := second["trace_id"]; ok {
		t.Errorf("line without a span has a trace_id: %s", lines[1])
	}
}

func TestObserveExemplar(t *testing.T) {
	h := prometheus.NewHistogram(prometheus.HistogramOpts{Name: "h", Buckets: []float64{1}})
	p, _ := recorder()
	ctx, span := Tracer(p, "test").Start(context.Background(), "op")
	Observe(ctx, h, 0.5)
	Observe(context.Background(), h, 0.5)
	span.End()
	var m dto.Metric
	if err := h.Write(&m); err != nil {
		t.Fatal(err)
	}
	ex := m.GetHistogram().GetBucket()[0].GetExemplar()
	if m.GetHistogram().GetSampleCount() != 2 || ex == nil || ex.GetLabel()[0].GetValue() != span.SpanContext().TraceID().String() {
		t.Fatalf("exemplar %v, count %d", ex, m.GetHistogram().GetSampleCount())
	}
	// An unsampled trace gives no exemplar.
	ctx = trace.ContextWithSpanContext(context.Background(), trace.NewSpanContext(trace.SpanContextConfig{
		TraceID: trace.TraceID{1}, SpanID: trace.SpanID{1}}))
	if TraceID(ctx) != "" {
		t.Error("unsampled span gave a trace id")
	}
}

func TestRequestHeadersAllowList(t *testing.T) {
	h := http.Header{}
	h.Set("Authorization", "Bearer secret")
	h.Set("Cookie", "session=secret")
	h.Set("Stripe-Signature", "t=1,v1=secret")
	h.Set("X-Gatehouse-Signature", "secret")
	h.Set("User-Agent", "Stripe/1.0") // recorded as user_agent.original, not as a header
	h.Set("Content-Type", "application/json")
	for _, a := range RequestHeaders(h) {
		if strings.Contains(a.Value.AsString(), "secret") {
			t.Errorf("recorded %s", a.Key)
		}
	}
	if got := RequestHeaders(h); len(got) != 1 || got[0].Key != "http.request.header.content-type" {
		t.Errorf("want only content-type, got %v", got)
	}
}

// Exemplars of ordinary observations are at most one per exemplarEvery;
// a slow observation always carries one.
func TestObserveExemplarThrottle(t *testing.T) {
	h := prometheus.NewHistogram(prometheus.HistogramOpts{Name: "h", Buckets: []float64{0.01, 1}})
	p, _ := recorder()
	time.Sleep(exemplarEvery)
	ctx1, s1 := Tracer(p, "test").Start(context.Background(), "first")
	ctx2, s2 := Tracer(p, "test").Start(context.Background(), "second")
	ctx3, s3 := Tracer(p, "test").Start(context.Background(), "slow")
	Observe(ctx1, h, 0.001)
	Observe(ctx2, h, 0.002) // within exemplarEvery: no exemplar
	Observe(ctx3, h, 0.5)   // slow: always
	for _, s := range []trace.Span{s1, s2, s3} {
		s.End()
	}
	var m dto.Metric
	if err := h.Write(&m); err != nil {
		t.Fatal(err)
	}
	b := m.GetHistogram().GetBucket()
	if ex := b[0].GetExemplar(); ex == nil || ex.GetLabel()[0].GetValue() != s1.SpanContext().TraceID().String() {
		t.Errorf("fast bucket's exemplar %v, want the first observation's trace", ex)
	}
	if ex := b[1].GetExemplar(); ex == nil || ex.GetLabel()[0].GetValue() != s3.SpanContext().TraceID().String() {
		t.Errorf("slow bucket's exemplar %v, want the slow observation's trace", ex)
	}
}
