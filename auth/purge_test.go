package auth

import (
	"context"
	"errors"
	"testing"
	"time"
)

// TestEndedSessionsArePurgedAfterTheirRetention: a session that ended more
// than auth.session_retention ago is deleted with its tokens, its family
// and the family's refresh-token ledger, once its OP revocation is done;
// recently ended ones (here: expired by its 12 h lifetime) and ones whose
// OP revocation is still pending are kept.
func TestEndedSessionsArePurgedAfterTheirRetention(t *testing.T) {
	ctx := context.Background()
	pool := testPool(t)
	clk := &clock{t: time.Now()}
	a := testAuthConfig(t)
	a.SessionRetention = 24 * time.Hour
	s := newTestStore(t, pool, clk, a)
	alice := User{Issuer: "https://op.example/", Subject: "alice-purge"}
	_, gone := mustCreate(t, s, alice, "phone", tokenSet{AccessToken: "at-p", RefreshToken: "rt-p"})
	_, pending := mustCreate(t, s, alice, "tablet", tokenSet{AccessToken: "at-t", RefreshToken: "rt-t"})
	_, expired := mustCreate(t, s, alice, "laptop", tokenSet{AccessToken: "at-l", RefreshToken: "rt-l"})
	count := func(q string, args ...any) int {
		t.Helper()
		var n int
		if err := pool.QueryRow(ctx, q, args...).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	family := func(id string) string {
		var f string
		if err := pool.QueryRow(ctx, `SELECT family_id::text FROM auth_sessions WHERE id = $1`, id).Scan(&f); err != nil {
			t.Fatal(err)
		}
		return f
	}
	goneFam, pendingFam := family(gone.ID), family(pending.ID)

	if err := s.RevokeSession(ctx, alice, gone.ID, "logout"); err != nil {
		t.Fatal(err)
	}
	opDown := func(_ context.Context, tok, _ string) error { // the OP refuses the tablet's tokens
		if tok == "rt-t" || tok == "at-t" {
			return errors.New("op unavailable")
		}
		return nil
	}
	revoke := func(context.Context, string, string) error { return nil }
	if err := s.RevokeSession(ctx, alice, pending.ID, "logout"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.drainOPRevocations(ctx, 50, opDown); err != nil {
		t.Fatal(err)
	}

	// Within the retention nothing goes.
	clk.Add(23 * time.Hour)
	if err := s.cleanup(ctx); err != nil {
		t.Fatal(err)
	}
	if n := count(`SELECT count(*) FROM auth_sessions WHERE subject = 'alice-purge'`); n != 3 {
		t.Fatalf("sessions after 23 h: %d, want 3", n)
	}
	// Past it: the ended and revoked one goes with everything it owned; the
	// pending one stays, and so does the one that expired 2 h ago.
	if _, err := s.drainOPRevocations(ctx, 50, opDown); err != nil { // the expired one's
		t.Fatal(err)
	}
	clk.Add(2 * time.Hour)
	if err := s.cleanup(ctx); err != nil {
		t.Fatal(err)
	}
	if n := count(`SELECT count(*) FROM auth_sessions WHERE id = $1`, gone.ID); n != 0 {
		t.Errorf("ended session kept past its retention")
	}
	if n := count(`SELECT count(*) FROM auth_refresh_families WHERE id = $1::uuid`, goneFam); n != 0 {
		t.Errorf("its family kept past its retention")
	}
	if n := count(`SELECT count(*) FROM auth_refresh_tokens WHERE family_id = $1::uuid`, goneFam); n != 0 {
		t.Errorf("its refresh-token ledger kept: %d rows", n)
	}
	if n := count(`SELECT count(*) FROM auth_sessions WHERE id = $1`, pending.ID); n != 1 {
		t.Errorf("session whose OP revocation is pending was deleted")
	}
	if n := count(`SELECT count(*) FROM auth_tokens t JOIN auth_sessions s ON s.id = t.session_id WHERE s.id = $1`, pending.ID); n != 1 {
		t.Errorf("tokens still to revoke at the OP were deleted")
	}
	if n := count(`SELECT count(*) FROM auth_refresh_families WHERE id = $1::uuid`, pendingFam); n != 1 {
		t.Errorf("family whose OP revocation is pending was deleted")
	}
	if n := count(`SELECT count(*) FROM auth_sessions WHERE id = $1 AND revoke_reason = 'expired'`, expired.ID); n != 1 {
		t.Errorf("session that expired 2 h ago was not kept (or not revoked as expired)")
	}
	// Once the OP revocation is done and the retention has passed again,
	// the pending one goes too.
	if _, err := s.drainOPRevocations(ctx, 50, revoke); err != nil {
		t.Fatal(err)
	}
	clk.Add(25 * time.Hour)
	if err := s.cleanup(ctx); err != nil {
		t.Fatal(err)
	}
	if n := count(`SELECT count(*) FROM auth_refresh_families WHERE id = $1::uuid`, pendingFam); n != 0 {
		t.Errorf("family kept after its OP revocation and retention")
	}
}
