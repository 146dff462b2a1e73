package fetch

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/gatehouse/gatehouse/consumers/event"
	"github.com/gatehouse/gatehouse/consumers/throttle"
	"github.com/gatehouse/gatehouse/internal/text"
	"github.com/gatehouse/gatehouse/schemas/providers"
)

// APIClient reads objects from a provider's API. Every call carries the
// configured API key (as Auth says: a bearer token by default) and the
// pinned API version. Calls
// are bounded (Concurrency at once), rate-limited (RateLimit per second,
// paused after a 429 or 503 for its Retry-After) and, inside a batch
// (the memo of the event.Batch a Fetcher is handed), coalesced: one
// request per object path.
type APIClient struct {
	base          *url.URL
	key           string
	auth, authHdr string
	accept        string
	version       string
	versionHeader string
	http          *http.Client
	flow          *throttle.Flow
	m             providerMetrics
}

// APIClientConfig configures an APIClient.
type APIClientConfig struct {
	BaseURL       string // the provider's api_url; required
	Key           []byte // the resolved api_key; optional
	Version       string // api_version, sent in VersionHeader when set
	VersionHeader string // e.g. Stripe-Version; default Api-Version
	// Auth is how Key is sent: providers.AuthBearer (the default),
	// AuthBot (Authorization: Bot <Key>), AuthBasic (Key is
	// "user:password"), AuthHeader (in the header AuthHeader) or AuthNone.
	Auth, AuthHeader string
	// Accept is every call's Accept header; default application/json.
	Accept    string
	Timeout   time.Duration // per call; default 10s
	Transport http.RoundTripper
	// Provider labels the client's metrics.
	Provider string
	// Concurrency bounds requests in flight; default 64.
	Concurrency int
	// RateLimit is requests per second (0: unlimited) with a burst of
	// RateBurst (throttle.Config's default).
	RateLimit float64
	RateBurst int
	// Metrics receives fetch, coalescing and limiter figures; nil: none.
	Metrics *Metrics
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
	if cfg.Accept == "" {
		cfg.Accept = "application/json"
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
		base: u, key: string(cfg.Key), auth: cfg.Auth, authHdr: cfg.AuthHeader, accept: cfg.Accept, version: cfg.Version, versionHeader: cfg.VersionHeader,
		// Redirects are never followed: the API key would go wherever a
		// Location points, and the answer from there would be applied as
		// the provider's (do: a redirect is a permanent failure).
		http: &http.Client{Timeout: cfg.Timeout, Transport: tr, CheckRedirect: func(*http.Request, []*http.Request) error {
			return http.ErrUseLastResponse
		}},
		flow: throttle.New(throttle.Config{Name: cfg.Provider, Concurrency: cfg.Concurrency, RateLimit: cfg.RateLimit,
			RateBurst: cfg.RateBurst, Metrics: cfg.Metrics.flowMetrics(), Now: cfg.Now}),
		m: cfg.Metrics.forProvider(cfg.Provider),
	}, nil
}

// APIError is a non-2xx answer of a provider's API.
type APIError struct {
	Status int
	Method string // default GET
	Path   string
	Body   string // the first 256 bytes of the answer

	raw []byte // the answer (up to 64 KiB), for a rule's answer_error
}

func (e *APIError) Error() string {
	m := e.Method
	if m == "" {
		m = http.MethodGet
	}
	return fmt.Sprintf("provider api %s %s: status %d: %s", m, e.Path, e.Status, e.Body)
}

// ObjectPath is the API path of object id in collection (a trusted path
// such as "payments" or "checkout/sessions"): "/v1/<collection>/<id>" with
// the id escaped once as one segment. An id that is empty, "." or ".."
// (which a normalising server would read as the collection or its parent)
// is a permanent error.
func ObjectPath(collection, id string) (string, error) {
	if id == "" || id == "." || id == ".." {
		return "", event.Permanentf("object id %q cannot name an object in a URL path", id)
	}
	return "/v1/" + collection + "/" + url.PathEscape(id), nil
}

