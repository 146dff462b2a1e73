package auth

import (
	"time"

	"github.com/gatehouse/gatehouse/internal/settings"
)

// Settings are the login and session settings (docs/CONFIG.md, auth.*)
// with every secret resolved: SettingsOf the auth section, where their
// defaults live (settings.Auth.ApplyDefaults).
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

// SettingsOf is the auth section (settings.Auth, its secrets resolved by
// ResolveSecrets) as login and the session store run with it: the secret
// references replaced by their values, refresh: false and userinfo: false
// as NoRefresh and SkipUserInfo. A key added to the section and read by
// this stage is added here (TestSettingsOfCarriesEverySetting).
func SettingsOf(a *settings.Auth) Settings {
	s := Settings{
		Issuer: a.Issuer, ClientID: a.ClientID, ClientSecret: a.ClientSecretValue(),
		RedirectURL: a.RedirectURL, PostLogoutRedirectURL: a.PostLogoutRedirectURL,
		Scopes: a.Scopes, OfflineAccess: a.OfflineAccess, TokenEndpointAuthMethod: a.TokenEndpointAuthMethod,
		RefreshBefore: a.RefreshBefore, NoRefresh: !a.RefreshEnabled(), SkipUserInfo: !a.UserInfoEnabled(), IDTokenAlgs: a.IDTokenAlgs,
		CookieName: a.CookieName, SessionIdleTimeout: a.SessionIdleTimeout, SessionLifetime: a.SessionLifetime,
		SessionRetention: a.SessionRetention, LoginTimeout: a.LoginTimeout, OPRevokeInterval: a.OPRevokeInterval,
		NextAllowlist: a.NextAllowlist, OperatorToken: a.OperatorTokenValue(),
	}
	for _, k := range a.EncryptionKeys {
		s.EncryptionKeys = append(s.EncryptionKeys, Key{ID: k.ID, Value: k.Key()})
	}
	return s
}
