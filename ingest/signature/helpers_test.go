package signature_test

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gatehouse/gatehouse/ingest/signature"
)

// now is a fixed verification time used across tests.
var now = time.Unix(1_760_000_000, 0)

const (
	body         = `{"id":"evt_1","type":"payment.succeeded","data":{"amount":1200}}`
	reserialised = `{"id": "evt_1", "type": "payment.succeeded", "data": {"amount": 1200}}`
	// suiteURL is the public URL configured for the schemes that sign the
	// URL; suiteOtherURL is another endpoint's.
	suiteURL      = "https://hooks.example.com/webhooks/acme"
	suiteOtherURL = "https://hooks.example.com/webhooks/other"
	suiteQuery    = "tenant=7&mode=live"
)

// scheme describes one scheme (or one variant of a scheme) for the shared
// table tests. Every name of signature.Schemes() has at least one entry
// (TestSchemeTableCoversEveryScheme).
type scheme struct {
	name string           // subtest name: the scheme, or scheme plus variant
	cfg  signature.Config // without secrets; PublicURL set where the URL is signed
	// old and new are the two secrets of a rotation overlap, attacker a
	// well-formed one that is configured nowhere.
	old, new, attacker suiteKeys
	// tol is the scheme's default replay window; 0: it has no timestamp.
	tol         time.Duration
	eventID     string // passed to SignRequest
	wantEventID string // expected Result.EventID
	query       string // the query string the provider calls with
	contentType string // the request's Content-Type ("" = none)
	// body builds the event body for a signing time (linear puts the
	// timestamp in it); nil: the shared body.
	body func(at time.Time) string
	// reserialise rewrites a signed body without changing its meaning;
	// nil: the JSON re-indented.
	reserialise func(string) string
	// bodyExpect overrides the outcome of the body cases "changed",
	// "reserialised" and "empty" (absent: ErrBadSignature). A nil value
	// means the change is ACCEPTED by design; bodyWhy says why.
	bodyExpect map[string]error
	bodyWhy    string
	required   []string  // headers whose absence is ErrMissingHeader
	malformed  []hdrEdit // each must yield ErrMalformedHeader
	extra      []suiteCase
}

// suiteKeys is a secret in its verifying and signing forms (they differ
// for the asymmetric schemes only).
type suiteKeys struct{ verify, sign string }

func sym(s string) suiteKeys { return suiteKeys{verify: s, sign: s} }

type hdrEdit struct {
	name   string
	header string
	value  string
}

// suiteCase is a scheme-specific case: edit changes a request signed with
// the new secret at now; want nil means accepted (with SecretID "new").
type suiteCase struct {
	name string
	edit func(t *testing.T, s scheme, r *signature.Request)
	want error
}

func b64(s string) string { return "whsec_" + base64.StdEncoding.EncodeToString([]byte(s)) }

