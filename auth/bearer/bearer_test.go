package bearer_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gatehouse/gatehouse/auth/bearer"
	"github.com/gatehouse/gatehouse/auth/bearer/bearertest"
)

const aud = "https://gatehouse.test/api"

// clock is a settable test clock.
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

func newVerifier(t *testing.T, is *bearertest.Issuer, clk *clock, mod func(*bearer.Config)) *bearer.Verifier {
	t.Helper()
	cfg := bearer.Config{
		Issuers: []bearer.Issuer{{
			Issuer: is.URL, RolesClaim: "realm_access.roles",
			ScopeAliases: map[string][]string{"read:all": {"events:read", "objects:read"}},
		}},
		Audience:         aud,
		IDTokenAudiences: []string{"web"},
		Now:              clk.Now,
		JWKSMinRefetch:   10 * time.Second,
	}
	if mod != nil {
		mod(&cfg)
	}
	v, err := bearer.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func TestVerifyTable(t *testing.T) {
	is := bearertest.NewIssuer(t)
	now := time.Unix(1_800_000_000, 0)
	clk := &clock{t: now}
	strict := newVerifier(t, is, clk, nil)
	compat := newVerifier(t, is, clk, func(c *bearer.Config) { c.Compat = true })
	base := func() map[string]any { return is.Claims(now, "alice", aud, "sessions:read") }
	with := func(kv ...any) map[string]any {
		c := base()
		for i := 0; i < len(kv); i += 2 {
			if kv[i+1] == nil {
				delete(c, kv[i].(string))
			} else {
				c[kv[i].(string)] = kv[i+1]
			}
		}
		return c
	}
	stranger := bearertest.NewKey(t, "k1") // same kid, different key
	other := bearertest.NewKey(t, "nobody-knows")
	cases := []struct {
		name   string
		v      *bearer.Verifier
		token  string
		reject string // substring of the description; "" means accepted
	}{
		{"valid", strict, is.Mint(base(), bearertest.Options{}), ""},
		{"typ application/at+jwt", strict, is.Mint(base(), bearertest.Options{Typ: "application/at+jwt"}), ""},
		{"alg none", strict, bearertest.MintNone(base()), "algorithm not allowed"},
		{"HS256 with the RSA public key", strict, is.MintHS256WithPublicKey(base()), "algorithm not allowed"},
		{"unknown kid", strict, is.Mint(base(), bearertest.Options{Key: other}), "unknown kid"},
		{"right kid, wrong key", strict, is.Mint(base(), bearertest.Options{Key: stranger}), "signature verification failed"},
		{"no kid, one key", strict, is.Mint(base(), bearertest.Options{NoKID: true}), ""},
		{"expired long ago", strict, is.Mint(with("exp", now.Add(-time.Hour).Unix()), bearertest.Options{}), "expired"},
		{"exp at now-skew (boundary, refused)", strict, is.Mint(with("exp", now.Add(-60*time.Second).Unix()), bearertest.Options{}), "expired"},
		{"exp at now-skew+1s (accepted)", strict, is.Mint(with("exp", now.Add(-59*time.Second).Unix()), bearertest.Options{}), ""},
		{"nbf at now+skew (boundary, accepted)", strict, is.Mint(with("nbf", now.Add(60*time.Second).Unix()), bearertest.Options{}), ""},
		{"nbf at now+skew+1s (refused)", strict, is.Mint(with("nbf", now.Add(61*time.Second).Unix()), bearertest.Options{}), "not yet valid"},
		{"nbf far in the future", strict, is.Mint(with("nbf", now.Add(time.Hour).Unix()), bearertest.Options{}), "not yet valid"},
		{"iat beyond skew in the future", strict, is.Mint(with("iat", now.Add(2*time.Minute).Unix()), bearertest.Options{}), "issued in the future"},
		{"no exp", strict, is.Mint(with("exp", nil), bearertest.Options{}), "no exp"},
		{"no sub", strict, is.Mint(with("sub", nil), bearertest.Options{}), "no sub"},
		{"wrong iss", strict, is.Mint(with("iss", is.URL+"/other"), bearertest.Options{}), "untrusted issuer"},
		{"iss with trailing slash", strict, is.Mint(with("iss", is.URL+"/"), bearertest.Options{}), "untrusted issuer"},
		{"wrong aud", strict, is.Mint(with("aud", "https://other.test/api"), bearertest.Options{}), "wrong audience"},
		{"aud list containing ours", strict, is.Mint(with("aud", []string{"x", aud}), bearertest.Options{}), ""},
		{"typ JWT refused in strict mode", strict, is.Mint(base(), bearertest.Options{Typ: "JWT"}), "typ must be"},
		{"no typ refused in strict mode", strict, is.Mint(base(), bearertest.Options{Typ: "-"}), "typ must be"},
		{"ID token as access token (strict)", strict, is.Mint(with("aud", "web", "nonce", "n"), bearertest.Options{Typ: "JWT"}), "typ must be"},
		{"compat: no typ accepted", compat, is.Mint(base(), bearertest.Options{Typ: "-"}), ""},
		{"compat: ID token with aud = login client", compat, is.Mint(with("aud", []string{aud, "web"}), bearertest.Options{Typ: "JWT"}), "ID token"},
		{"compat: nonce present", compat, is.Mint(with("nonce", "abc"), bearertest.Options{Typ: "JWT"}), "ID token"},
		{"compat: at_hash present", compat, is.Mint(with("at_hash", "xyz"), bearertest.Options{Typ: "JWT"}), "ID token"},
		{"opaque token without introspection", strict, "opaque-token-value", "no introspection"},
		{"garbage with dots", strict, "a.b.c", "malformed"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p, err := tc.v.Verify(context.Background(), tc.token)
			if tc.reject == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				if p.Subject != "alice" || p.Issuer != is.URL || !p.HasScope("sessions:read") {
					t.Fatalf("principal = %+v", p)
				}
				return
			}
			var e *bearer.Error
			if !errors.As(err, &e) {
				t.Fatalf("accepted or untyped error: %v (principal %+v)", err, p)
			}
			if e.Status != http.StatusUnauthorized || e.Code != bearer.CodeInvalidToken || !strings.Contains(e.Description, tc.reject) {
				t.Fatalf("got %d %s %q, want 401 invalid_token containing %q", e.Status, e.Code, e.Description, tc.reject)
			}
		})
	}
}

