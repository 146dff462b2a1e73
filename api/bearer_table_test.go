package api_test

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/gatehouse/gatehouse/auth/bearer"
	"github.com/gatehouse/gatehouse/auth/bearer/bearertest"
)

// TestBearerTable is the table: every row is one request against the
// real API (real PostgreSQL, real HTTP JWKS), reading one of alice's objects.
func TestBearerTable(t *testing.T) {
	f := newFixture(t, fixtureOpts{})
	const path = "/api/v1/objects/acme/pay_1"
	now := f.now
	claims := func(kv ...any) map[string]any {
		c := f.is.Claims(now, "alice", audience, "objects:read")
		for i := 0; i+1 < len(kv); i += 2 {
			c[kv[i].(string)] = kv[i+1]
		}
		return c
	}
	mint := func(kv ...any) string { return f.is.Mint(claims(kv...), bearertest.Options{}) }
	valid := mint()
	bare := `Bearer realm="gatehouse"`
	invalid := func(desc string) string {
		return `Bearer realm="gatehouse", error="invalid_token", error_description="` + desc + `"`
	}
	cases := []struct {
		name      string
		method    string
		path      string
		body      string
		hdr       []string
		status    int
		errCode   string // JSON body's error
		challenge string // exact WWW-Authenticate, or "" to skip; prefix match when ending in "*"
	}{
		{name: "missing header", status: 401, errCode: "unauthorized", challenge: bare},
		{name: "wrong scheme", hdr: []string{"Authorization", "Basic YWxpY2U6cHc="}, status: 401, errCode: "unauthorized", challenge: bare},
		{name: "two tokens in two headers", hdr: []string{"Authorization", "Bearer " + valid, "Authorization", "Bearer " + valid}, status: 400, errCode: "invalid_request",
			challenge: `Bearer realm="gatehouse", error="invalid_request", error_description="more than one Authorization header"`},
		{name: "two tokens in one header", hdr: []string{"Authorization", "Bearer " + valid + " " + valid}, status: 400, errCode: "invalid_request"},
		{name: "token in the query", path: path + "?access_token=" + valid, status: 400, errCode: "invalid_request"},
		{name: "token in the query besides the header", path: path + "?access_token=" + valid, hdr: []string{"Authorization", "Bearer " + valid}, status: 400, errCode: "invalid_request"},
		{name: "token in a form body", method: http.MethodPost, path: "/api/v1/events/acme/evt_1/replay", body: "access_token=" + valid,
			hdr: []string{"Content-Type", "application/x-www-form-urlencoded"}, status: 400, errCode: "invalid_request"},
		{name: "alg none", hdr: []string{"Authorization", "Bearer " + bearertest.MintNone(claims())}, status: 401, errCode: "invalid_token", challenge: invalid("signing algorithm not allowed")},
		{name: "HS256 signed with the RSA public key", hdr: []string{"Authorization", "Bearer " + f.is.MintHS256WithPublicKey(claims())}, status: 401, errCode: "invalid_token", challenge: invalid("signing algorithm not allowed")},
		{name: "unknown kid", hdr: []string{"Authorization", "Bearer " + f.is.Mint(claims(), bearertest.Options{Key: bearertest.NewKey(t, "unknown")})}, status: 401, errCode: "invalid_token", challenge: invalid("signing key not trusted (unknown kid)")},
		{name: "expired", hdr: []string{"Authorization", "Bearer " + mint("exp", now.Add(-time.Hour).Unix())}, status: 401, errCode: "invalid_token", challenge: invalid("token expired")},
		{name: "nbf in the future", hdr: []string{"Authorization", "Bearer " + mint("nbf", now.Add(time.Hour).Unix())}, status: 401, errCode: "invalid_token", challenge: invalid("token not yet valid (nbf)")},
		{name: "skew: exp = now-60s refused", hdr: []string{"Authorization", "Bearer " + mint("exp", now.Add(-60*time.Second).Unix())}, status: 401, errCode: "invalid_token"},
		{name: "skew: exp = now-59s accepted", hdr: []string{"Authorization", "Bearer " + mint("exp", now.Add(-59*time.Second).Unix())}, status: 200},
		{name: "skew: nbf = now+60s accepted", hdr: []string{"Authorization", "Bearer " + mint("nbf", now.Add(60*time.Second).Unix())}, status: 200},
		{name: "skew: nbf = now+61s refused", hdr: []string{"Authorization", "Bearer " + mint("nbf", now.Add(61*time.Second).Unix())}, status: 401, errCode: "invalid_token"},
		{name: "wrong iss", hdr: []string{"Authorization", "Bearer " + mint("iss", "https://evil.test")}, status: 401, errCode: "invalid_token", challenge: invalid("untrusted issuer")},
		{name: "wrong aud", hdr: []string{"Authorization", "Bearer " + mint("aud", "https://other.test/api")}, status: 401, errCode: "invalid_token", challenge: invalid("wrong audience")},
		{name: "ID token as access token", hdr: []string{"Authorization", "Bearer " + f.is.Mint(claims("aud", "web", "nonce", "n-1", "at_hash", "x"), bearertest.Options{Typ: "JWT"})},
			status: 401, errCode: "invalid_token", challenge: invalid(`not an access token: typ must be at+jwt`)},
		{name: "valid token without the scope", hdr: []string{"Authorization", "Bearer " + f.token("alice", "sessions:read events:read")}, status: 403, errCode: "insufficient_scope",
			challenge: `Bearer realm="gatehouse", error="insufficient_scope", error_description="the token lacks the scope objects:read", scope="objects:read"`},
		{name: "valid token for another owner's object", path: "/api/v1/objects/acme/pay_2", hdr: []string{"Authorization", "Bearer " + valid}, status: 404, errCode: "not_found"},
		{name: "valid", hdr: []string{"Authorization", "Bearer " + valid}, status: 200},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			method, p := tc.method, tc.path
			if method == "" {
				method = http.MethodGet
			}
			if p == "" {
				p = path
			}
			a := f.do(method, p, strings.NewReader(tc.body), tc.hdr...)
			if a.status != tc.status {
				t.Fatalf("status %d, want %d; body %s; challenge %q", a.status, tc.status, a.raw, a.challenge)
			}
			if tc.errCode != "" && a.body["error"] != tc.errCode {
				t.Fatalf("error %v, want %s (%s)", a.body["error"], tc.errCode, a.raw)
			}
			if tc.status == 401 && !strings.HasPrefix(a.challenge, bare) {
				t.Fatalf("401 without challenge: %q", a.challenge)
			}
			if tc.challenge != "" && a.challenge != tc.challenge {
				t.Fatalf("challenge %q\nwant      %q", a.challenge, tc.challenge)
			}
			if tc.status == 200 && (a.body["object_id"] != "pay_1" || a.body["provider"] != "acme") {
				t.Fatalf("body %s", a.raw)
			}
		})
	}
	// No token ever reaches the logs.
	if strings.Contains(f.logs.String(), valid) || strings.Contains(f.logs.String(), "eyJ") {
		t.Fatalf("a token was logged:\n%s", f.logs)
	}
}

