// Package jws holds the one allow-list of JWS signing algorithms that
// gatehouse accepts from a token issuer, shared by the configuration's
// validation (internal/config) and the bearer verifier (auth/bearer).
package jws

import "slices"

// safe are the asymmetric JWS algorithms. "none" and the HMAC family are
// never accepted, so a token "signed" with an issuer's public key as an
// HMAC secret cannot verify.
var safe = []string{"RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "ES512", "EdDSA"}

// Safe returns the algorithms an issuer may be configured with (a copy).
func Safe() []string { return slices.Clone(safe) }

// IsSafe reports whether alg is one of Safe.
func IsSafe(alg string) bool { return slices.Contains(safe, alg) }