func TestScopesRolesAndAliases(t *testing.T) {
	is := bearertest.NewIssuer(t)
	now := time.Now()
	v := newVerifier(t, is, &clock{t: now}, nil)
	c := is.Claims(now, "bob", aud, "")
	delete(c, "scope")
	c["scp"] = []string{"sessions:write", "read:all"}
	c["realm_access"] = map[string]any{"roles": []string{"gatehouse:operator", "x"}}
	p, err := v.Verify(context.Background(), is.Mint(c, bearertest.Options{}))
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"sessions:write", "read:all", "events:read", "objects:read"} {
		if !p.HasScope(s) {
			t.Errorf("scope %s missing from %v", s, p.Scopes)
		}
	}
	if p.HasScope("sessions:read") {
		t.Errorf("scope sessions:read granted without being asked: %v", p.Scopes)
	}
	if !p.HasRole("gatehouse:operator") || p.ClientID != "machine" {
		t.Errorf("roles %v client %q", p.Roles, p.ClientID)
	}
}

// TestKeyRotation: a key rotated at the issuer is picked up through a JWKS
// refetch on the unknown kid; refetches are rate-limited; the retired key
// stops verifying once the new set is fetched.
func TestKeyRotation(t *testing.T) {
	is := bearertest.NewIssuer(t)
	clk := &clock{t: time.Unix(1_800_000_000, 0)}
	v := newVerifier(t, is, clk, nil)
	ctx := context.Background()
	old := is.SigningKey()
	oldTok := is.Mint(is.Claims(clk.Now(), "alice", aud, ""), bearertest.Options{})
	if _, err := v.Verify(ctx, oldTok); err != nil {
		t.Fatal(err)
	}
	if n := is.Fetches(); n != 1 {
		t.Fatalf("fetches after first token = %d, want 1", n)
	}
	// Forged kids do not cause a fetch per token.
	forged := bearertest.NewKey(t, "forged")
	for range 20 {
		if _, err := v.Verify(ctx, is.Mint(is.Claims(clk.Now(), "alice", aud, ""), bearertest.Options{Key: forged})); err == nil {
			t.Fatal("forged kid accepted")
		}
	}
	if n := is.Fetches(); n != 1 {
		t.Fatalf("fetches within the rate-limit window = %d, want 1", n)
	}
	clk.Add(11 * time.Second)
	is.Rotate(bearertest.NewKey(t, "k2"))
	newTok := is.Mint(is.Claims(clk.Now(), "alice", aud, ""), bearertest.Options{})
	if _, err := v.Verify(ctx, newTok); err != nil {
		t.Fatalf("token of the rotated key refused: %v", err)
	}
	if n := is.Fetches(); n != 2 {
		t.Fatalf("fetches after rotation = %d, want 2", n)
	}
	if _, err := v.Verify(ctx, is.Mint(is.Claims(clk.Now(), "alice", aud, ""), bearertest.Options{Key: old})); err == nil {
		t.Fatal("token of the retired key still accepted")
	}
}