// TestKeyRotatedAtIssuer: the issuer rotates its key; a token signed with
// the new kid is accepted after one JWKS refetch, the retired key's tokens
// stop working, and forged kids do not trigger a fetch each.
func TestKeyRotatedAtIssuer(t *testing.T) {
	f := newFixture(t, fixtureOpts{verifier: func(c *bearer.Config) { c.JWKSMinRefetch, c.Now = time.Nanosecond, time.Now }})
	const path = "/api/v1/objects/acme/pay_1"
	oldTok := f.token("alice", "objects:read")
	if a := f.bearerGet(path, oldTok); a.status != 200 {
		t.Fatalf("before rotation: %d %s", a.status, a.raw)
	}
	f.is.Rotate(bearertest.NewKey(t, "k2"))
	before := f.is.Fetches()
	if a := f.bearerGet(path, f.token("alice", "objects:read")); a.status != 200 {
		t.Fatalf("new key: %d %s", a.status, a.raw)
	}
	if f.is.Fetches() != before+1 {
		t.Fatalf("JWKS fetches %d → %d, want one refetch", before, f.is.Fetches())
	}
	if a := f.bearerGet(path, oldTok); a.status != 401 || a.body["error"] != "invalid_token" {
		t.Fatalf("retired key: %d %s", a.status, a.raw)
	}
}

// TestJWKSRefetchRateLimited: with the default 30 s minimum, a burst of
// forged kids costs at most one extra JWKS fetch.
func TestJWKSRefetchRateLimited(t *testing.T) {
	f := newFixture(t, fixtureOpts{})
	const path = "/api/v1/objects/acme/pay_1"
	if a := f.bearerGet(path, f.token("alice", "objects:read")); a.status != 200 {
		t.Fatalf("%d %s", a.status, a.raw)
	}
	start := f.is.Fetches()
	forged := bearertest.NewKey(t, "forged")
	for i := range 25 {
		tok := f.is.Mint(f.is.Claims(f.now, "alice", audience, "objects:read"), bearertest.Options{Key: forged})
		if a := f.bearerGet(path, tok); a.status != 401 {
			t.Fatalf("forged %d: %d", i, a.status)
		}
	}
	if got := f.is.Fetches() - start; got > 1 {
		t.Fatalf("%d JWKS fetches for 25 forged kids, want at most 1", got)
	}
}
