package wiring

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

// ConsumerParts are what the consumers do with one provider's events: the
// declarative fetch (nil: none) and the forward entries, which
// consumers.NewProviderHandler joins. (Package consumers is not imported
// here, so its own tests can build their handlers with this.)
type ConsumerParts struct {
	Fetch    event.Handler
	Forwards []*forward.Forwarder
}

// Consumers builds the parts of each of configured: the fetch of a
// provider with an api_url (its own fetch rules, then the catalogue's:
// providers.Kind.API), carrying its api_concurrency, api_rate_limit and
// api_rate_burst, and its forward entries; entries of any provider whose
// URLs name one destination (redact.DestinationKey) share its circuit
// breaker, concurrency and rate limit. Every figure goes to reg (nil: not
// registered). A provider with neither fetch nor forward has no parts: its
// events are recorded as skipped, and this is logged once. It fails on an
// invalid rule, api_url or forward destination, naming the provider.
func Consumers(configured map[string]*config.Provider, apiTimeout time.Duration, now func() time.Time, log *slog.Logger, reg prometheus.Registerer) (map[string]ConsumerParts, error) {
	flow := throttle.NewMetrics(reg)
	fm, wm := fetch.NewMetrics(reg, flow), forward.NewMetrics(reg, flow)
	shared := forward.NewDestinations(wm)
	names := make([]string, 0, len(configured))
	for n, p := range configured {
		if p != nil {
			names = append(names, n)
		}
	}
	sort.Strings(names)
	out := map[string]ConsumerParts{}
	for _, name := range names {
		parts, err := consumerParts(name, configured[name], apiTimeout, now, log, fm, wm, shared)
		if err != nil {
			return nil, fmt.Errorf("provider %s: %w", name, err)
		}
		if parts.Fetch != nil || len(parts.Forwards) > 0 {
			out[name] = parts
		}
	}
	return out, nil
}

func consumerParts(name string, p *config.Provider, apiTimeout time.Duration, now func() time.Time, log *slog.Logger,
	fm *fetch.Metrics, wm *forward.Metrics, shared *forward.Destinations) (ConsumerParts, error) {
	var out ConsumerParts
	api := p.APIRules()
	switch {
	case p.APIURL != "" && len(api.Fetch) > 0:
		client, err := fetch.NewAPIClient(fetch.APIClientConfig{BaseURL: p.APIURL, Key: p.APIKeyValue(), Version: p.APIVersion,
			VersionHeader: api.VersionHeader, Auth: api.Auth, AuthHeader: api.AuthHeader, Accept: api.Accept, Timeout: apiTimeout,
			Provider: name, Concurrency: p.APIConcurrency, RateLimit: p.APIRateLimit, RateBurst: p.APIRateBurst,
			Metrics: fm, Now: now})
		if err != nil {
			return out, err
		}
		if out.Fetch, err = fetch.NewFetcher(api.Fetch, client, p.APIVersion); err != nil {
			return out, err
		}
	case p.APIURL != "":
		why := api.EventOnly
		if why == "" {
			why = "the catalogue has no fetch rules for scheme " + p.Scheme + ": add fetch rules"
		}
		log.Info("provider has an api_url but no fetch rules; events not forwarded are recorded as skipped", "provider", name, "why", why)
	case len(p.Forward) == 0:
		log.Info("provider has neither api_url nor forward; its events are recorded as skipped (read them from the topic)", "provider", name)
		return out, nil
	}
	for i, f := range p.Forward {
		fw, err := forward.NewForwarder(forward.Config{Provider: name, URL: f.URL, Secret: string(f.SecretValue()), Types: f.Types,
			When: f.When, Transform: f.TransformSource(), TransformTimeout: f.TransformTimeout, NoErasureNotices: !f.ErasureNoticesEnabled(),
			Include: f.Include == config.IncludeObject, Timeout: f.Timeout, Concurrency: f.Concurrency,
			RateLimit: f.RateLimit, RateBurst: f.RateBurst, BreakerFailures: f.BreakerFailures,
			BreakerProbe: f.BreakerProbe, PerObject: f.Ordered(), OnDead: f.OnDead, MaxParkedKeys: f.MaxParkedKeys,
			MaxParkedEvents: f.MaxParkedEvents, Shared: shared, Metrics: wm, Now: now})
		if err != nil {
			return out, fmt.Errorf("forward[%d]: %w", i, err)
		}
		out.Forwards = append(out.Forwards, fw)
	}
	return out, nil
}
