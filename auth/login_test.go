package auth

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"
)

// TestBasicRPCertificationCases reproduces the OpenID Foundation's Basic RP
// certification tests against the hostile OP: each bad answer must leave the
// browser without a session and on a clear error page.
func TestBasicRPCertificationCases(t *testing.T) {
	pool := testPool(t)
	op := startHostileOP(t)
	h := newRP(t, pool, op, nil)
	other := newRSAKey(t)

	reject := []struct {
		name string
		kind string
		bend func(op *hostileOP)
	}{
		{"rp-id_token-bad-sig-rs256", pageVerifyFailed, func(op *hostileOP) { op.sign = other }},
		{"rp-id_token-sig-none", pageVerifyFailed, func(op *hostileOP) { op.algNone = true }},
		{"rp-id_token-issuer-mismatch", pageVerifyFailed, func(op *hostileOP) {
			op.idClaims = func(c map[string]any) { c["iss"] = "https://evil.example/" }
		}},
		{"rp-id_token-aud", pageVerifyFailed, func(op *hostileOP) {
			op.idClaims = func(c map[string]any) { c["aud"] = "someone-else" }
		}},
		{"rp-id_token-sub", pageVerifyFailed, func(op *hostileOP) { op.idClaims = func(c map[string]any) { delete(c, "sub") } }},
		{"rp-id_token-iat", pageVerifyFailed, func(op *hostileOP) { op.idClaims = func(c map[string]any) { delete(c, "iat") } }},
		{"rp-id_token-expired", pageVerifyFailed, func(op *hostileOP) {
			op.idClaims = func(c map[string]any) { c["exp"] = time.Now().Add(-time.Hour).Unix() }
		}},
		{"rp-nonce-invalid", pageVerifyFailed, func(op *hostileOP) {
			op.idClaims = func(c map[string]any) { c["nonce"] = "not-the-nonce" }
		}},
		{"rp-nonce-missing", pageVerifyFailed, func(op *hostileOP) { op.idClaims = func(c map[string]any) { delete(c, "nonce") } }},
		{"azp-wrong-with-several-audiences", pageVerifyFailed, func(op *hostileOP) {
			op.idClaims = func(c map[string]any) { c["aud"] = []string{hostileClientID, "other"}; c["azp"] = "other" }
		}},
		{"azp-missing-with-several-audiences", pageVerifyFailed, func(op *hostileOP) {
			op.idClaims = func(c map[string]any) { c["aud"] = []string{hostileClientID, "other"} }
		}},
		{"rp-userinfo-bad-sub-claim", pageVerifyFailed, func(op *hostileOP) { op.userinfoSub = "someone-else" }},
		{"rp-kid-absent-unknown-key", pageVerifyFailed, func(op *hostileOP) { op.signKid = ""; op.sign = other }},
		{"rfc9207-iss-wrong", pageIssuerMismatch, func(op *hostileOP) { op.issParam = "https://evil.example/" }},
		{"op-error-access-denied", pageAccessDenied, func(op *hostileOP) { op.authorizeError = "access_denied" }},
	}
	op.mu.Lock()
	baseKey := op.sign
	op.mu.Unlock()
	reset := func() {
		op.set(func(o *hostileOP) {
			o.sign, o.signKid, o.algNone, o.idClaims, o.userinfoSub = baseKey, "k1", false, nil, ""
			o.issParam, o.advertiseIss, o.authorizeError, o.tokenError = "", false, "", ""
			o.published = []jose.JSONWebKey{jwk(baseKey, "k1")}
		})
	}
	for _, c := range reject {
		t.Run(c.name, func(t *testing.T) {
			reset()
			op.set(c.bend)
			b := h.browser()
			p := h.login(b)
			if p.kind() != c.kind || p.status < 400 {
				t.Fatalf("page kind %q status %d, want %q error page\n%s", p.kind(), p.status, c.kind, p.body)
			}
			if h.sessionCookie(b) != nil {
				t.Fatal("a session cookie was set")
			}
			if !strings.Contains(p.body, `id="correlation-id"`) {
				t.Fatal("error page without reference")
			}
		})
	}
	accept := []struct {
		name string
		bend func(op *hostileOP)
	}{
		{"rp-response_type-code", func(op *hostileOP) {}},
		{"rp-id_token-kid-absent-single-jwks", func(op *hostileOP) { op.signKid = "" }},
		{"rp-id_token-kid-absent-multiple-jwks", func(op *hostileOP) {
			// The RP may try every published key; the right one verifies.
			op.signKid = ""
			op.published = []jose.JSONWebKey{jwk(other, "k0"), jwk(baseKey, "k1")}
		}},
		{"rfc9207-iss-advertised-and-correct", func(op *hostileOP) { op.advertiseIss = true; op.issParam = op.issuer() }},
	}
	for _, c := range accept {
		t.Run(c.name, func(t *testing.T) {
			reset()
			op.set(c.bend)
			h.mustLogin(h.browser())
		})
	}
	t.Run("rp-key-rotation-op-sign-key", func(t *testing.T) {
		reset()
		h.mustLogin(h.browser()) // JWKS with k1 now cached
		k2 := newRSAKey(t)
		op.set(func(o *hostileOP) { o.sign, o.signKid, o.published = k2, "k2", []jose.JSONWebKey{jwk(k2, "k2")} })
		h.mustLogin(h.browser()) // unknown kid -> JWKS re-fetched
	})
	t.Run("rfc9207-iss-advertised-but-missing", func(t *testing.T) {
		// A fresh Service must see the new discovery document.
		reset()
		op.set(func(o *hostileOP) { o.advertiseIss = true })
		h2 := newRP(t, pool, op, nil)
		if p := h2.login(h2.browser()); p.kind() != pageIssuerMismatch {
			t.Fatalf("page kind %q, want issuer_mismatch", p.kind())
		}
	})
}

