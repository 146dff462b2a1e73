package auth

import (
	"encoding/base64"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/gatehouse/gatehouse/internal/settings"
)

// TestSettingsOfCarriesEverySetting: every key of the auth section that
// login and the session store read reaches Settings (a key added to the
// section and not to SettingsOf leaves a field zero here), the secrets
// resolved, not their references.
func TestSettingsOfCarriesEverySetting(t *testing.T) {
	off, on := false, true
	a := settings.Auth{Issuer: "https://op.test", ClientID: "web", ClientSecret: "env:SECRET",
		RedirectURL: "https://app.test/callback", PostLogoutRedirectURL: "https://app.test/",
		Refresh: &off, UserInfo: &off, OfflineAccess: true, TokenEndpointAuthMethod: "client_secret_post",
		NextAllowlist: []string{"https://docs.test"}, OperatorToken: "env:TOKEN",
		EncryptionKeys: []settings.AuthKey{{ID: "k1", Value: "env:KEY"}}}
	a.ApplyDefaults()
	key := base64.StdEncoding.EncodeToString([]byte(strings.Repeat("k", 32)))
	err := a.ResolveSecrets(func(ref string) ([]byte, error) {
		if ref == "env:KEY" {
			return []byte(key), nil
		}
		return []byte("resolved:" + ref), nil
	})
	if err != nil {
		t.Fatal(err)
	}
	s := SettingsOf(&a)
	v := reflect.ValueOf(s)
	for i := range v.NumField() {
		if v.Field(i).IsZero() {
			t.Errorf("SettingsOf leaves %s zero", v.Type().Field(i).Name)
		}
	}
	if string(s.ClientSecret) != "resolved:env:SECRET" || string(s.OperatorToken) != "resolved:env:TOKEN" ||
		len(s.EncryptionKeys) != 1 || len(s.EncryptionKeys[0].Value) != 32 {
		t.Errorf("secrets not resolved: %+v", s)
	}
	a.Refresh, a.UserInfo = &on, nil
	if s := SettingsOf(&a); s.NoRefresh || s.SkipUserInfo {
		t.Error("refresh: true / userinfo unset turned refresh or userinfo off")
	}
	if s.SessionIdleTimeout != 30*time.Minute {
		t.Errorf("idle timeout %s, want the section's default", s.SessionIdleTimeout)
	}
}
