// Package bearer verifies OAuth 2.0 bearer access tokens for gatehouse's API
// (RFC 6750 request parsing and answers, RFC 9068 JWT access tokens checked
// against trusted issuers' JWKS, RFC 7662 introspection for opaque tokens).
package bearer

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/gatehouse/gatehouse/internal/jws"
	"github.com/gatehouse/gatehouse/internal/settings"

	"github.com/prometheus/client_golang/prometheus"
)

// DefaultAlgorithms is an issuer's allowlist when none is configured.
var DefaultAlgorithms = []string{"RS256", "PS256", "ES256", "EdDSA"}

// Issuer is one trusted authorization server.
type Issuer struct {
	// Issuer is compared exactly (byte for byte) with the token's iss. Required.
	Issuer string
	// JWKSURL is the issuer's key set. Default: jwks_uri from the issuer's
	// discovery document (<issuer>/.well-known/openid-configuration).
	JWKSURL string
	// Algorithms is the JWS allowlist for this issuer, a subset of
	// jws.Safe() (asymmetric only). Default DefaultAlgorithms.
	Algorithms []string
	// RolesClaim is the dotted path of the roles claim in the token (for
	// example "realm_access.roles" for Keycloak). Default "roles".
	RolesClaim string
	// ScopeAliases maps the issuer's scope names to API scopes, for IdPs
	// whose scope names cannot be chosen. A token scope is kept as is and
	// additionally grants every API scope it maps to.
	ScopeAliases map[string][]string
	// Introspection, when ClientID is set, checks opaque (non-JWT) tokens
	// with the issuer's RFC 7662 introspection endpoint.
	Introspection Introspection
}

// Introspection configures RFC 7662 token introspection.
type Introspection struct {
	// URL is the introspection endpoint. Default: introspection_endpoint
	// from the issuer's discovery document.
	URL string
	// ClientID and ClientSecret authenticate gatehouse at the endpoint
	// (client_secret_basic).
	ClientID     string
	ClientSecret []byte
}

// Config configures a Verifier.
type Config struct {
	// Issuers are the trusted authorization servers. At least one.
	Issuers []Issuer
	// Audience is this API's identifier; a token's aud must contain it. Required.
	Audience string
	// Skew is the clock skew allowed on exp, nbf and iat. Default 60s
	// (settings.DefaultSkew, the api section's);
	// a negative value means no skew.
	Skew time.Duration
	// Compat accepts JWT access tokens without typ "at+jwt" (RFC 9068) for
	// OPs that do not emit it. Default false. In both modes tokens that look
	// like ID tokens are refused: aud containing one of IDTokenAudiences, or
	// a nonce or at_hash claim.
	Compat bool
	// IDTokenAudiences are the login client IDs: a token whose aud contains
	// one of them is an ID token (or a token for the login client), never an
	// access token for this API.
	IDTokenAudiences []string
	// JWKSMaxAge is how long a fetched key set is used before it is fetched
	// again. Default 1h (settings.DefaultJWKSMaxAge).
	JWKSMaxAge time.Duration
	// JWKSMinRefetch is the least time between two fetches of one key set
	// triggered by an unknown kid (a rate limit against floods of forged
	// kids). Default 30s (settings.DefaultJWKSMinRefetch).
	JWKSMinRefetch time.Duration
	// HTTPClient fetches discovery, JWKS and introspection. Default: a client
	// with a 10s timeout.
	HTTPClient *http.Client
	// Now is the clock. Default time.Now.
	Now func() time.Time
	// Logger receives key fetch problems (never a token). Default slog.Default().
	Logger *slog.Logger
	// Registerer receives the verifier's metrics. Default: none.
	Registerer prometheus.Registerer
}

// Principal is the verified identity and authority a token carries.
type Principal struct {
	Issuer   string
	Subject  string
	ClientID string
	// Scopes are the granted scopes after alias mapping.
	Scopes   []string
	Roles    []string
	Audience []string
	Expiry   time.Time
	// Method is "jwt" or "introspection".
	Method string
}

// HasScope reports whether the token grants scope s.
func (p *Principal) HasScope(s string) bool { return slices.Contains(p.Scopes, s) }

// HasRole reports whether the token carries role r.
func (p *Principal) HasRole(r string) bool { return slices.Contains(p.Roles, r) }

// Verifier checks bearer access tokens. It is safe for concurrent use.
type Verifier struct {
	cfg     Config
	issuers map[string]*issuerState
	order   []*issuerState
	m       *metrics
}

type issuerState struct {
	cfg      Issuer
	algs     map[string]bool
	keys     *keySet
	disc     *discovery
	introURL string
}

