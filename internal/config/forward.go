package config

import (
	"encoding/base64"
	"errors"
	"fmt"
	"net/url"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/gatehouse/gatehouse/internal/redact"
	"github.com/gatehouse/gatehouse/schemas"
	"github.com/gatehouse/gatehouse/schemas/providers"
)

// Forward delivers a provider's events (those whose type matches Types) to
// a team's own HTTP endpoint, signed with Standard Webhooks
// (https://www.standardwebhooks.com): webhook-id is "<provider>:<event id>"
// (the same on every retry), webhook-timestamp and webhook-signature
// (v1,<base64 HMAC-SHA256>) over id, timestamp and body with Secret.
type Forward struct {
	// Types are event type patterns (exact, "prefix.*", "*"). Default ["*"].
	Types []string `yaml:"types"`
	// URL is the destination, an absolute http(s) URL. Required.
	URL string `yaml:"url"`
	// Secret signs the deliveries: "whsec_" + base64 of at least 24 bytes,
	// as the Standard Webhooks libraries take it (secret reference allowed:
	// env:NAME, file:/path). Required.
	Secret string `yaml:"secret"`
	// Include "object" adds the object the provider's fetch rule read
	// (provider_objects' value) to the delivery; "" sends the event alone.
	Include string `yaml:"include"`
	// Timeout bounds one delivery. Default 10s.
	Timeout time.Duration `yaml:"timeout"`
	// Concurrency bounds deliveries in flight to this destination. Default 64.
	Concurrency int `yaml:"concurrency"`
	// RateLimit caps deliveries per second (0: no cap), with bursts of
	// RateBurst (default 5% of the limit, at least 1).
	RateLimit float64 `yaml:"rate_limit"`
	RateBurst int     `yaml:"rate_burst"`
	// BreakerFailures consecutive failures (5xx, 408, 429, timeouts,
	// refused connections) open the destination's circuit: deliveries wait
	// (nothing is dropped or dead-lettered) while one probe per
	// BreakerProbe tries again; the first success closes it. Defaults 5
	// and 5s.
	BreakerFailures int           `yaml:"breaker_failures"`
	BreakerProbe    time.Duration `yaml:"breaker_probe"`
	// When forwards only the events whose envelope meets these conditions,
	// in the fetch rules' language (a value, or equals, in, exists, prefix);
	// combined with Types.
	When schemas.Conditions `yaml:"when"`
	// Transform is JavaScript that shapes each delivery before it is
	// signed: function handler(webhook) may change webhook.payload and
	// webhook.headers or set webhook.cancel (docs/CONSUMERS.md); inline, or
	// file:/path. A transform that throws or runs out of time dead-letters
	// the event.
	Transform string `yaml:"transform"`
	// TransformTimeout bounds one run of Transform. Default 1s.
	TransformTimeout time.Duration `yaml:"transform_timeout"`
	// ErasureNotices sends the destination an erasure notice for each event
	// of the provider that gatehouse erases: a delivery of type
	// gatehouse.erasure, signed like every other, naming the erased event,
	// whatever Types, When and Transform say, so the team's service erases
	// its own copies (docs/SECURITY.md). Default true; false opts the
	// destination out.
	ErasureNotices *bool `yaml:"erasure_notices"`
	// Order "per_object" delivers the events of one Kafka key (one object)
	// to this destination in topic order, each once: when one fails with a
	// retryable error, the key's later events are parked in PostgreSQL
	// behind it while every other key keeps flowing (docs/CONSUMERS.md).
	// Default "" (unordered): a failed event goes down the retry ladder and
	// the key's later events are delivered before it.
	Order string `yaml:"order"`
	// OnDead is what an ordered destination does with a parked key whose
	// head event is dead-lettered: "skip" delivers the key's parked events,
	// "hold" keeps them parked until an operator releases the key through
	// the API. Default skip.
	OnDead string `yaml:"on_dead"`
	// MaxParkedKeys bounds the keys parked at once for an ordered
	// destination; at the bound its oldest parked key is dead-lettered with
	// the reason (never dropped). Default 10000.
	MaxParkedKeys int `yaml:"max_parked_keys"`
	// MaxParkedEvents bounds the events parked at once for an ordered
	// destination, every key together; at the bound its oldest parked key
	// is dead-lettered with the reason. Default 100000.
	MaxParkedEvents int `yaml:"max_parked_events"`

	secret    []byte
	transform string
}

// ErasureNoticesEnabled reports whether the destination receives erasure
// notices (ErasureNotices unset or true).
func (f *Forward) ErasureNoticesEnabled() bool { return f.ErasureNotices == nil || *f.ErasureNotices }

// TransformSource is the resolved transform (the file's text for file:).
func (f *Forward) TransformSource() string { return f.transform }

// SecretValue is the resolved signing secret (the whsec_ string's bytes).
func (f *Forward) SecretValue() []byte { return f.secret }

// Include values of Forward.
const IncludeObject = "object"

// Order and OnDead values of Forward.
const (
	OrderPerObject = "per_object"
	OnDeadSkip     = "skip"
	OnDeadHold     = "hold"
)

// Ordered reports whether the destination asks for order per object.
func (f *Forward) Ordered() bool { return f.Order == OrderPerObject }

// APIRules is the provider's API description for the consumers: the
// catalogue's (providers.Kind.API) with the provider's own settings: its
// fetch rules tried first, api_auth, api_auth_header and api_accept when set.
func (p *Provider) APIRules() providers.API {
	a := p.Kind().API
	if len(p.Fetch) > 0 {
		a.Fetch = append(append([]providers.Fetch(nil), p.Fetch...), a.Fetch...)
	}
	if p.APIAuth != "" {
		a.Auth, a.AuthHeader = p.APIAuth, p.APIAuthHeader
	}
	if p.APIAccept != "" {
		a.Accept = p.APIAccept
	}
	return a
}

