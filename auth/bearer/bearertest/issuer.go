// Package bearertest is an in-test authorization server for bearer token
// tests: it serves discovery and a JWKS over real HTTP, rotates keys on
// demand, counts JWKS fetches, and mints tokens with go-jose — including the
// malformed and hostile ones the verifier must refuse.
package bearertest

import (
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
)

// Key is one RSA signing key with its kid.
type Key struct {
	ID      string
	Private *rsa.PrivateKey
}

// NewKey generates a 2048-bit RSA key.
func NewKey(t testing.TB, kid string) *Key {
	t.Helper()
	k, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatalf("bearertest: generate key: %v", err)
	}
	return &Key{ID: kid, Private: k}
}

// Issuer is a running in-test authorization server.
type Issuer struct {
	// URL is the issuer identifier (the server's base URL, no trailing slash).
	URL string

	t         testing.TB
	srv       *httptest.Server
	mu        sync.Mutex
	published []*Key
	signing   *Key
	fetches   atomic.Int64
}

// NewIssuer starts an issuer publishing one key ("k1"), stopped by t.Cleanup.
func NewIssuer(t testing.TB) *Issuer {
	t.Helper()
	is := &Issuer{t: t}
	k := NewKey(t, "k1")
	is.published, is.signing = []*Key{k}, k
	mux := http.NewServeMux()
	mux.HandleFunc("/.well-known/openid-configuration", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]string{"issuer": is.URL, "jwks_uri": is.URL + "/jwks"})
	})
	mux.HandleFunc("/jwks", func(w http.ResponseWriter, r *http.Request) {
		is.fetches.Add(1)
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(is.JWKS())
	})
	is.srv = httptest.NewServer(mux)
	is.URL = is.srv.URL
	t.Cleanup(is.srv.Close)
	return is
}

// JWKS is the currently published key set (public keys only).
func (is *Issuer) JWKS() jose.JSONWebKeySet {
	is.mu.Lock()
	defer is.mu.Unlock()
	var set jose.JSONWebKeySet
	for _, k := range is.published {
		set.Keys = append(set.Keys, jose.JSONWebKey{Key: &k.Private.PublicKey, KeyID: k.ID, Algorithm: "RS256", Use: "sig"})
	}
	return set
}

// Rotate publishes only the new key and signs with it from now on.
func (is *Issuer) Rotate(k *Key) {
	is.mu.Lock()
	defer is.mu.Unlock()
	is.published, is.signing = []*Key{k}, k
}

// SigningKey is the key Mint uses by default.
func (is *Issuer) SigningKey() *Key {
	is.mu.Lock()
	defer is.mu.Unlock()
	return is.signing
}

// Fetches counts JWKS requests served.
func (is *Issuer) Fetches() int64 { return is.fetches.Load() }

// Claims builds standard access-token claims for subject, audience and
// scope, valid for 5 minutes from now.
func (is *Issuer) Claims(now time.Time, sub, aud, scope string) map[string]any {
	return map[string]any{
		"iss": is.URL, "sub": sub, "aud": aud, "scope": scope, "client_id": "machine",
		"iat": now.Unix(), "exp": now.Add(5 * time.Minute).Unix(), "jti": fmt.Sprintf("jti-%d", now.UnixNano()),
	}
}

// Options change how a token is minted.
type Options struct {
	// Key signs the token (default: the issuer's signing key).
	Key *Key
	// Typ is the JOSE typ header (default "at+jwt"; "-" omits it).
	Typ string
	// NoKID omits the kid header.
	NoKID bool
}

// Mint signs claims as an RS256 JWT.
func (is *Issuer) Mint(claims map[string]any, o Options) string {
	is.t.Helper()
	k := o.Key
	if k == nil {
		k = is.SigningKey()
	}
	typ := o.Typ
	if typ == "" {
		typ = "at+jwt"
	}
	opts := (&jose.SignerOptions{}).WithHeader(jose.HeaderType, typ)
	if typ == "-" {
		opts = &jose.SignerOptions{}
	}
	jwk := jose.JSONWebKey{Key: k.Private, KeyID: k.ID, Algorithm: "RS256"}
	if o.NoKID {
		jwk.KeyID = ""
	}
	sig, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.RS256, Key: jwk}, opts)
	if err != nil {
		is.t.Fatalf("bearertest: signer: %v", err)
	}
	tok, err := jwt.Signed(sig).Claims(claims).Serialize()
	if err != nil {
		is.t.Fatalf("bearertest: sign: %v", err)
	}
	return tok
}

// MintNone builds an unsigned token with alg "none".
func MintNone(claims map[string]any) string {
	h, _ := json.Marshal(map[string]string{"alg": "none", "typ": "at+jwt"})
	p, _ := json.Marshal(claims)
	return b64(h) + "." + b64(p) + "."
}

// MintHS256WithPublicKey builds the classic key-confusion token: HS256 with
// the issuer's RSA public key (PKIX DER, as PEM-less bytes) as the secret.
func (is *Issuer) MintHS256WithPublicKey(claims map[string]any) string {
	is.t.Helper()
	k := is.SigningKey()
	der, err := x509.MarshalPKIXPublicKey(&k.Private.PublicKey)
	if err != nil {
		is.t.Fatalf("bearertest: marshal public key: %v", err)
	}
	sig, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.HS256, Key: der},
		(&jose.SignerOptions{}).WithHeader(jose.HeaderType, "at+jwt").WithHeader("kid", k.ID))
	if err != nil {
		is.t.Fatalf("bearertest: hmac signer: %v", err)
	}
	tok, err := jwt.Signed(sig).Claims(claims).Serialize()
	if err != nil {
		is.t.Fatalf("bearertest: sign: %v", err)
	}
	return tok
}

func b64(b []byte) string {
	return base64.RawURLEncoding.EncodeToString(b)
}
