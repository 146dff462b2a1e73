package settings

import "net/url"

// DefaultTracingEndpoint is the OTLP/HTTP default traces URL.
const DefaultTracingEndpoint = "http://localhost:4318/v1/traces"

// Tracing is the tracing: block: OpenTelemetry export of the spans of one
// event's path (docs/TRACING.md). Off by default; the standard OTEL_*
// environment variables override it (tracing.Setup).
type Tracing struct {
	// Enabled turns tracing on. Default false. Setting
	// OTEL_EXPORTER_OTLP_ENDPOINT or OTEL_EXPORTER_OTLP_TRACES_ENDPOINT
	// turns it on too; OTEL_SDK_DISABLED=true or OTEL_TRACES_EXPORTER=none
	// turn it off whatever the file says.
	Enabled bool `yaml:"enabled"`
	// Endpoint is the OTLP/HTTP traces URL. Default
	// http://localhost:4318/v1/traces (the OTLP default).
	Endpoint string `yaml:"endpoint"`
	// SampleRatio is the share of new traces kept, 0 < r <= 1, parent-based:
	// a span whose stored or propagated parent was sampled is sampled.
	// Default 1.
	SampleRatio float64 `yaml:"sample_ratio"`
	// ServiceName overrides the default service name gatehouse-<subcommand>.
	ServiceName string `yaml:"service_name"`
	// UIURL is the trace viewer's URL of one trace with {trace_id} in it
	// (e.g. http://jaeger:16686/trace/{trace_id}); the console's event page
	// links the event's trace id to it. Default none: the id is shown as text.
	UIURL string `yaml:"ui_url"`
}

// ApplyDefaults fills the zero settings with their defaults.
func (t *Tracing) ApplyDefaults() {
	setDefault(&t.Endpoint, DefaultTracingEndpoint)
	setDefault(&t.SampleRatio, 1)
}

// Validate returns the first setting that is out of range, naming its key.
func (t *Tracing) Validate() error {
	if t.SampleRatio < 0 || t.SampleRatio > 1 {
		return errorf("tracing.sample_ratio: %v is outside 0..1", t.SampleRatio)
	}
	if t.Endpoint != "" && !httpURL(t.Endpoint) {
		return errorf("tracing.endpoint: %q is not an http(s) URL", t.Endpoint)
	}
	if t.UIURL != "" && !httpURL(t.UIURL) {
		return errorf("tracing.ui_url: %q is not an http(s) URL", t.UIURL)
	}
	return nil
}

func httpURL(s string) bool {
	u, err := url.Parse(s)
	return err == nil && (u.Scheme == "http" || u.Scheme == "https") && u.Host != ""
}