func (p *Provider) applyHandlerDefaults() {
	for i := range p.Forward {
		f := &p.Forward[i]
		if len(f.Types) == 0 {
			f.Types = []string{"*"}
		}
		if f.Timeout == 0 {
			f.Timeout = 10 * time.Second
		}
		if f.Concurrency == 0 {
			f.Concurrency = 64
		}
		if f.BreakerFailures == 0 {
			f.BreakerFailures = 5
		}
		if f.BreakerProbe == 0 {
			f.BreakerProbe = 5 * time.Second
		}
		if f.OnDead == "" {
			f.OnDead = OnDeadSkip
		}
		if f.MaxParkedKeys == 0 {
			f.MaxParkedKeys = 10000
		}
		if f.MaxParkedEvents == 0 {
			f.MaxParkedEvents = 100000
		}
	}
}

func (p *Provider) validateHandlers() error {
	api := p.APIRules()
	if err := api.Validate(); err != nil {
		if len(p.Fetch) > 0 && strings.HasPrefix(err.Error(), "fetch[") {
			return err // an index into p.Fetch: the provider's own rules come first
		}
		return fmt.Errorf("api_%w", err)
	}
	for i, f := range p.Forward {
		if err := f.validate(); err != nil {
			return fmt.Errorf("forward[%d].%w", i, err)
		}
		if f.Include == IncludeObject && len(api.Fetch) == 0 {
			return fmt.Errorf("forward[%d].include: object needs a fetch rule (scheme %q has none: add fetch:)", i, p.Scheme)
		}
	}
	return nil
}

func (f *Forward) validate() error {
	for _, t := range f.Types {
		if err := (providers.Fetch{Types: []string{t}, Skip: "x"}).Validate(); err != nil {
			return err
		}
	}
	u, err := url.Parse(f.URL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("url: %s is not an absolute http(s) URL", redact.Destination(f.URL))
	}
	if f.Secret == "" {
		return errors.New("secret: a Standard Webhooks secret (whsec_<base64>) is required")
	}
	if f.Include != "" && f.Include != IncludeObject {
		return fmt.Errorf("include: %q is not object", f.Include)
	}
	if err := f.When.Validate(); err != nil {
		return fmt.Errorf("when: %w", err)
	}
	if f.TransformTimeout < 0 || f.TransformTimeout > 30*time.Second {
		return errors.New("transform_timeout: between 0 (the default, 1s) and 30s")
	}
	if f.Order != "" && f.Order != OrderPerObject {
		return fmt.Errorf("order: %q is not per_object (leave it empty for unordered delivery)", f.Order)
	}
	if f.OnDead != "" && f.OnDead != OnDeadSkip && f.OnDead != OnDeadHold {
		return fmt.Errorf("on_dead: %q is not skip or hold", f.OnDead)
	}
	if f.MaxParkedKeys < 0 || f.MaxParkedEvents < 0 {
		return errors.New("max_parked_keys and max_parked_events: must not be negative")
	}
	if f.Timeout < 0 || f.Concurrency < 0 || f.RateLimit < 0 || f.RateBurst < 0 || f.BreakerFailures < 0 || f.BreakerProbe < 0 {
		return errors.New("timeout, concurrency, rate_limit, rate_burst, breaker_failures and breaker_probe: must not be negative")
	}
	return nil
}

// resolveForward resolves and checks each forward secret.
func (p *Provider) resolveForward(name string, getenv func(string) string) error {
	for i := range p.Forward {
		f := &p.Forward[i]
		f.transform = f.Transform
		if strings.HasPrefix(f.Transform, "file:") {
			b, err := os.ReadFile(strings.TrimPrefix(f.Transform, "file:"))
			if err != nil {
				return errorf("providers.%s.forward[%d].transform: %w", name, i, err)
			}
			f.transform = string(b)
		}
		if f.Secret == "" {
			continue
		}
		v, err := ResolveSecret(f.Secret, getenv)
		if err != nil {
			return errorf("providers.%s.forward[%d].secret: %w", name, i, err)
		}
		raw, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(string(v), "whsec_"))
		if err != nil || len(raw) < 24 {
			return errorf("providers.%s.forward[%d].secret: not whsec_ followed by the base64 of at least 24 bytes", name, i)
		}
		f.secret = v
	}
	return nil
}

// validateForwardDestinations refuses two forward entries (of any
// providers) that name one destination with different limits: the
// destination has one circuit, concurrency and rate limit.
func (c *Config) validateForwardDestinations() error {
	type limits struct {
		timeout, probe     time.Duration
		conc, burst, fails int
		rate               float64
	}
	type first struct {
		where string
		l     limits
	}
	seen := map[string]first{}
	names := make([]string, 0, len(c.Providers))
	for n := range c.Providers {
		names = append(names, n)
	}
	slices.Sort(names)
	for _, n := range names {
		p := c.Providers[n]
		if p == nil {
			continue
		}
		for i, f := range p.Forward {
			key, err := redact.DestinationKey(f.URL)
			if err != nil {
				continue // validateHandlers names it
			}
			l := limits{f.Timeout, f.BreakerProbe, f.Concurrency, f.RateBurst, f.BreakerFailures, f.RateLimit}
			where := fmt.Sprintf("providers.%s.forward[%d]", n, i)
			if prev, ok := seen[key]; !ok {
				seen[key] = first{where, l}
			} else if prev.l != l {
				return errorf("%s: destination %s is also %s's, with other timeout, concurrency, rate_limit, rate_burst, "+
					"breaker_failures or breaker_probe: entries naming one destination share its circuit and limits, give them the same values",
					where, key, prev.where)
			}
		}
	}
	return nil
}