// schemes is the table of TestVerifySchemes: the schemes below, the other
// HMAC presets (presetSchemes) and the schemes with code of their own
// (codeSchemes), both in presets_suite_test.go.
func schemes() []scheme {
	hex64 := strings.Repeat("ab", 32)
	b64sig := base64.StdEncoding.EncodeToString(make([]byte, 32))
	out := []scheme{
		{
			name:     "reference",
			cfg:      signature.Config{Scheme: "reference", TimestampHeader: "X-Ref-Timestamp", SignatureHeader: "X-Ref-Signature"},
			old:      sym("ref-old-secret-0123456789"),
			new:      sym("ref-new-secret-9876543210"),
			attacker: sym("attacker-ref-secret-0123"),
			tol:      5 * time.Minute,
			required: []string{"X-Ref-Timestamp", "X-Ref-Signature"},
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
			name:     "stripe",
			cfg:      signature.Config{Scheme: "stripe"},
			old:      sym("whsec_test_oldOLDold0123456789"),
			new:      sym("whsec_test_newNEWnew9876543210"),
			attacker: sym("whsec_test_attackerATTACKER01"),
			tol:      5 * time.Minute,
			required: []string{"Stripe-Signature"},
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
			old:         sym("gh-old-secret-0123456789"),
			new:         sym("gh-new-secret-9876543210"),
			attacker:    sym("gh-attacker-secret-01234"),
			eventID:     "123456:72d3162e-cc78-11e3-81ab-4c9367dc0958",
			wantEventID: "123456:72d3162e-cc78-11e3-81ab-4c9367dc0958",
			required:    []string{"X-Hub-Signature-256", "X-GitHub-Delivery"},
			malformed: []hdrEdit{
				{"no prefix", "X-Hub-Signature-256", hex64},
				{"sha1 prefix", "X-Hub-Signature-256", "sha1=" + strings.Repeat("ab", 20)},
				{"non-hex", "X-Hub-Signature-256", "sha256=" + strings.Repeat("gg", 32)},
				{"delivery with space", "X-GitHub-Delivery", "a b"},
				{"hook id with colon", "X-GitHub-Hook-ID", "1:2"},
			},
		},
		{
			name:     "slack",
			cfg:      signature.Config{Scheme: "slack"},
			old:      sym("slack-old-8f742231b10e8888abcd99"),
			new:      sym("slack-new-8f742231b10e8888abcd99"),
			attacker: sym("slack-attacker-8f742231b10e8888"),
			tol:      5 * time.Minute,
			required: []string{"X-Slack-Signature", "X-Slack-Request-Timestamp"},
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
			old:         sym(b64("standard-old-key-0123456789abcdef")),
			new:         sym(b64("standard-new-key-fedcba9876543210")),
			attacker:    sym(b64("attacker-key-0123456789abcdef")),
			tol:         5 * time.Minute,
			eventID:     "msg_2mPbN0ZQ8NYXlh5j1y3Xq9Rk",
			wantEventID: "msg_2mPbN0ZQ8NYXlh5j1y3Xq9Rk",
			required:    []string{"webhook-id", "webhook-timestamp", "webhook-signature"},
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
			old:         sym("shpss_old0123456789abcdef"),
			new:         sym("shpss_new0123456789abcdef"),
			attacker:    sym("shpss_attacker0123456789"),
			eventID:     "b54557e4-bdd9-4b37-8a5f-bf7d70bcd043",
			wantEventID: "b54557e4-bdd9-4b37-8a5f-bf7d70bcd043",
			required:    []string{"X-Shopify-Hmac-Sha256", "X-Shopify-Webhook-Id"},
			malformed: []hdrEdit{
				{"hex instead of base64", "X-Shopify-Hmac-Sha256", hex64},
				{"short", "X-Shopify-Hmac-Sha256", "AAAA"},
				{"unpadded", "X-Shopify-Hmac-Sha256", strings.TrimRight(b64sig, "=")},
			},
		},
		{
			// The declarative scheme itself, with a definition unlike any
			// preset: SHA-512, base64 secrets, prefix, id and timestamp
			// headers, both signed.
			name: "hmac",
			cfg: signature.Config{Scheme: "hmac", HMAC: &signature.HMAC{
				Header: "X-Acme-Signature", Algorithm: "sha512", Prefix: "v2=", SecretEncoding: "base64",
				Content: "{id}.{timestamp}.{body}", IDHeader: "X-Acme-Delivery",
				Timestamp: signature.TimestampSource{Header: "X-Acme-Timestamp"},
			}},
			old:         sym(b64("acme-old-key-0123456789abcdef")),
			new:         sym(b64("acme-new-key-fedcba9876543210")),
			attacker:    sym(b64("acme-attacker-key-0123456789")),
			tol:         5 * time.Minute,
			eventID:     "dlv_01J9ZK",
			wantEventID: "dlv_01J9ZK",
			required:    []string{"X-Acme-Signature", "X-Acme-Delivery", "X-Acme-Timestamp"},
			malformed: []hdrEdit{
				{"sha256-sized hex", "X-Acme-Signature", "v2=" + hex64},
				{"wrong prefix", "X-Acme-Signature", "v1=" + hex64 + hex64},
				{"exponent timestamp", "X-Acme-Timestamp", "1.76e9"},
				{"delivery with space", "X-Acme-Delivery", "dlv 1"},
			},
			extra: []suiteCase{
				{name: "signed delivery id changed", want: signature.ErrBadSignature,
					edit: func(_ *testing.T, _ scheme, r *signature.Request) { r.Header.Set("X-Acme-Delivery", "dlv_other") }},
			},
		},
	}
	out = append(out, presetSchemes()...)
	return append(out, codeSchemes()...)
}

