package auth

import (
	"context"
	"errors"
	"testing"
	"time"
)

// auth.refresh: false (Settings.NoRefresh): the session's tokens are never
// refreshed on the server, not near their expiry, not forced, not after
// it; an expired access token is ErrRefreshOff and the session stays.
func TestRefreshOffNeverRefreshes(t *testing.T) {
	pool := testPool(t)
	op := startHostileOP(t)
	op.set(func(o *hostileOP) { o.accessTTL = 30 * time.Second })
	h := newRP(t, pool, op, func(a *Settings) { a.NoRefresh = true })
	ctx := context.Background()
	b := h.browser()
	h.mustLogin(b)
	sid := h.sessionID(b)
	op.mu.Lock()
	before := len(op.refreshSeen)
	op.mu.Unlock()
	if before != 0 {
		t.Fatalf("login and /account refreshed %d times with refresh off", before)
	}
	h.clk.Add(20 * time.Second) // within refresh_before: would refresh if on
	if _, err := h.svc.AccessToken(ctx, sid); err != nil {
		t.Fatalf("a token with 10 s left: %v", err)
	}
	if err := h.svc.ForceRefresh(ctx, sid); !errors.Is(err, ErrRefreshOff) {
		t.Fatalf("ForceRefresh with refresh off: %v", err)
	}
	h.clk.Add(20 * time.Second) // expired
	if _, err := h.svc.AccessToken(ctx, sid); !errors.Is(err, ErrRefreshOff) {
		t.Fatalf("an expired token with refresh off: %v, want ErrRefreshOff", err)
	}
	op.mu.Lock()
	n := len(op.refreshSeen)
	op.mu.Unlock()
	if n != 0 {
		t.Errorf("the OP saw %d refresh grants with refresh off", n)
	}
	if _, err := h.store.Lookup(ctx, h.sessionCookie(b).Value); err != nil {
		t.Errorf("the session ended: %v", err)
	}
}
