package signature_test

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"hash"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/gatehouse/gatehouse/ingest/signature"
)

// Kinds of vector in TestDocumentedVectors.
const (
	// published: secret, bytes and expected signature all come from the
	// provider's documentation or its official library's tests.
	published = "published vector"
	// sdkInputs: the inputs come from the official library's tests, which
	// compute the signature at run time; the value was computed by hand
	// (research notes) and is recomputed here from the documented rule.
	sdkInputs = "SDK-test inputs, value computed"
	// docRule: the provider publishes no vector; the value is computed
	// here with crypto/hmac (or crypto/ed25519) following the rule quoted
	// from the provider's documentation, independently of the package.
	docRule = "computed from the documented rule"
	// thirdParty: a vector from a third-party library's tests,
	// cross-checked with the documented rule.
	thirdParty = "third-party vector"
)

// docMAC is the independent HMAC of the documented rules, encoded as enc
// ("hex" or "base64").
func docMAC(h func() hash.Hash, enc, key string, parts ...string) string {
	m := hmac.New(h, []byte(key))
	for _, p := range parts {
		m.Write([]byte(p))
	}
	if enc == "base64" {
		return base64.StdEncoding.EncodeToString(m.Sum(nil))
	}
	return hex.EncodeToString(m.Sum(nil))
}

type docVector struct {
	name, kind string
	cfg        signature.Config // without secrets
	secret     string           // the verifier's secret
	// signer, when set, is the signing secret with which SignRequest must
	// reproduce every signature header of the vector (and its query).
	signer      string
	method      string // "" = POST
	query       string // the query the provider calls with
	signQuery   string // the query before SignRequest adds to it (twilio bodySHA256)
	header      map[string]string
	body        string
	at          time.Time
	eventID     string
	want        error  // nil = accepted
	rule, noted string // for computed values: ours and the one in the research notes
}

// TestDocumentedVectors checks every vector the providers publish (or
// their official libraries' tests use) and, where none is published, one
// computed here from the documented rule. The sources are listed in
// /work/research/vector-sources.md.
func TestDocumentedVectors(t *testing.T) {
	for _, tt := range docVectors() {
		t.Run(tt.kind+"/"+tt.name, func(t *testing.T) {
			if tt.noted != "" && tt.rule != tt.noted {
				t.Fatalf("value computed from the documented rule %q differs from the research notes' %q", tt.rule, tt.noted)
			}
			h := http.Header{}
			for k, v := range tt.header {
				h.Set(k, v)
			}
			cfg := tt.cfg
			cfg.Secrets = []signature.Secret{{ID: "k", Value: []byte(tt.secret)}}
			v, err := signature.New(cfg)
			if err != nil {
				t.Fatal(err)
			}
			method := tt.method
			if method == "" {
				method = http.MethodPost
			}
			res, err := v.Verify(&signature.Request{Method: method, RawQuery: tt.query, Header: h, Body: []byte(tt.body)}, tt.at)
			if tt.want != nil {
				if !errors.Is(err, tt.want) {
					t.Fatalf("Verify: %v, want %v", err, tt.want)
				}
				return
			}
			if err != nil {
				t.Fatalf("Verify of the vector: %v", err)
			}
			if res.SecretID != "k" || res.EventID != tt.eventID {
				t.Errorf("Result = %+v, want event id %q", res, tt.eventID)
			}
			if tt.signer == "" {
				return
			}
			r := &signature.Request{Method: method, RawQuery: tt.signQuery, Header: http.Header{}, Body: []byte(tt.body)}
			if ct := h.Get("Content-Type"); ct != "" {
				r.Header.Set("Content-Type", ct)
			}
			if err := signature.SignRequest(cfg, []byte(tt.signer), r, tt.at, tt.eventID); err != nil {
				t.Fatal(err)
			}
			if r.RawQuery != tt.query {
				t.Errorf("SignRequest query %q, want %q", r.RawQuery, tt.query)
			}
			for k := range r.Header {
				if got, want := r.Header.Get(k), h.Get(k); got != want {
					t.Errorf("SignRequest %s = %q, want %q", k, got, want)
				}
			}
		})
	}
}

