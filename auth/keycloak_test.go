package auth

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"
	"golang.org/x/oauth2"

	"github.com/gatehouse/gatehouse/internal/testenv"
)

// TestKeycloakEndToEnd signs in through a real Keycloak's own login form in
// headless Chromium with gatehouse's defaults (refresh on, no
// offline_access, the token endpoint auth method from discovery): the
// session cookie's attributes, a server-side refresh that rotates (Keycloak
// then refuses the old refresh token: rotation with reuse 0), RP-initiated
// logout ending the Keycloak session, an admin "log out user" reaching
// gatehouse by back-channel logout and ending its session, and no secret in
// the logs. Keycloak's start costs about 20 s.
func TestKeycloakEndToEnd(t *testing.T) {
	ctx := context.Background()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	base := fmt.Sprintf("http://localhost:%d", ln.Addr().(*net.TCPAddr).Port)
	kc := testenv.StartKeycloak(t, base)

	pool := testPool(t)
	a := testAuthConfig(t)
	a.Issuer, a.ClientID, a.RedirectURL = kc.Issuer, kc.ClientID, base+"/callback"
	a.PostLogoutRedirectURL = base + "/signin"
	a.ClientSecret = []byte(kc.ClientSecret)
	a.Scopes = []string{"profile", "email"}
	a.RefreshBefore, a.LoginTimeout, a.OPRevokeInterval = time.Minute, 10*time.Minute, 100*time.Millisecond
	a.IDTokenAlgs = []string{"RS256"}
	logs, store, svc := startLoginServer(t, ctx, ln, pool, a)

	browser := testenv.StartBrowser(t)
	tab, tcancel := chromedp.NewContext(browser)
	defer tcancel()
	tab, tcancel = context.WithTimeout(tab, 4*time.Minute)
	defer tcancel()
	if err := chromedp.Do(tab, chromedp.EmulateViewport(1100, 900)); err != nil {
		t.Fatal(err)
	}
	kcSignIn := func() {
		t.Helper()
		err := chromedp.Do(tab,
			chromedp.Navigate(base+"/account"),
			chromedp.WaitVisible(chromedp.ID("signin")),
			clickAndLoad(chromedp.ID("signin")),
			chromedp.WaitVisible(chromedp.ID("username")),
			chromedp.SendKeys(chromedp.ID("username"), kc.Username),
			chromedp.SendKeys(chromedp.ID("password"), kc.Password),
			clickAndLoad(chromedp.ID("kc-login")),
			chromedp.WaitVisible(chromedp.ID("subject")),
		)
		if err != nil {
			loc, _ := chromedp.Run(tab, chromedp.Location())
			body, _ := chromedp.Run(tab, chromedp.Text(chromedp.CSS("body")))
			t.Fatalf("sign in through Keycloak: %v; at %s: %q\nlogs:\n%s", err, loc, tail(body, 400), tail(logs.String(), 10))
		}
	}
	kcSignIn()

	res, err := chromedp.Call(tab, network.GetCookies, network.GetCookiesParams{URLs: []string{base + "/"}})
	if err != nil {
		t.Fatal(err)
	}
	var sc *network.Cookie
	for _, c := range res.Cookies {
		if c.Name == a.CookieName {
			sc = c
		}
	}
	if sc == nil || !sc.HTTPOnly || !sc.Secure || sc.SameSite != network.CookieSameSiteLax || sc.Path != "/" {
		t.Fatalf("session cookie: %+v", sc)
	}
	sess, err := store.Lookup(ctx, sc.Value)
	if err != nil || sess.User.Issuer != kc.Issuer {
		t.Fatalf("session: %+v %v", sess, err)
	}

	// A refresh token for a normal session (no offline_access), rotated on
	// refresh; Keycloak refuses the old one.
	before, err := store.loadTokens(ctx, sess.ID)
	if err != nil || before.RefreshToken == "" {
		t.Fatalf("no refresh token from Keycloak without offline_access: %v", err)
	}
	if err := svc.ForceRefresh(ctx, sess.ID); err != nil {
		t.Fatalf("refresh: %v\n%s", err, tail(logs.String(), 5))
	}
	after, err := store.loadTokens(ctx, sess.ID)
	if err != nil || after.RefreshToken == before.RefreshToken || after.AccessToken == before.AccessToken {
		t.Fatalf("refresh did not rotate: %v", err)
	}
	conf := &oauth2.Config{ClientID: kc.ClientID, ClientSecret: kc.ClientSecret, Endpoint: svc.provider.Endpoint()}
	if _, err := conf.TokenSource(ctx, &oauth2.Token{RefreshToken: before.RefreshToken}).Token(); !isOAuthError(err, "invalid_grant") {
		t.Fatalf("the old refresh token at Keycloak: %v, want invalid_grant", err)
	}
	if err := chromedp.Do(tab, chromedp.Reload(), chromedp.WaitVisible(chromedp.ID("subject"))); err != nil {
		t.Fatalf("reload after refresh: %v", err)
	}

	userID := kcUserID(t, kc)
	kcSessions := func() int {
		code, body := kc.Admin(t, http.MethodGet, "/admin/realms/gatehouse/users/"+userID+"/sessions", nil)
		var list []json.RawMessage
		if code != 200 || json.Unmarshal([]byte(body), &list) != nil {
			t.Fatalf("keycloak sessions: %d %s", code, body)
		}
		return len(list)
	}
	if n := kcSessions(); n != 1 {
		t.Fatalf("keycloak holds %d sessions for the user, want 1 (a normal, not an offline, session)", n)
	}

	// RP-initiated logout ends the Keycloak session and comes back.
	// gatehouse never hands the ID token to the browser, so it sends no
	// id_token_hint and Keycloak asks the user to confirm.
	if err := chromedp.Do(tab, chromedp.Click(chromedp.ID("signout")), chromedp.WaitVisible(chromedp.ID("kc-logout")),
		chromedp.Click(chromedp.ID("kc-logout"))); err != nil {
		loc, _ := chromedp.Run(tab, chromedp.Location())
		t.Fatalf("sign out: %v (at %s)", err, loc)
	}
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(300 * time.Millisecond) {
		loc, _ := chromedp.Run(tab, chromedp.Location())
		if strings.HasPrefix(loc, base+"/signin") {
			break
		}
		if time.Now().After(deadline) {
			body, _ := chromedp.Run(tab, chromedp.Text(chromedp.CSS("body")))
			t.Fatalf("after sign-out the browser is at %s: %q", loc, tail(body, 400))
		}
	}
	if n := kcSessions(); n != 0 {
		t.Fatalf("keycloak still holds %d sessions after sign-out", n)
	}

	// Admin "log out user" → back-channel logout → the gatehouse session ends.
	kcSignIn()
	res, _ = chromedp.Call(tab, network.GetCookies, network.GetCookiesParams{URLs: []string{base + "/"}})
	var sc2 string
	for _, c := range res.Cookies {
		if c.Name == a.CookieName {
			sc2 = c.Value
		}
	}
	if code, body := kc.Admin(t, http.MethodPost, "/admin/realms/gatehouse/users/"+userID+"/logout", nil); code != http.StatusNoContent {
		t.Fatalf("admin logout: %d %s", code, body)
	}
	deadline := time.Now().Add(20 * time.Second)
	for {
		if list, _ := store.ListSessions(ctx, sess.User); len(list) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("gatehouse session still alive after Keycloak's back-channel logout\n%s", tail(logs.String(), 10))
		}
		time.Sleep(200 * time.Millisecond)
	}
	if err := chromedp.Do(tab, chromedp.Reload(), chromedp.WaitVisible(chromedp.ID("signin"))); err != nil {
		t.Fatalf("after back-channel logout the account page still shows: %v", err)
	}

	out := logs.String()
	for _, s := range []string{sc.Value, sc2, kc.ClientSecret, before.AccessToken, before.RefreshToken, before.IDToken, after.AccessToken, after.RefreshToken} {
		if len(s) > 6 && strings.Contains(out, s) {
			t.Fatalf("logs contain a secret starting %q", s[:4])
		}
	}
}

func kcUserID(t *testing.T, kc *testenv.Keycloak) string {
	t.Helper()
	code, body := kc.Admin(t, http.MethodGet, "/admin/realms/gatehouse/users?username="+kc.Username+"&exact=true", nil)
	var users []struct {
		ID string `json:"id"`
	}
	if code != 200 || json.Unmarshal([]byte(body), &users) != nil || len(users) != 1 {
		t.Fatalf("keycloak user: %d %s", code, body)
	}
	return users[0].ID
}
