package api_test

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/gatehouse/gatehouse/auth/bearer"
	"github.com/gatehouse/gatehouse/internal/testenv"
)

// opTokens logs the OP's test user in through the OP's own login form (the
// authorization code flow with PKCE, over plain HTTP, no browser needed)
// and returns the token response.
func opTokens(t *testing.T, op *testenv.OP, scope string) (access, idToken string) {
	t.Helper()
	var disc struct {
		Auth  string `json:"authorization_endpoint"`
		Token string `json:"token_endpoint"`
	}
	getJSON(t, http.DefaultClient, op.Issuer+".well-known/openid-configuration", &disc)
	redirect := op.RedirectURIs[0]
	jar, _ := cookiejar.New(nil)
	client := &http.Client{Jar: jar, Timeout: 10 * time.Second, CheckRedirect: func(req *http.Request, _ []*http.Request) error {
		if strings.HasPrefix(req.URL.String(), redirect) {
			return http.ErrUseLastResponse
		}
		return nil
	}}
	verifier := rand.Text() + rand.Text()
	sum := sha256.Sum256([]byte(verifier))
	q := url.Values{
		"client_id": {op.ClientID}, "redirect_uri": {redirect}, "response_type": {"code"}, "scope": {scope},
		"state": {rand.Text()}, "nonce": {rand.Text()},
		"code_challenge": {base64.RawURLEncoding.EncodeToString(sum[:])}, "code_challenge_method": {"S256"},
	}
	resp, err := client.Get(disc.Auth + "?" + q.Encode())
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	reqID := resp.Request.URL.Query().Get("authRequestID")
	if resp.StatusCode != 200 || reqID == "" {
		t.Fatalf("authorize landed on %s (%d)", resp.Request.URL, resp.StatusCode)
	}
	resp, err = client.PostForm(op.Issuer+"login/username", url.Values{"username": {op.Username}, "password": {op.Password}, "id": {reqID}})
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	loc, _ := url.Parse(resp.Header.Get("Location"))
	code := ""
	if loc != nil {
		code = loc.Query().Get("code")
	}
	if resp.StatusCode != http.StatusFound || code == "" {
		t.Fatalf("login: %d, Location %q", resp.StatusCode, resp.Header.Get("Location"))
	}
	form := url.Values{"grant_type": {"authorization_code"}, "code": {code}, "redirect_uri": {redirect}, "code_verifier": {verifier}}
	req, _ := http.NewRequest(http.MethodPost, disc.Token, strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.SetBasicAuth(op.ClientID, op.ClientSecret)
	resp, err = http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var tr struct {
		AccessToken string `json:"access_token"`
		IDToken     string `json:"id_token"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&tr); err != nil || resp.StatusCode != 200 || tr.AccessToken == "" {
		t.Fatalf("token endpoint: %d %v", resp.StatusCode, err)
	}
	return tr.AccessToken, tr.IDToken
}

func getJSON(t *testing.T, c *http.Client, u string, dst any) {
	t.Helper()
	resp, err := c.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if err := json.NewDecoder(resp.Body).Decode(dst); err != nil {
		t.Fatalf("%s: %v", u, err)
	}
}

// TestRealOP: tokens issued by the real OpenID Provider of the login tests
// (zitadel's example OP). Its access tokens are opaque for every client it
// registers, so the API checks them by RFC 7662 introspection at the OP
// (endpoint from discovery, client_secret_basic as the "web" client); the OP
// only grants standard scopes plus "custom_scope", mapped here onto the
// API's scopes with scope_aliases. Its ID token, a real signed JWT, is
// refused as an access token in both the strict and the compat mode.
func TestRealOP(t *testing.T) {
	op := testenv.StartOP(t, []string{"http://localhost:1/callback"})
	f := newFixture(t, fixtureOpts{verifier: func(c *bearer.Config) {
		c.Now = time.Now
		c.Issuers = []bearer.Issuer{{
			Issuer:        op.Issuer,
			Introspection: bearer.Introspection{ClientID: op.ClientID, ClientSecret: []byte(op.ClientSecret)},
			ScopeAliases:  map[string][]string{"custom_scope": {"sessions:read"}},
		}}
	}})
	mine, _ := f.newSessionAt(op.Issuer, op.Subject)
	f.newSessionAt(op.Issuer, "id2")     // another user of the same OP
	f.newSessionAt(f.is.URL, op.Subject) // same subject, another issuer

	access, idToken := opTokens(t, op, "openid custom_scope")
	a := f.bearerGet("/api/v1/sessions", access)
	if a.status != 200 {
		t.Fatalf("real OP access token: %d %s (%s)", a.status, a.raw, a.challenge)
	}
	if got := sessionIDs(a); len(got) != 1 || !got[mine] {
		t.Fatalf("sessions %v, want only %s", got, mine)
	}

	if strings.Contains(f.logs.String(), access) {
		t.Fatal("the opaque access token was logged")
	}
	plain, _ := opTokens(t, op, "openid")
	if a := f.bearerGet("/api/v1/sessions", plain); a.status != 403 || a.body["scope"] != "sessions:read" {
		t.Fatalf("token without the scope: %d %s", a.status, a.raw)
	}
	if a := f.bearerGet("/api/v1/sessions", "not-an-issued-token"); a.status != 401 || !strings.Contains(a.challenge, `error="invalid_token"`) {
		t.Fatalf("unknown opaque token: %d %q", a.status, a.challenge)
	}
	if idToken == "" {
		t.Fatal("the OP returned no ID token")
	}
	if a := f.bearerGet("/api/v1/sessions", idToken); a.status != 401 || !strings.Contains(a.challenge, "not an access token") {
		t.Fatalf("ID token as access token (strict): %d %q", a.status, a.challenge)
	}
	compat, err := bearer.New(bearer.Config{
		Audience: audience, Compat: true, IDTokenAudiences: []string{op.ClientID},
		Issuers: []bearer.Issuer{{Issuer: op.Issuer}},
	})
	if err != nil {
		t.Fatal(err)
	}
	_, err = compat.Verify(context.Background(), idToken)
	var e *bearer.Error
	if !errors.As(err, &e) || e.Code != bearer.CodeInvalidToken || !strings.Contains(e.Description, "ID token") {
		t.Fatalf("ID token as access token (compat): %v", err)
	}
}