func docVectors() []docVector {
	var out []docVector
	for _, f := range []func() []docVector{squareVectors, hmacPresetVectors, codeSchemeVectors, documentedRuleVectors} {
		out = append(out, f()...)
	}
	return out
}

// Square: square/square-nodejs-sdk test/utilities/webhooksHelper.test.ts
// (commit 71867a062f70da7c6c8ace73b5bc8896cc06c165); the first vector is
// also in square/square-python-sdk tests/utilities/test_webhooks_helper.py.
func squareVectors() []docVector {
	const (
		key  = "Ibxx_5AKakO-3qeNVR61Dw"
		u    = "https://webhook.site/679a4f3a-dcfa-49ee-bac5-9d0edad886b9"
		b    = `{"merchant_id":"MLEFBHHSJGVHD","type":"webhooks.test_notification","event_id":"ac3ac95b-f97d-458c-a6e6-18981597e05f","created_at":"2022-07-13T20:30:59.037339943Z","data":{"type":"webhooks","id":"bc368e64-01aa-407e-b46e-3231809b1129"}}`
		sig  = "GF4YkrJgGBDZ9NIYbNXBnMzqb2HoL4RW/S6vkZ9/2N4="
		hdr  = "X-Square-Hmacsha256-Signature"
		url2 = "https://webhook.site/webhooks"
	)
	cfg := func(u string) signature.Config { return signature.Config{Scheme: "square", PublicURL: u} }
	formatted := "{\n" +
		"    \"merchant_id\": \"MLEFBHHSJGVHD\",\n" +
		"    \"type\": \"webhooks.test_notification\",\n" +
		"    \"event_id\": \"ac3ac95b-f97d-458c-a6e6-18981597e05f\",\n" +
		"    \"created_at\": \"2022-07-13T20:30:59.037339943Z\",\n" +
		"    \"data\": {\n" +
		"      \"type\": \"webhooks\",\n" +
		"      \"id\": \"bc368e64-01aa-407e-b46e-3231809b1129\"\n" +
		"    }\n" +
		"}"
	return []docVector{
		{name: "square validation pass", kind: published, cfg: cfg(u), secret: key, signer: key, header: map[string]string{hdr: sig}, body: b, at: now},
		{name: "square unescaped chars", kind: published, cfg: cfg(url2), secret: "signature-key", signer: "signature-key",
			header: map[string]string{hdr: "W3FlCNk5IA3ZQ2LHTWoajvzfaDu/OwY2tNHIHC3IUOA="}, body: `{"data":{"type":"webhooks","id":"fake_id"}}`, at: now},
		{name: "square escaped characters", kind: published, cfg: cfg(url2), secret: "signature-key", signer: "signature-key",
			header: map[string]string{hdr: "Cxt7+aTi4rKgcA0bC4g9EHdVtLSDWdqccmL5MvihU4U="}, body: `{"data":{"type":"webhooks","id":">id<"}}`, at: now},
		{name: "square notification url mismatch", kind: published, cfg: cfg("https://webhook.site/79a4f3a-dcfa-49ee-bac5-9d0edad886b9"), secret: key,
			header: map[string]string{hdr: sig}, body: b, at: now, want: signature.ErrBadSignature},
		{name: "square invalid signature key", kind: published, cfg: cfg(u), secret: "MCmhFRxGX82xMwg5FsaoQA",
			header: map[string]string{hdr: sig}, body: b, at: now, want: signature.ErrBadSignature},
		// The SDK returns false; a 20-byte value is not a SHA-256 MAC, so
		// we refuse it as malformed before computing anything.
		{name: "square invalid signature header", kind: published, cfg: cfg(u), secret: key,
			header: map[string]string{hdr: "1z2n3DEJJiUPKcPzQo1ftvbxGdw="}, body: b, at: now, want: signature.ErrMalformedHeader},
		{name: "square request body mismatch", kind: published, cfg: cfg(u), secret: key,
			header: map[string]string{hdr: sig}, body: strings.Replace(b, "2022-07-13", "2022-06-13", 1), at: now, want: signature.ErrBadSignature},
		{name: "square request body formatted", kind: published, cfg: cfg(u), secret: key,
			header: map[string]string{hdr: sig}, body: formatted, at: now, want: signature.ErrBadSignature},
	}
}

