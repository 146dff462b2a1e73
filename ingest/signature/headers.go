package signature

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"
)

// header returns the single, whitespace-trimmed value of name. Absent or
// blank → ErrMissingHeader; repeated → ErrMalformedHeader.
func header(h http.Header, name string) (string, error) {
	vals := h.Values(name)
	switch {
	case len(vals) == 0:
		return "", missing(name)
	case len(vals) > 1:
		return "", malformed(name, "repeated")
	}
	v := trim(vals[0])
	if v == "" {
		return "", missing(name)
	}
	return v, nil
}

func trim(s string) string { return strings.Trim(s, " \t") }

func missing(name string) error {
	return fmt.Errorf("signature: %w %s", ErrMissingHeader, name)
}

func malformed(name, why string) error {
	return fmt.Errorf("signature: %w %s: %s", ErrMalformedHeader, name, why)
}

func badSignature() error {
	return fmt.Errorf("signature: %w: no signature matches any active secret", ErrBadSignature)
}

// maxTimestampDigits keeps parsed timestamps well inside int64.
const maxTimestampDigits = 18

// parseTimestamp parses Unix seconds strictly: ASCII digits only, no sign,
// no leading zero (so the text round-trips through strconv.FormatInt, which
// matters because several schemes sign the text).
func parseTimestamp(s string) (int64, error) {
	if s == "" || len(s) > maxTimestampDigits {
		return 0, errors.New("not a Unix timestamp in seconds")
	}
	if s[0] == '0' && len(s) > 1 {
		return 0, errors.New("timestamp has a leading zero")
	}
	var n int64
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < '0' || c > '9' {
			return 0, errors.New("not a Unix timestamp in seconds")
		}
		n = n*10 + int64(c-'0')
	}
	return n, nil
}

// timestampHeader reads and parses the timestamp header name.
func timestampHeader(h http.Header, name string) (string, int64, error) {
	v, err := header(h, name)
	if err != nil {
		return "", 0, err
	}
	ts, err := parseTimestamp(v)
	if err != nil {
		return "", 0, malformed(name, err.Error())
	}
	return v, ts, nil
}

// checkWindow compares an authentic timestamp with now: exactly tol old or
// tol ahead passes, anything beyond fails.
func checkWindow(ts time.Time, now time.Time, tol time.Duration) error {
	age := now.Sub(ts)
	if age > tol {
		return fmt.Errorf("signature: %w: signed %s ago, tolerance %s", ErrStaleTimestamp, age.Round(time.Second), tol)
	}
	if -age > tol {
		return fmt.Errorf("signature: %w: signed %s ahead, tolerance %s", ErrFutureTimestamp, (-age).Round(time.Second), tol)
	}
	return nil
}

// maxEventIDLen bounds event ids taken from headers (they become database keys).
const maxEventIDLen = 255

// eventIDHeader reads an event id header: 1..255 visible ASCII characters.
func eventIDHeader(h http.Header, name string) (string, error) {
	v, err := header(h, name)
	if err != nil {
		return "", err
	}
	if !validEventID(v) {
		return "", malformed(name, "event id must be 1 to 255 visible ASCII characters")
	}
	return v, nil
}

func validEventID(s string) bool {
	if s == "" || len(s) > maxEventIDLen {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < 0x21 || s[i] > 0x7e {
			return false
		}
	}
	return true
}

// parseHexSHA256 decodes a 64-digit hex SHA-256 MAC (either case).
func parseHexSHA256(s string) ([]byte, error) {
	if len(s) != 2*sha256.Size {
		return nil, errors.New("want 64 hex digits")
	}
	b, err := hex.DecodeString(s)
	if err != nil {
		return nil, errors.New("not hex")
	}
	return b, nil
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
