// Package oidccheck proves, without gatehouse, that the test OpenID Provider,
// headless Chromium and the go-oidc + x/oauth2 relying-party stack work together.
package oidccheck

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"html"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"
	"github.com/coreos/go-oidc/v3/oidc"
	"golang.org/x/oauth2"

	"github.com/gatehouse/gatehouse/internal/testenv"
)

// rpLogin is what the relying party keeps between /login and /callback.
type rpLogin struct{ verifier, nonce string }

// rpResult is what the relying party saw at /callback.
type rpResult struct {
	query   url.Values
	token   *oauth2.Token
	idToken *oidc.IDToken
	err     error
}

// rp is a minimal relying party: Authorization Code + PKCE (S256) + nonce.
type rp struct {
	base     string // http://localhost:<port>
	conf     *oauth2.Config
	verifier *oidc.IDTokenVerifier

	mu      sync.Mutex
	pending map[string]rpLogin // by state
	results chan rpResult
}

func randString(t testing.TB) string {
	b := make([]byte, 24)
	if _, err := rand.Read(b); err != nil {
		t.Fatalf("rand: %v", err)
	}
	return base64.RawURLEncoding.EncodeToString(b)
}

func (p *rp) handler(t testing.TB) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /login", func(w http.ResponseWriter, r *http.Request) {
		state, nonce, verifier := randString(t), randString(t), oauth2.GenerateVerifier()
		p.mu.Lock()
		p.pending[state] = rpLogin{verifier: verifier, nonce: nonce}
		p.mu.Unlock()
		http.SetCookie(w, &http.Cookie{Name: "rp_state", Value: state, Path: "/", HttpOnly: true, SameSite: http.SameSiteLaxMode})
		http.Redirect(w, r, p.conf.AuthCodeURL(state, oidc.Nonce(nonce), oauth2.S256ChallengeOption(verifier)), http.StatusFound)
	})
	mux.HandleFunc("GET /callback", func(w http.ResponseWriter, r *http.Request) {
		res := p.callback(r)
		p.results <- res
		if res.err != nil {
			w.WriteHeader(http.StatusBadRequest)
			fmt.Fprintf(w, `<html><body><p id="error">%s</p></body></html>`, html.EscapeString(res.err.Error()))
			return
		}
		fmt.Fprintf(w, `<html><body><p id="result">signed in as %s</p></body></html>`, html.EscapeString(res.idToken.Subject))
	})
	return mux
}

func (p *rp) callback(r *http.Request) rpResult {
	res := rpResult{query: r.URL.Query()}
	if e := res.query.Get("error"); e != "" {
		res.err = fmt.Errorf("provider error %s: %s", e, res.query.Get("error_description"))
		return res
	}
	c, err := r.Cookie("rp_state")
	state := res.query.Get("state")
	if err != nil || state == "" || c.Value != state {
		res.err = fmt.Errorf("state mismatch (cookie err %v)", err)
		return res
	}
	p.mu.Lock()
	login, ok := p.pending[state]
	delete(p.pending, state) // consumed once
	p.mu.Unlock()
	if !ok {
		res.err = errors.New("state unknown or already consumed")
		return res
	}
	code := res.query.Get("code")
	// The OP must enforce PKCE: a wrong verifier is refused (and does not burn the code).
	if _, err := p.conf.Exchange(r.Context(), code, oauth2.VerifierOption(oauth2.GenerateVerifier())); !isInvalidGrant(err) {
		res.err = fmt.Errorf("exchange with a wrong code_verifier: err %v, want invalid_grant", err)
		return res
	}
	tok, err := p.conf.Exchange(r.Context(), code, oauth2.VerifierOption(login.verifier))
	if err != nil {
		res.err = fmt.Errorf("exchange code: %w", err)
		return res
	}
	// The code is single-use.
	if _, err := p.conf.Exchange(r.Context(), code, oauth2.VerifierOption(login.verifier)); !isInvalidGrant(err) {
		res.err = fmt.Errorf("second exchange of the same code: err %v, want invalid_grant", err)
		return res
	}
	res.token = tok
	raw, _ := tok.Extra("id_token").(string)
	if raw == "" {
		res.err = errors.New("token response without id_token")
		return res
	}
	idt, err := p.verifier.Verify(r.Context(), raw)
	if err != nil {
		res.err = fmt.Errorf("verify id_token: %w", err)
		return res
	}
	if idt.Nonce != login.nonce {
		res.err = errors.New("id_token nonce mismatch")
		return res
	}
	res.idToken = idt
	return res
}

