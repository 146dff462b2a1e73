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
// configured API key as a bearer token and the pinned API version.
type APIClient struct {
	base          *url.URL
	key           string
	version       string
	versionHeader string
	http          *http.Client
}

// APIClientConfig configures an APIClient.
type APIClientConfig struct {
	BaseURL       string        // the provider's api_url; required
	Key           []byte        // the resolved api_key; optional
	Version       string        // api_version, sent in VersionHeader when set
	VersionHeader string        // e.g. Stripe-Version; default Api-Version
	Timeout       time.Duration // per call; default 10s
	Transport     http.RoundTripper
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
	u.Path = strings.TrimRight(u.Path, "/")
	return &APIClient{
		base: u, key: string(cfg.Key), version: cfg.Version, versionHeader: cfg.VersionHeader,
		http: &http.Client{Timeout: cfg.Timeout, Transport: cfg.Transport},
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
// Errors: network failures, timeouts, 429 and 5xx are transient; other 4xx
// answers are permanent (a PermanentError wrapping an *APIError).
func (c *APIClient) Get(ctx context.Context, path string) (json.RawMessage, error) {
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
