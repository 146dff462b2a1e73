package config

import (
	"errors"
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/gatehouse/gatehouse/internal/settings"
	"github.com/gatehouse/gatehouse/schemas"
	"github.com/gatehouse/gatehouse/schemas/providers"
)

// Provider is one webhook endpoint: POST /webhooks/{name}.
type Provider struct {
	// Scheme is the provider's kind: a scheme of the catalogue
	// (providers.Names(); `gatehouse providers` lists them). Required.
	Scheme string `yaml:"scheme"`
	// Secrets are the active signing secrets; several during a rotation overlap.
	Secrets []SecretEntry `yaml:"secrets"`
	// Tolerance bounds |now - signed timestamp|. Default: the provider's
	// documented window (twitch 10m, calendly 3m, linear 1m), else 300s.
	Tolerance time.Duration `yaml:"tolerance"`
	// TimestampHeader and SignatureHeader name the headers of the reference scheme.
	TimestampHeader string `yaml:"timestamp_header"`
	SignatureHeader string `yaml:"signature_header"`
	// HMAC defines the signing rules of scheme "hmac" (docs/PROVIDERS.md "Adding a
	// provider without code").
	HMAC *providers.HMAC `yaml:"hmac"`
	// EventID, EventType and CreatedAt say where an event's id, type and
	// creation time are (scheme "hmac": event_id and event_type required;
	// a preset's own are replaced where set).
	EventID   providers.Fields `yaml:"event_id"`
	EventType providers.Fields `yaml:"event_type"`
	CreatedAt providers.Fields `yaml:"created_at"`
	// PublicURL is the URL the provider calls, exactly as configured at the
	// provider (no query). Required by the schemes that sign the URL
	// (twilio, square, hubspot, an hmac content with {url}); the request's
	// Host and X-Forwarded-* headers are never trusted for it.
	PublicURL string `yaml:"public_url"`
	// VerifyToken answers Meta's GET handshake (hub.verify_token); secret
	// reference allowed. Required by scheme meta.
	VerifyToken string `yaml:"verify_token"`
	// MaxBodyBytes limits the request body. Default 1 MiB. A larger
	// Content-Length is answered 413 before any of the body is read.
	MaxBodyBytes int64 `yaml:"max_body_bytes"`
	// MaxInFlight bounds this provider's deliveries served at once; past
	// it the provider is answered OverloadStatus with Retry-After at once
	// (reason over_share). Default a quarter of ingest.max_in_flight (64).
	MaxInFlight int `yaml:"max_in_flight"`
	// ReservedInFlight of this provider's deliveries are always admitted
	// (up to MaxInFlight), whatever the others take: one provider's storm
	// cannot take them. Default 16 (less when the providers' reserves would
	// exceed half of ingest.max_in_flight; together at most all of it).
	ReservedInFlight int `yaml:"reserved_in_flight"`
	// ReplayGuardTTL is how long the replay guard of a provider whose event
	// id is not signed (github, shopify, bitbucket, twilio, linear, mailgun;
	// gatehouse providers says) remembers a delivery. Default 72h for a
	// scheme without a signed timestamp, else twice its tolerance.
	ReplayGuardTTL time.Duration `yaml:"replay_guard_ttl"`
	// OverloadStatus answers a delivery refused for overload: 503 (the
	// default; every provider retries it) or 429 for a provider that
	// documents it. Both carry Retry-After.
	OverloadStatus int `yaml:"overload_status"`
	// AggregateIDPath is the dotted path inside the envelope to the subject
	// object's ID (the outbox aggregateid and Kafka key), e.g. "data.payment_id".
	// Several paths may be given; the first present one wins.
	AggregateIDPath []string `yaml:"aggregate_id_path"`
	// Topic is the Kafka topic of this provider. Default gatehouse.webhooks.<name>.
	Topic string `yaml:"topic"`
	// Search is how the events API and the console search this provider's
	// payloads (match, path): "scan" reads at most a bounded number of rows
	// a page, newest first; "indexed" keeps a jsonb_path_ops GIN index of
	// its payloads on every inbox partition, created with each partition
	// and dropped with it, at a cost to each write. Default scan.
	Search string `yaml:"search"`
	// APIURL is the provider's API base address used by consumers to fetch the
	// authoritative object.
	APIURL string `yaml:"api_url"`
	// APIKey authenticates consumer calls to APIURL (secret reference allowed).
	APIKey string `yaml:"api_key"`
	// APIVersion is the provider API version pinned for webhooks and API calls.
	APIVersion string `yaml:"api_version"`
	// APIRateLimit caps consumer calls to APIURL, in requests per second
	// (0: no cap), with bursts of APIRateBurst (default: 5% of the limit
	// rounded up, at least 1: no one-second window sees more than 105% of
	// the limit). Stripe's live-mode read limit is 100/s.
	APIRateLimit float64 `yaml:"api_rate_limit"`
	APIRateBurst int     `yaml:"api_rate_burst"`
	// APIConcurrency bounds consumer calls to APIURL in flight. Default 64.
	APIConcurrency int `yaml:"api_concurrency"`
	// APIAuth and APIAuthHeader say how api_key is sent when the
	// catalogue's way does not fit: bearer, bot (Authorization: Bot
	// <api_key>), basic (api_key is "user:password"), header (in
	// APIAuthHeader) or none.
	APIAuth       string `yaml:"api_auth"`
	APIAuthHeader string `yaml:"api_auth_header"`
	// APIAccept is the Accept header of API calls when the catalogue's
	// (default application/json) does not fit.
	APIAccept string `yaml:"api_accept"`
	// Fetch are declarative fetch rules (providers.Fetch) tried before the
	// catalogue's defaults (gatehouse providers lists them).
	Fetch []providers.Fetch `yaml:"fetch"`
	// Forward delivers events to a team's own service (forward.go).
	Forward []Forward `yaml:"forward"`
	// OwnerPath and OwnerIssuer map an object to a user: a dotted path into
	// the fetched object whose value is "<issuer> <subject>", or a subject
	// under OwnerIssuer.
	OwnerPath   string `yaml:"owner_path"`
	OwnerIssuer string `yaml:"owner_issuer"`
	// Retention and DedupeWindow override storage.retention and
	// storage.dedupe_window for this provider (docs/STORAGE.md); the
	// dedupe window must cover the scheme's redelivery window.
	Retention    time.Duration `yaml:"retention"`
	DedupeWindow time.Duration `yaml:"dedupe_window"`
	// ObjectRetention overrides storage.object_retention for this
	// provider's projections (provider_objects).
	ObjectRetention time.Duration `yaml:"object_retention"`
	// Reconcile compares the provider's own record of what it sent with
	// the inbox and closes the difference (docs/PROVIDERS.md
	// "Reconciliation"); off by default.
	Reconcile settings.Reconcile `yaml:"reconcile"`

	apiKey      []byte
	verifyToken []byte
}

