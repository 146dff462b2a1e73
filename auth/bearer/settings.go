package bearer

import "github.com/gatehouse/gatehouse/internal/settings"

// ConfigOf is the Verifier's Config of the api section (docs/CONFIG.md,
// api.*), its introspection secrets resolved: the audience, the issuers,
// the skew, the token type (compat: "compat"), the login client IDs whose
// tokens are ID tokens and the key set's ages. The caller adds the
// observability (Logger, Registerer) and, when login is configured, its
// client ID to IDTokenAudiences.
func ConfigOf(a *settings.API) Config {
	c := Config{Audience: a.Audience, Skew: a.Skew, Compat: a.TokenType == "compat",
		IDTokenAudiences: append([]string(nil), a.IDTokenAudiences...),
		JWKSMaxAge:       a.JWKSMaxAge, JWKSMinRefetch: a.JWKSMinRefetch}
	for _, is := range a.Issuers {
		c.Issuers = append(c.Issuers, Issuer{
			Issuer: is.Issuer, JWKSURL: is.JWKSURL, Algorithms: is.Algorithms,
			RolesClaim: is.RolesClaim, ScopeAliases: is.ScopeAliases,
			Introspection: Introspection{URL: is.Introspection.URL, ClientID: is.Introspection.ClientID,
				ClientSecret: is.Introspection.Secret()},
		})
	}
	return c
}
