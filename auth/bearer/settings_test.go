package bearer

import (
	"reflect"
	"testing"
	"time"

	"github.com/gatehouse/gatehouse/internal/settings"
)

// TestConfigOfCarriesEverySetting: every key of the api section that the
// verifier reads reaches its Config (a key added to the section and not
// to ConfigOf leaves a field zero here), the introspection secret
// resolved.
func TestConfigOfCarriesEverySetting(t *testing.T) {
	a := settings.API{Audience: "https://api.test", Skew: time.Second, TokenType: "compat",
		IDTokenAudiences: []string{"web"}, JWKSMaxAge: time.Minute, JWKSMinRefetch: 2 * time.Second,
		Issuers: []settings.APIIssuer{{Issuer: "https://idp.test", JWKSURL: "https://idp.test/jwks",
			Algorithms: []string{"ES256"}, RolesClaim: "realm_access.roles", ScopeAliases: map[string][]string{"read": {"events:read"}},
			Introspection: settings.APIIntrospection{URL: "https://idp.test/introspect", ClientID: "rs", ClientSecret: "env:X"}}}}
	if err := a.ResolveSecrets(func(ref string) ([]byte, error) { return []byte("resolved:" + ref), nil }); err != nil {
		t.Fatal(err)
	}
	c := ConfigOf(&a)
	v := reflect.ValueOf(c)
	for i := range v.NumField() {
		switch n := v.Type().Field(i).Name; n {
		case "HTTPClient", "Now", "Logger", "Registerer": // the caller's dependencies
		default:
			if v.Field(i).IsZero() {
				t.Errorf("ConfigOf leaves %s zero", n)
			}
		}
	}
	is := reflect.ValueOf(c.Issuers[0])
	for i := range is.NumField() {
		if is.Field(i).IsZero() {
			t.Errorf("ConfigOf leaves Issuers[0].%s zero", is.Type().Field(i).Name)
		}
	}
	if got := string(c.Issuers[0].Introspection.ClientSecret); got != "resolved:env:X" {
		t.Errorf("introspection secret %q", got)
	}
	a.TokenType = settings.DefaultTokenType
	if ConfigOf(&a).Compat {
		t.Error("at+jwt made a compat verifier")
	}
}
