package settings

import (
	"net/url"
	"strings"
	"time"

	"github.com/gatehouse/gatehouse/internal/jws"
)

// The api section's defaults, which the bearer verifier (auth/bearer) and
// the API (api.New) apply too when built without a file.
const (
	DefaultSkew           = 60 * time.Second
	DefaultTokenType      = "at+jwt"
	DefaultOperatorRole   = "gatehouse:operator"
	DefaultJWKSMaxAge     = time.Hour
	DefaultJWKSMinRefetch = 30 * time.Second
	DefaultReadTimeout    = 5 * time.Second
	DefaultSearchSpan     = 7 * 24 * time.Hour
)

// API configures gatehouse's own API under /api/v1 as an OAuth resource
// server. Bearer access tokens are accepted when Audience and at least one
// issuer are set; the browser reaches the same API with its session cookie
// whenever login is enabled.
type API struct {
	// Audience is this API's identifier; a token's aud must contain it.
	// Required when Issuers is set (env GATEHOUSE_API_AUDIENCE).
	Audience string `yaml:"audience"`
	// Issuers are the trusted authorization servers.
	Issuers []APIIssuer `yaml:"issuers"`
	// Skew is the clock skew allowed on exp, nbf and iat. Default 60s.
	Skew time.Duration `yaml:"skew"`
	// TokenType is "at+jwt" (default: RFC 9068 typ required) or "compat"
	// (any typ, but tokens that look like ID tokens are still refused).
	TokenType string `yaml:"token_type"`
	// IDTokenAudiences are login client IDs: a token whose aud contains one is
	// refused as an ID token. The login client ID (auth section) is added by
	// the wiring when known.
	IDTokenAudiences []string `yaml:"id_token_audiences"`
	// Operators may read and replay inbox events: listed (issuer, subject)
	// pairs, and bearer tokens carrying OperatorRole in their roles claim.
	Operators []APIOperator `yaml:"operators"`
	// OperatorRole is the role that makes a bearer caller an operator.
	// Default "gatehouse:operator" (DefaultOperatorRole).
	OperatorRole string `yaml:"operator_role"`
	// JWKSMaxAge bounds how long a key set is cached. Default 1h.
	JWKSMaxAge time.Duration `yaml:"jwks_max_age"`
	// JWKSMinRefetch is the least time between fetches caused by unknown key
	// IDs. Default 30s.
	JWKSMinRefetch time.Duration `yaml:"jwks_min_refetch"`
	// ReadTimeout bounds each read request (GET) of the API: a query still
	// running then is cancelled on the server and the answer is 503 with
	// Retry-After. Default 5s.
	ReadTimeout time.Duration `yaml:"read_timeout"`
	// SearchSpan is the most received_at time one page of an indexed
	// payload search (search: indexed) reads, newest first: a longer
	// since..until window is searched a span a page, each page not full
	// answering partial with a next_cursor to the next older span.
	// Default 168h (7 days).
	SearchSpan time.Duration `yaml:"search_span"`
}

// APIIssuer is one trusted authorization server.
type APIIssuer struct {
	// Issuer is compared exactly with the token's iss. Required.
	Issuer string `yaml:"issuer"`
	// JWKSURL defaults to jwks_uri from the issuer's discovery document.
	JWKSURL string `yaml:"jwks_url"`
	// Algorithms is the JWS allowlist. Default [RS256, PS256, ES256, EdDSA];
	// none and HS* are refused.
	Algorithms []string `yaml:"algorithms"`
	// RolesClaim is the dotted path of the roles claim. Default "roles".
	RolesClaim string `yaml:"roles_claim"`
	// ScopeAliases maps issuer scope names to API scopes.
	ScopeAliases map[string][]string `yaml:"scope_aliases"`
	// Introspection enables RFC 7662 for opaque tokens when ClientID is set.
	Introspection APIIntrospection `yaml:"introspection"`
}

// APIIntrospection configures RFC 7662 token introspection.
type APIIntrospection struct {
	// URL defaults to introspection_endpoint from discovery.
	URL string `yaml:"url"`
	// ClientID and ClientSecret (a secret reference: literal, env:NAME or
	// file:/path) authenticate gatehouse at the endpoint.
	ClientID     string `yaml:"client_id"`
	ClientSecret string `yaml:"client_secret"`

	secret []byte
}

