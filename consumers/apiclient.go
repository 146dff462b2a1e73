package consumers

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// APIClient reads objects from a provider's API. Every call carries the
// configured API key as a bearer token and the pinned API version. Calls
// are bounded (Concurrency at once), rate-limited (RateLimit per second,
// paused after a 429 or 503 for its Retry-After) and, inside a batch
// (withFetchMemo), coalesced: one request per object path.
type APIClient struct {
	base          *url.URL
	key           string
	version       string
	versionHeader string
	http          *http.Client
	flow          *flow
}

// APIClientConfig configures an APIClient.
type APIClientConfig struct {
	BaseURL       string        // the provider's api_url; required
	Key           []byte        // the resolved api_key; optional
	Version       string        // api_version, sent in VersionHeader when set
	VersionHeader string        // e.g. Stripe-Version; default Api-Version
	Timeout       time.Duration // per call; default 10s
	Transport     http.RoundTripper
	// Provider labels the client's metrics.
	Provider string
	// Concurrency bounds requests in flight; default 64.
	Concurrency int
	// RateLimit is requests per second (0: unlimited) with a burst of
	// RateBurst (default: 5% of RateLimit rounded up, at least 1, so no
	// one-second window sees more than 105% of the limit).
	RateLimit float64
	RateBurst int
	// Metrics receives fetch, coalescing and limiter figures; nil: none.
	Metrics *APIMetrics
	// Now is the clock of Retry-After pauses; default time.Now.
	Now func() time.Time
}

// NewAPIClient returns a client for cfg.BaseURL. It fails when the URL is
// not absolute.
func NewAPIClient(cfg APIClientConfig) (*APIClient, error) {
	u, err := url.Parse(cfg.BaseURL)
	if err != nil || u.Scheme == "" || u.Host == "" {
		return nil, fmt.Errorf("api url %q is not absolute", cfg.BaseURL)
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = 10 * time.Second
	}
	if cfg.VersionHeader == "" {
		cfg.VersionHeader = "Api-Version"
	}
	if cfg.Concurrency <= 0 {
		cfg.Concurrency = 64
	}
	tr := cfg.Transport
	if tr == nil {
		// Keep-alive connections for every request that may be in flight.
		t := http.DefaultTransport.(*http.Transport).Clone()
		t.MaxIdleConns = cfg.Concurrency * 2
		t.MaxIdleConnsPerHost = cfg.Concurrency
		tr = t
	}
	u.Path = strings.TrimRight(u.Path, "/")
	return &APIClient{
		base: u, key: string(cfg.Key), version: cfg.Version, versionHeader: cfg.VersionHeader,
		http: &http.Client{Timeout: cfg.Timeout, Transport: tr},
		flow: newFlow(cfg),
	}, nil
}

// APIError is a non-2xx answer of a provider's API.
type APIError struct {
	Status int
	Path   string
	Body   string // the first 256 bytes of the answer
}

func (e *APIError) Error() string {
	return fmt.Sprintf("provider api GET %s: status %d: %s", e.Path, e.Status, e.Body)
}

// Get fetches path (e.g. /v1/payments/pay_1) and returns the JSON object.
// Inside a batch the first call for a path fetches and concurrent or later
// calls for the same path share its answer. Errors: network failures,
// timeouts, 429 and 5xx are transient; other 4xx answers are permanent (a
// PermanentError wrapping an *APIError).
func (c *APIClient) Get(ctx context.Context, path string) (json.RawMessage, error) {
	body, _, err := c.GetAt(ctx, path)
	return body, err
}

// GetAt is Get that also returns when the request that answered was sent
// (shared by coalesced calls): a state fetched later is at least as new.
func (c *APIClient) GetAt(ctx context.Context, path string) (json.RawMessage, time.Time, error) {
	if m := memoFrom(ctx); m != nil {
		return m.do(c.base.String()+path, c.flow.m.coalesced, func() (json.RawMessage, time.Time, error) { return c.get(ctx, path) })
	}
	return c.get(ctx, path)
}

func (c *APIClient) get(ctx context.Context, path string) (json.RawMessage, time.Time, error) {
	release, err := c.flow.acquire(ctx)
	if err != nil {
		return nil, time.Time{}, fmt.Errorf("provider api GET %s: %w", path, err)
	}
	defer release()
	at := c.flow.now()
	body, err := c.do(ctx, path)
	return body, at, err
}

func (c *APIClient) do(ctx context.Context, path string) (json.RawMessage, error) {
	u := *c.base
	u.Path += path
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return nil, Permanentf("provider api request: %w", err)
	}
	req.Header.Set("Accept", "application/json")
	if c.key != "" {
		req.Header.Set("Authorization", "Bearer "+c.key)
	}
	if c.version != "" {
		req.Header.Set(c.versionHeader, c.version)
	}
	c.flow.m.fetches.Inc()
	resp, err := c.http.Do(req)
	if err != nil {
		if isTimeout(err) {
			return nil, fmt.Errorf("provider api GET %s: timeout: %w", path, err)
		}
		return nil, fmt.Errorf("provider api GET %s: %w", path, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 8<<20))
	if err != nil {
		return nil, fmt.Errorf("provider api GET %s: read body: %w", path, err)
	}
	if resp.StatusCode/100 != 2 {
		ae := &APIError{Status: resp.StatusCode, Path: path, Body: truncate(string(body), 256)}
		if resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode == http.StatusServiceUnavailable {
			c.flow.pause(resp.StatusCode, resp.Header)
		}
		if resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode >= 500 || resp.StatusCode == http.StatusRequestTimeout {
			return nil, ae
		}
		return nil, Permanent(ae)
	}
	if !json.Valid(body) {
		return nil, fmt.Errorf("provider api GET %s: answer is not JSON", path)
	}
	return body, nil
}
