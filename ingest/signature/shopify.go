package signature

import (
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"net/http"
	"time"
)

const (
	shopifySigHeader = "X-Shopify-Hmac-Sha256"
	shopifyIDHeader  = "X-Shopify-Webhook-Id"
)

// shopifyVerifier implements Shopify's scheme:
// X-Shopify-Hmac-Sha256: base64(HMAC-SHA256(client secret, raw body)), and
// the event id in X-Shopify-Webhook-Id. There is no timestamp.
type shopifyVerifier struct {
	keys []key
}

func (v *shopifyVerifier) Verify(h http.Header, body []byte, _ time.Time) (Result, error) {
	sigText, err := header(h, shopifySigHeader)
	if err != nil {
		return Result{}, err
	}
	eventID, err := eventIDHeader(h, shopifyIDHeader)
	if err != nil {
		return Result{}, err
	}
	sig, err := parseBase64SHA256(sigText)
	if err != nil {
		return Result{}, malformed(shopifySigHeader, err.Error())
	}
	id, ok := match(v.keys, [][]byte{sig}, body)
	if !ok {
		return Result{}, badSignature()
	}
	return Result{SecretID: id, EventID: eventID}, nil
}

// parseBase64SHA256 decodes canonical standard base64 (with padding) of a
// 32-byte MAC.
func parseBase64SHA256(s string) ([]byte, error) {
	if len(s) != base64.StdEncoding.EncodedLen(sha256.Size) {
		return nil, errors.New("want base64 of 32 bytes")
	}
	b, err := base64.StdEncoding.Strict().DecodeString(s)
	if err != nil || len(b) != sha256.Size {
		return nil, errors.New("want base64 of 32 bytes")
	}
	return b, nil
}
