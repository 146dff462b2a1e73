package auth

import (
	"context"
	"net/http"
	"strings"
	"testing"
)

// TestLogsCarryNoSecrets runs full logins (success, an OP error, a refresh,
// sign-out, revocation at the OP) and searches everything logged for the
// codes, verifiers, states, nonces, tokens, cookie values and client secret.
func TestLogsCarryNoSecrets(t *testing.T) {
	pool := testPool(t)
	op := startHostileOP(t)
	h := newRP(t, pool, op, nil)
	var secrets []string
	b := h.browser()
	resp, err := noFollow(b).Get(h.base + "/login?next=/account")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	authz := mustURL(resp.Header.Get("Location"))
	secrets = append(secrets, authz.Query().Get("state"), authz.Query().Get("nonce"), authz.Query().Get("code_challenge"))
	for _, c := range resp.Cookies() {
		secrets = append(secrets, c.Value)
	}
	if p := h.get(b, authz.String()); p.status != 200 {
		t.Fatalf("login: %d %s", p.status, p.kind())
	}
	secrets = append(secrets, h.sessionCookie(b).Value)
	sid := h.sessionID(b)
	if err := h.svc.ForceRefresh(context.Background(), sid); err != nil {
		t.Fatal(err)
	}
	op.set(func(o *hostileOP) { o.tokenError = "invalid_grant" })
	h.login(h.browser())
	op.set(func(o *hostileOP) { o.tokenError = "" })
	h.post(noFollow(b), "/logout", map[string]string{"X-CSRF": "1"})
	waitFor(t, "revocation at the OP", func() bool {
		op.mu.Lock()
		defer op.mu.Unlock()
		return len(op.revoked) > 0
	})

	op.mu.Lock()
	secrets = append(secrets, op.issued...)
	secrets = append(secrets, op.verifiersGot...)
	for code := range op.codes {
		secrets = append(secrets, code)
	}
	op.mu.Unlock()
	secrets = append(secrets, hostileSecret, "operator-token-abc")
	logs := h.logs.String()
	for _, s := range secrets {
		if len(s) < 8 {
			t.Fatalf("implausible secret %q collected", s)
		}
		if strings.Contains(logs, s) {
			t.Fatalf("logs contain a secret (%d chars, starts %q)", len(s), s[:4])
		}
	}
	// What the logs must carry.
	for _, want := range []string{`"correlation_id"`, `"client_id":"` + hostileClientID + `"`, `"callback_uri":"` + h.base + `/callback"`,
		`"op_error":"invalid_grant"`, `"login_started_at"`, `"msg":"login succeeded"`, `"msg":"tokens refreshed"`} {
		if !strings.Contains(logs, want) {
			t.Fatalf("logs lack %s:\n%s", want, logs)
		}
	}
	if len(secrets) < 12 {
		t.Fatalf("only %d secrets collected", len(secrets))
	}
	_ = http.StatusOK
}
