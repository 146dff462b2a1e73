package settings

import (
	"encoding/base64"
	"fmt"
	"net/url"
	"strings"
	"time"
)

// Auth configures browser login (OIDC Authorization Code + PKCE), the
// server-side sessions, the token store and the operator API. Login is
// enabled when Issuer is set; every other field then has a default or is
// validated as required.
type Auth struct {
	// Issuer is the OpenID Provider's issuer URL exactly as its discovery
	// document states it (trailing slash included when the OP uses one).
	Issuer string `yaml:"issuer"`
	// ClientID is the client registered at the OP. Required with Issuer.
	ClientID string `yaml:"client_id"`
	// ClientSecret is a secret reference ("env:NAME", "file:/path" or a
	// literal). Empty means a public client (PKCE only, no client secret).
	ClientSecret string `yaml:"client_secret"`
	// RedirectURL is the callback registered at the OP, byte for byte (scheme,
	// host, port, path, trailing slash), e.g. "https://app.example.com/callback".
	// Its path is where gatehouse serves the callback, and its origin is the
	// application's own origin for same-origin checks. Required with Issuer.
	RedirectURL string `yaml:"redirect_url"`
	// PostLogoutRedirectURL is sent to the OP's end_session_endpoint after
	// sign-out; it must be registered at the OP. Empty: omitted (the OP shows
	// its own signed-out page).
	PostLogoutRedirectURL string `yaml:"post_logout_redirect_url"`
	// Scopes are requested besides "openid" (always sent).
	// Default ["profile", "email"].
	Scopes []string `yaml:"scopes"`
	// Refresh keeps the session's tokens fresh by refreshing them on the
	// server with the refresh token the OP issued. Default true; set false
	// to disable.
	Refresh *bool `yaml:"refresh"`
	// OfflineAccess also requests the offline_access scope. Default false:
	// OPs issue refresh tokens for normal sessions, and an offline session
	// (Keycloak) outlives sign-out and back-channel logout.
	OfflineAccess bool `yaml:"offline_access"`
	// TokenEndpointAuthMethod is how the client authenticates at the token
	// endpoint: client_secret_basic or client_secret_post. Default: the
	// first of the two the OP lists in token_endpoint_auth_methods_supported
	// (client_secret_basic when it lists none, as OpenID Connect Discovery
	// says). Never guessed by trial: a retry would present the one-time
	// code twice.
	TokenEndpointAuthMethod string `yaml:"token_endpoint_auth_method"`
	// RefreshBefore is how long before the access token expires gatehouse
	// refreshes it. Default 60s.
	RefreshBefore time.Duration `yaml:"refresh_before"`
	// UserInfo calls the OP's UserInfo endpoint at login (its sub must equal
	// the ID token's). Default true; ignored when the OP has no endpoint.
	UserInfo *bool `yaml:"userinfo"`
	// IDTokenAlgs is the ID token signing algorithm allowlist ("none" is never
	// accepted). Default [RS256, ES256, PS256].
	IDTokenAlgs []string `yaml:"id_token_algs"`
	// CookieName is the session cookie; it must start with "__Host-".
	// Default "__Host-gatehouse-session".
	CookieName string `yaml:"cookie_name"`
	// SessionIdleTimeout ends a session not used for this long. Default 30m.
	SessionIdleTimeout time.Duration `yaml:"session_idle_timeout"`
	// SessionLifetime is the absolute lifetime of a session, however active.
	// Default 12h.
	SessionLifetime time.Duration `yaml:"session_lifetime"`
	// SessionRetention is how long an ended session (logged out, revoked or
	// expired) is kept, with its user's name, e-mail and device, before it
	// is deleted with its refresh-token family (once the OP revocation of
	// its tokens is done). Default 720h (30 days).
	SessionRetention time.Duration `yaml:"session_retention"`
	// LoginTimeout bounds a login transaction (redirect to callback). Default 10m.
	LoginTimeout time.Duration `yaml:"login_timeout"`
	// EncryptionKeys encrypt stored tokens with AES-256-GCM. The first key
	// encrypts; every key decrypts (rotation: put the new key first, keep the
	// old ones until `gatehouse sessions rekey` has run). Values are secret
	// references to 32 random bytes in base64. Required with Issuer.
	EncryptionKeys []AuthKey `yaml:"encryption_keys"`
	// NextAllowlist holds absolute URLs accepted verbatim as the return
	// address after login; anything else must be a local path.
	NextAllowlist []string `yaml:"next_allowlist"`
	// OperatorToken (secret reference) enables the operator API
	// (POST /operator/v1/revoke-user) with "Authorization: Bearer <token>".
	// Empty: the operator API is not mounted.
	OperatorToken string `yaml:"operator_token"`
	// OPRevokeInterval is how often revoked refresh-token families are sent to
	// the OP's RFC 7009 revocation endpoint. Default 10s.
	OPRevokeInterval time.Duration `yaml:"op_revoke_interval"`
	// TLSCertFile and TLSKeyFile switch the public listener to HTTPS
	// (both or neither).
	TLSCertFile string `yaml:"tls_cert_file"`
	TLSKeyFile  string `yaml:"tls_key_file"`

	clientSecret  []byte
	operatorToken []byte
}

