// Package obs builds gatehouse's logger and metrics registry and serves the
// admin endpoints (/metrics, /healthz, /readyz).
package obs

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/gatehouse/gatehouse/internal/tracing"
)

// NewLogger returns a JSON slog logger at the given level (debug, info,
// warn, error); a line logged with a context holding a span carries its
// trace_id and span_id (tracing.LogHandler).
func NewLogger(w io.Writer, level string) *slog.Logger {
	var l slog.Level
	_ = l.UnmarshalText([]byte(level))
	return slog.New(tracing.LogHandler(slog.NewJSONHandler(w, &slog.HandlerOptions{Level: l})))
}

// NewRegistry returns the process's one metrics registry, with the Go and
// process collectors registered.
func NewRegistry() *prometheus.Registry {
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return reg
}

// Check reports whether a dependency is usable; nil means ready.
type Check func(ctx context.Context) error

// AdminHandler serves /metrics from reg, /healthz (the process answers) and
// /readyz (every check passes within two seconds; 503 otherwise).
func AdminHandler(reg *prometheus.Registry, log *slog.Logger, checks map[string]Check) http.Handler {
	mux := http.NewServeMux()
	// OpenMetrics when the scraper asks for it: the only format that
	// carries the latency histograms' exemplars (trace ids).
	mux.Handle("GET /metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{Registry: reg, EnableOpenMetrics: true}))
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		_, _ = io.WriteString(w, "ok\n")
	})
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, r *http.Request) {
		ctx, cancel := context.WithTimeout(r.Context(), 2*time.Second)
		defer cancel()
		for name, check := range checks {
			if err := check(ctx); err != nil {
				log.Warn("not ready", "check", name, "err", err)
				w.WriteHeader(http.StatusServiceUnavailable)
				_, _ = io.WriteString(w, name+": not ready\n")
				return
			}
		}
		_, _ = io.WriteString(w, "ready\n")
	})
	return mux
}

// dependencies exports gatehouse_dependency_up{dependency}: 1 when the
// dependency's check passes, 0 otherwise, evaluated at each scrape (within
// two seconds), so an alert rule can see what /readyz sees.
type dependencies struct {
	desc   *prometheus.Desc
	checks map[string]Check
}

// RegisterDependencies registers gatehouse_dependency_up for checks on reg.
func RegisterDependencies(reg prometheus.Registerer, checks map[string]Check) {
	reg.MustRegister(&dependencies{
		desc: prometheus.NewDesc("gatehouse_dependency_up",
			"1 when the dependency (database, kafka) answers this process, 0 when not; checked at each scrape.",
			[]string{"dependency"}, nil),
		checks: checks,
	})
}

func (d *dependencies) Describe(ch chan<- *prometheus.Desc) { ch <- d.desc }

func (d *dependencies) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	for name, check := range d.checks {
		up := 1.0
		if check(ctx) != nil {
			up = 0
		}
		ch <- prometheus.MustNewConstMetric(d.desc, prometheus.GaugeValue, up, name)
	}
}
