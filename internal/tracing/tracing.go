// Package tracing sets up OpenTelemetry tracing for one gatehouse process
// (the official Go SDK, OTLP over HTTP, configured by the standard OTEL_*
// environment variables and the tracing: config block) and carries trace
// context through the places gatehouse stores it: the W3C traceparent text
// kept in the inbox and outbox rows and sent as Kafka headers. Tracing is
// off by default; off, every tracer is a no-op and nothing is exported.
package tracing

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"

	"github.com/gatehouse/gatehouse/internal/settings"
)

// Settings is the tracing: block of the configuration, declared with its
// defaults and validation in internal/settings; the OTEL_* environment
// variables override it (Setup).
type Settings = settings.Tracing

// Provider is the process's tracer provider: the SDK's when tracing is on,
// a no-op one otherwise.
type Provider struct {
	trace.TracerProvider
	sdk *sdktrace.TracerProvider
}

// Enabled reports whether spans are recorded and exported.
func (p *Provider) Enabled() bool { return p != nil && p.sdk != nil }

// Shutdown exports the spans still buffered and stops the exporter; a
// no-op provider returns nil at once.
func (p *Provider) Shutdown(ctx context.Context) error {
	if !p.Enabled() {
		return nil
	}
	if err := p.sdk.Shutdown(ctx); err != nil {
		return fmt.Errorf("tracing shutdown: %w", err)
	}
	return nil
}

// ForceFlush exports the spans buffered so far (tests and replay, a
// short-lived command, call it before they read the backend or exit).
func (p *Provider) ForceFlush(ctx context.Context) error {
	if !p.Enabled() {
		return nil
	}
	return p.sdk.ForceFlush(ctx)
}

// Off is the no-op provider: what every stage uses when its Config has no
// tracer provider.
func Off() *Provider { return &Provider{TracerProvider: noop.NewTracerProvider()} }

// Tracer returns tp's tracer for a gatehouse stage, or a no-op tracer when
// tp is nil.
func Tracer(tp trace.TracerProvider, stage string) trace.Tracer {
	if tp == nil {
		return noop.NewTracerProvider().Tracer("github.com/gatehouse/gatehouse/" + stage)
	}
	return tp.Tracer("github.com/gatehouse/gatehouse/" + stage)
}

// Setup builds the provider of one process (service is the default service
// name, e.g. "gatehouse-serve") from s and the OTEL_* variables read
// through getenv: OTEL_SDK_DISABLED, OTEL_TRACES_EXPORTER (otlp or none),
// OTEL_EXPORTER_OTLP_ENDPOINT (the base URL; /v1/traces is appended),
// OTEL_EXPORTER_OTLP_TRACES_ENDPOINT (the full URL), OTEL_SERVICE_NAME,
// OTEL_RESOURCE_ATTRIBUTES, OTEL_TRACES_SAMPLER and OTEL_TRACES_SAMPLER_ARG.
// Off, it returns Off() and no error. It fails on an endpoint that is not
// an http(s) URL or a sampler it does not know; it does not contact the
// collector (export errors are reported by the SDK, spans are dropped).
func Setup(ctx context.Context, s Settings, service string, getenv func(string) string) (*Provider, error) {
	on := s.Enabled || getenv("OTEL_EXPORTER_OTLP_ENDPOINT") != "" || getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") != ""
	if strings.EqualFold(getenv("OTEL_SDK_DISABLED"), "true") || strings.EqualFold(getenv("OTEL_TRACES_EXPORTER"), "none") {
		on = false
	}
	if !on {
		return Off(), nil
	}
	if e := getenv("OTEL_TRACES_EXPORTER"); e != "" && e != "otlp" {
		return nil, fmt.Errorf("tracing: OTEL_TRACES_EXPORTER=%q: only otlp and none are supported", e)
	}
	s.ApplyDefaults()
	if err := s.Validate(); err != nil {
		return nil, fmt.Errorf("tracing: %w", err)
	}
	endpoint := s.Endpoint
	if v := getenv("OTEL_EXPORTER_OTLP_ENDPOINT"); v != "" {
		endpoint = strings.TrimRight(v, "/") + "/v1/traces"
	}
	if v := getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"); v != "" {
		endpoint = v
	}
	if u, err := url.Parse(endpoint); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("tracing: endpoint %q is not an http(s) URL", endpoint)
	}
	sampler, err := samplerOf(s.SampleRatio, getenv("OTEL_TRACES_SAMPLER"), getenv("OTEL_TRACES_SAMPLER_ARG"))
	if err != nil {
		return nil, err
	}
	name := s.ServiceName
	if name == "" {
		name = service
	}
	if v := getenv("OTEL_SERVICE_NAME"); v != "" {
		name = v
	}
	attrs := resourceAttributes(getenv("OTEL_RESOURCE_ATTRIBUTES"))
	attrs = append(attrs, attribute.String("service.name", name))
	exp, err := otlptracehttp.New(ctx, otlptracehttp.WithEndpointURL(endpoint), otlptracehttp.WithTimeout(5*time.Second))
	if err != nil {
		return nil, fmt.Errorf("tracing: otlp exporter: %w", err)
	}
	sdk := newSDK(sampler, resource.NewSchemaless(attrs...), sdktrace.WithBatcher(exp, sdktrace.WithBatchTimeout(time.Second)))
	return &Provider{TracerProvider: sdk, sdk: sdk}, nil
}

// newSDK is the SDK provider Setup builds: sampler, resource (nil: the
// SDK's default) and span limits (spanLimits), plus opts (the exporter's
// processor).
func newSDK(sampler sdktrace.Sampler, res *resource.Resource, opts ...sdktrace.TracerProviderOption) *sdktrace.TracerProvider {
	opts = append(opts, sdktrace.WithSampler(sampler), sdktrace.WithRawSpanLimits(spanLimits()))
	if res != nil {
		opts = append(opts, sdktrace.WithResource(res))
	}
	return sdktrace.NewTracerProvider(opts...)
}