func TestLoginStateCodeAndErrors(t *testing.T) {
	pool := testPool(t)
	op := startHostileOP(t)
	h := newRP(t, pool, op, nil)
	ctx := context.Background()

	t.Run("authorize request and cookie attributes", func(t *testing.T) {
		b := h.browser()
		resp, err := noFollow(b).Get(h.base + "/login?next=/account")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		loc, _ := url.Parse(resp.Header.Get("Location"))
		q := loc.Query()
		if !strings.HasPrefix(loc.String(), op.issuer()+"/authorize?") || q.Get("response_type") != "code" ||
			q.Get("code_challenge_method") != "S256" || len(q.Get("code_challenge")) != 43 || q.Get("redirect_uri") != h.base+"/callback" ||
			q.Get("scope") != "openid profile email" || q.Get("state") == "" || q.Get("nonce") == "" ||
			q.Get("state") == q.Get("nonce") || strings.Contains(loc.RawQuery, "next") {
			t.Fatalf("authorize URL: %s", loc)
		}
		pre := resp.Cookies()
		if len(pre) != 1 || pre[0].Name != preLoginCookie || !pre[0].HttpOnly || !pre[0].Secure || pre[0].Path != "/" ||
			pre[0].Domain != "" || pre[0].SameSite != http.SameSiteLaxMode || pre[0].MaxAge != 600 {
			t.Fatalf("pre-login cookie: %+v", pre)
		}
		// Follow to the end and check the session cookie's attributes on the wire.
		resp, err = noFollow(b).Get(loc.String())
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		resp, err = noFollow(b).Get(resp.Header.Get("Location"))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		var sc *http.Cookie
		for _, c := range resp.Cookies() {
			if c.Name == "__Host-gatehouse-session" {
				sc = c
			}
		}
		if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/account" || sc == nil ||
			!sc.HttpOnly || !sc.Secure || sc.Path != "/" || sc.Domain != "" || sc.SameSite != http.SameSiteLaxMode || len(sc.Value) < 43 {
			t.Fatalf("callback answer %d %q cookie %+v", resp.StatusCode, resp.Header.Get("Location"), sc)
		}
	})

	t.Run("state replay is refused before the code is redeemed", func(t *testing.T) {
		b := h.browser()
		resp, _ := noFollow(b).Get(h.base + "/login?next=/account")
		resp.Body.Close()
		resp, _ = noFollow(b).Get(resp.Header.Get("Location"))
		resp.Body.Close()
		callback := resp.Header.Get("Location")
		code := mustURL(callback).Query().Get("code")
		if p := h.get(b, callback); p.status != 200 || p.kind() != "" {
			t.Fatalf("first callback: %d %q", p.status, p.kind())
		}
		p := h.get(b, callback)
		if p.kind() != pageStateMismatch || p.status != 400 || !strings.Contains(p.body, "opened twice") {
			t.Fatalf("replayed callback: %d %q", p.status, p.kind())
		}
		op.mu.Lock()
		uses := op.codeUses[code]
		op.mu.Unlock()
		if uses != 1 {
			t.Fatalf("code presented %d times to the OP, want 1", uses)
		}
	})

	t.Run("state from another browser", func(t *testing.T) {
		a, other := h.browser(), h.browser()
		resp, _ := noFollow(a).Get(h.base + "/login")
		resp.Body.Close()
		resp, _ = noFollow(a).Get(resp.Header.Get("Location"))
		resp.Body.Close()
		if p := h.get(other, resp.Header.Get("Location")); p.kind() != pageStateMismatch {
			t.Fatalf("callback in another browser: %q", p.kind())
		}
		if p := h.get(a, h.base+"/callback?state=forged&code=x"); p.kind() != pageStateMismatch {
			t.Fatalf("forged state: %q", p.kind())
		}
	})

	t.Run("several tabs log in at once", func(t *testing.T) {
		b := h.browser()
		var callbacks []string
		for range 2 {
			resp, _ := noFollow(b).Get(h.base + "/login?next=/account")
			resp.Body.Close()
			resp, _ = noFollow(b).Get(resp.Header.Get("Location"))
			resp.Body.Close()
			callbacks = append(callbacks, resp.Header.Get("Location"))
		}
		for _, i := range []int{1, 0} {
			if p := h.get(b, callbacks[i]); p.status != 200 || p.kind() != "" {
				t.Fatalf("tab %d: %d %q", i, p.status, p.kind())
			}
		}
	})

	t.Run("code reuse: invalid_grant restarts once", func(t *testing.T) {
		b := h.browser()
		resp, _ := noFollow(b).Get(h.base + "/login?next=/account")
		resp.Body.Close()
		resp, _ = noFollow(b).Get(resp.Header.Get("Location"))
		resp.Body.Close()
		first := mustURL(resp.Header.Get("Location"))
		h.get(b, first.String()) // redeems the code
		// A second login presents the already redeemed code with its own valid state.
		resp, _ = noFollow(b).Get(h.base + "/login?next=/account")
		resp.Body.Close()
		state := mustURL(resp.Header.Get("Location")).Query().Get("state")
		op.mu.Lock()
		before := op.authorizes
		op.mu.Unlock()
		p := h.get(b, h.base+"/callback?"+url.Values{"state": {state}, "code": {first.Query().Get("code")}}.Encode())
		op.mu.Lock()
		after := op.authorizes
		op.mu.Unlock()
		if p.status != 200 || !strings.Contains(p.body, hostileSubject) || after != before+1 {
			t.Fatalf("restart after reused code: %d %q authorizes %d->%d", p.status, p.kind(), before, after)
		}
	})

	t.Run("expired code restarts only once", func(t *testing.T) {
		op.set(func(o *hostileOP) { o.tokenError = "invalid_grant" })
		defer op.set(func(o *hostileOP) { o.tokenError = "" })
		op.mu.Lock()
		before := op.authorizes
		op.mu.Unlock()
		p := h.login(h.browser())
		op.mu.Lock()
		after := op.authorizes
		op.mu.Unlock()
		if p.kind() != pageInvalidGrant || after-before != 2 {
			t.Fatalf("kind %q, authorizes %d (want invalid_grant page after exactly one restart)", p.kind(), after-before)
		}
	})

	t.Run("redirect_uri_mismatch is shown, not looped", func(t *testing.T) {
		op.set(func(o *hostileOP) { o.tokenError = "redirect_uri_mismatch" })
		defer op.set(func(o *hostileOP) { o.tokenError = "" })
		op.mu.Lock()
		before := op.authorizes
		op.mu.Unlock()
		p := h.login(h.browser())
		op.mu.Lock()
		after := op.authorizes
		op.mu.Unlock()
		if p.kind() != pageRedirectMismatch || after-before != 1 || !strings.Contains(p.body, h.base+"/callback") ||
			strings.Contains(p.body, `id="retry"`) {
			t.Fatalf("kind %q authorizes %d body:\n%s", p.kind(), after-before, p.body)
		}
	})

	t.Run("login transaction expires", func(t *testing.T) {
		b := h.browser()
		resp, _ := noFollow(b).Get(h.base + "/login?next=/account")
		resp.Body.Close()
		resp, _ = noFollow(b).Get(resp.Header.Get("Location"))
		resp.Body.Close()
		h.clk.Add(11 * time.Minute)
		defer h.clk.Add(-11 * time.Minute)
		if p := h.get(b, resp.Header.Get("Location")); p.kind() != pageLoginExpired || !strings.Contains(p.body, `/login?next=%2faccount`) {
			t.Fatalf("expired login: %q", p.kind())
		}
	})

	t.Run("next is validated", func(t *testing.T) {
		for _, next := range []string{"//evil.com", "/%2f%2fevil.com", "https://evil.com", "javascript:alert(1)"} {
			b := h.browser()
			resp, _ := noFollow(b).Get(h.base + "/login?next=" + url.QueryEscape(next))
			resp.Body.Close()
			resp, _ = noFollow(b).Get(resp.Header.Get("Location"))
			resp.Body.Close()
			resp, _ = noFollow(b).Get(resp.Header.Get("Location"))
			resp.Body.Close()
			if got := resp.Header.Get("Location"); got != "/" {
				t.Fatalf("next %q redirected to %q", next, got)
			}
		}
	})

	_ = ctx
}