// AuthKey is one token-encryption key: an ID stored beside each ciphertext
// and a secret reference to 32 bytes in standard or URL-safe base64.
type AuthKey struct {
	ID       string `yaml:"id"`
	Value    string `yaml:"value"`
	resolved []byte
}

// Key returns the decoded 32-byte key.
func (k AuthKey) Key() []byte { return k.resolved }

// Enabled reports whether browser login is configured.
func (a *Auth) Enabled() bool { return a.Issuer != "" }

// ClientSecretValue returns the resolved client secret; nil for a public client.
func (a *Auth) ClientSecretValue() []byte { return a.clientSecret }

// OperatorTokenValue returns the resolved operator API token; nil when unset.
func (a *Auth) OperatorTokenValue() []byte { return a.operatorToken }

// RefreshEnabled reports whether server-side refresh is on.
func (a *Auth) RefreshEnabled() bool { return a.Refresh == nil || *a.Refresh }

// UserInfoEnabled reports whether UserInfo is called at login.
func (a *Auth) UserInfoEnabled() bool { return a.UserInfo == nil || *a.UserInfo }

// TLSEnabled reports whether the public listener serves HTTPS.
func (a *Auth) TLSEnabled() bool { return a.TLSCertFile != "" }

// ApplyDefaults fills the zero settings with their defaults.
func (a *Auth) ApplyDefaults() {
	if len(a.Scopes) == 0 {
		a.Scopes = []string{"profile", "email"}
	}
	if a.RefreshBefore == 0 {
		a.RefreshBefore = 60 * time.Second
	}
	if len(a.IDTokenAlgs) == 0 {
		a.IDTokenAlgs = []string{"RS256", "ES256", "PS256"}
	}
	if a.CookieName == "" {
		a.CookieName = "__Host-gatehouse-session"
	}
	if a.SessionIdleTimeout == 0 {
		a.SessionIdleTimeout = 30 * time.Minute
	}
	if a.SessionLifetime == 0 {
		a.SessionLifetime = 12 * time.Hour
	}
	if a.LoginTimeout == 0 {
		a.LoginTimeout = 10 * time.Minute
	}
	if a.SessionRetention == 0 {
		a.SessionRetention = 30 * 24 * time.Hour
	}
	if a.OPRevokeInterval == 0 {
		a.OPRevokeInterval = 10 * time.Second
	}
	for i := range a.EncryptionKeys {
		if a.EncryptionKeys[i].ID == "" {
			a.EncryptionKeys[i].ID = fmt.Sprintf("key%d", i+1)
		}
	}
}

