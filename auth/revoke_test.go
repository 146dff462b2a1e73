package auth

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"
)

func TestAccountRevocationLogoutAndCSRF(t *testing.T) {
	pool := testPool(t)
	op := startHostileOP(t)
	h := newRP(t, pool, op, nil)
	ctx := context.Background()

	a, b := h.browser(), h.browser()
	h.mustLogin(a)
	pb := h.mustLogin(b)
	sidA, sidB := h.sessionID(a), h.sessionID(b)
	if sidA == sidB {
		t.Fatal("two logins share a session")
	}
	if n := strings.Count(pb.body, `class="revoke danger"`); n != 2 {
		t.Fatalf("account lists %d sessions, want 2", n)
	}

	// CSRF: a cross-site form post and a post without Origin or header are refused.
	for _, hdr := range []map[string]string{{}, {"Origin": "https://evil.example"}, {"Origin": "null"}, {"Sec-Fetch-Site": "cross-site"}} {
		if p := h.post(noFollow(b), "/account/sessions/"+sidA+"/revoke", hdr); p.status != http.StatusForbidden {
			t.Fatalf("CSRF %v: status %d", hdr, p.status)
		}
	}
	if _, err := h.store.Lookup(ctx, h.sessionCookie(a).Value); err != nil {
		t.Fatal("a refused request revoked the session")
	}
	// Revoke A from B (same-origin form post): A is signed out on its next request.
	if p := h.post(noFollow(b), "/account/sessions/"+sidA+"/revoke", map[string]string{"Origin": h.base}); p.status != http.StatusSeeOther {
		t.Fatalf("revoke: %d", p.status)
	}
	if p := h.get(a, h.base+"/account"); !strings.Contains(p.url, "/signin?") {
		t.Fatalf("revoked session still reaches /account: %s", p.url)
	}
	if p := h.get(b, h.base+"/account"); p.status != 200 || strings.Count(p.body, `class="revoke danger"`) != 1 {
		t.Fatalf("B after revoking A: %d", p.status)
	}
	waitFor(t, "OP revocation of A's tokens", func() bool {
		var n int
		_ = pool.QueryRow(ctx, `SELECT count(*) FROM auth_tokens WHERE session_id = $1`, sidA).Scan(&n)
		return n == 0
	})

	// Sign out with X-CSRF: 1 -> local revocation, cookie cleared, end_session redirect.
	p := h.post(noFollow(b), "/logout", map[string]string{"X-CSRF": "1"})
	if p.status != http.StatusSeeOther {
		t.Fatalf("logout: %d", p.status)
	}
	if h.sessionCookie(b) != nil {
		t.Fatal("logout did not clear the cookie")
	}
	if _, err := h.store.Lookup(ctx, ""); err == nil {
		t.Fatal("empty cookie resolves")
	}
	if s, _ := h.store.ListSessions(ctx, User{op.issuer(), hostileSubject}); len(s) != 0 {
		t.Fatalf("sessions left after sign-out: %d", len(s))
	}

	// Sign out everywhere.
	c1, c2 := h.browser(), h.browser()
	h.mustLogin(c1)
	h.mustLogin(c2)
	resp, err := noFollow(c1).Do(mustReq(t, "POST", h.base+"/account/sessions/revoke-all", map[string]string{"Origin": h.base}))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if loc := resp.Header.Get("Location"); !strings.HasPrefix(loc, op.issuer()+"/end_session?") || !strings.Contains(loc, "client_id="+hostileClientID) {
		t.Fatalf("sign out everywhere redirected to %q", loc)
	}
	if strings.Contains(resp.Header.Get("Location"), "id_token_hint") {
		t.Fatal("the ID token was sent to the browser")
	}
	if p := h.get(c2, h.base+"/account"); !strings.Contains(p.url, "/signin?") {
		t.Fatal("other session survived sign out everywhere")
	}
}

func mustReq(t *testing.T, method, u string, hdr map[string]string) *http.Request {
	req, err := http.NewRequest(method, u, nil)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	return req
}

