package reconcile

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

	"golang.org/x/time/rate"
)

// client calls one provider's API with the account's credential, under a
// rate limit of its own (api_rate_limit): ingest may not import the
// consumers' throttle (stages never import each other), so the pass keeps
// its own limiter at the same setting. Every answer but a 2xx fails the
// call with the status and, for 429 and 503, the Retry-After asked for:
// a pass stops at its first failed call and keeps what it stored.
type client struct {
	base          *url.URL
	key           string
	version       string
	versionHeader string
	http          *http.Client
	limiter       *rate.Limiter // nil: unlimited
	basic         bool          // send key "user:password" with HTTP Basic
	authHeader    string        // send key in this header ("PRIVATE-TOKEN", GitLab's); "": bearer
	calls         int           // calls made (one pass uses one client at a time)
	onError       func()
}

// maxAnswer bounds one answer's body: a page of 100 Stripe events is a few
// hundred kB.
const maxAnswer = 32 << 20

// APIError is a call the provider answered with a status other than 2xx.
type APIError struct {
	Method, Path string
	Status       int
	RetryAfter   string // the answer's Retry-After ("" : none)
}

func (e *APIError) Error() string {
	s := fmt.Sprintf("%s %s: the provider answered %d", e.Method, e.Path, e.Status)
	if e.RetryAfter != "" {
		s += " (Retry-After " + e.RetryAfter + ")"
	}
	return s
}

func newClient(base string, key []byte, version, versionHeader string, limit float64, burst int, timeout time.Duration, onError func()) (*client, error) {
	u, err := url.Parse(base)
	if err != nil || u.Scheme == "" || u.Host == "" {
		return nil, fmt.Errorf("api url %q is not absolute", base)
	}
	if timeout <= 0 {
		timeout = 30 * time.Second
	}
	c := &client{base: u, key: string(key), version: version, versionHeader: versionHeader,
		http: &http.Client{Timeout: timeout, CheckRedirect: func(*http.Request, []*http.Request) error {
			return http.ErrUseLastResponse // a redirect would carry the credential elsewhere
		}}, onError: onError}
	if limit > 0 {
		if burst <= 0 {
			burst = max(1, int(limit/20+0.999))
		}
		c.limiter = rate.NewLimiter(rate.Limit(limit), burst)
	}
	return c, nil
}

// call sends method to path (with query) and decodes a 2xx JSON answer
// into out (nil: the body is discarded). It returns the answer's headers.
func (c *client) call(ctx context.Context, method, path string, query url.Values, out any) (http.Header, error) {
	return c.send(ctx, method, path, query, nil, out)
}

// send is call with a JSON body (nil: none).
func (c *client) send(ctx context.Context, method, path string, query url.Values, body []byte, out any) (http.Header, error) {
	u := *c.base
	// path may hold escaped segments (GitLab's "group%2Fproject")
	raw := strings.TrimSuffix(u.EscapedPath(), "/") + path
	unescaped, err := url.PathUnescape(raw)
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", method, path, err)
	}
	u.Path, u.RawPath = unescaped, raw
	u.RawQuery = query.Encode()
	return c.do(ctx, method, &u, path, body, out)
}

// follow calls GET on a paging URL the provider gave (Mailgun's
// paging.next): it must be on api_url's scheme and host, or the
// credential would go elsewhere.
func (c *client) follow(ctx context.Context, next string, out any) (http.Header, error) {
	u, err := url.Parse(next)
	if err != nil || u.Scheme != c.base.Scheme || u.Host != c.base.Host {
		return nil, fmt.Errorf("GET %s: %w: the next page's URL is not on the API's host", redactURL(next), ErrMalformedPage)
	}
	return c.do(ctx, http.MethodGet, u, u.Path, nil, out)
}

// redactURL is a URL for an error: its scheme, host and path.
func redactURL(s string) string {
	u, err := url.Parse(s)
	if err != nil {
		return "(unparsable URL)"
	}
	return u.Scheme + "://" + u.Host + u.Path
}

// do sends the request to u; path names it in errors.
func (c *client) do(ctx context.Context, method string, u *url.URL, path string, body []byte, out any) (http.Header, error) {
	if c.limiter != nil {
		if err := c.limiter.Wait(ctx); err != nil {
			return nil, fmt.Errorf("rate limit: %w", err)
		}
	}
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, u.String(), rd)
	if err != nil {
		return nil, err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if c.key != "" && c.authHeader != "" {
		req.Header.Set(c.authHeader, c.key)
	} else if c.key != "" {
		if user, pass, ok := strings.Cut(c.key, ":"); ok && c.basic {
			req.SetBasicAuth(user, pass)
		} else {
			req.Header.Set("Authorization", "Bearer "+c.key)
		}
	}
	req.Header.Set("Accept", "application/json")
	if c.version != "" && c.versionHeader != "" {
		req.Header.Set(c.versionHeader, c.version)
	}
	c.calls++
	resp, err := c.http.Do(req)
	if err != nil {
		c.onError()
		return nil, fmt.Errorf("%s %s: %w", method, path, err)
	}
	defer resp.Body.Close()
	answer, err := io.ReadAll(io.LimitReader(resp.Body, maxAnswer+1))
	if err != nil {
		c.onError()
		return nil, fmt.Errorf("%s %s: read answer: %w", method, path, err)
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		c.onError()
		return nil, &APIError{Method: method, Path: path, Status: resp.StatusCode, RetryAfter: resp.Header.Get("Retry-After")}
	}
	if len(answer) > maxAnswer {
		c.onError()
		return nil, fmt.Errorf("%s %s: answer larger than %d bytes", method, path, maxAnswer)
	}
	if out != nil {
		if err := json.Unmarshal(answer, out); err != nil {
			c.onError()
			return nil, fmt.Errorf("%s %s: %w: %w", method, path, ErrMalformedPage, err)
		}
	}
	return resp.Header, nil
}

// ErrMalformedPage is wrapped when a provider's page cannot be read: not
// JSON of the documented shape, an item without its id or time, or a
// cursor that does not move forward. The pass stops; what it stored stays.
var ErrMalformedPage = errors.New("malformed page from the provider")