// Concurrent first tokens: the callers that waited for the one fetch in
// flight use the set it fetched instead of answering 503 (the rate limit
// refused their own fetch, but the keys are there).
func TestConcurrentFirstTokens(t *testing.T) {
	is := bearertest.NewIssuer(t)
	clk := &clock{t: time.Now()}
	v := newVerifier(t, is, clk, nil)
	tok := is.Mint(is.Claims(clk.Now(), "alice", aud, ""), bearertest.Options{})
	var wg sync.WaitGroup
	errs := make(chan error, 32)
	for range 32 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := v.Verify(context.Background(), tok); err != nil {
				errs <- err
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Errorf("concurrent first token refused: %v", err)
	}
	if n := is.Fetches(); n != 1 {
		t.Errorf("fetches = %d, want 1", n)
	}
}

func TestJWKSUnreachable(t *testing.T) {
	is := bearertest.NewIssuer(t)
	clk := &clock{t: time.Now()}
	v := newVerifier(t, is, clk, func(c *bearer.Config) { c.Issuers[0].JWKSURL = "http://127.0.0.1:1/jwks" })
	_, err := v.Verify(context.Background(), is.Mint(is.Claims(clk.Now(), "alice", aud, ""), bearertest.Options{}))
	var e *bearer.Error
	if !errors.As(err, &e) || e.Status != http.StatusServiceUnavailable {
		t.Fatalf("err = %v, want 503", err)
	}
}

func TestConfigRefusesUnsafeAlgorithms(t *testing.T) {
	for _, alg := range []string{"none", "HS256", "HS512", "rs256"} {
		_, err := bearer.New(bearer.Config{Audience: aud, Issuers: []bearer.Issuer{{Issuer: "https://idp.test", Algorithms: []string{alg}}}})
		if err == nil {
			t.Errorf("algorithm %q accepted", alg)
		}
	}
}