// spanLimits are the SDK's limits (its defaults, or the OTEL_SPAN_*
// variables) with string attribute values cut to AttributeValueLimit
// characters: span attributes hold request headers a sender chooses.
func spanLimits() sdktrace.SpanLimits {
	l := sdktrace.NewSpanLimits()
	if l.AttributeValueLengthLimit < 0 || l.AttributeValueLengthLimit > AttributeValueLimit {
		l.AttributeValueLengthLimit = AttributeValueLimit
	}
	return l
}

func samplerOf(ratio float64, name, arg string) (sdktrace.Sampler, error) {
	if arg != "" {
		v, err := strconv.ParseFloat(arg, 64)
		if err != nil || v < 0 || v > 1 {
			return nil, fmt.Errorf("tracing: OTEL_TRACES_SAMPLER_ARG=%q is not a ratio between 0 and 1", arg)
		}
		ratio = v
	}
	switch name {
	case "", "parentbased_traceidratio":
		return sdktrace.ParentBased(sdktrace.TraceIDRatioBased(ratio)), nil
	case "always_on":
		return sdktrace.AlwaysSample(), nil
	case "always_off":
		return sdktrace.NeverSample(), nil
	case "traceidratio":
		return sdktrace.TraceIDRatioBased(ratio), nil
	case "parentbased_always_on":
		return sdktrace.ParentBased(sdktrace.AlwaysSample()), nil
	case "parentbased_always_off":
		return sdktrace.ParentBased(sdktrace.NeverSample()), nil
	}
	return nil, fmt.Errorf("tracing: OTEL_TRACES_SAMPLER=%q is not a supported sampler", name)
}

// resourceAttributes parses OTEL_RESOURCE_ATTRIBUTES (k=v,k2=v2,
// percent-encoded values); malformed pairs are skipped.
func resourceAttributes(v string) []attribute.KeyValue {
	var out []attribute.KeyValue
	for _, pair := range strings.Split(v, ",") {
		k, val, ok := strings.Cut(strings.TrimSpace(pair), "=")
		if !ok || k == "" {
			continue
		}
		if dec, err := url.PathUnescape(val); err == nil {
			val = dec
		}
		out = append(out, attribute.String(strings.TrimSpace(k), strings.TrimSpace(val)))
	}
	return out
}

var tc = propagation.TraceContext{}

// traceparentCarrier carries the traceparent text alone: what Traceparent
// and Parse hand the W3C propagator, without a map per call (they run for
// every delivery and every event written).
type traceparentCarrier struct{ tp string }

func (c *traceparentCarrier) Get(key string) string {
	if key == "traceparent" {
		return c.tp
	}
	return ""
}

func (c *traceparentCarrier) Set(key, value string) {
	if key == "traceparent" {
		c.tp = value
	}
}

func (c *traceparentCarrier) Keys() []string { return []string{"traceparent"} }

// Traceparent returns the W3C traceparent of the span in ctx, or "" when
// ctx holds no valid span context.
func Traceparent(ctx context.Context) string {
	if !trace.SpanContextFromContext(ctx).IsValid() {
		return ""
	}
	var c traceparentCarrier
	tc.Inject(ctx, &c)
	return c.tp
}

// ErrBadTraceparent is returned by Parse for text that is not a valid W3C
// traceparent.
var ErrBadTraceparent = errors.New("not a valid traceparent")

// Parse returns the remote span context of a stored or received
// traceparent; it fails with ErrBadTraceparent (an empty text included).
func Parse(traceparent string) (trace.SpanContext, error) {
	if traceparent == "" {
		return trace.SpanContext{}, ErrBadTraceparent
	}
	sc := trace.SpanContextFromContext(tc.Extract(context.Background(), &traceparentCarrier{tp: traceparent}))
	if !sc.IsValid() {
		return trace.SpanContext{}, ErrBadTraceparent
	}
	return sc, nil
}

// WithParent returns ctx with the span context of traceparent as its
// remote parent; ctx unchanged when the text is empty or invalid.
func WithParent(ctx context.Context, traceparent string) context.Context {
	sc, err := Parse(traceparent)
	if err != nil {
		return ctx
	}
	return trace.ContextWithRemoteSpanContext(ctx, sc)
}

// LinkTo returns a link to the span of traceparent, and false when the
// text is empty or invalid.
func LinkTo(traceparent string, attrs ...attribute.KeyValue) (trace.Link, bool) {
	sc, err := Parse(traceparent)
	if err != nil {
		return trace.Link{}, false
	}
	return trace.Link{SpanContext: sc, Attributes: attrs}, true
}

// TraceID returns the trace id of the sampled span in ctx, or "" (an
// exemplar label is attached only for a trace that is exported).
func TraceID(ctx context.Context) string {
	sc := trace.SpanContextFromContext(ctx)
	if !sc.IsValid() || !sc.IsSampled() {
		return ""
	}
	return sc.TraceID().String()
}

// Recording reports whether tp is an enabled Provider (its spans are
// recorded); a stage skips span work altogether when it is not.
func Recording(tp trace.TracerProvider) bool {
	p, ok := tp.(*Provider)
	return ok && p.Enabled()
}

// FromSDK wraps an SDK tracer provider built elsewhere (an in-memory
// exporter in tests, another processor): spans are recorded, and Shutdown
// shuts sdk down.
func FromSDK(sdk *sdktrace.TracerProvider) *Provider {
	return &Provider{TracerProvider: sdk, sdk: sdk}
}