// Get fetches path (e.g. /v1/payments/pay_1, escaped: ObjectPath) and
// returns the JSON object. A path with an empty, "." or ".." segment is
// refused (permanent) without a request.
// Get is not coalesced: every call sends (a Fetcher's Handle coalesces
// through its batch's memo). Errors: network failures,
// timeouts, 429 and 5xx are transient; other 4xx answers, and redirects
// (3xx: never followed with the API key; a stable API answers an object's
// URL with the same redirect on every retry, so the event goes to the
// dead-letter topic at once, to be replayed once api_url names the final
// address), are permanent (a PermanentError wrapping an *APIError).
func (c *APIClient) Get(ctx context.Context, path string) (json.RawMessage, error) {
	body, _, err := c.GetAt(ctx, path)
	return body, err
}

// GetAt is Get that also returns when the request that answered was sent
// (shared by coalesced calls): a state fetched later is at least as new.
func (c *APIClient) GetAt(ctx context.Context, path string) (json.RawMessage, time.Time, error) {
	a, err := c.request(ctx, nil, http.MethodGet, path, "", nil)
	return a.body, a.at, err
}

// request is GetAt for any method, an encoded query and a JSON body (nil:
// none), with the answer's headers, coalesced through memo (a batch's;
// nil: not coalesced).
func (c *APIClient) request(ctx context.Context, memo *event.Memo, method, path, query string, body []byte) (answer, error) {
	key := method + " " + c.base.String() + path + "?" + query + "\n" + string(body)
	return coalesce(memo, key, c.m.coalesced, func() (answer, error) { return c.send(ctx, method, path, query, body) })
}

// below is the path below the base URL of abs, an absolute URL an event
// carries (url_from): only an address with the base's scheme, host and
// port, below its path, with no user info, query or fragment, is one; any
// other is a permanent error, so a payload never sends the API key
// elsewhere.
func (c *APIClient) below(abs string) (string, error) {
	u, err := url.Parse(abs)
	if err != nil {
		return "", event.Permanentf("object url: %w", err)
	}
	base := c.base.EscapedPath() + "/"
	switch {
	case !strings.EqualFold(u.Scheme, c.base.Scheme) || !strings.EqualFold(u.Host, c.base.Host):
		return "", event.Permanentf("object url %s://%s is not the api_url's %s://%s: not requested", u.Scheme, u.Host, c.base.Scheme, c.base.Host)
	case u.User != nil || u.RawQuery != "" || u.ForceQuery || u.Fragment != "" || u.Opaque != "":
		return "", event.Permanentf("object url on %s has user info, a query or a fragment: not requested", u.Host)
	case !strings.HasPrefix(u.EscapedPath(), base):
		return "", event.Permanentf("object url path %q is not below the api_url's %q: not requested", u.EscapedPath(), c.base.EscapedPath())
	}
	return u.EscapedPath()[len(base)-1:], nil
}

func (c *APIClient) send(ctx context.Context, method, path, query string, body []byte) (answer, error) {
	release, err := c.flow.Acquire(ctx)
	if err != nil {
		return answer{}, fmt.Errorf("provider api %s %s: %w", method, path, err)
	}
	defer release()
	at := c.flow.Now()
	sctx, span := startFetch(ctx, method, c.base.Scheme+"://"+c.base.Host+c.base.Path+path)
	ans, h, err := c.do(sctx, method, path, query, body)
	endFetch(span, statusOf(err), err)
	return answer{body: ans, header: h, at: at}, err
}

func (c *APIClient) authorize(req *http.Request) {
	if c.key == "" {
		return
	}
	switch c.auth {
	case providers.AuthNone:
	case providers.AuthBasic:
		user, pass, _ := strings.Cut(c.key, ":")
		req.SetBasicAuth(user, pass)
	case providers.AuthHeader:
		req.Header.Set(c.authHdr, c.key)
	case providers.AuthBot:
		req.Header.Set("Authorization", "Bot "+c.key)
	default:
		req.Header.Set("Authorization", "Bearer "+c.key)
	}
}

