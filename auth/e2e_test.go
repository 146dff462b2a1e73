package auth

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/network"
	cdppage "github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"
	"golang.org/x/oauth2"

	"github.com/gatehouse/gatehouse/internal/testenv"
)

// TestEndToEndChromiumRealOP signs in with headless Chromium against the
// real zitadel OP over http://localhost (a secure context for Chromium, so
// the Secure __Host- cookie is accepted), then checks the cookie as the
// browser stored it, reload, server-side refresh with rotation, revocation
// from another session, sign-out, and saves a screenshot of /account.
func TestEndToEndChromiumRealOP(t *testing.T) {
	ctx := context.Background()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	base := fmt.Sprintf("http://localhost:%d", ln.Addr().(*net.TCPAddr).Port)
	op := testenv.StartOP(t, []string{base + "/callback"})

	pool := testPool(t)
	a := testAuthConfig(t)
	a.Issuer, a.ClientID, a.RedirectURL = op.Issuer, op.ClientID, base+"/callback"
	a.ClientSecret = []byte(op.ClientSecret)
	a.Scopes = []string{"profile", "email"}
	a.OfflineAccess = true // zitadel's example OP issues refresh tokens only for offline_access
	a.RefreshBefore, a.LoginTimeout, a.OPRevokeInterval = time.Minute, 10*time.Minute, 100*time.Millisecond
	a.IDTokenAlgs = []string{"RS256"}
	logs, store, svc := startLoginServer(t, ctx, ln, pool, a)

	browser := testenv.StartBrowser(t)
	tab1 := newTab(t, browser, false)
	signIn(t, tab1, base, op)

	// The cookie as Chromium stored it.
	res, err := chromedp.Call(tab1, network.GetCookies, network.GetCookiesParams{URLs: []string{base + "/"}})
	if err != nil {
		t.Fatal(err)
	}
	var sc *network.Cookie
	for _, c := range res.Cookies {
		if c.Name == a.CookieName {
			sc = c
		}
	}
	if sc == nil {
		t.Fatalf("no session cookie in the browser: %+v", res.Cookies)
	}
	if !strings.HasPrefix(sc.Name, "__Host-") || !sc.HTTPOnly || !sc.Secure || sc.SameSite != network.CookieSameSiteLax ||
		sc.Path != "/" || sc.Domain != "localhost" || len(sc.Value) < 43 {
		t.Fatalf("session cookie attributes: name %s httpOnly %v secure %v sameSite %q path %q domain %q",
			sc.Name, sc.HTTPOnly, sc.Secure, sc.SameSite, sc.Path, sc.Domain)
	}
	// HttpOnly: page scripts cannot read it.
	if jsCookies, err := chromedp.Run(tab1, chromedp.Evaluate[string]("document.cookie")); err != nil || strings.Contains(jsCookies, "__Host-gatehouse") {
		t.Fatalf("document.cookie = %q, %v", jsCookies, err)
	}
	sess1, err := store.Lookup(ctx, sc.Value)
	if err != nil || sess1.User.Subject != op.Subject || sess1.User.Issuer != op.Issuer {
		t.Fatalf("session: %+v %v", sess1, err)
	}

	// Reload stays signed in.
	if err := chromedp.Do(tab1, chromedp.Reload(), chromedp.WaitVisible(chromedp.ID("subject"))); err != nil {
		t.Fatalf("reload: %v", err)
	}

	// Server-side refresh rotates the refresh token; the old one is dead at the OP.
	before, err := store.loadTokens(ctx, sess1.ID)
	if err != nil || before.RefreshToken == "" {
		t.Fatalf("stored tokens: refresh token present %v, %v", before.RefreshToken != "", err)
	}
	if err := svc.ForceRefresh(ctx, sess1.ID); err != nil {
		t.Fatalf("refresh: %v", err)
	}
	after, err := store.loadTokens(ctx, sess1.ID)
	if err != nil || after.RefreshToken == "" || after.RefreshToken == before.RefreshToken || after.AccessToken == before.AccessToken {
		t.Fatalf("refresh did not rotate: %v", err)
	}
	var rotated int
	_ = pool.QueryRow(ctx, `SELECT count(*) FROM auth_refresh_tokens WHERE token_hash = $1 AND rotated_at IS NOT NULL`, hash(before.RefreshToken)).Scan(&rotated)
	if rotated != 1 {
		t.Fatal("old refresh token not marked rotated")
	}
	conf := &oauth2.Config{ClientID: op.ClientID, ClientSecret: op.ClientSecret, Endpoint: svc.provider.Endpoint()}
	if _, err := conf.TokenSource(ctx, &oauth2.Token{RefreshToken: before.RefreshToken}).Token(); !isOAuthError(err, "invalid_grant") {
		t.Fatalf("old refresh token at the OP: %v, want invalid_grant", err)
	}
	if err := chromedp.Do(tab1, chromedp.Reload(), chromedp.WaitVisible(chromedp.ID("subject"))); err != nil {
		t.Fatalf("reload after refresh: %v", err)
	}

	// A second, isolated browser context signs in: two sessions on /account.
	tab2 := newTab(t, browser, true)
	signIn(t, tab2, base, op)
	if err := chromedp.Do(tab2, chromedp.WaitVisible(chromedp.CSS(`tr[data-session="`+sess1.ID+`"]`))); err != nil {
		t.Fatalf("second session does not list the first: %v", err)
	}
	shot, err := chromedp.Run(tab2, chromedp.CaptureScreenshot())
	if err != nil {
		t.Fatalf("screenshot: %v", err)
	}
	root, err := testenv.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	artifact := filepath.Join(root, "testdata", "artifacts", "auth-account.png") // gitignored
	if err := os.MkdirAll(filepath.Dir(artifact), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(artifact, shot, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshot of /account: %s (%d bytes)", artifact, len(shot))

	// Revoke session 1 from session 2; session 1 is signed out on its next request.
	rctx, rcancel := context.WithTimeout(tab2, 15*time.Second)
	defer rcancel()
	if err := chromedp.Do(rctx, clickAndLoad(chromedp.CSS(`tr[data-session="`+sess1.ID+`"] button.revoke`)),
		chromedp.WaitVisible(chromedp.ID("sessions"))); err != nil {
		loc, _ := chromedp.Run(tab2, chromedp.Location())
		t.Fatalf("revoke from session 2: %v (at %s)\nlogs:\n%s", err, loc, tail(logs.String(), 8))
	}
	if err := chromedp.Do(tab1, chromedp.Reload(), chromedp.WaitVisible(chromedp.ID("session-ended"))); err != nil {
		loc, _ := chromedp.Run(tab1, chromedp.Location())
		t.Fatalf("session 1 after revocation is at %s: %v", loc, err)
	}

	// Sign out of session 2: revoked locally, then the OP's end-session page.
	cookie2, _ := chromedp.Call(tab2, network.GetCookies, network.GetCookiesParams{URLs: []string{base + "/"}})
	if err := chromedp.Do(tab2, clickAndLoad(chromedp.ID("signout"))); err != nil {
		t.Fatalf("sign out: %v", err)
	}
	loc, _ := chromedp.Run(tab2, chromedp.Location())
	if !strings.HasPrefix(loc, op.Issuer) {
		t.Fatalf("after sign-out the browser is at %s, want the OP's end-session result", loc)
	}
	if list, _ := store.ListSessions(ctx, sess1.User); len(list) != 0 {
		t.Fatalf("%d sessions left after revocation and sign-out", len(list))
	}
	if err := chromedp.Do(tab2, chromedp.Navigate(base+"/account"), chromedp.WaitVisible(chromedp.ID("signin"))); err != nil {
		t.Fatalf("account after sign-out: %v", err)
	}

	// Nothing secret was logged.
	secrets := []string{sc.Value, op.ClientSecret + `"`, before.AccessToken, before.RefreshToken, before.IDToken,
		after.AccessToken, after.RefreshToken}
	for _, c := range cookie2.Cookies {
		secrets = append(secrets, c.Value)
	}
	out := logs.String()
	for _, s := range secrets {
		if len(s) > 6 && strings.Contains(out, s) {
			t.Fatalf("logs contain a secret starting %q", s[:4])
		}
	}
}

func newTab(t *testing.T, browser context.Context, isolated bool) context.Context {
	t.Helper()
	var opts []chromedp.ContextOption
	if isolated {
		opts = append(opts, chromedp.WithNewBrowserContext())
	}
	tab, cancel := chromedp.NewContext(browser, opts...)
	t.Cleanup(cancel)
	if err := chromedp.Do(tab); err != nil {
		t.Fatalf("open tab: %v", err)
	}
	if err := chromedp.Do(tab, chromedp.EmulateViewport(1100, 900)); err != nil {
		t.Fatalf("viewport: %v", err)
	}
	tctx, cancel2 := context.WithTimeout(tab, 60*time.Second)
	t.Cleanup(cancel2)
	return tctx
}

// clickAndLoad clicks sel and waits for the page load that follows (a form
// post and its redirects).
func clickAndLoad[S chromedp.Selectable](sel S) chromedp.Action[chromedp.Void] {
	return chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
		if _, err := chromedp.ScrollIntoView(sel)(ctx, tg); err != nil {
			return err
		}
		_, err := chromedp.WaitEvent(cdppage.LoadEventFired, nil, chromedp.Click(sel))(ctx, tg)
		return err
	})
}

