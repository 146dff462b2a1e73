package auth

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

	"github.com/coreos/go-oidc/v3/oidc"
	"github.com/go-chi/chi/v5"
	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/oauth2"
)

// Config configures a Service.
type Config struct {
	// Auth is the auth section (issuer, client, redirect URL, lifetimes…).
	Auth Settings
	// Store holds sessions and tokens. Required.
	Store *Store
	// Home is where GET / sends a signed-in user ("" or nil: /account);
	// cmd/gatehouse sends operators to the console.
	Home func(User) string
	// HTTPClient talks to the OP (discovery, JWKS, token, UserInfo,
	// revocation). Default: a client with a 10s timeout.
	HTTPClient *http.Client
	// Logger nil: slog.Default(). Registerer nil: metrics are not registered
	// (the rule of every stage's Config).
	Logger     *slog.Logger
	Registerer prometheus.Registerer
	Now        func() time.Time
	// JWKSMinRefetch is the least time between two fetches of the OP's key
	// set (keyset.go). Default DefaultJWKSMinRefetch.
	JWKSMinRefetch time.Duration
}

// opMetadata is the part of the OP's discovery document go-oidc does not parse.
type opMetadata struct {
	Revocation      string   `json:"revocation_endpoint"`
	EndSession      string   `json:"end_session_endpoint"`
	UserInfo        string   `json:"userinfo_endpoint"`
	IssParameter    bool     `json:"authorization_response_iss_parameter_supported"`
	BackChannel     bool     `json:"backchannel_logout_supported"`
	ChallengeMethod []string `json:"code_challenge_methods_supported"`
	TokenAuth       []string `json:"token_endpoint_auth_methods_supported"`
	JWKSURI         string   `json:"jwks_uri"`
}

// tokenAuthMethod chooses how a client authenticates at the token endpoint,
// once, at start: the configured method, else the first of
// client_secret_basic and client_secret_post the OP supports, else
// client_secret_basic (the discovery default). x/oauth2's auto-detection is
// never used: when its first try fails it retries with the same one-time
// code, which an OP such as Keycloak then refuses as already used, and the
// first, real error is lost. A public client sends its client_id in the
// body ("none").
func tokenAuthMethod(confidential bool, configured string, supported []string) (string, error) {
	switch {
	case !confidential:
		return "none", nil
	case configured != "":
		if len(supported) > 0 && !slices.Contains(supported, configured) {
			return "", fmt.Errorf("auth.token_endpoint_auth_method: the OP supports %v, not %s", supported, configured)
		}
		return configured, nil
	case len(supported) == 0, slices.Contains(supported, "client_secret_basic"):
		return "client_secret_basic", nil
	case slices.Contains(supported, "client_secret_post"):
		return "client_secret_post", nil
	default:
		return "", fmt.Errorf("auth: the OP supports neither client_secret_basic nor client_secret_post (token_endpoint_auth_methods_supported %v)", supported)
	}
}

// Service is the browser login surface (see the package documentation).
type Service struct {
	cfg      Settings
	store    *Store
	client   *http.Client
	log      *slog.Logger
	now      func() time.Time
	provider *oidc.Provider
	meta     opMetadata
	oauth    *oauth2.Config
	verifier *oidc.IDTokenVerifier
	origin   string
	kick     chan struct{}
	pages    *pages
	homeOf   func(User) string // Config.Home

	logins, refreshes, opRevocations, jwksFetches *prometheus.CounterVec
}