func TestLoginWithRealOPAndBrowser(t *testing.T) {
	start := time.Now()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("listen: %v", err)
	}
	p := &rp{
		base:    fmt.Sprintf("http://localhost:%d", ln.Addr().(*net.TCPAddr).Port),
		pending: map[string]rpLogin{},
		results: make(chan rpResult, 1),
	}
	redirectURI := p.base + "/callback"
	srv := &httptest.Server{Listener: ln, Config: &http.Server{Handler: p.handler(t)}}
	srv.Start()
	t.Cleanup(srv.Close)

	opStart := time.Now()
	op := testenv.StartOP(t, []string{redirectURI})
	t.Logf("OP ready at %s in %s (build included on first use)", op.Issuer, time.Since(opStart))

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	provider, err := oidc.NewProvider(ctx, op.Issuer)
	if err != nil {
		t.Fatalf("discovery: %v", err)
	}
	var meta struct {
		Revocation string   `json:"revocation_endpoint"`
		EndSession string   `json:"end_session_endpoint"`
		Methods    []string `json:"code_challenge_methods_supported"`
	}
	if err := provider.Claims(&meta); err != nil {
		t.Fatalf("discovery claims: %v", err)
	}
	if !slices.Contains(meta.Methods, "S256") || meta.Revocation == "" || meta.EndSession == "" {
		t.Fatalf("discovery lacks S256, revocation or end_session: %+v", meta)
	}

	browserStart := time.Now()
	browser := testenv.StartBrowser(t)
	t.Logf("browser started in %s", time.Since(browserStart))

	for _, c := range []struct {
		name, clientID, secret string
		style                  oauth2.AuthStyle
	}{
		{"confidential", op.ClientID, op.ClientSecret, oauth2.AuthStyleInHeader},
		{"public", op.PublicClientID, "", oauth2.AuthStyleInParams},
	} {
		t.Run(c.name, func(t *testing.T) {
			p.conf = &oauth2.Config{
				ClientID: c.clientID, ClientSecret: c.secret, RedirectURL: redirectURI,
				Endpoint: provider.Endpoint(),
				Scopes:   []string{oidc.ScopeOpenID, "profile", "email", oidc.ScopeOfflineAccess},
			}
			p.conf.Endpoint.AuthStyle = c.style
			p.verifier = provider.Verifier(&oidc.Config{ClientID: c.clientID})
			res := browserLogin(t, browser, p, op)
			if got := res.idToken.Subject; got != op.Subject {
				t.Fatalf("sub = %q, want %q", got, op.Subject)
			}
			if res.idToken.Issuer != op.Issuer || !slices.Contains(res.idToken.Audience, c.clientID) {
				t.Fatalf("iss/aud = %q/%v, want %q/%q", res.idToken.Issuer, res.idToken.Audience, op.Issuer, c.clientID)
			}
			t.Logf("callback query keys: %v (RFC 9207 iss present: %v)", keys(res.query), res.query.Has("iss"))

			ui, err := provider.UserInfo(ctx, oauth2.StaticTokenSource(res.token))
			if err != nil || ui.Subject != op.Subject {
				t.Fatalf("userinfo: sub %v, err %v", ui, err)
			}
			checkRefresh(ctx, t, p.conf, res.token.RefreshToken, meta.Revocation, c.clientID, c.secret)
		})
	}
	t.Logf("total smoke test time %s", time.Since(start))
}

