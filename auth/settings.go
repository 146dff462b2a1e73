package auth

import "time"

// Settings are the login and session settings (docs/CONFIG.md, auth.*)
// with every secret resolved; cmd/gatehouse fills them from the
// configuration (wiring.Auth), where their defaults live.
type Settings struct {
	// Issuer is the OpenID Provider's issuer URL, exactly as its discovery
	// document states it; "" turns login off.
	Issuer string
	// ClientID is the client registered at the OP; ClientSecret its
	// secret (nil: a public client, PKCE alone).
	ClientID     string
	ClientSecret []byte
	// RedirectURL is the callback registered at the OP;
	// PostLogoutRedirectURL where the OP sends the browser after logout.
	RedirectURL, PostLogoutRedirectURL string
	// Scopes are asked for besides openid; OfflineAccess adds
	// offline_access.
	Scopes        []string
	OfflineAccess bool
	// TokenEndpointAuthMethod is client_secret_basic, client_secret_post
	// or "" (the OP's first supported).
	TokenEndpointAuthMethod string
	// RefreshBefore refreshes an access token this long before it expires.
	RefreshBefore time.Duration
	// NoRefresh never refreshes a session's tokens on the server
	// (auth.refresh: false): AccessToken answers ErrRefreshOff once the
	// access token expired, and the session lasts as its other bounds say.
	NoRefresh bool
	// SkipUserInfo does not call the UserInfo endpoint at login.
	SkipUserInfo bool
	// IDTokenAlgs is the ID token signing algorithm allowlist.
	IDTokenAlgs []string
	// CookieName is the session cookie (a __Host- name).
	CookieName string
	// SessionIdleTimeout and SessionLifetime end a session; ended
	// sessions are kept SessionRetention; a login not finished within
	// LoginTimeout is refused; OPRevokeInterval paces the revocation of
	// ended sessions' tokens at the OP.
	SessionIdleTimeout, SessionLifetime, SessionRetention, LoginTimeout, OPRevokeInterval time.Duration
	// EncryptionKeys encrypt stored tokens (the first is primary).
	EncryptionKeys []Key
	// NextAllowlist are the origins a login may return to besides its own.
	NextAllowlist []string
	// OperatorToken is the operator API token; nil when unset.
	OperatorToken []byte
}

// Key is one token encryption key: 32 bytes for AES-256-GCM.
type Key struct {
	ID    string
	Value []byte
}

// Enabled reports whether login is configured.
func (s *Settings) Enabled() bool { return s.Issuer != "" }