// New discovers the OP at cfg.Auth.Issuer and returns the Service. It fails
// when discovery fails, the discovered issuer differs from the configured
// one, or the OP does not support PKCE S256 while advertising its methods.
func New(ctx context.Context, cfg Config) (*Service, error) {
	if cfg.Store == nil {
		return nil, errors.New("auth: nil store")
	}
	if !cfg.Auth.Enabled() {
		return nil, errors.New("auth: issuer not configured")
	}
	s := &Service{cfg: cfg.Auth, store: cfg.Store, client: cfg.HTTPClient, log: cfg.Logger, now: cfg.Now,
		origin: OriginOf(cfg.Auth.RedirectURL), kick: make(chan struct{}, 1), homeOf: cfg.Home}
	if s.client == nil {
		s.client = &http.Client{Timeout: 10 * time.Second}
	}
	if s.log == nil {
		s.log = slog.Default()
	}
	if s.now == nil {
		s.now = time.Now
	}
	var err error
	s.provider, err = oidc.NewProvider(s.opContext(ctx), cfg.Auth.Issuer)
	if err != nil {
		return nil, fmt.Errorf("auth: discovery at %s: %w", cfg.Auth.Issuer, err)
	}
	if err := s.provider.Claims(&s.meta); err != nil {
		return nil, fmt.Errorf("auth: discovery metadata: %w", err)
	}
	if len(s.meta.ChallengeMethod) > 0 && !slices.Contains(s.meta.ChallengeMethod, "S256") {
		return nil, fmt.Errorf("auth: the OP does not support PKCE S256 (code_challenge_methods_supported %v)", s.meta.ChallengeMethod)
	}
	scopes := []string{oidc.ScopeOpenID}
	for _, sc := range cfg.Auth.Scopes {
		if sc != oidc.ScopeOpenID && sc != oidc.ScopeOfflineAccess && !slices.Contains(scopes, sc) {
			scopes = append(scopes, sc)
		}
	}
	if cfg.Auth.OfflineAccess {
		scopes = append(scopes, oidc.ScopeOfflineAccess)
	}
	s.oauth = &oauth2.Config{
		ClientID:     cfg.Auth.ClientID,
		ClientSecret: string(cfg.Auth.ClientSecret),
		Endpoint:     s.provider.Endpoint(),
		RedirectURL:  cfg.Auth.RedirectURL,
		Scopes:       scopes,
	}
	method, err := tokenAuthMethod(s.oauth.ClientSecret != "", cfg.Auth.TokenEndpointAuthMethod, s.meta.TokenAuth)
	if err != nil {
		return nil, err
	}
	s.oauth.Endpoint.AuthStyle = oauth2.AuthStyleInParams // client_secret_post, and public clients (client_id in the body)
	if method == "client_secret_basic" {
		s.oauth.Endpoint.AuthStyle = oauth2.AuthStyleInHeader
	}
	if s.meta.JWKSURI == "" {
		return nil, errors.New("auth: discovery metadata: no jwks_uri")
	}
	if cfg.JWKSMinRefetch <= 0 {
		cfg.JWKSMinRefetch = DefaultJWKSMinRefetch
	}
	s.jwksFetches = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "gatehouse_auth_jwks_fetches_total", Help: "Fetches of the OP's key set (ID and logout tokens) by result; at most one per 30 s past the first.",
	}, []string{"result"})
	keys := &keySet{url: s.meta.JWKSURI, client: s.client, now: s.now, minRefetch: cfg.JWKSMinRefetch, onFetch: func(ok bool) {
		s.jwksFetches.WithLabelValues(map[bool]string{true: "ok", false: "error"}[ok]).Inc()
	}}
	s.verifier = oidc.NewVerifier(cfg.Auth.Issuer, keys, &oidc.Config{
		ClientID:             cfg.Auth.ClientID,
		SupportedSigningAlgs: cfg.Auth.IDTokenAlgs,
		Now:                  s.now,
	})
	if s.pages, err = newPages(); err != nil {
		return nil, err
	}
	s.logins = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "gatehouse_auth_logins_total", Help: "Browser logins by result.",
	}, []string{"result"})
	s.refreshes = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "gatehouse_auth_token_refreshes_total", Help: "Server-side token refreshes by result.",
	}, []string{"result"})
	s.opRevocations = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "gatehouse_auth_op_revocations_total", Help: "RFC 7009 token revocations sent to the OP by result.",
	}, []string{"result"})
	if cfg.Registerer != nil {
		for _, c := range []prometheus.Collector{s.logins, s.refreshes, s.opRevocations, s.jwksFetches} {
			if err := cfg.Registerer.Register(c); err != nil {
				return nil, fmt.Errorf("auth: register metrics: %w", err)
			}
		}
	}
	s.log.Info("auth configured", "issuer", cfg.Auth.Issuer, "client_id", cfg.Auth.ClientID,
		"callback_uri", cfg.Auth.RedirectURL, "scopes", strings.Join(scopes, " "),
		"revocation_endpoint", s.meta.Revocation != "", "end_session_endpoint", s.meta.EndSession != "",
		"rfc9207_iss", s.meta.IssParameter, "token_endpoint_auth_method", method)
	return s, nil
}

// opContext makes go-oidc and x/oauth2 use the Service's HTTP client.
func (s *Service) opContext(ctx context.Context) context.Context {
	return oidc.ClientContext(ctx, s.client)
}

// Store returns the session store.
func (s *Service) Store() *Store { return s.store }

// callbackPath is the path of the registered redirect URL.
func (s *Service) callbackPath() string {
	u, _ := url.Parse(s.cfg.RedirectURL)
	if u.Path == "" {
		return "/"
	}
	return u.Path
}

// Routes mounts the browser endpoints on r (see the package documentation),
// and GET / (the account page when signed in, else the sign-in page).
// State-changing endpoints are wrapped in RequireCSRF; the back-channel
// logout endpoint (called by the OP, not a browser) and the operator API
// (bearer token) are not.
func (s *Service) Routes(r chi.Router) {
	r.Get("/", s.home)
	r.Get("/signin", s.signinPage)
	r.Get("/login", s.login)
	r.Get(s.callbackPath(), s.callback)
	r.Get("/account", s.account)
	r.With(s.csrf).Post("/logout", s.logout)
	r.With(s.csrf).Post("/account/sessions/{id}/revoke", s.revokeOne)
	r.With(s.csrf).Post("/account/sessions/revoke-all", s.revokeAll)
	r.Post("/backchannel-logout", s.backchannelLogout)
	if len(s.cfg.OperatorToken) > 0 {
		r.Post("/operator/v1/revoke-user", s.operatorRevokeUser)
	}
}

func (s *Service) csrf(next http.Handler) http.Handler { return RequireCSRF(s.origin, next) }