func TestBackChannelLogoutAndOperatorAPI(t *testing.T) {
	pool := testPool(t)
	op := startHostileOP(t)
	h := newRP(t, pool, op, nil)
	send := func(tok string) int {
		resp, err := h.srv.Client().PostForm(h.base+"/backchannel-logout", url.Values{"logout_token": {tok}})
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	b := h.browser()
	h.mustLogin(b)
	other := newRSAKey(t)
	bad := map[string]func(map[string]any){
		"nonce present":  func(c map[string]any) { c["nonce"] = "x" },
		"no event":       func(c map[string]any) { c["events"] = map[string]any{} },
		"no sid, no sub": func(c map[string]any) { delete(c, "sid"); delete(c, "sub") },
		"no jti":         func(c map[string]any) { delete(c, "jti") },
		"no iat":         func(c map[string]any) { delete(c, "iat") },
		"wrong audience": func(c map[string]any) { c["aud"] = "other" },
		"wrong issuer":   func(c map[string]any) { c["iss"] = "https://evil.example" },
		"expired":        func(c map[string]any) { c["exp"] = time.Now().Add(-time.Hour).Unix() },
	}
	for name, edit := range bad {
		if st := send(op.logoutToken(edit)); st != http.StatusBadRequest {
			t.Fatalf("%s: status %d", name, st)
		}
	}
	op.mu.Lock()
	good := op.sign
	op.mu.Unlock()
	op.set(func(o *hostileOP) { o.sign = other })
	if st := send(op.logoutToken(nil)); st != http.StatusBadRequest {
		t.Fatalf("bad signature: %d", st)
	}
	op.set(func(o *hostileOP) { o.sign = good })
	if _, err := h.store.Lookup(context.Background(), h.sessionCookie(b).Value); err != nil {
		t.Fatal("an invalid logout token revoked the session")
	}

	// By sid (the ID token's "sid" is op-session-1): valid once, then a replay is refused.
	tok := op.logoutToken(func(c map[string]any) { delete(c, "sub") })
	if st := send(tok); st != http.StatusOK {
		t.Fatalf("logout by sid: %d", st)
	}
	if p := h.get(b, h.base+"/account"); !strings.Contains(p.url, "/signin?") {
		t.Fatal("session survives back-channel logout by sid")
	}
	if st := send(tok); st != http.StatusBadRequest {
		t.Fatalf("replayed logout token: %d", st)
	}
	// By sub: every session of the user.
	b1, b2 := h.browser(), h.browser()
	h.mustLogin(b1)
	h.mustLogin(b2)
	if st := send(op.logoutToken(func(c map[string]any) { delete(c, "sid") })); st != http.StatusOK {
		t.Fatalf("logout by sub: %d", st)
	}
	for _, c := range []*http.Client{b1, b2} {
		if p := h.get(c, h.base+"/account"); !strings.Contains(p.url, "/signin?") {
			t.Fatal("session survives back-channel logout by sub")
		}
	}

	// Operator API: bearer token required; revokes every session of the user.
	c1 := h.browser()
	h.mustLogin(c1)
	call := func(auth, body string) (int, string) {
		req := mustReq(t, "POST", h.base+"/operator/v1/revoke-user", map[string]string{"Authorization": auth, "Content-Type": "application/json"})
		req.Body = http.NoBody
		if body != "" {
			req = mustReq(t, "POST", h.base+"/operator/v1/revoke-user", map[string]string{"Authorization": auth})
			req.Body = ioNopCloser(body)
		}
		resp, err := h.srv.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var out map[string]any
		_ = json.NewDecoder(resp.Body).Decode(&out)
		b, _ := json.Marshal(out)
		return resp.StatusCode, string(b)
	}
	body := `{"issuer":"` + op.issuer() + `","subject":"` + hostileSubject + `"}`
	if st, _ := call("Bearer wrong", body); st != http.StatusUnauthorized {
		t.Fatalf("wrong operator token: %d", st)
	}
	if st, _ := call("", body); st != http.StatusUnauthorized {
		t.Fatalf("no operator token: %d", st)
	}
	if st, _ := call("Bearer operator-token-abc", `{"issuer":""}`); st != http.StatusBadRequest {
		t.Fatalf("bad body: %d", st)
	}
	st, out := call("Bearer operator-token-abc", body)
	if st != http.StatusOK || !regexp.MustCompile(`"revoked_sessions":1\b`).MatchString(out) {
		t.Fatalf("operator revoke: %d %s", st, out)
	}
	if p := h.get(c1, h.base+"/account"); !strings.Contains(p.url, "/signin?") {
		t.Fatal("session survives operator revocation")
	}
}
