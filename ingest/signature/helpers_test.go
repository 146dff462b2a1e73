package signature_test

import (
	"encoding/base64"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/gatehouse/gatehouse/ingest/signature"
)

// now is a fixed verification time used across tests.
var now = time.Unix(1_760_000_000, 0)

const (
	body         = `{"id":"evt_1","type":"payment.succeeded","data":{"amount":1200}}`
	reserialised = `{"id": "evt_1", "type": "payment.succeeded", "data": {"amount": 1200}}`
)

// scheme describes one scheme for the shared table tests.
type scheme struct {
	name        string
	cfg         signature.Config // without secrets
	oldSecret   string
	newSecret   string
	timestamped bool
	eventID     string // passed to Sign
	wantEventID string // expected Result.EventID
	required    []string
	sigHeader   string    // header whose value is the signature
	malformed   []hdrEdit // each must yield ErrMalformedHeader
}

type hdrEdit struct {
	name   string
	header string
	value  string
}

func b64(s string) string { return "whsec_" + base64.StdEncoding.EncodeToString([]byte(s)) }

func schemes() []scheme {
	hex64 := strings.Repeat("ab", 32)
	b64sig := base64.StdEncoding.EncodeToString(make([]byte, 32))
	return []scheme{
		{
			name:        "reference",
			cfg:         signature.Config{Scheme: "reference", TimestampHeader: "X-Ref-Timestamp", SignatureHeader: "X-Ref-Signature"},
			oldSecret:   "ref-old-secret-0123456789",
			newSecret:   "ref-new-secret-9876543210",
			timestamped: true,
			required:    []string{"X-Ref-Timestamp", "X-Ref-Signature"},
			sigHeader:   "X-Ref-Signature",
			malformed: []hdrEdit{
				{"non-hex signature", "X-Ref-Signature", strings.Repeat("zz", 32)},
				{"short signature", "X-Ref-Signature", "abcd"},
				{"prefixed signature", "X-Ref-Signature", "sha256=" + hex64},
				{"non-integer timestamp", "X-Ref-Timestamp", "12.5"},
				{"negative timestamp", "X-Ref-Timestamp", "-1760000000"},
				{"leading zero timestamp", "X-Ref-Timestamp", "01760000000"},
				{"text timestamp", "X-Ref-Timestamp", "yesterday"},
			},
		},
		{
			name:        "stripe",
			cfg:         signature.Config{Scheme: "stripe"},
			oldSecret:   "whsec_test_oldOLDold0123456789",
			newSecret:   "whsec_test_newNEWnew9876543210",
			timestamped: true,
			required:    []string{"Stripe-Signature"},
			sigHeader:   "Stripe-Signature",
			malformed: []hdrEdit{
				{"missing t", "Stripe-Signature", "v1=" + hex64},
				{"missing v1", "Stripe-Signature", "t=1760000000,v0=" + hex64},
				{"non-hex v1", "Stripe-Signature", "t=1760000000,v1=" + strings.Repeat("xy", 32)},
				{"non-integer t", "Stripe-Signature", "t=abc,v1=" + hex64},
				{"repeated t", "Stripe-Signature", "t=1760000000,t=1760000000,v1=" + hex64},
				{"no equals", "Stripe-Signature", "garbage"},
				{"trailing comma", "Stripe-Signature", "t=1760000000,v1=" + hex64 + ","},
			},
		},
		{
			name:        "github",
			cfg:         signature.Config{Scheme: "github"},
			oldSecret:   "gh-old-secret-0123456789",
			newSecret:   "gh-new-secret-9876543210",
			eventID:     "123456:72d3162e-cc78-11e3-81ab-4c9367dc0958",
			wantEventID: "123456:72d3162e-cc78-11e3-81ab-4c9367dc0958",
			required:    []string{"X-Hub-Signature-256", "X-GitHub-Delivery"},
			sigHeader:   "X-Hub-Signature-256",
			malformed: []hdrEdit{
				{"no prefix", "X-Hub-Signature-256", hex64},
				{"sha1 prefix", "X-Hub-Signature-256", "sha1=" + strings.Repeat("ab", 20)},
				{"non-hex", "X-Hub-Signature-256", "sha256=" + strings.Repeat("gg", 32)},
				{"delivery with space", "X-GitHub-Delivery", "a b"},
				{"hook id with colon", "X-GitHub-Hook-ID", "1:2"},
			},
		},
		{
			name:        "slack",
			cfg:         signature.Config{Scheme: "slack"},
			oldSecret:   "slack-old-8f742231b10e8888abcd99",
			newSecret:   "slack-new-8f742231b10e8888abcd99",
			timestamped: true,
			required:    []string{"X-Slack-Signature", "X-Slack-Request-Timestamp"},
			sigHeader:   "X-Slack-Signature",
			malformed: []hdrEdit{
				{"no version", "X-Slack-Signature", hex64},
				{"wrong version", "X-Slack-Signature", "v1=" + hex64},
				{"non-hex", "X-Slack-Signature", "v0=" + strings.Repeat("q", 64)},
				{"float timestamp", "X-Slack-Request-Timestamp", "1760000000.5"},
			},
		},
		{
			name:        "standard-webhooks",
			cfg:         signature.Config{Scheme: "standard-webhooks"},
			oldSecret:   b64("standard-old-key-0123456789abcdef"),
			newSecret:   b64("standard-new-key-fedcba9876543210"),
			timestamped: true,
			eventID:     "msg_2mPbN0ZQ8NYXlh5j1y3Xq9Rk",
			wantEventID: "msg_2mPbN0ZQ8NYXlh5j1y3Xq9Rk",
			required:    []string{"webhook-id", "webhook-timestamp", "webhook-signature"},
			sigHeader:   "webhook-signature",
			malformed: []hdrEdit{
				{"no version", "webhook-signature", b64sig},
				{"only v1a", "webhook-signature", "v1a," + b64sig},
				{"bad base64", "webhook-signature", "v1,!!!notbase64!!!"},
				{"short mac", "webhook-signature", "v1,AAAA"},
				{"empty value", "webhook-signature", "v1,"},
				{"non-integer timestamp", "webhook-timestamp", "2025-10-09T10:00:00Z"},
				{"id with space", "webhook-id", "msg 1"},
			},
		},
		{
			name:        "shopify",
			cfg:         signature.Config{Scheme: "shopify"},
			oldSecret:   "shpss_old0123456789abcdef",
			newSecret:   "shpss_new0123456789abcdef",
			eventID:     "b54557e4-bdd9-4b37-8a5f-bf7d70bcd043",
			wantEventID: "b54557e4-bdd9-4b37-8a5f-bf7d70bcd043",
			required:    []string{"X-Shopify-Hmac-Sha256", "X-Shopify-Webhook-Id"},
			sigHeader:   "X-Shopify-Hmac-Sha256",
			malformed: []hdrEdit{
				{"hex instead of base64", "X-Shopify-Hmac-Sha256", hex64},
				{"short", "X-Shopify-Hmac-Sha256", "AAAA"},
				{"unpadded", "X-Shopify-Hmac-Sha256", strings.TrimRight(b64sig, "=")},
			},
		},
	}
}

