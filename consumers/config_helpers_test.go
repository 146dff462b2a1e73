package consumers

import (
	"fmt"
	"log/slog"
	"sort"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/gatehouse/gatehouse/consumers/event"
	"github.com/gatehouse/gatehouse/consumers/fetch"
	"github.com/gatehouse/gatehouse/consumers/forward"
	"github.com/gatehouse/gatehouse/consumers/throttle"
	"github.com/gatehouse/gatehouse/internal/config"
)

// handlersFromConfig is, for the pipeline tests, what cmd/gatehouse wires
// (consumers_config.go, consumerHandlers): each configured provider's
// fetch (its api_url with its own and the catalogue's rules) and forward
// entries, the forward destinations shared, every figure on reg.
func handlersFromConfig(configured map[string]*config.Provider, apiTimeout time.Duration, now func() time.Time, log *slog.Logger,
	reg prometheus.Registerer) (*Registry, error) {
	flow := throttle.NewMetrics(reg)
	fm, wm := fetch.NewMetrics(reg, flow), forward.NewMetrics(reg, flow)
	out := NewRegistry()
	shared := forward.NewDestinations(wm)
	names := make([]string, 0, len(configured))
	for n := range configured {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, name := range names {
		p := configured[name]
		if p == nil {
			continue
		}
		var fetcher event.Handler
		api := p.APIRules()
		if p.APIURL != "" && len(api.Fetch) > 0 {
			client, err := fetch.NewAPIClient(fetch.APIClientConfig{BaseURL: p.APIURL, Key: p.APIKeyValue(), Version: p.APIVersion,
				VersionHeader: api.VersionHeader, Auth: api.Auth, AuthHeader: api.AuthHeader, Accept: api.Accept, Timeout: apiTimeout,
				Provider: name, Concurrency: p.APIConcurrency, RateLimit: p.APIRateLimit, RateBurst: p.APIRateBurst,
				Metrics: fm, Now: now})
			if err != nil {
				return nil, fmt.Errorf("provider %s: %w", name, err)
			}
			f, err := fetch.NewFetcher(api.Fetch, client, p.APIVersion)
			if err != nil {
				return nil, fmt.Errorf("provider %s: %w", name, err)
			}
			fetcher = f
		} else if p.APIURL != "" {
			log.Info("provider has an api_url but no fetch rules", "provider", name)
		}
		var forwards []Forwarder
		for i, f := range p.Forward {
			fw, err := forward.NewForwarder(forward.Config{Provider: name, URL: f.URL, Secret: string(f.SecretValue()), Types: f.Types,
				When: f.When, Transform: f.TransformSource(), TransformTimeout: f.TransformTimeout,
				Include: f.Include == config.IncludeObject, Timeout: f.Timeout, Concurrency: f.Concurrency,
				RateLimit: f.RateLimit, RateBurst: f.RateBurst, BreakerFailures: f.BreakerFailures,
				BreakerProbe: f.BreakerProbe, Shared: shared, Metrics: wm, Now: now})
			if err != nil {
				return nil, fmt.Errorf("provider %s: forward[%d]: %w", name, i, err)
			}
			forwards = append(forwards, fw)
		}
		if h := NewProviderHandler(fetcher, forwards...); h != nil {
			out.Register(name, "*", h)
		}
	}
	return out, nil
}

// maintenanceConfigOf is, for the retention test, what cmd/gatehouse
// wires (consumers_config.go, maintenanceConfig).
func maintenanceConfigOf(c *config.Config, deps MaintenanceConfig) MaintenanceConfig {
	out := deps
	_, out.KeyLifetime = c.Lifetimes()
	out.PayloadRetention = func(provider string) time.Duration { p, _ := c.Retention(provider); return p }
	out.ObjectRetention = c.ObjectRetention
	out.PartitionInterval, out.Ahead, out.CheckInterval = c.Storage.PartitionInterval, c.Storage.Ahead, c.Storage.CheckInterval
	return out
}
