package bearer

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
)

// accessClaims are the RFC 9068 claims gatehouse reads.
type accessClaims struct {
	Issuer    string           `json:"iss"`
	Subject   string           `json:"sub"`
	Audience  jwt.Audience     `json:"aud"`
	Expiry    *jwt.NumericDate `json:"exp"`
	NotBefore *jwt.NumericDate `json:"nbf"`
	IssuedAt  *jwt.NumericDate `json:"iat"`
	ClientID  string           `json:"client_id"`
	Azp       string           `json:"azp"`
	Scope     json.RawMessage  `json:"scope"`
	Scp       json.RawMessage  `json:"scp"`
	Nonce     *string          `json:"nonce"`
	AtHash    *string          `json:"at_hash"`
}

func (v *Verifier) allAlgorithms() []jose.SignatureAlgorithm {
	seen := map[string]bool{}
	var out []jose.SignatureAlgorithm
	for _, st := range v.order {
		for _, a := range st.cfg.Algorithms {
			if !seen[a] {
				seen[a] = true
				out = append(out, jose.SignatureAlgorithm(a))
			}
		}
	}
	return out
}

func (v *Verifier) verifyJWT(ctx context.Context, token string) (*Principal, error) {
	tok, err := jwt.ParseSigned(token, v.allAlgorithms())
	if err != nil {
		var algErr *jose.ErrUnexpectedSignatureAlgorithm
		if errors.As(err, &algErr) {
			return nil, invalidToken("signing algorithm not allowed")
		}
		return nil, invalidToken("malformed token")
	}
	if len(tok.Headers) != 1 {
		return nil, invalidToken("malformed token")
	}
	h := tok.Headers[0]
	// The issuer is read before the signature is checked only to pick the
	// issuer's key set; nothing else is trusted until the signature verifies.
	var unverified accessClaims
	if err := tok.UnsafeClaimsWithoutVerification(&unverified); err != nil {
		return nil, invalidToken("malformed claims")
	}
	st, ok := v.issuers[unverified.Issuer]
	if !ok {
		return nil, invalidToken("untrusted issuer")
	}
	if !st.algs[h.Algorithm] {
		return nil, invalidToken("signing algorithm not allowed for this issuer")
	}
	typ, _ := h.ExtraHeaders[jose.HeaderType].(string)
	isAT := strings.EqualFold(typ, "at+jwt") || strings.EqualFold(typ, "application/at+jwt")
	if !isAT && !v.cfg.Compat {
		return nil, invalidToken(`not an access token: typ must be "at+jwt"`)
	}
	key, err := st.keys.key(ctx, h.KeyID, h.Algorithm)
	if err != nil {
		var e *Error
		if errors.As(err, &e) {
			return nil, e
		}
		return nil, invalidToken("signing key not trusted (unknown kid)")
	}
	var c accessClaims
	var all map[string]any
	if err := tok.Claims(key.Key, &c, &all); err != nil {
		return nil, invalidToken("signature verification failed")
	}
	if c.Issuer != st.cfg.Issuer {
		return nil, invalidToken("untrusted issuer")
	}
	if c.Subject == "" {
		return nil, invalidToken("token has no sub")
	}
	if c.Nonce != nil || c.AtHash != nil || v.looksLikeIDTokenAudience(c.Audience) {
		return nil, invalidToken("an ID token is not an access token")
	}
	if !v.audienceOK(c.Audience, "") {
		return nil, invalidToken("wrong audience")
	}
	if err := v.checkTimes(timeOf(c.Expiry), timeOf(c.NotBefore), timeOf(c.IssuedAt)); err != nil {
		return nil, err
	}
	scopes := parseScopes(c.Scope)
	if len(scopes) == 0 {
		scopes = parseScopes(c.Scp)
	}
	client := c.ClientID
	if client == "" {
		client = c.Azp
	}
	return &Principal{
		Issuer: c.Issuer, Subject: c.Subject, ClientID: client,
		Scopes: st.mapScopes(scopes), Roles: stringsAt(all, st.cfg.RolesClaim),
		Audience: []string(c.Audience), Expiry: c.Expiry.Time(), Method: "jwt",
	}, nil
}

func timeOf(d *jwt.NumericDate) *time.Time {
	if d == nil {
		return nil
	}
	t := d.Time()
	return &t
}

// parseScopes reads a space-separated string (RFC 9068 scope) or an array
// of strings (the scp claim of Okta and Entra ID).
func parseScopes(raw json.RawMessage) []string {
	if len(raw) == 0 {
		return nil
	}
	var s string
	if err := json.Unmarshal(raw, &s); err == nil {
		return strings.Fields(s)
	}
	var list []string
	if err := json.Unmarshal(raw, &list); err == nil {
		var out []string
		for _, x := range list {
			out = append(out, strings.Fields(x)...)
		}
		return out
	}
	return nil
}

// stringsAt follows a dotted path through nested objects and returns the
// string or strings found there.
func stringsAt(doc map[string]any, path string) []string {
	var cur any = doc
	for _, part := range strings.Split(path, ".") {
		m, ok := cur.(map[string]any)
		if !ok {
			return nil
		}
		cur = m[part]
	}
	switch x := cur.(type) {
	case string:
		return strings.Fields(x)
	case []any:
		var out []string
		for _, e := range x {
			if s, ok := e.(string); ok {
				out = append(out, s)
			}
		}
		return out
	}
	return nil
}