func (c *APIClient) do(ctx context.Context, method, path, query string, reqBody []byte) (json.RawMessage, http.Header, error) {
	u, err := c.url(path)
	if err != nil {
		return nil, nil, err
	}
	if query != "" {
		u += "?" + query
	}
	var rb io.Reader
	if reqBody != nil {
		rb = bytes.NewReader(reqBody)
	}
	req, err := http.NewRequestWithContext(ctx, method, u, rb)
	if err != nil {
		return nil, nil, event.Permanentf("provider api request: %w", err)
	}
	if reqBody != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("Accept", c.accept)
	c.authorize(req)
	if c.version != "" {
		req.Header.Set(c.versionHeader, c.version)
	}
	c.m.fetches.Inc()
	resp, err := c.http.Do(req)
	if err != nil {
		if event.IsTimeout(err) {
			return nil, nil, fmt.Errorf("provider api %s %s: timeout: %w", method, path, err)
		}
		return nil, nil, fmt.Errorf("provider api %s %s: %w", method, path, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 8<<20))
	if err != nil {
		return nil, nil, fmt.Errorf("provider api %s %s: read body: %w", method, path, err)
	}
	if resp.StatusCode/100 != 2 {
		ae := &APIError{Status: resp.StatusCode, Method: method, Path: path, Body: text.Truncate(string(body), 256),
			raw: body[:min(len(body), 64<<10)]}
		if resp.StatusCode/100 == 3 {
			loc, _ := url.Parse(resp.Header.Get("Location"))
			to := "elsewhere"
			if loc != nil {
				to = resp.Request.URL.ResolveReference(loc).Host
			}
			ae.Body = "redirected to " + to + " (not followed with the API key: set api_url to the final address)"
			return nil, nil, event.Permanent(ae)
		}
		if resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode == http.StatusServiceUnavailable {
			c.flow.Pause(resp.StatusCode, resp.Header)
		}
		if resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode >= 500 || resp.StatusCode == http.StatusRequestTimeout {
			return nil, nil, ae
		}
		return nil, nil, event.Permanent(ae)
	}
	if !json.Valid(body) {
		return nil, nil, fmt.Errorf("provider api %s %s: answer is not JSON", method, path)
	}
	return body, resp.Header, nil
}

// url is the request URL of path, an escaped path below the base URL,
// escaped exactly once: path's own escapes are kept (an id "a/b" given as
// "a%2Fb" is requested so). A path with an empty, "." or ".." segment is
// refused.
func (c *APIClient) url(path string) (string, error) {
	if !strings.HasPrefix(path, "/") {
		return "", event.Permanentf("provider api path %q must start with /", path)
	}
	for _, seg := range strings.Split(path[1:], "/") {
		dec, err := url.PathUnescape(seg)
		if err != nil {
			return "", event.Permanentf("provider api path %q: %w", path, err)
		}
		if dec == "" || dec == "." || dec == ".." {
			return "", event.Permanentf("provider api path %q has an empty, . or .. segment", path)
		}
	}
	unescaped, _ := url.PathUnescape(path)
	u := *c.base
	u.Path += unescaped
	u.RawPath = c.base.EscapedPath() + path
	return u.String(), nil
}

// FailureStage is event.StageFetch: a failure issue of an APIError is the
// provider API's (event.Stage).
func (e *APIError) FailureStage() string { return event.StageFetch }

// FailureSummary is what a failure issue keeps of the answer: the method
// and the status, never the path (it holds ids from the payload) nor the
// answer's body ("provider api GET: status 404").
func (e *APIError) FailureSummary() string {
	m := e.Method
	if m == "" {
		m = http.MethodGet
	}
	return fmt.Sprintf("provider api %s: status %d", m, e.Status)
}

// statusOf is the HTTP status a call ended with: the APIError's, 200 for
// success, 0 when no answer came.
func statusOf(err error) int {
	var ae *APIError
	switch {
	case err == nil:
		return http.StatusOK
	case errors.As(err, &ae):
		return ae.Status
	}
	return 0
}
