package auth

import (
	"strings"
	"testing"
)

// TestTokenEndpointAuthFromDiscovery: an OP that supports only
// client_secret_post and spends the code on a header-authenticated request
// (as Keycloak does): gatehouse uses the body from the first request, so the
// one-time code is presented once and the login succeeds.
func TestTokenEndpointAuthFromDiscovery(t *testing.T) {
	op := startHostileOP(t)
	op.set(func(o *hostileOP) { o.postOnly = true })
	h := newRP(t, testPool(t), op, nil)
	h.mustLogin(h.browser())
	op.mu.Lock()
	defer op.mu.Unlock()
	for code, n := range op.codeUses {
		if n != 1 {
			t.Errorf("code %s… presented %d times", code[:6], n)
		}
	}
	if !strings.Contains(h.logs.String(), `"token_endpoint_auth_method":"client_secret_post"`) {
		t.Error("the chosen token endpoint auth method is not logged at start")
	}
}

// A configured method the OP does not support fails at start, naming the
// key; the OP's refusal of a code is logged with its own description.
func TestTokenEndpointAuthMethodConfigured(t *testing.T) {
	if m, err := tokenAuthMethod(true, "", nil); err != nil || m != "client_secret_basic" {
		t.Errorf("no discovery list: %q %v, want client_secret_basic", m, err)
	}
	if m, err := tokenAuthMethod(true, "", []string{"private_key_jwt", "client_secret_post"}); err != nil || m != "client_secret_post" {
		t.Errorf("post only: %q %v", m, err)
	}
	if m, _ := tokenAuthMethod(false, "", []string{"client_secret_basic"}); m != "none" {
		t.Errorf("public client: %q", m)
	}
	if _, err := tokenAuthMethod(true, "client_secret_basic", []string{"client_secret_post"}); err == nil ||
		!strings.Contains(err.Error(), "auth.token_endpoint_auth_method") {
		t.Errorf("unsupported configured method: %v", err)
	}
	if _, err := tokenAuthMethod(true, "", []string{"private_key_jwt"}); err == nil {
		t.Error("an OP with neither secret method must be refused at start")
	}

	op := startHostileOP(t)
	op.set(func(o *hostileOP) { o.tokenError = "invalid_grant" })
	h := newRP(t, testPool(t), op, nil)
	h.login(h.browser())
	if !strings.Contains(h.logs.String(), `"op_error_description":"forced by test"`) {
		t.Errorf("the OP's error description is not logged:\n%s", h.logs.String())
	}
}

// offline_access only when configured; the pre-login cookie is cleared
// after a successful callback.
func TestOfflineAccessAndLoginCookie(t *testing.T) {
	op := startHostileOP(t)
	pool := testPool(t)
	h := newRP(t, pool, op, nil)
	b := h.browser()
	h.mustLogin(b)
	for _, ck := range b.Jar.Cookies(mustURL(h.base)) {
		if ck.Name == preLoginCookie {
			t.Errorf("the pre-login cookie survived the login: %+v", ck)
		}
	}
	h2 := newRP(t, pool, op, func(a *Settings) { a.OfflineAccess = true })
	h2.mustLogin(h2.browser())
	op.mu.Lock()
	defer op.mu.Unlock()
	if len(op.scopes) < 2 || strings.Contains(op.scopes[0], "offline_access") || !strings.Contains(op.scopes[len(op.scopes)-1], "offline_access") {
		t.Errorf("scopes requested: %q (default without offline_access, then with it)", op.scopes)
	}
}