func (s scheme) config(secrets ...signature.Secret) signature.Config {
	c := s.cfg
	c.Secrets = secrets
	return c
}

func (s scheme) both() []signature.Secret {
	return []signature.Secret{{ID: "old", Value: []byte(s.oldSecret)}, {ID: "new", Value: []byte(s.newSecret)}}
}

func (s scheme) verifier(t *testing.T, secrets ...signature.Secret) signature.Verifier {
	t.Helper()
	v, err := signature.New(s.config(secrets...))
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return v
}

func (s scheme) sign(t *testing.T, secret string, b string, at time.Time) http.Header {
	t.Helper()
	h, err := signature.Sign(s.config(), []byte(secret), []byte(b), at, s.eventID)
	if err != nil {
		t.Fatalf("Sign: %v", err)
	}
	return h
}

// assertNoLeak fails if msg contains a secret, the signature header value,
// or any long token of it.
func assertNoLeak(t *testing.T, msg string, secrets []string, h http.Header, sigHeader string) {
	t.Helper()
	for _, s := range secrets {
		if strings.Contains(msg, s) {
			t.Errorf("error %q contains a secret", msg)
		}
	}
	for _, v := range h.Values(sigHeader) {
		if v != "" && strings.Contains(msg, v) {
			t.Errorf("error %q contains the signature header value", msg)
		}
		for _, tok := range strings.FieldsFunc(v, func(r rune) bool { return r == ',' || r == '=' || r == ' ' }) {
			if len(tok) >= 16 && strings.Contains(msg, tok) {
				t.Errorf("error %q contains signature token %q", msg, tok)
			}
		}
	}
}

// attackerSecret is a well-formed secret that is not configured anywhere.
func (s scheme) attackerSecret() string {
	if s.cfg.Scheme == "standard-webhooks" {
		return b64("attacker-key-0123456789abcdef")
	}
	return "attacker-" + s.newSecret
}