// SecretEntry is one signing secret. Value may be a literal, "env:NAME" or "file:/path".
type SecretEntry struct {
	ID       string `yaml:"id"`
	Value    string `yaml:"value"`
	resolved []byte
}

// Resolved returns the secret's value after reference resolution.
func (s SecretEntry) Resolved() []byte { return s.resolved }

// VerifyTokenValue returns the resolved verify_token, nil when none is set.
func (p *Provider) VerifyTokenValue() []byte { return p.verifyToken }

// APIKeyValue returns the resolved API key, nil when none is configured.
func (p *Provider) APIKeyValue() []byte { return p.apiKey }

// DefaultMaxBodyBytes is the default request body limit of a provider.
const DefaultMaxBodyBytes = 1 << 20

func (p *Provider) applyDefaults(name string) {
	kind, _ := providers.Lookup(p.Scheme)
	if p.Tolerance == 0 {
		p.Tolerance = kind.ReplayWindow()
	}
	if p.MaxBodyBytes == 0 {
		p.MaxBodyBytes = DefaultMaxBodyBytes
	}
	if p.Topic == "" {
		p.Topic = schemas.DefaultTopic(name)
	}
	if p.APIConcurrency == 0 {
		p.APIConcurrency = 64
	}
	for i := range p.Secrets {
		if p.Secrets[i].ID == "" {
			p.Secrets[i].ID = fmt.Sprintf("secret%d", i+1)
		}
	}
	if len(p.AggregateIDPath) == 0 {
		p.AggregateIDPath = kind.AggregateIDPath
	}
	p.applyHandlerDefaults()
	p.Reconcile.ApplyDefaults()
}

// Search modes of Provider.Search.
const (
	SearchScan    = "scan"
	SearchIndexed = "indexed"
)

