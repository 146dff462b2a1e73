package config

import (
	"net/url"

	"github.com/gatehouse/gatehouse/internal/tracing"
)

// Tracing is the tracing: block: OpenTelemetry export of the spans of one
// event's path (docs/TRACING.md). Off by default; the standard OTEL_*
// environment variables override it (tracing.Setup).
type Tracing struct {
	// Enabled turns tracing on. Default false.
	Enabled bool `yaml:"enabled"`
	// Endpoint is the OTLP/HTTP traces URL. Default
	// http://localhost:4318/v1/traces.
	Endpoint string `yaml:"endpoint"`
	// SampleRatio is the share of new traces kept, 0 < r <= 1, parent-based.
	// Default 1.
	SampleRatio float64 `yaml:"sample_ratio"`
	// ServiceName overrides the default service name gatehouse-<subcommand>.
	ServiceName string `yaml:"service_name"`
	// UIURL is the trace viewer's URL of one trace with {trace_id} in it
	// (e.g. http://jaeger:16686/trace/{trace_id}); the console's event page
	// links the event's trace id to it. Default none: the id is shown as text.
	UIURL string `yaml:"ui_url"`
}

// Settings returns the block as tracing.Settings.
func (t Tracing) Settings() tracing.Settings {
	return tracing.Settings{Enabled: t.Enabled, Endpoint: t.Endpoint, SampleRatio: t.SampleRatio, ServiceName: t.ServiceName}
}

func (t *Tracing) applyDefaults() {
	if t.SampleRatio == 0 {
		t.SampleRatio = 1
	}
}

func (t *Tracing) validate() error {
	if t.SampleRatio < 0 || t.SampleRatio > 1 {
		return errorf("tracing.sample_ratio: %v is outside 0..1", t.SampleRatio)
	}
	if t.Endpoint != "" {
		if u, err := url.Parse(t.Endpoint); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return errorf("tracing.endpoint: %q is not an http(s) URL", t.Endpoint)
		}
	}
	if t.UIURL != "" {
		if u, err := url.Parse(t.UIURL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return errorf("tracing.ui_url: %q is not an http(s) URL", t.UIURL)
		}
	}
	return nil
}
