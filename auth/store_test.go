package auth

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"golang.org/x/oauth2"

	"github.com/gatehouse/gatehouse/internal/testenv"
)

func TestMain(m *testing.M) { testenv.Main(m) }

// clock is a settable time source for lifetimes.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) Add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

func testKey(t testing.TB, id string) Key {
	k := make([]byte, 32)
	if _, err := rand.Read(k); err != nil {
		t.Fatal(err)
	}
	return Key{ID: id, Value: k}
}

func testAuthConfig(t testing.TB, keys ...Key) Settings {
	if len(keys) == 0 {
		keys = []Key{testKey(t, "k1")}
	}
	return Settings{
		CookieName:         "__Host-gatehouse-session",
		SessionIdleTimeout: 30 * time.Minute,
		SessionLifetime:    12 * time.Hour,
		EncryptionKeys:     keys,
	}
}

func testPool(t testing.TB) *pgxpool.Pool {
	pool, err := pgxpool.New(context.Background(), testenv.Postgres(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	return pool
}

func quietLogger() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

func newTestStore(t testing.TB, pool *pgxpool.Pool, clk *clock, a Settings) *Store {
	s, err := NewStore(StoreConfig{Pool: pool, Auth: a, Logger: quietLogger(), Now: clk.Now})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func mustCreate(t testing.TB, s *Store, u User, device string, ts tokenSet) (string, *Session) {
	t.Helper()
	cookie, sess, err := s.createSession(context.Background(), newSession{User: u, Email: "a@example.com", Device: device, Tokens: ts, OPSID: "op-" + device})
	if err != nil {
		t.Fatal(err)
	}
	return cookie, sess
}

func TestStoreSessionsLifecycle(t *testing.T) {
	ctx := context.Background()
	clk := &clock{t: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	s := newTestStore(t, testPool(t), clk, testAuthConfig(t))
	alice := User{Issuer: "https://op.example/", Subject: "alice"}
	bob := User{Issuer: "https://op.example/", Subject: "bob"}

	c1, s1 := mustCreate(t, s, alice, "laptop", tokenSet{AccessToken: "at1"})
	c2, s2 := mustCreate(t, s, alice, "phone", tokenSet{AccessToken: "at2"})
	cb, _ := mustCreate(t, s, bob, "desk", tokenSet{AccessToken: "at3"})
	if len(c1) < 43 || c1 == c2 || s1.ID == s2.ID {
		t.Fatalf("session ids not fresh/long: %q %q", c1, c2)
	}

	req := httptest.NewRequest("GET", "/account", nil)
	req.AddCookie(&http.Cookie{Name: s.CookieName(), Value: c1})
	got, err := s.SessionFromRequest(req)
	if err != nil || got.ID != s1.ID || got.User != alice || got.Device != "laptop" {
		t.Fatalf("SessionFromRequest = %+v, %v", got, err)
	}
	if _, err := s.SessionFromRequest(httptest.NewRequest("GET", "/", nil)); !errors.Is(err, ErrNoSession) {
		t.Fatalf("no cookie: err %v", err)
	}
	if _, err := s.Lookup(ctx, c1+"x"); !errors.Is(err, ErrNoSession) {
		t.Fatalf("wrong cookie: err %v", err)
	}

	list, err := s.ListSessions(ctx, alice)
	if err != nil || len(list) != 2 {
		t.Fatalf("ListSessions = %v, %v", list, err)
	}
	// Bob cannot revoke Alice's session; malformed ids are not found either.
	if err := s.RevokeSession(ctx, bob, s1.ID, "test"); !errors.Is(err, ErrSessionNotFound) {
		t.Fatalf("cross-user revoke: %v", err)
	}
	if err := s.RevokeSession(ctx, alice, "not-a-uuid", "test"); !errors.Is(err, ErrSessionNotFound) {
		t.Fatalf("bad id: %v", err)
	}
	if err := s.RevokeSession(ctx, alice, s2.ID, "test"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Lookup(ctx, c2); !errors.Is(err, ErrNoSession) {
		t.Fatalf("revoked session still resolves: %v", err)
	}
	if err := s.RevokeSession(ctx, alice, s2.ID, "test"); !errors.Is(err, ErrSessionNotFound) {
		t.Fatalf("second revoke: %v", err)
	}

	// Idle timeout: activity keeps the session alive, inactivity ends it.
	clk.Add(20 * time.Minute)
	if _, err := s.Lookup(ctx, c1); err != nil {
		t.Fatalf("active session after 20m: %v", err)
	}
	clk.Add(20 * time.Minute)
	if _, err := s.Lookup(ctx, c1); err != nil {
		t.Fatalf("session used 20m ago: %v", err)
	}
	clk.Add(31 * time.Minute)
	if _, err := s.Lookup(ctx, c1); !errors.Is(err, ErrNoSession) {
		t.Fatalf("idle session still valid: %v", err)
	}
	// Absolute lifetime: even a constantly used session ends.
	c3, _ := mustCreate(t, s, bob, "tablet", tokenSet{AccessToken: "at4"})
	for i := 0; i < 12*4; i++ {
		clk.Add(15 * time.Minute)
		_, err := s.Lookup(ctx, c3)
		if i < 12*4-1 && err != nil {
			t.Fatalf("used session ended early after %d quarter hours: %v", i+1, err)
		}
		if i == 12*4-1 && !errors.Is(err, ErrNoSession) {
			t.Fatalf("session past absolute lifetime: %v", err)
		}
	}

	// RevokeUser ends every session of the user (bob's "desk" expired by idleness already).
	c4, _ := mustCreate(t, s, bob, "tv", tokenSet{AccessToken: "at5"})
	n, err := s.RevokeUser(ctx, bob, "password reset")
	if err != nil || n < 1 {
		t.Fatalf("RevokeUser = %d, %v", n, err)
	}
	for _, c := range []string{cb, c4} {
		if _, err := s.Lookup(ctx, c); !errors.Is(err, ErrNoSession) {
			t.Fatalf("session survives RevokeUser: %v", err)
		}
	}
}

func TestStoreTokensEncryptedAndRekey(t *testing.T) {
	ctx := context.Background()
	pool := testPool(t)
	clk := &clock{t: time.Now()}
	old := testKey(t, "old")
	s := newTestStore(t, pool, clk, testAuthConfig(t, old))
	_, sess := mustCreate(t, s, User{"iss", "sub"}, "d", tokenSet{AccessToken: "secret-access", RefreshToken: "secret-refresh", IDToken: "secret-id", Expiry: clk.Now().Add(time.Hour)})

	var raw []byte
	if err := pool.QueryRow(ctx, `SELECT ciphertext FROM auth_tokens WHERE session_id = $1`, sess.ID).Scan(&raw); err != nil {
		t.Fatal(err)
	}
	for _, secret := range []string{"secret-access", "secret-refresh", "secret-id"} {
		if containsBytes(raw, secret) {
			t.Fatalf("ciphertext contains %q in clear", secret)
		}
	}
	// Rotation: new primary key, old one kept for decryption, then rekey.
	newKey := testKey(t, "new")
	s2 := newTestStore(t, pool, clk, testAuthConfig(t, newKey, old))
	n, err := s2.Rekey(ctx)
	if err != nil || n != 2 { // tokens row + current refresh token in the ledger
		t.Fatalf("Rekey = %d, %v", n, err)
	}
	var keyID string
	if err := pool.QueryRow(ctx, `SELECT key_id FROM auth_tokens WHERE session_id = $1`, sess.ID).Scan(&keyID); err != nil || keyID != "new" {
		t.Fatalf("key id after rekey = %q, %v", keyID, err)
	}
	s3 := newTestStore(t, pool, clk, testAuthConfig(t, newKey)) // old key removed
	if id, err := s3.idToken(ctx, sess.ID); err != nil || id != "secret-id" {
		t.Fatalf("decrypt after rekey: %q, %v", id, err)
	}
	// A store without the key cannot read the tokens.
	s4 := newTestStore(t, pool, clk, testAuthConfig(t, testKey(t, "other")))
	if _, err := s4.idToken(ctx, sess.ID); !errors.Is(err, ErrUnknownKey) {
		t.Fatalf("unknown key: %v", err)
	}
}

func containsBytes(b []byte, s string) bool { return len(s) > 0 && indexOf(b, []byte(s)) >= 0 }

func indexOf(b, sub []byte) int {
	for i := 0; i+len(sub) <= len(b); i++ {
		if string(b[i:i+len(sub)]) == string(sub) {
			return i
		}
	}
	return -1
}

// fakeRefresher is a refresh grant that rotates tokens and counts presentations.
type fakeRefresher struct {
	mu        sync.Mutex
	seen      map[string]int
	n         atomic.Int64
	refuse    bool
	clk       *clock
	delay     time.Duration
	lastIssue string
}

func (f *fakeRefresher) refresh(ctx context.Context, rt string) (*oauth2.Token, error) {
	time.Sleep(f.delay)
	f.mu.Lock()
	defer f.mu.Unlock()
	f.seen[rt]++
	if f.refuse {
		return nil, &oauth2.RetrieveError{Response: &http.Response{StatusCode: 400}, ErrorCode: "invalid_grant"}
	}
	n := f.n.Add(1)
	f.lastIssue = fmt.Sprintf("rt-%d", n)
	return (&oauth2.Token{AccessToken: fmt.Sprintf("at-%d", n), RefreshToken: f.lastIssue, Expiry: f.clk.Now().Add(5 * time.Minute)}), nil
}

func TestStoreRefreshLockRotationAndReuse(t *testing.T) {
	ctx := context.Background()
	pool := testPool(t)
	clk := &clock{t: time.Now()}
	s := newTestStore(t, pool, clk, testAuthConfig(t))
	u := User{"iss", "sub"}
	cookie, sess := mustCreate(t, s, u, "d", tokenSet{AccessToken: "at-0", RefreshToken: "rt-0", Expiry: clk.Now().Add(30 * time.Second)})
	f := &fakeRefresher{seen: map[string]int{}, clk: clk, delay: 20 * time.Millisecond}

	// Concurrent callers: exactly one refresh; nobody presents a token twice.
	var wg sync.WaitGroup
	results := make([]tokenSet, 8)
	errs := make([]error, 8)
	for i := range results {
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[i], errs[i] = s.freshTokens(ctx, sess.ID, time.Minute, false, f.refresh)
		}()
	}
	wg.Wait()
	for i := range results {
		if errs[i] != nil || results[i].AccessToken != "at-1" || results[i].RefreshToken != "rt-1" {
			t.Fatalf("caller %d: %+v, %v", i, results[i], errs[i])
		}
	}
	if f.n.Load() != 1 || f.seen["rt-0"] != 1 {
		t.Fatalf("refreshes = %d, presentations %v; want one", f.n.Load(), f.seen)
	}
	// Still fresh: no refresh.
	if ts, err := s.freshTokens(ctx, sess.ID, time.Minute, false, f.refresh); err != nil || ts.AccessToken != "at-1" || f.n.Load() != 1 {
		t.Fatalf("fresh tokens refreshed again: %+v %v", ts, err)
	}
	// Snapshot the stored (encrypted) tokens, rotate once more, then write the
	// stale copy back: its refresh token was already rotated -> reuse.
	var staleKey string
	var stale []byte
	if err := pool.QueryRow(ctx, `SELECT key_id, ciphertext FROM auth_tokens WHERE session_id = $1`, sess.ID).Scan(&staleKey, &stale); err != nil {
		t.Fatal(err)
	}
	if _, err := s.freshTokens(ctx, sess.ID, time.Minute, true, f.refresh); err != nil {
		t.Fatal(err)
	}
	if _, err := pool.Exec(ctx, `UPDATE auth_tokens SET key_id = $2, ciphertext = $3 WHERE session_id = $1`, sess.ID, staleKey, stale); err != nil {
		t.Fatal(err)
	}
	before := f.n.Load()
	if _, err := s.freshTokens(ctx, sess.ID, time.Minute, true, f.refresh); !errors.Is(err, ErrRefreshTokenReuse) {
		t.Fatalf("stale refresh token: err %v, want ErrRefreshTokenReuse", err)
	}
	if f.n.Load() != before || f.seen["rt-1"] != 1 {
		t.Fatalf("rotated token was presented again: %v", f.seen)
	}
	if _, err := s.Lookup(ctx, cookie); !errors.Is(err, ErrNoSession) {
		t.Fatalf("session survives reuse: %v", err)
	}
	// The revocation loop revokes the family's current refresh token at the OP
	// (rt-2, the one the stale copy had lost) and deletes the ciphertexts.
	var revoked []string
	n, err := s.drainOPRevocations(ctx, 10, func(_ context.Context, tok, hint string) error {
		revoked = append(revoked, hint+":"+tok)
		return nil
	})
	if err != nil || n.done != 1 {
		t.Fatalf("drain = %+v, %v", n, err)
	}
	if !contains(revoked, "refresh_token:rt-2") || !contains(revoked, "refresh_token:rt-1") {
		t.Fatalf("revoked at OP: %v", revoked)
	}
	var left int
	_ = pool.QueryRow(ctx, `SELECT count(*) FROM auth_tokens WHERE session_id = $1`, sess.ID).Scan(&left)
	if left != 0 {
		t.Fatal("tokens of a revoked family still stored")
	}

	// invalid_grant ends the session.
	cookie2, sess2 := mustCreate(t, s, u, "d2", tokenSet{AccessToken: "x", RefreshToken: "rt-x", Expiry: clk.Now().Add(-time.Second)})
	f.refuse = true
	if _, err := s.freshTokens(ctx, sess2.ID, time.Minute, false, f.refresh); !errors.Is(err, ErrSessionEnded) {
		t.Fatalf("invalid_grant: err %v", err)
	}
	if _, err := s.Lookup(ctx, cookie2); !errors.Is(err, ErrNoSession) {
		t.Fatalf("session survives invalid_grant: %v", err)
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
