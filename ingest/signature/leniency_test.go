package signature_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/gatehouse/gatehouse/ingest/signature"
)

// The header parsers skip entries they cannot use, as the providers'
// official libraries do (stripe-go's parseSignatureHeader, the Standard
// Webhooks libraries): a genuine signature beside junk is accepted; junk
// alone is refused as a malformed header; more than 32 usable entries are
// refused.
func TestParsersSkipUnusableEntries(t *testing.T) {
	now := time.Unix(1_760_000_000, 0)
	body := []byte(`{"id":"evt_1","type":"t"}`)
	hex64 := strings.Repeat("ab", 32)
	b64 := "q83vEjRWeJCrze8SNFZ4kKvN7xI0VniQq83vEjRWeJA=" // 32 bytes, not the MAC
	cases := []struct {
		scheme, secret, header string
		junk                   func(valid string) string // valid: the genuine header value
		junkOnly               string                    // a value with no usable entry
		tooMany                func(valid string) string
	}{
		{
			scheme: "stripe", secret: "whsec_lenient_test_secret", header: "Stripe-Signature",
			junk: func(v string) string {
				t, v1, _ := strings.Cut(v, ",")
				return t + ",v1=zz-not-hex,v1=" + hex64[:10] + ",v0=abc," + v1
			},
			junkOnly: "t=1760000000,v1=zz-not-hex,v1=abc",
			tooMany: func(v string) string {
				return v + strings.Repeat(",v1="+hex64, 32)
			},
		},
		{
			scheme: "standard-webhooks", secret: "whsec_" + "bGVuaWVudC10ZXN0LXNlY3JldC0wMTIzNDU2Nzg5", header: "Webhook-Signature",
			junk:     func(v string) string { return "v1,junk!!! nocomma v1a,abc v1,AAAA " + v },
			junkOnly: "v1,junk!!! nocomma v1a,abc v1,AAAA",
			tooMany:  func(v string) string { return v + strings.Repeat(" v1,"+b64, 32) },
		},
	}
	for _, c := range cases {
		t.Run(c.scheme, func(t *testing.T) {
			cfg := signature.Config{Scheme: c.scheme, Secrets: []signature.Secret{{ID: "s", Value: []byte(c.secret)}}}
			v, err := signature.New(cfg)
			if err != nil {
				t.Fatal(err)
			}
			h, err := signature.Sign(cfg, []byte(c.secret), body, now, "msg_1")
			if err != nil {
				t.Fatal(err)
			}
			valid := h.Get(c.header)
			h.Set(c.header, c.junk(valid))
			if res, err := v.Verify(&signature.Request{Header: h, Body: body}, now); err != nil || res.SecretID != "s" {
				t.Fatalf("genuine signature beside junk (%q): %v", h.Get(c.header), err)
			}
			h.Set(c.header, c.junkOnly)
			if _, err := v.Verify(&signature.Request{Header: h, Body: body}, now); !errors.Is(err, signature.ErrMalformedHeader) || signature.Reason(err) != "malformed_header" {
				t.Fatalf("junk alone: %v, want a malformed header", err)
			}
			h.Set(c.header, c.tooMany(valid))
			if _, err := v.Verify(&signature.Request{Header: h, Body: body}, now); !errors.Is(err, signature.ErrMalformedHeader) {
				t.Fatalf("33 usable entries: %v, want a malformed header (at most 32 are tried)", err)
			}
		})
	}
}