func TestIntrospection(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	answers := map[string]map[string]any{
		"good":      {"active": true, "sub": "alice", "scope": "sessions:read custom", "client_id": "cli", "exp": now.Add(time.Minute).Unix(), "aud": "rs-client"},
		"inactive":  {"active": false},
		"other-aud": {"active": true, "sub": "alice", "aud": []string{"someone-else"}, "exp": now.Add(time.Minute).Unix()},
		"expired":   {"active": true, "sub": "alice", "exp": now.Add(-2 * time.Minute).Unix()},
		"other-iss": {"active": true, "sub": "alice", "iss": "https://evil.test"},
	}
	var gotAuth bool
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id, secret, ok := r.BasicAuth()
		gotAuth = ok && id == "rs-client" && secret == "s%3Acret" // RFC 6749 §2.3.1 form-encoding of "s:cret"
		if !gotAuth {
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		_ = r.ParseForm()
		a, ok := answers[r.PostForm.Get("token")]
		if !ok {
			a = map[string]any{"active": false}
		}
		_ = json.NewEncoder(w).Encode(a)
	}))
	t.Cleanup(srv.Close)
	v, err := bearer.New(bearer.Config{
		Audience: aud, Now: func() time.Time { return now },
		Issuers: []bearer.Issuer{{Issuer: "https://idp.test/", Introspection: bearer.Introspection{
			URL: srv.URL, ClientID: "rs-client", ClientSecret: []byte("s:cret"),
		}, ScopeAliases: map[string][]string{"custom": {"objects:read"}}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	p, err := v.Verify(context.Background(), "good")
	if err != nil || !gotAuth {
		t.Fatalf("good token: %v (auth ok %v)", err, gotAuth)
	}
	if p.Subject != "alice" || p.Issuer != "https://idp.test/" || !p.HasScope("sessions:read") || !p.HasScope("objects:read") || p.Method != "introspection" {
		t.Fatalf("principal %+v", p)
	}
	for tok, want := range map[string]string{"inactive": "not active", "other-aud": "wrong audience", "expired": "expired", "other-iss": "untrusted issuer", "unknown": "not active"} {
		_, err := v.Verify(context.Background(), tok)
		var e *bearer.Error
		if !errors.As(err, &e) || e.Code != bearer.CodeInvalidToken || !strings.Contains(e.Description, want) {
			t.Errorf("%s: err = %v, want invalid_token %q", tok, err, want)
		}
	}
	srv.Close()
	_, err = v.Verify(context.Background(), "good")
	var e *bearer.Error
	if !errors.As(err, &e) || e.Status != http.StatusServiceUnavailable {
		t.Fatalf("endpoint down: err = %v, want 503", err)
	}
}

func TestTokenFromRequest(t *testing.T) {
	cases := []struct {
		name    string
		mod     func(r *http.Request)
		target  string
		body    string
		ctype   string
		token   string
		status  int // 0: accepted
		errCode string
	}{
		{name: "missing header", status: 401},
		{name: "wrong scheme", mod: func(r *http.Request) { r.Header.Set("Authorization", "Basic dXNlcjpwYXNz") }, status: 401},
		{name: "valid", mod: func(r *http.Request) { r.Header.Set("Authorization", "Bearer abc.def-ghi_~+/==") }, token: "abc.def-ghi_~+/=="},
		{name: "scheme is case-insensitive", mod: func(r *http.Request) { r.Header.Set("Authorization", "bearer abc") }, token: "abc"},
		{name: "empty token", mod: func(r *http.Request) { r.Header.Set("Authorization", "Bearer ") }, status: 400, errCode: "invalid_request"},
		{name: "no space", mod: func(r *http.Request) { r.Header.Set("Authorization", "Bearer") }, status: 400, errCode: "invalid_request"},
		{name: "two tokens in one header", mod: func(r *http.Request) { r.Header.Set("Authorization", "Bearer abc def") }, status: 400, errCode: "invalid_request"},
		{name: "two spaces", mod: func(r *http.Request) { r.Header.Set("Authorization", "Bearer  abc") }, status: 400, errCode: "invalid_request"},
		{name: "two Authorization headers", mod: func(r *http.Request) {
			r.Header.Add("Authorization", "Bearer abc")
			r.Header.Add("Authorization", "Bearer def")
		}, status: 400, errCode: "invalid_request"},
		{name: "token in query", target: "/x?access_token=abc", status: 400, errCode: "invalid_request"},
		{name: "token in query besides header", target: "/x?access_token=abc", mod: func(r *http.Request) { r.Header.Set("Authorization", "Bearer abc") }, status: 400, errCode: "invalid_request"},
		{name: "token in form body", body: "access_token=abc", ctype: "application/x-www-form-urlencoded", status: 400, errCode: "invalid_request"},
		{name: "form body without token", body: "a=b", ctype: "application/x-www-form-urlencoded", mod: func(r *http.Request) { r.Header.Set("Authorization", "Bearer abc") }, token: "abc"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			target := tc.target
			if target == "" {
				target = "/x"
			}
			r := httptest.NewRequest(http.MethodPost, target, strings.NewReader(tc.body))
			if tc.ctype != "" {
				r.Header.Set("Content-Type", tc.ctype)
			}
			if tc.mod != nil {
				tc.mod(r)
			}
			tok, err := bearer.TokenFromRequest(r)
			if tc.status == 0 {
				if err != nil || tok != tc.token {
					t.Fatalf("token %q err %v, want %q", tok, err, tc.token)
				}
				return
			}
			var e *bearer.Error
			if !errors.As(err, &e) || e.Status != tc.status || e.Code != tc.errCode {
				t.Fatalf("err = %#v, want %d %q", err, tc.status, tc.errCode)
			}
		})
	}
	// The form body is still readable after inspection.
	r := httptest.NewRequest(http.MethodPost, "/x", strings.NewReader("a=b"))
	r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	r.Header.Set("Authorization", "Bearer abc")
	if _, err := bearer.TokenFromRequest(r); err != nil {
		t.Fatal(err)
	}
	if err := r.ParseForm(); err != nil || r.PostForm.Get("a") != "b" {
		t.Fatalf("body not restored: %v %v", err, r.PostForm)
	}
}

func TestChallenge(t *testing.T) {
	w := httptest.NewRecorder()
	bearer.WriteError(w, bearer.ErrNoCredentials)
	if got := w.Header().Get("WWW-Authenticate"); got != `Bearer realm="gatehouse"` || w.Code != 401 {
		t.Fatalf("no credentials: %d %q", w.Code, got)
	}
	w = httptest.NewRecorder()
	bearer.WriteError(w, bearer.InsufficientScope("events:read"))
	want := `Bearer realm="gatehouse", error="insufficient_scope", error_description="the token lacks the scope events:read", scope="events:read"`
	if got := w.Header().Get("WWW-Authenticate"); got != want || w.Code != 403 {
		t.Fatalf("insufficient scope: %d %q", w.Code, got)
	}
	var body map[string]string
	if err := json.Unmarshal(w.Body.Bytes(), &body); err != nil || body["error"] != "insufficient_scope" || body["scope"] != "events:read" {
		t.Fatalf("body %s", w.Body)
	}
	// Quotes and backslashes never break out of the quoted string.
	got := bearer.Challenge(&bearer.Error{Status: 401, Code: "invalid_token", Description: `a"b\c` + "\n"})
	if got != `Bearer realm="gatehouse", error="invalid_token", error_description="abc"` {
		t.Fatalf("challenge %q", got)
	}
}
