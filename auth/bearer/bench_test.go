package bearer_test

import (
	"context"
	"crypto"
	"crypto/rsa"
	"crypto/sha256"
	"encoding/base64"
	"strings"
	"testing"
	"time"

	"github.com/gatehouse/gatehouse/auth/bearer"
	"github.com/gatehouse/gatehouse/auth/bearer/bearertest"
)

// BenchmarkVerifyJWT measures one full check of an RS256 (2048-bit) access
// token with the key set cached: parse, key lookup, signature, claims.
func BenchmarkVerifyJWT(b *testing.B) {
	is := bearertest.NewIssuer(b)
	v, err := bearer.New(bearer.Config{Audience: aud, Issuers: []bearer.Issuer{{Issuer: is.URL}}})
	if err != nil {
		b.Fatal(err)
	}
	tok := is.Mint(is.Claims(time.Now(), "alice", aud, "sessions:read"), bearertest.Options{})
	ctx := context.Background()
	if _, err := v.Verify(ctx, tok); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if _, err := v.Verify(ctx, tok); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkRSAVerifyCeiling is the physical ceiling of BenchmarkVerifyJWT:
// the bare RS256 signature check of the same token with crypto/rsa.
func BenchmarkRSAVerifyCeiling(b *testing.B) {
	is := bearertest.NewIssuer(b)
	tok := is.Mint(is.Claims(time.Now(), "alice", aud, "sessions:read"), bearertest.Options{})
	i := strings.LastIndexByte(tok, '.')
	sig, err := base64.RawURLEncoding.DecodeString(tok[i+1:])
	if err != nil {
		b.Fatal(err)
	}
	sum := sha256.Sum256([]byte(tok[:i]))
	pub := &is.SigningKey().Private.PublicKey
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if err := rsa.VerifyPKCS1v15(pub, crypto.SHA256, sum[:], sig); err != nil {
				b.Fatal(err)
			}
		}
	})
}
