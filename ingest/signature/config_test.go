package signature_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/gatehouse/gatehouse/ingest/signature"
)

func TestNewRejectsBadConfig(t *testing.T) {
	const secretText = "TOP-SECRET-VALUE-xyz"
	sec := []signature.Secret{{ID: "a", Value: []byte(secretText)}}
	tests := []struct {
		name string
		cfg  signature.Config
		want string // substring of the error
	}{
		{"no scheme", signature.Config{Secrets: sec}, "scheme is required"},
		{"unknown scheme", signature.Config{Scheme: "paypal", Secrets: sec}, `unknown scheme "paypal"`},
		{"scheme is case-sensitive", signature.Config{Scheme: "Stripe", Secrets: sec}, "unknown scheme"},
		{"no secrets", signature.Config{Scheme: "stripe"}, "at least one secret"},
		{"empty secret value", signature.Config{Scheme: "github", Secrets: []signature.Secret{{ID: "a"}}}, "empty secret"},
		{"duplicate ids", signature.Config{Scheme: "github", Secrets: []signature.Secret{{ID: "a", Value: []byte("x")}, {ID: "a", Value: []byte("y")}}}, "duplicate secret id"},
		{"negative tolerance", signature.Config{Scheme: "slack", Secrets: sec, Tolerance: -time.Second}, "negative tolerance"},
		{"reference without headers", signature.Config{Scheme: "reference", Secrets: sec}, "requires TimestampHeader and SignatureHeader"},
		{"reference without signature header", signature.Config{Scheme: "reference", Secrets: sec, TimestampHeader: "X-Ts"}, "requires"},
		{"reference bad header name", signature.Config{Scheme: "reference", Secrets: sec, TimestampHeader: "X Ts", SignatureHeader: "X-Sig"}, "not a valid header name"},
		{"reference same header", signature.Config{Scheme: "reference", Secrets: sec, TimestampHeader: "x-sig", SignatureHeader: "X-Sig"}, "must differ"},
		{"header names on another scheme", signature.Config{Scheme: "stripe", Secrets: sec, SignatureHeader: "X-Sig"}, "only used by the reference scheme"},
		{"standard-webhooks bad base64", signature.Config{Scheme: "standard-webhooks", Secrets: []signature.Secret{{ID: "a", Value: []byte("whsec_" + secretText + "!")}}}, "base64"},
		{"standard-webhooks empty key", signature.Config{Scheme: "standard-webhooks", Secrets: []signature.Secret{{ID: "a", Value: []byte("whsec_")}}}, "empty key"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v, err := signature.New(tt.cfg)
			if err == nil {
				t.Fatalf("New accepted %+v (%T)", tt.cfg, v)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %q does not mention %q", err, tt.want)
			}
			if strings.Contains(err.Error(), secretText) {
				t.Errorf("error %q contains the secret", err)
			}
			if signature.Reason(err) != "unknown" {
				t.Errorf("config error classified as %q", signature.Reason(err))
			}
		})
	}
}

func TestNewAcceptsAllSchemes(t *testing.T) {
	for _, s := range schemes() {
		if _, err := signature.New(s.config(s.both()...)); err != nil {
			t.Errorf("%s: %v", s.name, err)
		}
	}
}

func TestDefaultIDs(t *testing.T) {
	cfg := signature.Config{Scheme: "github", Secrets: []signature.Secret{{Value: []byte("one")}, {Value: []byte("two")}}}
	h, err := signature.Sign(cfg, []byte("two"), []byte(body), now, "d")
	if err != nil {
		t.Fatal(err)
	}
	res, err := verifyOne(t, cfg, h, body)
	if err != nil || res.SecretID != "1" {
		t.Fatalf("%+v %v", res, err)
	}
}

func TestSignRejects(t *testing.T) {
	tests := []struct {
		name    string
		cfg     signature.Config
		secret  string
		eventID string
		at      time.Time
	}{
		{"unknown scheme", signature.Config{Scheme: "nope"}, "s", "", now},
		{"empty secret", signature.Config{Scheme: "stripe"}, "", "", now},
		{"github without event id", signature.Config{Scheme: "github"}, "s", "", now},
		{"github empty hook part", signature.Config{Scheme: "github"}, "s", ":guid", now},
		{"shopify without event id", signature.Config{Scheme: "shopify"}, "s", "", now},
		{"standard-webhooks without event id", signature.Config{Scheme: "standard-webhooks"}, "whsec_c2VjcmV0", "", now},
		{"standard-webhooks event id with space", signature.Config{Scheme: "standard-webhooks"}, "whsec_c2VjcmV0", "a b", now},
		{"standard-webhooks bad secret", signature.Config{Scheme: "standard-webhooks"}, "whsec_%%%", "id", now},
		{"reference without headers", signature.Config{Scheme: "reference"}, "s", "", now},
		{"before the epoch", signature.Config{Scheme: "slack"}, "s", "", time.Unix(-5, 0)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if h, err := signature.Sign(tt.cfg, []byte(tt.secret), []byte(body), tt.at, tt.eventID); err == nil {
				t.Fatalf("Sign succeeded: %v", h)
			}
		})
	}
}

func TestReason(t *testing.T) {
	tests := []struct {
		err  error
		want string
	}{
		{signature.ErrMissingHeader, "missing_header"},
		{signature.ErrMalformedHeader, "malformed_header"},
		{signature.ErrStaleTimestamp, "stale_timestamp"},
		{signature.ErrFutureTimestamp, "future_timestamp"},
		{signature.ErrBadSignature, "bad_signature"},
		{fmt.Errorf("outer: %w", fmt.Errorf("inner: %w", signature.ErrBadSignature)), "bad_signature"},
		{errors.New("something else"), "unknown"},
		{nil, "unknown"},
	}
	for _, tt := range tests {
		if got := signature.Reason(tt.err); got != tt.want {
			t.Errorf("Reason(%v) = %q, want %q", tt.err, got, tt.want)
		}
	}
}

// TestVerifyDoesNotKeepCallerSecret: mutating the caller's secret slice
// after New must not change verification.
func TestVerifyDoesNotKeepCallerSecret(t *testing.T) {
	val := []byte("gh-secret")
	cfg := signature.Config{Scheme: "github", Secrets: []signature.Secret{{ID: "a", Value: val}}}
	v, err := signature.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	h, err := signature.Sign(cfg, []byte("gh-secret"), []byte(body), now, "d")
	if err != nil {
		t.Fatal(err)
	}
	copy(val, "XXXXXXXXX")
	if _, err := v.Verify(&signature.Request{Header: h, Body: []byte(body)}, now); err != nil {
		t.Fatalf("verifier aliased the caller's secret: %v", err)
	}
}