// signIn goes to /account, is sent to the sign-in page, clicks "Sign in",
// fills the OP's form and lands back on /account.
func signIn(t *testing.T, tab context.Context, base string, op *testenv.OP) {
	t.Helper()
	err := chromedp.Do(tab,
		chromedp.Navigate(base+"/account"),
		chromedp.WaitVisible(chromedp.ID("signin")),
		clickAndLoad(chromedp.ID("signin")),
		chromedp.WaitVisible(chromedp.ID("username")),
		chromedp.SendKeys(chromedp.ID("username"), op.Username),
		chromedp.SendKeys(chromedp.ID("password"), op.Password),
		clickAndLoad(chromedp.CSS(`form button[type="submit"]`)),
		chromedp.WaitVisible(chromedp.ID("subject")),
	)
	if err != nil {
		loc, _ := chromedp.Run(tab, chromedp.Location())
		body, _ := chromedp.Run(tab, chromedp.Text(chromedp.CSS("body")))
		t.Fatalf("sign in: %v; at %s: %q", err, loc, body)
	}
	if loc, _ := chromedp.Run(tab, chromedp.Location()); loc != base+"/account" {
		t.Fatalf("after sign-in the browser is at %s", loc)
	}
}

func isOAuthError(err error, code string) bool {
	var re *oauth2.RetrieveError
	return errors.As(err, &re) && re.ErrorCode == code
}

func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
