package wiring

import (
	"github.com/gatehouse/gatehouse/auth"
	"github.com/gatehouse/gatehouse/internal/config"
)

// Auth is the auth section of c, secrets resolved, as login and the
// session store take it.
func Auth(c *config.Config) auth.Settings {
	a := &c.Auth
	s := auth.Settings{
		Issuer: a.Issuer, ClientID: a.ClientID, ClientSecret: a.ClientSecretValue(),
		RedirectURL: a.RedirectURL, PostLogoutRedirectURL: a.PostLogoutRedirectURL,
		Scopes: a.Scopes, OfflineAccess: a.OfflineAccess, TokenEndpointAuthMethod: a.TokenEndpointAuthMethod,
		RefreshBefore: a.RefreshBefore, NoRefresh: !a.RefreshEnabled(), SkipUserInfo: !a.UserInfoEnabled(), IDTokenAlgs: a.IDTokenAlgs,
		CookieName: a.CookieName, SessionIdleTimeout: a.SessionIdleTimeout, SessionLifetime: a.SessionLifetime,
		SessionRetention: a.SessionRetention, LoginTimeout: a.LoginTimeout, OPRevokeInterval: a.OPRevokeInterval,
		NextAllowlist: a.NextAllowlist, OperatorToken: a.OperatorTokenValue(),
	}
	for _, k := range a.EncryptionKeys {
		s.EncryptionKeys = append(s.EncryptionKeys, auth.Key{ID: k.ID, Value: k.Key()})
	}
	return s
}
