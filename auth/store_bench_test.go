package auth

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"
)

// BenchmarkSessionFromRequest measures the per-request session lookup (one
// indexed SELECT by SHA-256 of the cookie; the last-seen write is throttled).
func BenchmarkSessionFromRequest(b *testing.B) {
	clk := &clock{t: time.Now()}
	s := newTestStore(b, testPool(b), clk, testAuthConfig(b))
	cookie, _ := mustCreate(b, s, User{"https://op.example/", "bench"}, "d", tokenSet{AccessToken: "x"})
	req := httptest.NewRequest("GET", "/account", nil)
	req.AddCookie(&http.Cookie{Name: s.CookieName(), Value: cookie})
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if _, err := s.SessionFromRequest(req); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkFreshTokensNoRefresh measures reading a session's tokens under its
// row lock when no refresh is due (decrypt + lock + commit).
func BenchmarkFreshTokensNoRefresh(b *testing.B) {
	clk := &clock{t: time.Now()}
	s := newTestStore(b, testPool(b), clk, testAuthConfig(b))
	_, sess := mustCreate(b, s, User{"https://op.example/", "bench"}, "d",
		tokenSet{AccessToken: "x", RefreshToken: "r", Expiry: clk.Now().Add(time.Hour)})
	ctx := context.Background()
	b.ResetTimer()
	for b.Loop() {
		if _, err := s.freshTokens(ctx, sess.ID, time.Minute, false, nil); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkSafeNext(b *testing.B) {
	for b.Loop() {
		SafeNext("/account/sessions?tab=all%20of%20them", nil)
		SafeNext("/%2f%2fevil.com", nil)
	}
}