// New validates cfg and returns a Verifier. Keys are fetched lazily, on the
// first token of each issuer. It returns an error naming the first invalid
// setting.
func New(cfg Config) (*Verifier, error) {
	if cfg.Audience == "" {
		return nil, errors.New("bearer: audience is required")
	}
	if len(cfg.Issuers) == 0 {
		return nil, errors.New("bearer: at least one issuer is required")
	}
	if cfg.Skew == 0 {
		cfg.Skew = settings.DefaultSkew
	} else if cfg.Skew < 0 {
		cfg.Skew = 0
	}
	if cfg.JWKSMaxAge <= 0 {
		cfg.JWKSMaxAge = settings.DefaultJWKSMaxAge
	}
	if cfg.JWKSMinRefetch <= 0 {
		cfg.JWKSMinRefetch = settings.DefaultJWKSMinRefetch
	}
	if cfg.HTTPClient == nil {
		cfg.HTTPClient = &http.Client{Timeout: 10 * time.Second}
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	v := &Verifier{cfg: cfg, issuers: map[string]*issuerState{}, m: newMetrics(cfg.Registerer)}
	for i, is := range cfg.Issuers {
		if u, err := url.Parse(is.Issuer); err != nil || u.Scheme == "" || u.Host == "" {
			return nil, fmt.Errorf("bearer: issuers[%d]: %q is not an absolute URL", i, is.Issuer)
		}
		if _, dup := v.issuers[is.Issuer]; dup {
			return nil, fmt.Errorf("bearer: issuers[%d]: duplicate issuer %q", i, is.Issuer)
		}
		if len(is.Algorithms) == 0 {
			is.Algorithms = DefaultAlgorithms
		}
		if is.RolesClaim == "" {
			is.RolesClaim = "roles"
		}
		st := &issuerState{cfg: is, algs: map[string]bool{}, introURL: is.Introspection.URL}
		for _, a := range is.Algorithms {
			if !jws.IsSafe(a) {
				return nil, fmt.Errorf("bearer: issuers[%d]: algorithm %q is not allowed (allowed: %s)", i, a, strings.Join(jws.Safe(), ", "))
			}
			st.algs[a] = true
		}
		st.disc = &discovery{issuer: is.Issuer, client: cfg.HTTPClient}
		st.keys = &keySet{
			issuer: is.Issuer, url: is.JWKSURL, disc: st.disc, client: cfg.HTTPClient,
			now: cfg.Now, maxAge: cfg.JWKSMaxAge, minRefetch: cfg.JWKSMinRefetch,
			log: cfg.Logger, m: v.m,
		}
		v.issuers[is.Issuer] = st
		v.order = append(v.order, st)
	}
	return v, nil
}

// Verify checks token and returns its principal. Errors are *Error values:
// ErrInvalidToken-coded for bad, expired or untrusted tokens, or
// ErrUnavailable when a key set or introspection endpoint cannot be reached.
func (v *Verifier) Verify(ctx context.Context, token string) (*Principal, error) {
	var (
		p   *Principal
		err error
	)
	if strings.Count(token, ".") == 2 {
		p, err = v.verifyJWT(ctx, token)
	} else {
		p, err = v.introspect(ctx, token)
	}
	result := "ok"
	if err != nil {
		result = "invalid"
		var e *Error
		if errors.As(err, &e) && e.Status == http.StatusServiceUnavailable {
			result = "unavailable"
		}
	}
	v.m.verifications.WithLabelValues(result).Inc()
	return p, err
}

// checkTimes applies exp, nbf and iat with the configured skew: a token is
// expired once now >= exp+skew, not yet valid while now < nbf-skew, and
// refused when issued after now+skew.
func (v *Verifier) checkTimes(exp, nbf, iat *time.Time) error {
	now := v.cfg.Now()
	skew := v.cfg.Skew
	if exp == nil {
		return invalidToken("token has no exp")
	}
	if !now.Before(exp.Add(skew)) {
		return invalidToken("token expired")
	}
	if nbf != nil && now.Before(nbf.Add(-skew)) {
		return invalidToken("token not yet valid (nbf)")
	}
	if iat != nil && iat.After(now.Add(skew)) {
		return invalidToken("token issued in the future (iat)")
	}
	return nil
}

// finish maps scopes through the issuer's aliases.
func (st *issuerState) mapScopes(scopes []string) []string {
	out := make([]string, 0, len(scopes))
	for _, s := range scopes {
		if !slices.Contains(out, s) {
			out = append(out, s)
		}
		for _, a := range st.cfg.ScopeAliases[s] {
			if !slices.Contains(out, a) {
				out = append(out, a)
			}
		}
	}
	return out
}

func (v *Verifier) audienceOK(aud []string, extra string) bool {
	return slices.Contains(aud, v.cfg.Audience) || (extra != "" && slices.Contains(aud, extra))
}

func (v *Verifier) looksLikeIDTokenAudience(aud []string) bool {
	for _, a := range v.cfg.IDTokenAudiences {
		if a != "" && slices.Contains(aud, a) {
			return true
		}
	}
	return false
}