// TestSquareRequiresKeyAndURL: the SDK throws on an empty signature key or
// notification URL (same test file); New refuses both.
func TestSquareRequiresKeyAndURL(t *testing.T) {
	for _, cfg := range []signature.Config{
		{Scheme: "square", PublicURL: "https://webhook.site/webhooks", Secrets: []signature.Secret{{Value: nil}}},
		{Scheme: "square", Secrets: []signature.Secret{{Value: []byte("Ibxx_5AKakO-3qeNVR61Dw")}}},
	} {
		if _, err := signature.New(cfg); err == nil {
			t.Errorf("New(%+v) accepted", cfg)
		}
	}
}

// hmacPresetVectors: published vectors of the other HMAC presets.
func hmacPresetVectors() []docVector {
	const paddleBody = `{"data":{"id":"pri_01hsdn96k2hxjzsq5yerecdj9j","name":null,"status":"active","quantity":{"maximum":999999,"minimum":1},"tax_mode":"account_setting","product_id":"pro_01hsdn8qp7yydry3x1yeg6a9rv","unit_price":{"amount":"1000","currency_code":"USD"},"custom_data":null,"description":"testing","import_meta":null,"trial_period":null,"billing_cycle":{"interval":"month","frequency":1},"unit_price_overrides":[]},"event_id":"evt_01hsdn97563968dy0szkmgjwh3","event_type":"price.created","occurred_at":"2024-03-20T10:07:35.590857Z","notification_id":"ntf_01hsdn977e920kbgzt6r6c9rqc"}`
	const paddleKey = "pdl_ntfset_01hsdn8d43dt7mezr1ef2jtbaw_hKkRiCGyyRhbFwIUuqiTBgI7gnWoV0Gr"
	paddleSig := "ts=1710929255;h1=6c05ef8fa83c44d751be6d259ec955ce5638e2c54095bf128e408e2fce1589c8"
	paddleAt := time.Unix(1710929255, 0)
	paddle := signature.Config{Scheme: "paddle"}
	shopifyHeaders := func(hmac string) map[string]string {
		return map[string]string{"X-Shopify-Hmac-Sha256": hmac, "X-Shopify-Webhook-Id": "123456789",
			"X-Shopify-API-Version": "2023-01", "X-Shopify-Shop-Domain": "shop1.myshopify.io", "X-Shopify-Topic": "products/create"}
	}
	return []docVector{
		// Shopify/shopify-api-js packages/shopify-api/lib/webhooks/__tests__/validate.test.ts
		// and __tests__/utils.ts (commit 7b21511ef0c3b369d88e7c5ec3befadd1de8ac41);
		// the secret is the test config's apiSecretKey.
		{name: "shopify validate", kind: published, cfg: signature.Config{Scheme: "shopify"}, secret: "test_secret_key", signer: "test_secret_key",
			header: shopifyHeaders("B23tXN681gZ0qIWNRrgtzBE9XSDo5yaUu6wfmhu3a7g="), body: `{"foo": "bar"}`, at: now, eventID: "123456789"},
		// The same test's InvalidHmac case: "fake" is not base64 of 32 bytes.
		{name: "shopify invalid hmac", kind: published, cfg: signature.Config{Scheme: "shopify"}, secret: "test_secret_key",
			header: shopifyHeaders("fake"), body: `{"foo": "bar"}`, at: now, want: signature.ErrMalformedHeader},
		// Atlassian's Bitbucket Cloud example, "Secure webhooks" in
		// https://support.atlassian.com/bitbucket-cloud/docs/manage-webhooks/
		// (not GitHub's "Hello, World!" vector: no comma here).
		{name: "bitbucket Hello World", kind: published, cfg: signature.Config{Scheme: "bitbucket"}, secret: "It's a Secret to Everybody", signer: "It's a Secret to Everybody",
			header: map[string]string{"X-Hub-Signature": "sha256=a4771c39fbe90f317c7824e83ddef3caae9cb3d976c214ace1f2937e133263c9"}, body: "Hello World!", at: now},
		// PaddleHQ/paddle-go-sdk v1.0.0 webhook_verifier_test.go (same in v3.0.0).
		{name: "paddle verifier", kind: published, cfg: paddle, secret: paddleKey, signer: paddleKey,
			header: map[string]string{"Paddle-Signature": paddleSig}, body: paddleBody, at: paddleAt},
		{name: "paddle payload {}", kind: published, cfg: paddle, secret: paddleKey,
			header: map[string]string{"Paddle-Signature": paddleSig}, body: `{}`, at: paddleAt, want: signature.ErrBadSignature},
		{name: "paddle ts=x;h1=y", kind: published, cfg: paddle, secret: paddleKey,
			header: map[string]string{"Paddle-Signature": "ts=x;h1=y"}, body: paddleBody, at: paddleAt, want: signature.ErrMalformedHeader},
		{name: "paddle secret abc", kind: published, cfg: paddle, secret: "abc",
			header: map[string]string{"Paddle-Signature": paddleSig}, body: paddleBody, at: paddleAt, want: signature.ErrBadSignature},
		{name: "paddle missing header", kind: published, cfg: paddle, secret: paddleKey,
			header: map[string]string{}, body: paddleBody, at: paddleAt, want: signature.ErrMissingHeader},
		// The SDK does not check ts; Paddle's documentation asks for a
		// window, and ours refuses the 2024 vector at our clock.
		{name: "paddle vector replayed today", kind: published, cfg: paddle, secret: paddleKey,
			header: map[string]string{"Paddle-Signature": paddleSig}, body: paddleBody, at: now, want: signature.ErrStaleTimestamp},
	}
}