// browserLogin signs in through the OP's login form in a new tab and returns
// what the relying party saw at its callback.
func browserLogin(t *testing.T, browser context.Context, p *rp, op *testenv.OP) rpResult {
	t.Helper()
	tab, closeTab := chromedp.NewContext(browser)
	defer closeTab()
	if err := chromedp.Do(tab); err != nil { // opens the tab, no deadline
		t.Fatalf("open tab: %v", err)
	}
	tctx, cancel := context.WithTimeout(tab, 60*time.Second)
	defer cancel()
	begin := time.Now()
	// The OP's login form (example/server/exampleop/templates/login.html):
	// inputs #username and #password, one submit button. Submitting it
	// redirects (302s, no load event in between) to the RP's /callback.
	submit := chromedp.Click(chromedp.CSS(`form button[type="submit"]`))
	err := chromedp.Do(tctx,
		chromedp.Navigate(p.base+"/login"),
		chromedp.WaitVisible(chromedp.ID("username")),
		chromedp.SendKeys(chromedp.ID("username"), op.Username),
		chromedp.SendKeys(chromedp.ID("password"), op.Password),
		chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
			_, err := chromedp.WaitEvent(page.LoadEventFired, nil, submit)(ctx, tg)
			return err
		}),
	)
	loc, locErr := chromedp.Run(tctx, chromedp.Location())
	if err != nil || locErr != nil || !strings.HasPrefix(loc, p.base+"/callback?") {
		body, _ := chromedp.Run(tctx, chromedp.Text(chromedp.CSS("body")))
		t.Fatalf("browser login: err %v / %v, ended at %q (want %s/callback): page text %q", err, locErr, loc, p.base, body)
	}
	var res rpResult
	select {
	case res = <-p.results:
	case <-tctx.Done():
		t.Fatal("relying party saw no callback")
	}
	if res.err != nil {
		t.Fatalf("callback: %v", res.err)
	}
	t.Logf("browser login round trip %s", time.Since(begin))
	return res
}

// checkRefresh exercises the refresh_token grant, rotation and revocation.
func checkRefresh(ctx context.Context, t *testing.T, conf *oauth2.Config, rt, revocationURL, clientID, secret string) {
	t.Helper()
	if rt == "" {
		t.Fatal("no refresh token issued for scope offline_access")
	}
	refresh := func(rt string) (*oauth2.Token, error) {
		return conf.TokenSource(ctx, &oauth2.Token{RefreshToken: rt}).Token()
	}
	tok, err := refresh(rt)
	if err != nil {
		t.Fatalf("refresh grant: %v", err)
	}
	if tok.AccessToken == "" || tok.RefreshToken == "" || tok.RefreshToken == rt {
		t.Fatalf("refresh did not rotate: new refresh token empty or equal to the old one")
	}
	if _, err := refresh(rt); !isInvalidGrant(err) {
		t.Fatalf("reusing the rotated refresh token: err %v, want invalid_grant", err)
	}
	// RFC 7009 revocation of the current refresh token, then it must stop working.
	form := url.Values{"token": {tok.RefreshToken}, "token_type_hint": {"refresh_token"}}
	if secret == "" {
		form.Set("client_id", clientID)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, revocationURL, strings.NewReader(form.Encode()))
	if err != nil {
		t.Fatalf("revocation request: %v", err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	if secret != "" {
		req.SetBasicAuth(url.QueryEscape(clientID), url.QueryEscape(secret))
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("revoke: %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("revoke: status %d", resp.StatusCode)
	}
	if _, err := refresh(tok.RefreshToken); !isInvalidGrant(err) {
		t.Fatalf("refresh with revoked token: err %v, want invalid_grant", err)
	}
}

func isInvalidGrant(err error) bool {
	var re *oauth2.RetrieveError
	return errors.As(err, &re) && re.ErrorCode == "invalid_grant"
}

func keys(v url.Values) []string {
	out := make([]string, 0, len(v))
	for k := range v {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}