func (p *Provider) validate() error {
	if p.Search != "" && p.Search != SearchScan && p.Search != SearchIndexed {
		return fmt.Errorf("search: %q is not %s or %s", p.Search, SearchScan, SearchIndexed)
	}
	if _, known := providers.Lookup(p.Scheme); !known {
		return fmt.Errorf("scheme: %q is not one of %v", p.Scheme, providers.Names())
	}
	if len(p.Secrets) == 0 {
		return errors.New("secrets: at least one secret is required; verification cannot be switched off")
	}
	seen := map[string]bool{}
	for i, s := range p.Secrets {
		if seen[s.ID] {
			return fmt.Errorf("secrets[%d].id: duplicate id %q", i, s.ID)
		}
		seen[s.ID] = true
	}
	if p.Scheme == "reference" && (p.TimestampHeader == "" || p.SignatureHeader == "") {
		return errors.New("timestamp_header: reference scheme needs timestamp_header and signature_header")
	}
	if err := p.validateSigning(); err != nil {
		return err
	}
	if p.Tolerance < 0 {
		return errors.New("tolerance: must be positive")
	}
	if p.ReplayGuardTTL < 0 {
		return errors.New("replay_guard_ttl: must be positive")
	}
	if p.MaxBodyBytes < 0 {
		return errors.New("max_body_bytes: must be positive")
	}
	if p.APIRateLimit < 0 || p.APIRateBurst < 0 || p.APIConcurrency < 0 {
		return errors.New("api_rate_limit, api_rate_burst and api_concurrency: must not be negative")
	}
	if p.APIURL != "" {
		if u, err := url.Parse(p.APIURL); err != nil || u.Scheme == "" || u.Host == "" {
			return fmt.Errorf("api_url: %q is not an absolute URL", p.APIURL)
		}
	}
	if err := p.Reconcile.Validate("reconcile", p.Scheme, p.Kind().Reconcile.Way, providers.ReconcileRedeliver); err != nil {
		return err
	}
	if p.Reconcile.List != nil && p.Kind().Envelope == providers.EnvelopeFields && !bodyOnly(p.Kind().EventID) {
		return errors.New("reconcile.list: a backfilled event has no headers: event_id must be read from the body (path, value or join of them)")
	}
	if p.Reconcile.Enabled && (p.APIURL == "" || p.APIKey == "") {
		return errors.New("reconcile.enabled: reconciliation reads the provider's API: set api_url and api_key")
	}
	return p.validateHandlers()
}

// validateSigning checks the settings of the declarative scheme, the
// public URL, the verify token and the envelope fields.
func (p *Provider) validateSigning() error {
	if p.Scheme == "hmac" {
		if p.HMAC == nil {
			return errors.New("hmac: scheme hmac needs an hmac definition")
		}
		if err := p.HMAC.Validate(p.PublicURL); err != nil {
			return fmt.Errorf("hmac.%w", err)
		}
		if p.HMAC.Content != "" && !strings.Contains(p.HMAC.Content, "{body}") {
			return fmt.Errorf("hmac.content: %q leaves {body} out of what is signed: anyone who saw one delivery could post any body with its signature", p.HMAC.Content)
		}
		if len(p.EventID) == 0 || len(p.EventType) == 0 {
			return errors.New("event_id: scheme hmac needs event_id and event_type")
		}
	} else if p.HMAC != nil {
		return fmt.Errorf("hmac: only scheme hmac takes an hmac definition (scheme %q signs as its provider does)", p.Scheme)
	}
	if p.PublicURL != "" {
		u, err := url.Parse(p.PublicURL)
		if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" || u.RawQuery != "" || u.Fragment != "" {
			return fmt.Errorf("public_url: %q must be the absolute http(s) URL the provider calls, without query", p.PublicURL)
		}
	} else if p.Kind().SignsURL || (p.HMAC != nil && p.HMAC.Uses(providers.PartURL)) {
		return fmt.Errorf("public_url: scheme %q signs the URL the provider calls; set public_url to it exactly as configured at the provider", p.Scheme)
	}
	if p.Kind().GetHandshake == providers.HandshakeMeta && p.VerifyToken == "" {
		return errors.New("verify_token: scheme meta needs the verify token configured at Meta for its GET handshake")
	}
	for name, fs := range map[string]providers.Fields{"event_id": p.EventID, "event_type": p.EventType, "created_at": p.CreatedAt} {
		for i, f := range fs {
			if err := f.Validate(); err != nil {
				return fmt.Errorf("%s[%d]: %w", name, i, err)
			}
		}
	}
	if p.Kind().Envelope != providers.EnvelopeFields && (len(p.EventID) > 0 || len(p.EventType) > 0 || len(p.CreatedAt) > 0) {
		return fmt.Errorf("event_id: scheme %q finds the event's fields itself", p.Scheme)
	}
	return nil
}

// bodyOnly: every alternative of fs reads the body (a path, a constant or
// a join of them), never a header, a signed id or the body's digest.
func bodyOnly(fs providers.Fields) bool {
	for _, f := range fs {
		if f.Header != "" || f.Signed || f.Digest || !bodyOnly(f.Join) {
			return false
		}
	}
	return true
}

// Kind returns the catalogue entry of the provider's scheme, with the
// provider's own event_id, event_type and created_at where it sets them.
func (p *Provider) Kind() providers.Kind {
	k, _ := providers.Lookup(p.Scheme)
	if len(p.EventID) > 0 {
		k.EventID = p.EventID
	}
	if len(p.EventType) > 0 {
		k.EventType = p.EventType
	}
	if len(p.CreatedAt) > 0 {
		k.CreatedAt = p.CreatedAt
	}
	return k
}
