package signature

import (
	"encoding/hex"
	"errors"
	"net/http"
	"time"
)

// referenceVerifier implements SPEC.md's reference scheme:
// hex(HMAC-SHA256(secret, "<timestamp>.<raw body>")) in a configured
// signature header, Unix seconds in a configured timestamp header.
type referenceVerifier struct {
	keys      []key
	tol       time.Duration
	tsHeader  string
	sigHeader string
}

func (v *referenceVerifier) Verify(h http.Header, body []byte, now time.Time) (Result, error) {
	tsText, ts, err := timestampHeader(h, v.tsHeader)
	if err != nil {
		return Result{}, err
	}
	sigText, err := header(h, v.sigHeader)
	if err != nil {
		return Result{}, err
	}
	sig, err := parseHexSHA256(sigText)
	if err != nil {
		return Result{}, malformed(v.sigHeader, err.Error())
	}
	id, ok := match(v.keys, [][]byte{sig}, []byte(tsText), []byte("."), body)
	if !ok {
		return Result{}, badSignature()
	}
	t := time.Unix(ts, 0)
	if err := checkWindow(t, now, v.tol); err != nil {
		return Result{}, err
	}
	return Result{SecretID: id, Timestamp: t}, nil
}

// parseHexSHA256 decodes a 64-digit hex SHA-256 MAC (either case).
func parseHexSHA256(s string) ([]byte, error) {
	if len(s) != 2*32 {
		return nil, errors.New("want 64 hex digits")
	}
	b, err := hex.DecodeString(s)
	if err != nil {
		return nil, errors.New("not hex")
	}
	return b, nil
}
