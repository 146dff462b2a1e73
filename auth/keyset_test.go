package auth

import (
	"net/http"
	"net/url"
	"testing"
	"time"
)

// Finding 8 of issue 25: forged back-channel logout tokens (a key id the
// OP never published) made gatehouse fetch the OP's JWKS for every one of
// them (30 POSTs, 30 fetches on main); the bearer path already limited
// this. Now the set is fetched at most once per JWKSMinRefetch, and a key
// the OP rotates in is still picked up once the interval has passed.
func TestBackChannelLogoutJWKSFetchesAreRateLimited(t *testing.T) {
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
	fetches := func() int {
		op.mu.Lock()
		defer op.mu.Unlock()
		return op.jwksFetches
	}
	if st := send(op.logoutToken(nil)); st != http.StatusOK {
		t.Fatalf("genuine logout token: %d", st)
	}
	base := fetches()
	forged := newRSAKey(t)
	op.set(func(o *hostileOP) { o.sign, o.signKid = forged, "forged" })
	for i := range 30 {
		if st := send(op.logoutToken(nil)); st != http.StatusBadRequest {
			t.Fatalf("forged token %d: %d", i, st)
		}
	}
	if n := fetches() - base; n > 1 {
		t.Errorf("30 forged logout tokens made %d JWKS fetches, want at most 1", n)
	}
	// The OP rotates to a new key: the first token signed with it after
	// the interval verifies.
	rotated := newRSAKey(t)
	op.set(func(o *hostileOP) {
		o.published = append(o.published, jwk(rotated, "k2"))
		o.sign, o.signKid = rotated, "k2"
	})
	h.clk.Add(DefaultJWKSMinRefetch + time.Second)
	if st := send(op.logoutToken(nil)); st != http.StatusOK {
		t.Fatalf("token of the rotated key: %d", st)
	}
}