// ResolveSecrets sets the client secret, the operator token and the
// encryption keys from their references through resolve (internal/config's
// env:/file:/literal resolution), each key decoded from base64 and checked
// to be 32 bytes; every error names its key.
func (a *Auth) ResolveSecrets(resolve func(ref string) ([]byte, error)) error {
	if a.ClientSecret != "" {
		v, err := resolve(a.ClientSecret)
		if err != nil {
			return errorf("auth.client_secret: %w", err)
		}
		a.clientSecret = v
	}
	if a.OperatorToken != "" {
		v, err := resolve(a.OperatorToken)
		if err != nil {
			return errorf("auth.operator_token: %w", err)
		}
		a.operatorToken = v
	}
	for i := range a.EncryptionKeys {
		v, err := resolve(a.EncryptionKeys[i].Value)
		if err != nil {
			return errorf("auth.encryption_keys[%d].value: %w", i, err)
		}
		s := strings.TrimSpace(string(v))
		key, err := base64.StdEncoding.DecodeString(s)
		if err != nil {
			if key, err = base64.RawURLEncoding.DecodeString(strings.TrimRight(s, "=")); err != nil {
				return errorf("auth.encryption_keys[%d].value: not base64", i)
			}
		}
		if len(key) != 32 {
			return errorf("auth.encryption_keys[%d].value: decodes to %d bytes, want 32 (openssl rand -base64 32)", i, len(key))
		}
		a.EncryptionKeys[i].resolved = key
	}
	return nil
}

// Validate returns the first setting that is out of range, naming its key
// (the secrets are resolved first: ResolveSecrets).
func (a *Auth) Validate() error {
	switch a.TokenEndpointAuthMethod {
	case "", "client_secret_basic", "client_secret_post":
	default:
		return errorf("auth.token_endpoint_auth_method: %q is not client_secret_basic or client_secret_post", a.TokenEndpointAuthMethod)
	}
	if (a.TLSCertFile == "") != (a.TLSKeyFile == "") {
		return errorf("auth.tls_cert_file: tls_cert_file and tls_key_file go together")
	}
	if !strings.HasPrefix(a.CookieName, "__Host-") {
		return errorf("auth.cookie_name: %q must start with __Host-", a.CookieName)
	}
	if a.SessionIdleTimeout < 0 || a.SessionLifetime < 0 || a.SessionRetention < 0 || a.LoginTimeout < 0 || a.RefreshBefore < 0 || a.OPRevokeInterval < 0 {
		return errorf("auth: durations must be positive")
	}
	if a.SessionIdleTimeout > a.SessionLifetime {
		return errorf("auth.session_idle_timeout: %s exceeds session_lifetime %s", a.SessionIdleTimeout, a.SessionLifetime)
	}
	seen := map[string]bool{}
	for i, k := range a.EncryptionKeys {
		if seen[k.ID] {
			return errorf("auth.encryption_keys[%d].id: duplicate id %q", i, k.ID)
		}
		seen[k.ID] = true
	}
	for i, n := range a.NextAllowlist {
		if u, err := url.Parse(n); err != nil || u.Scheme != "https" && u.Scheme != "http" || u.Host == "" || u.User != nil {
			return errorf("auth.next_allowlist[%d]: %q is not an absolute http(s) URL", i, n)
		}
	}
	for _, alg := range a.IDTokenAlgs {
		if strings.EqualFold(alg, "none") || strings.HasPrefix(strings.ToUpper(alg), "HS") {
			return errorf("auth.id_token_algs: %q is not allowed (asymmetric algorithms only)", alg)
		}
	}
	if !a.Enabled() {
		return nil
	}
	if u, err := url.Parse(a.Issuer); err != nil || u.Scheme == "" || u.Host == "" {
		return errorf("auth.issuer: %q is not an absolute URL", a.Issuer)
	}
	if a.ClientID == "" {
		return errorf("auth.client_id: required when auth.issuer is set")
	}
	u, err := url.Parse(a.RedirectURL)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" || u.RawQuery != "" || u.Fragment != "" {
		return errorf("auth.redirect_url: %q must be an absolute http(s) URL without query or fragment", a.RedirectURL)
	}
	if u.Scheme == "http" && u.Hostname() != "localhost" {
		return errorf("auth.redirect_url: %q: plain http is only allowed for localhost (__Host- cookies need a secure context)", a.RedirectURL)
	}
	if len(a.EncryptionKeys) == 0 {
		return errorf("auth.encryption_keys: at least one key is required when auth.issuer is set")
	}
	return nil
}
