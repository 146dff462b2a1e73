package auth

import (
	"context"
	"fmt"
	"testing"
	"time"
)

// Finding 9 of issue 25: 50 revoked families whose tokens cannot be
// decrypted (their key was removed) were picked first on every round
// forever (ORDER BY revoked_at LIMIT 50), so a real logout's family was
// never revoked at the OP. Now a failed family backs off, so the real one
// goes in the next round, and an undecryptable family is given up after a
// few tries (op_revoke_error says why).
func TestRevocationQueueIsNotStarvedByUndecryptableFamilies(t *testing.T) {
	ctx := context.Background()
	pool := testPool(t)
	clk := &clock{t: time.Now()}
	old := testKey(t, "removed")
	withOld := newTestStore(t, pool, clk, testAuthConfig(t, old))
	ghost := User{Issuer: "https://op.example/", Subject: "ghost"}
	for i := range 60 {
		mustCreate(t, withOld, ghost, fmt.Sprint("d", i), tokenSet{AccessToken: fmt.Sprint("at-g", i), RefreshToken: fmt.Sprint("rt-g", i)})
	}
	if _, err := withOld.RevokeUser(ctx, ghost, "test"); err != nil {
		t.Fatal(err)
	}
	clk.Add(time.Second)
	s := newTestStore(t, pool, clk, testAuthConfig(t, testKey(t, "current"))) // "removed" is gone
	real := User{Issuer: "https://op.example/", Subject: "real"}
	mustCreate(t, s, real, "laptop", tokenSet{AccessToken: "at-real", RefreshToken: "rt-real"})
	if _, err := s.RevokeUser(ctx, real, "logout"); err != nil {
		t.Fatal(err)
	}
	var revoked []string
	revoke := func(_ context.Context, tok, _ string) error { revoked = append(revoked, tok); return nil }
	for round := 1; round <= 2 && !contains(revoked, "rt-real"); round++ {
		if _, err := s.drainOPRevocations(ctx, 50, revoke); err != nil {
			t.Fatal(err)
		}
	}
	if !contains(revoked, "rt-real") {
		t.Fatal("the real logout's family was not revoked at the OP within two rounds")
	}
	// The undecryptable families are retried with a back-off, then given up.
	gaveUp := 0
	for range 10 {
		clk.Add(opRevokeMaxBackoff)
		d, err := s.drainOPRevocations(ctx, 50, revoke)
		if err != nil {
			t.Fatal(err)
		}
		gaveUp += d.gaveUp
	}
	if gaveUp != 60 {
		t.Errorf("%d families given up, want 60", gaveUp)
	}
	var pending, reasons int
	if err := pool.QueryRow(ctx, `SELECT count(*) FILTER (WHERE op_revoked_at IS NULL),
		count(*) FILTER (WHERE op_revoke_error LIKE 'given up: stored tokens cannot be decrypted%')
		FROM auth_refresh_families WHERE revoked_at IS NOT NULL`).Scan(&pending, &reasons); err != nil {
		t.Fatal(err)
	}
	if pending != 0 || reasons != 60 {
		t.Errorf("%d families still queued, %d given up with their reason; want 0 and 60", pending, reasons)
	}
	if len(revoked) != 2 { // rt-real and at-real only
		t.Errorf("revoked at the OP: %v", revoked)
	}
}