func (s scheme) config(secrets ...signature.Secret) signature.Config {
	c := s.cfg
	c.Secrets = secrets
	return c
}

func (s scheme) both() []signature.Secret {
	return []signature.Secret{{ID: "old", Value: []byte(s.old.verify)}, {ID: "new", Value: []byte(s.new.verify)}}
}

func (s scheme) verifier(t *testing.T, secrets ...signature.Secret) signature.Verifier {
	t.Helper()
	v, err := signature.New(s.config(secrets...))
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return v
}

func (s scheme) bodyAt(at time.Time) string {
	if s.body != nil {
		return s.body(at)
	}
	return body
}

// request is what the provider sends when it signs with k at time at.
func (s scheme) request(t *testing.T, k suiteKeys, at time.Time) *signature.Request {
	t.Helper()
	return s.requestFor(t, s.cfg, k, at)
}

// requestFor signs under cfg (another PublicURL, for instance).
func (s scheme) requestFor(t *testing.T, cfg signature.Config, k suiteKeys, at time.Time) *signature.Request {
	t.Helper()
	r := &signature.Request{Method: http.MethodPost, RawQuery: s.query, Header: http.Header{}, Body: []byte(s.bodyAt(at))}
	if s.contentType != "" {
		r.Header.Set("Content-Type", s.contentType)
	}
	if err := signature.SignRequest(cfg, []byte(k.sign), r, at, s.eventID); err != nil {
		t.Fatalf("SignRequest: %v", err)
	}
	return r
}

// bodyWant is the outcome of a body case and whether it is accepted.
func (s scheme) bodyWant(kind string) error {
	if want, ok := s.bodyExpect[kind]; ok {
		return want
	}
	return signature.ErrBadSignature
}

func (s scheme) reserialised(t *testing.T, b string) string {
	t.Helper()
	if s.reserialise != nil {
		return s.reserialise(b)
	}
	var buf bytes.Buffer
	if err := json.Indent(&buf, []byte(b), "", "  "); err != nil {
		t.Fatalf("re-serialise: %v", err)
	}
	return buf.String()
}

func cloneRequest(r *signature.Request) *signature.Request {
	c := *r
	c.Header = r.Header.Clone()
	c.Body = bytes.Clone(r.Body)
	return &c
}

// assertNoLeak fails if msg contains a secret, or any long token of the
// request's header values.
func assertNoLeak(t *testing.T, msg string, secrets []string, h http.Header) {
	t.Helper()
	for _, s := range secrets {
		if strings.Contains(msg, s) {
			t.Errorf("error %q contains a secret", msg)
		}
	}
	for _, vals := range h {
		for _, v := range vals {
			for _, tok := range strings.FieldsFunc(v, func(r rune) bool { return r == ',' || r == '=' || r == ' ' || r == ';' }) {
				if len(tok) >= 16 && strings.Contains(msg, tok) {
					t.Errorf("error %q contains header token %q", msg, tok)
				}
			}
		}
	}
}

// suiteKeyMaterial is generated once: Ed25519 keys from fixed seeds and
// three ECDSA P-256 key pairs.
var suiteKeyMaterial = sync.OnceValue(func() map[string]suiteKeys {
	m := map[string]suiteKeys{}
	for i, n := range []string{"old", "new", "attacker"} {
		seed := bytes.Repeat([]byte{byte(i + 1)}, ed25519.SeedSize)
		pub := ed25519.NewKeyFromSeed(seed).Public().(ed25519.PublicKey)
		m["discord-"+n] = suiteKeys{verify: hex.EncodeToString(pub), sign: hex.EncodeToString(seed)}
		k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			panic(err)
		}
		p8, err := x509.MarshalPKCS8PrivateKey(k)
		if err != nil {
			panic(err)
		}
		pk, err := x509.MarshalPKIXPublicKey(&k.PublicKey)
		if err != nil {
			panic(err)
		}
		m["sendgrid-"+n] = suiteKeys{verify: base64.StdEncoding.EncodeToString(pk), sign: base64.StdEncoding.EncodeToString(p8)}
	}
	return m
})