// AccessToken returns a valid access token of the session, refreshing it
// first on the server when it expires within refresh_before. Concurrent calls
// for one session (in any process) share one refresh. Errors: ErrNoSession
// (revoked), ErrSessionEnded (the OP refused the refresh token; the session
// is revoked), ErrRefreshTokenReuse (family revoked), ErrNoRefreshToken, or
// a transport error (the session stays).
func (s *Service) AccessToken(ctx context.Context, sessionID string) (string, error) {
	before, refresh := s.cfg.RefreshBefore, s.refresh
	if s.cfg.NoRefresh { // the token as it is, until it expires
		before, refresh = 0, func(context.Context, string) (*oauth2.Token, error) { return nil, ErrRefreshOff }
	}
	ts, err := s.store.freshTokens(ctx, sessionID, before, false, refresh)
	s.countRefresh(err)
	if err != nil {
		return "", err
	}
	return ts.AccessToken, nil
}

// ForceRefresh refreshes the session's tokens now, whatever their expiry.
func (s *Service) ForceRefresh(ctx context.Context, sessionID string) error {
	if s.cfg.NoRefresh {
		return ErrRefreshOff
	}
	_, err := s.store.freshTokens(ctx, sessionID, s.cfg.RefreshBefore, true, s.refresh)
	s.countRefresh(err)
	return err
}

func (s *Service) countRefresh(err error) {
	switch {
	case err == nil:
		s.refreshes.WithLabelValues("ok").Inc()
	case errors.Is(err, ErrSessionEnded), errors.Is(err, ErrRefreshTokenReuse):
		s.refreshes.WithLabelValues("session_ended").Inc()
		s.Kick()
	case errors.Is(err, ErrNoSession), errors.Is(err, ErrNoRefreshToken), errors.Is(err, ErrRefreshOff):
	default:
		s.refreshes.WithLabelValues("error").Inc()
	}
}

func (s *Service) refresh(ctx context.Context, rt string) (*oauth2.Token, error) {
	ctx, cancel := context.WithTimeout(s.opContext(ctx), 15*time.Second)
	defer cancel()
	return s.oauth.TokenSource(ctx, &oauth2.Token{RefreshToken: rt}).Token()
}

// Kick asks the revocation loop to run now (after a revocation).
func (s *Service) Kick() {
	select {
	case s.kick <- struct{}{}:
	default:
	}
}

// Run revokes the tokens of revoked sessions at the OP (RFC 7009, when the OP
// advertises a revocation endpoint), deletes them, and cleans expired rows,
// every op_revoke_interval or when kicked, until ctx ends.
func (s *Service) Run(ctx context.Context) error {
	t := time.NewTicker(s.cfg.OPRevokeInterval)
	defer t.Stop()
	lastCleanup := time.Time{}
	for {
		if time.Since(lastCleanup) > time.Minute {
			if err := s.store.cleanup(ctx); err != nil && ctx.Err() == nil {
				s.log.Warn("auth cleanup failed", "err", err)
			}
			lastCleanup = time.Now()
		}
		for {
			d, err := s.store.drainOPRevocations(ctx, 50, s.revokeAtOP())
			if err != nil && ctx.Err() == nil {
				s.log.Warn("auth revocation loop failed", "err", err)
			}
			s.opRevocations.WithLabelValues("deferred").Add(float64(d.deferred))
			s.opRevocations.WithLabelValues("given_up").Add(float64(d.gaveUp))
			if d.done+d.deferred+d.gaveUp < 50 || err != nil {
				break
			}
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		case <-s.kick:
		}
	}
}

// revokeAtOP returns the RFC 7009 call, or nil when the OP has no endpoint.
func (s *Service) revokeAtOP() opRevokeFunc {
	if s.meta.Revocation == "" {
		return nil
	}
	return func(ctx context.Context, token, hint string) error {
		form := url.Values{"token": {token}, "token_type_hint": {hint}}
		secret := s.oauth.ClientSecret
		if secret == "" {
			form.Set("client_id", s.oauth.ClientID)
		}
		ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.meta.Revocation, strings.NewReader(form.Encode()))
		if err != nil {
			return err
		}
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		if secret != "" {
			req.SetBasicAuth(url.QueryEscape(s.oauth.ClientID), url.QueryEscape(secret))
		}
		resp, err := s.client.Do(req)
		if err != nil {
			s.opRevocations.WithLabelValues("error").Inc()
			return fmt.Errorf("revocation endpoint: %w", err)
		}
		resp.Body.Close()
		switch {
		case resp.StatusCode/100 == 2:
			s.opRevocations.WithLabelValues("ok").Inc()
			return nil
		case resp.StatusCode >= 500 || resp.StatusCode == http.StatusTooManyRequests:
			s.opRevocations.WithLabelValues("error").Inc()
			return fmt.Errorf("revocation endpoint: status %d", resp.StatusCode)
		default: // a 4xx will not change on retry
			s.opRevocations.WithLabelValues("refused").Inc()
			s.log.Warn("revocation endpoint refused a token", "status", resp.StatusCode, "token_type_hint", hint, "client_id", s.oauth.ClientID)
			return nil
		}
	}
}
