package auth

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"
)

func TestRefreshRotationAndReuseAgainstHostileOP(t *testing.T) {
	pool := testPool(t)
	op := startHostileOP(t)
	// Tokens live 30 s, shorter than refresh_before (60 s): they are
	// refreshed once half their lifetime has passed, not on every use.
	op.set(func(o *hostileOP) { o.accessTTL = 30 * time.Second })
	h := newRP(t, pool, op, nil)
	ctx := context.Background()
	b := h.browser()
	h.mustLogin(b)
	sid := h.sessionID(b)
	op.mu.Lock()
	before := len(op.refreshSeen) // /account already refreshed once
	op.mu.Unlock()

	// A fresh token is not refreshed on every use (refresh_before is capped
	// at half the token's lifetime).
	for range 3 {
		if _, err := h.svc.AccessToken(ctx, sid); err != nil {
			t.Fatal(err)
		}
	}
	op.mu.Lock()
	if n := len(op.refreshSeen) - before; n != 0 {
		t.Fatalf("a token with 30 s left was refreshed %d times", n)
	}
	op.mu.Unlock()
	// Past half the lifetime, concurrent requests refresh under the
	// per-session lock: one refresh, the others see its tokens, and every
	// refresh token reaches the OP exactly once.
	h.clk.Add(20 * time.Second)
	errs := make(chan error, 8)
	for range 8 {
		go func() { _, err := h.svc.AccessToken(ctx, sid); errs <- err }()
	}
	for range 8 {
		if err := <-errs; err != nil {
			t.Fatalf("AccessToken: %v", err)
		}
	}
	op.mu.Lock()
	for rt, n := range op.refreshSeen {
		if n != 1 {
			t.Fatalf("refresh token %s… presented %d times", rt[:6], n)
		}
	}
	refreshes := len(op.refreshSeen) - before
	current := op.currentRT
	op.mu.Unlock()
	if refreshes != 1 {
		t.Fatalf("refreshes = %d, want 1 (the first caller refreshes, the others wait and use its tokens)", refreshes)
	}
	// The stored refresh token is the OP's newest one.
	ts, err := h.store.loadTokens(ctx, sid)
	if err != nil || ts.RefreshToken != current {
		t.Fatalf("stored refresh token is not the newest: %v", err)
	}

	// A stale copy of the tokens (already rotated refresh token) is written back:
	// it is never presented; the family is revoked and the OP told (RFC 7009).
	var keyID string
	var stale []byte
	_ = pool.QueryRow(ctx, `SELECT key_id, ciphertext FROM auth_tokens WHERE session_id = $1`, sid).Scan(&keyID, &stale)
	h.clk.Add(20 * time.Second)
	if _, err := h.svc.AccessToken(ctx, sid); err != nil {
		t.Fatal(err)
	}
	op.mu.Lock()
	newest := op.currentRT
	op.mu.Unlock()
	if _, err := pool.Exec(ctx, `UPDATE auth_tokens SET key_id = $2, ciphertext = $3 WHERE session_id = $1`, sid, keyID, stale); err != nil {
		t.Fatal(err)
	}
	h.clk.Add(20 * time.Second)
	if _, err := h.svc.AccessToken(ctx, sid); !errors.Is(err, ErrRefreshTokenReuse) {
		t.Fatalf("stale refresh token: %v", err)
	}
	if p := h.get(b, h.base+"/account"); !strings.Contains(p.url, "/signin") || !strings.Contains(p.body, "session-ended") {
		t.Fatalf("account after family revocation: %s", p.url)
	}
	waitFor(t, "OP revocation of the newest refresh token", func() bool {
		op.mu.Lock()
		defer op.mu.Unlock()
		return contains(op.revoked, newest)
	})
	op.mu.Lock()
	for rt, n := range op.refreshSeen {
		if n != 1 {
			t.Fatalf("refresh token %s… presented %d times", rt[:6], n)
		}
	}
	op.mu.Unlock()

	// The OP detects reuse elsewhere (theft) and answers invalid_grant: the session ends.
	b2 := h.browser()
	h.mustLogin(b2)
	op.set(func(o *hostileOP) { o.familyRevoked = true })
	if p := h.get(b2, h.base+"/account"); !strings.Contains(p.url, "/signin?") {
		t.Fatalf("account after invalid_grant: %s", p.url)
	}
	if h.sessionCookie(b2) != nil {
		t.Fatal("dead session cookie not cleared")
	}
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