// Secret returns the resolved client secret (API.ResolveSecrets).
func (i APIIntrospection) Secret() []byte { return i.secret }

// APIOperator names one operator by identity.
type APIOperator struct {
	Issuer  string `yaml:"issuer"`
	Subject string `yaml:"subject"`
}

// BearerEnabled reports whether bearer tokens are accepted.
func (a *API) BearerEnabled() bool { return a.Audience != "" && len(a.Issuers) > 0 }

// ApplyDefaults fills the zero settings with their defaults.
func (a *API) ApplyDefaults() {
	setDefault(&a.Skew, DefaultSkew)
	setDefault(&a.TokenType, DefaultTokenType)
	setDefault(&a.OperatorRole, DefaultOperatorRole)
	setDefault(&a.JWKSMaxAge, DefaultJWKSMaxAge)
	setDefault(&a.JWKSMinRefetch, DefaultJWKSMinRefetch)
	setDefault(&a.ReadTimeout, DefaultReadTimeout)
	setDefault(&a.SearchSpan, DefaultSearchSpan)
}

// ResolveSecrets sets each issuer's introspection client secret from its
// reference through resolve (internal/config's env:/file:/literal
// resolution); an error names its key.
func (a *API) ResolveSecrets(resolve func(ref string) ([]byte, error)) error {
	for i := range a.Issuers {
		in := &a.Issuers[i].Introspection
		if in.ClientSecret == "" {
			continue
		}
		v, err := resolve(in.ClientSecret)
		if err != nil {
			return errorf("api.issuers[%d].introspection.client_secret: %w", i, err)
		}
		in.secret = v
	}
	return nil
}

// Validate returns the first setting that is out of range, naming its key.
func (a *API) Validate() error {
	if len(a.Issuers) > 0 && a.Audience == "" {
		return errorf("api.audience: required when api.issuers is set (the identifier tokens must carry in aud)")
	}
	if a.Skew < 0 || a.Skew > 10*time.Minute {
		return errorf("api.skew: %s is outside 0..10m", a.Skew)
	}
	if a.TokenType != "at+jwt" && a.TokenType != "compat" {
		return errorf("api.token_type: %q is not at+jwt or compat", a.TokenType)
	}
	if a.JWKSMaxAge < 0 || a.JWKSMinRefetch < 0 {
		return errorf("api.jwks_max_age, api.jwks_min_refetch: must be positive")
	}
	if a.ReadTimeout < 0 || a.ReadTimeout > 10*time.Minute {
		return errorf("api.read_timeout: %s is outside 0 (the default, 5s)..10m", a.ReadTimeout)
	}
	if a.SearchSpan < 0 || (a.SearchSpan > 0 && a.SearchSpan < time.Hour) {
		return errorf("api.search_span: %s is shorter than 1h (0 is the default, 168h)", a.SearchSpan)
	}
	seen := map[string]bool{}
	for i, is := range a.Issuers {
		if u, err := url.Parse(is.Issuer); err != nil || u.Scheme == "" || u.Host == "" {
			return errorf("api.issuers[%d].issuer: %q is not an absolute URL", i, is.Issuer)
		}
		if seen[is.Issuer] {
			return errorf("api.issuers[%d].issuer: duplicate %q", i, is.Issuer)
		}
		seen[is.Issuer] = true
		for _, alg := range is.Algorithms {
			if !jws.IsSafe(alg) {
				return errorf("api.issuers[%d].algorithms: %q is not allowed (asymmetric only: %s; never none or HS*)", i, alg, strings.Join(jws.Safe(), ", "))
			}
		}
		in := is.Introspection
		if (in.URL != "" || in.ClientSecret != "") && in.ClientID == "" {
			return errorf("api.issuers[%d].introspection.client_id: required when introspection is configured", i)
		}
		if in.ClientID != "" && in.ClientSecret == "" {
			return errorf("api.issuers[%d].introspection.client_secret: required with client_id", i)
		}
	}
	for i, op := range a.Operators {
		if op.Issuer == "" || op.Subject == "" {
			return errorf("api.operators[%d]: issuer and subject are both required", i)
		}
	}
	return nil
}