func TestLoginReplacesSessionAndOPErrorWithoutState(t *testing.T) {
	pool := testPool(t)
	op := startHostileOP(t)
	h := newRP(t, pool, op, nil)
	b := h.browser()
	h.mustLogin(b)
	first := h.sessionCookie(b).Value
	h.mustLogin(b)
	if _, err := h.store.Lookup(context.Background(), first); !errors.Is(err, ErrNoSession) {
		t.Fatalf("the replaced session is still live: %v", err)
	}
	if p := h.get(b, h.base+"/"); !strings.HasSuffix(p.url, "/account") || p.status != 200 {
		t.Fatalf("GET / signed in ended at %s", p.url)
	}
	if p := h.get(h.browser(), h.base+"/"); !strings.Contains(p.url, "/signin?next=%2Faccount") || !strings.Contains(p.body, `id="signin"`) {
		t.Fatalf("GET / signed out ended at %s", p.url)
	}
	if p := h.get(b, h.base+"/callback?error=redirect_uri_mismatch"); p.kind() != pageRedirectMismatch {
		t.Fatalf("OP error without state: %q", p.kind())
	}
	if p := h.get(b, h.base+"/callback?error=server_error"); p.kind() != pageOPError || !strings.Contains(p.body, "server_error") {
		t.Fatalf("OP error without state: %q", p.kind())
	}
}