// twilioForm is the twilio-go test's params as a form body.
func twilioForm(params map[string]string) string {
	v := url.Values{}
	for k, p := range params {
		v.Set(k, p)
	}
	return v.Encode()
}

// codeSchemeVectors: Twilio, SendGrid, Svix, Mailgun, Discord, Postmark, GitLab.
func codeSchemeVectors() []docVector {
	// twilio/twilio-go v1.23.0 client/request_validator_test.go.
	const (
		twPath   = "https://mycompany.com/myapp.php"
		twQuery  = "foo=1&bar=2"
		twToken  = "12345"
		twJSON   = `{"property": "value", "boolean": true}`
		twHash   = "0a1ff7634d9ab3b95db5c9a2dfe9416e41502b283a80c7cf19632632f96e6620"
		formType = "application/x-www-form-urlencoded"
	)
	twForm := twilioForm(map[string]string{"Digits": "1234", "CallSid": "CA1234567890ABCDE", "To": "+18005551212", "Caller": "+14158675309",
		"From": "+14158675309", "ReasonConferenceEnded": "test", "Reason": "Participant"})
	tw := func(u string) signature.Config { return signature.Config{Scheme: "twilio", PublicURL: u} }
	twH := func(sig, ct string) map[string]string {
		return map[string]string{"X-Twilio-Signature": sig, "Content-Type": ct}
	}
	// sendgrid/sendgrid-go v3.16.0 helpers/eventwebhook/eventwebhook_test.go:
	// the payload is json.Encoder output with its "\n" made "\r\n".
	const (
		sgKey  = "MFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAE83T4O/n84iotIvIW4mdBgQ/7dAfSmpqIM8kF9mN1flpVKS3GRqe62gw+2fNNRaINXvVpiglSI8eNEc6wEA3F+g=="
		sgSig  = "MEUCIGHQVtGj+Y3LkG9fLcxf3qfI10QysgDWmMOVmxG0u6ZUAiEAyBiXDWzM+uOe5W0JuG+luQAbPIqHh89M15TluLtEZtM="
		sgTS   = "1600112502"
		sgBody = "[{\"email\":\"hello@world.com\",\"event\":\"dropped\",\"reason\":\"Bounced Address\",\"sg_event_id\":\"ZHJvcC0xMDk5NDkxOS1MUnpYbF9OSFN0T0doUTRrb2ZTbV9BLTA\",\"sg_message_id\":\"LRzXl_NHStOGhQ4kofSm_A.filterdrecv-p3mdw1-756b745b58-kmzbl-18-5F5FC76C-9.0\",\"smtp-id\":\"<LRzXl_NHStOGhQ4kofSm_A@ismtpd0039p1iad1.sendgrid.net>\",\"timestamp\":1600112492}]\r\n"
	)
	sg := signature.Config{Scheme: "sendgrid"}
	sgAt := time.Unix(1600112502, 0)
	sgH := func(sig, ts string) map[string]string {
		return map[string]string{"X-Twilio-Email-Event-Webhook-Signature": sig, "X-Twilio-Email-Event-Webhook-Timestamp": ts}
	}
	// svix/svix-webhooks v1.40.0 go/webhook_test.go (TestWebhookSign, TestWebhook).
	const (
		svKey  = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
		svSig  = "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="
		svBad  = "v1,Ceo5qEr07ixe2NLpvHk3FH9bwy/WavXrAFQ/9tdO6mc="
		svID   = "msg_p5jXN8AQM9LWM0D4loKWxJek"
		svBody = `{"test": 2432232314}`
	)
	sv := signature.Config{Scheme: "standard-webhooks"}
	svAt := time.Unix(1614265330, 0)
	svH := func(sig string) map[string]string {
		return map[string]string{"svix-id": svID, "svix-timestamp": "1614265330", "svix-signature": sig}
	}
	// mailgun/mailgun-go v4.23.0 webhooks_test.go getSignatureFields (the
	// test computes the signature at run time) with domains_test.go's
	// testWebhookSigningKey. Mailgun's rule (securing-webhooks): hex
	// HMAC-SHA256 of timestamp + token with the webhook signing key.
	mgSig := docMAC(sha256.New, "hex", "webhook-signing-key", "123456789", "token")
	mgBody := func(sig string) string {
		return `{"signature":{"token":"token","timestamp":"123456789","signature":"` + sig + `"},"event-data":{"event":"delivered","id":"CPgfbmQMTCKtHW6uIWtuVe"}}`
	}
	mg := signature.Config{Scheme: "mailgun"}
	// Discord publishes no vector and discordgo's TestVerifyInteraction
	// uses a random key: the RFC 8032 §7.1 TEST 1 key signs discordgo's
	// timestamp + body (Ed25519 is deterministic).
	const (
		dcSeed = "9d61b19deffd5a60ba844af492ec2cc44449c5697b326919703bac031cae7f60"
		dcPub  = "d75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a"
	)
	dc := signature.Config{Scheme: "discord"}
	dcAt := time.Unix(1608597133, 0)
	dcH := func(sig string) map[string]string {
		return map[string]string{"X-Signature-Ed25519": sig, "X-Signature-Timestamp": "1608597133"}
	}
	return []docVector{
		{name: "twilio form params", kind: published, cfg: tw(twPath), secret: twToken, signer: twToken, query: twQuery, signQuery: twQuery,
			header: twH("vOEb5UThFn24KEfnOFLQY2AE5FY=", formType), body: twForm, at: now},
		{name: "twilio http form params", kind: published, cfg: tw("http://mycompany.com/myapp.php"), secret: twToken, signer: twToken, query: twQuery, signQuery: twQuery,
			header: twH("n2xBNyzSW7rfYStDtOFiFMv7qNo=", formType), body: twForm, at: now},
		{name: "twilio params sorted incorrectly", kind: published, cfg: tw(twPath), secret: twToken, query: twQuery,
			header: twH("95+Bu0JVPi0r/SsESZCVf0dWAjw=", formType), body: twForm, at: now, want: signature.ErrBadSignature},
		{name: "twilio WRONG SIGNATURE", kind: published, cfg: tw(twPath), secret: twToken, query: twQuery,
			header: twH("WRONG SIGNATURE", formType), body: twForm, at: now, want: signature.ErrMalformedHeader},
		{name: "twilio json body with bodySHA256", kind: published, cfg: tw(twPath), secret: twToken, signer: twToken,
			query: twQuery + "&bodySHA256=" + twHash, signQuery: twQuery, header: twH("a9nBmqA0ju/hNViExpshrM61xv4=", ""), body: twJSON, at: now},
		{name: "twilio form body", kind: published, cfg: tw(twPath), secret: twToken, signer: twToken, query: twQuery, signQuery: twQuery,
			header: twH("NBdBDr/T/lgjI+tlgpXjKZQZs/k=", formType), body: "property=value&boolean=true", at: now},
		{name: "twilio json body without other parameters", kind: published, cfg: tw(twPath), secret: twToken, signer: twToken,
			query: "bodySHA256=" + twHash, header: twH("y77kIzt2vzLz71DgmJGsen2scGs=", ""), body: twJSON, at: now},
		{name: "twilio json body without bodySHA256", kind: published, cfg: tw(twPath), secret: twToken, query: twQuery,
			header: twH("vOEb5UThFn24KEfnOFLQY2AE5FY=", ""), body: twJSON, at: now, want: signature.ErrBadSignature},
		// twilio-go tries the URL with the default port added and with any
		// port removed: a URL with :1234 verifies the signature of the URL
		// without it.
		{name: "twilio https port specified, signature without it", kind: published, cfg: tw("https://mycompany.com:1234/myapp.php"), secret: twToken, query: twQuery,
			header: twH("vOEb5UThFn24KEfnOFLQY2AE5FY=", formType), body: twForm, at: now},
		{name: "twilio http port specified", kind: published, cfg: tw("http://mycompany.com:1234/myapp.php"), secret: twToken, query: twQuery,
			header: twH("n2xBNyzSW7rfYStDtOFiFMv7qNo=", formType), body: twForm, at: now},

		{name: "sendgrid event webhook", kind: published, cfg: sg, secret: sgKey, header: sgH(sgSig, sgTS), body: sgBody, at: sgAt},
		{name: "sendgrid payload not the signed one", kind: published, cfg: sg, secret: sgKey, header: sgH(sgSig, sgTS),
			body: "this is not valid payload for the given signature", at: sgAt, want: signature.ErrBadSignature},
		{name: "sendgrid invalid timestamp", kind: published, cfg: sg, secret: sgKey, header: sgH(sgSig, "invalid timestamp"), body: sgBody, at: sgAt, want: signature.ErrMalformedHeader},
		{name: "sendgrid empty timestamp", kind: published, cfg: sg, secret: sgKey, header: sgH(sgSig, ""), body: sgBody, at: sgAt, want: signature.ErrMissingHeader},
		{name: "sendgrid corrupted signature", kind: published, cfg: sg, secret: sgKey, header: sgH(sgSig+"causing failure", sgTS), body: sgBody, at: sgAt, want: signature.ErrMalformedHeader},

		{name: "svix sign", kind: published, cfg: sv, secret: svKey, header: svH(svSig), body: svBody, at: svAt, eventID: svID},
		{name: "svix valid multi sig", kind: published, cfg: sv, secret: svKey, header: svH(svBad + " v2,Ceo5qEr07ixe2NLpvHk3FH9bwy/WavXrAFQ/9tdO6mc= " + svSig + " " + svBad),
			body: svBody, at: svAt, eventID: svID},
		{name: "svix invalid signature", kind: published, cfg: sv, secret: svKey, header: svH(svBad), body: svBody, at: svAt, want: signature.ErrBadSignature},
		{name: "svix partial signature", kind: published, cfg: sv, secret: svKey, header: svH("v1,"), body: svBody, at: svAt, want: signature.ErrMalformedHeader},
		{name: "svix old timestamp", kind: published, cfg: sv, secret: svKey, header: svH(svSig), body: svBody, at: svAt.Add(5*time.Minute + time.Second), want: signature.ErrStaleTimestamp},

		{name: "mailgun webhook signature", kind: sdkInputs, cfg: mg, secret: "webhook-signing-key", header: nil, body: mgBody(mgSig), at: time.Unix(123456789, 0),
			rule: mgSig, noted: "3ce8f010058ab80b8345d3513acc9027d34a00190ae8e4b4161e7636f68321f8"},
		// mailgun-go: hex("badsignature") → (false, nil); it is no SHA-256 MAC.
		{name: "mailgun bad signature", kind: sdkInputs, cfg: mg, secret: "webhook-signing-key", body: mgBody(hex.EncodeToString([]byte("badsignature"))),
			at: time.Unix(123456789, 0), want: signature.ErrMalformedHeader},

		{name: "discord interaction, RFC 8032 TEST 1 key", kind: docRule, cfg: dc, secret: dcPub, signer: dcSeed, body: "body", at: dcAt,
			header: dcH("cb4cd782e9edaddb533995b5e8a2a5fd65b5971a9a62b43877b56b6503d705fb2c97fd3978af561820629b0932c14604bd95dcb7d477b9bafc8fc63ea3904008")},
		{name: "discord PING, RFC 8032 TEST 1 key", kind: docRule, cfg: dc, secret: dcPub, signer: dcSeed, body: `{"type":1}`, at: dcAt,
			header: dcH("5ab3087e79bdf62aa525d5a1d4cc108ffa0330d84e84db163fe368150a56a217ba0d1bc121c713cbcfd3a4effa86afc6029be4a270a7a41a97815574105d7502")},
		{name: "discord body changed", kind: docRule, cfg: dc, secret: dcPub, body: `{"type":2}`, at: dcAt,
			header: dcH("5ab3087e79bdf62aa525d5a1d4cc108ffa0330d84e84db163fe368150a56a217ba0d1bc121c713cbcfd3a4effa86afc6029be4a270a7a41a97815574105d7502"), want: signature.ErrBadSignature},

		// RFC 7617 §2's example credentials: Postmark sends the basic auth of
		// the webhook URL (postmarkapp.com/developer/webhooks/webhooks-overview).
		{name: "postmark basic auth, RFC 7617 example", kind: published, cfg: signature.Config{Scheme: "postmark"}, secret: "Aladdin:open sesame", signer: "Aladdin:open sesame",
			header: map[string]string{"Authorization": "Basic QWxhZGRpbjpvcGVuIHNlc2FtZQ=="}, body: `{"RecordType":"Delivery"}`, at: now},
		// GitLab, docs.gitlab.com/user/project/integrations/webhooks/ "Validate
		// payloads by using a secret token": "The secret token is sent with
		// the hook request in the X-Gitlab-Token HTTP header".
		{name: "gitlab secret token", kind: docRule, cfg: signature.Config{Scheme: "gitlab"}, secret: "glwht-secret-token", signer: "glwht-secret-token",
			header: map[string]string{"X-Gitlab-Token": "glwht-secret-token"}, body: `{"object_kind":"push"}`, at: now},
		{name: "gitlab other token", kind: docRule, cfg: signature.Config{Scheme: "gitlab"}, secret: "glwht-secret-token",
			header: map[string]string{"X-Gitlab-Token": "glwht-secret-tokem"}, body: `{"object_kind":"push"}`, at: now, want: signature.ErrBadSignature},
	}
}
