package signature_test

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/gatehouse/gatehouse/ingest/signature"
)

// presetSchemes are the HMAC presets not in schemes() itself. Tolerances
// are the providers' documented windows (presets.go).
func presetSchemes() []scheme {
	hex64 := strings.Repeat("ab", 32)
	hex40 := strings.Repeat("ab", 20)
	b64sig := base64.StdEncoding.EncodeToString(make([]byte, 32))
	// simple is a preset signing the body alone, without timestamp or id.
	simple := func(name, header string, malformed ...hdrEdit) scheme {
		return scheme{
			name: name, cfg: signature.Config{Scheme: name},
			old: sym(name + "-old-secret-0123"), new: sym(name + "-new-secret-4567"), attacker: sym(name + "-attacker-secret"),
			required: []string{header}, malformed: malformed,
		}
	}
	return []scheme{
		{
			name: "paddle", cfg: signature.Config{Scheme: "paddle"},
			old:      sym("pdl_ntfset_01hsdn8d43dt7mezr1ef2jtbaw_oldOLDold"),
			new:      sym("pdl_ntfset_01hsdn8d43dt7mezr1ef2jtbaw_newNEWnew"),
			attacker: sym("pdl_ntfset_01hsdn8d43dt7mezr1ef2jtbaw_attacker"),
			tol:      5 * time.Minute, required: []string{"Paddle-Signature"},
			malformed: []hdrEdit{
				{"missing ts", "Paddle-Signature", "h1=" + hex64},
				{"missing h1", "Paddle-Signature", "ts=1760000000"},
				{"comma instead of semicolon", "Paddle-Signature", "ts=1760000000,h1=" + hex64},
				{"non-integer ts", "Paddle-Signature", "ts=x;h1=" + hex64},
			},
		},
		{
			name: "calendly", cfg: signature.Config{Scheme: "calendly"},
			old: sym("calendly-old-signing-key"), new: sym("calendly-new-signing-key"), attacker: sym("calendly-attacker-key"),
			tol: 3 * time.Minute, required: []string{"Calendly-Webhook-Signature"},
			malformed: []hdrEdit{
				{"missing t", "Calendly-Webhook-Signature", "v1=" + hex64},
				{"missing v1", "Calendly-Webhook-Signature", "t=1760000000"},
				{"millisecond t", "Calendly-Webhook-Signature", "t=1760000000.000,v1=" + hex64},
			},
		},
		{
			name: "zoom", cfg: signature.Config{Scheme: "zoom"},
			old: sym("zoom-old-secret-token"), new: sym("zoom-new-secret-token"), attacker: sym("zoom-attacker-token"),
			tol: 5 * time.Minute, required: []string{"X-Zm-Signature", "X-Zm-Request-Timestamp"},
			malformed: []hdrEdit{
				{"no v0 prefix", "X-Zm-Signature", hex64},
				{"non-hex", "X-Zm-Signature", "v0=" + strings.Repeat("q", 64)},
				{"timestamp in ms with fraction", "X-Zm-Request-Timestamp", "1760000000.123"},
			},
		},
		{
			name: "twitch", cfg: signature.Config{Scheme: "twitch"},
			old: sym("keepItSecretKeepItSafe-old"), new: sym("keepItSecretKeepItSafe-new"), attacker: sym("keepItSecret-attacker"),
			tol: 10 * time.Minute, eventID: "befa7b53-d79d-478f-86b9-120f112b044e", wantEventID: "befa7b53-d79d-478f-86b9-120f112b044e",
			required: []string{"Twitch-Eventsub-Message-Signature", "Twitch-Eventsub-Message-Id", "Twitch-Eventsub-Message-Timestamp"},
			malformed: []hdrEdit{
				{"no sha256= prefix", "Twitch-Eventsub-Message-Signature", hex64},
				{"base64 signature", "Twitch-Eventsub-Message-Signature", "sha256=" + b64sig},
				{"unix timestamp instead of RFC 3339", "Twitch-Eventsub-Message-Timestamp", "1760000000"},
				{"message id with space", "Twitch-Eventsub-Message-Id", "befa7b53 d79d"},
			},
			extra: []suiteCase{
				{name: "signed message id changed", want: signature.ErrBadSignature,
					edit: func(_ *testing.T, _ scheme, r *signature.Request) {
						r.Header.Set("Twitch-Eventsub-Message-Id", "befa7b53-d79d-478f-86b9-120f112b0440")
					}},
			},
		},
		{
			// Linear's timestamp is the body's webhookTimestamp (ms), so
			// the body is built for each signing time.
			name: "linear", cfg: signature.Config{Scheme: "linear"},
			old: sym("lin_wh_old0123456789"), new: sym("lin_wh_new9876543210"), attacker: sym("lin_wh_attacker0123"),
			tol: time.Minute, required: []string{"Linear-Signature"},
			body: func(at time.Time) string {
				return fmt.Sprintf(`{"action":"create","type":"Issue","data":{"id":"evt_1","amount":1200},"webhookTimestamp":%d}`, at.UnixMilli())
			},
			malformed: []hdrEdit{
				{"sha256= prefix", "Linear-Signature", "sha256=" + hex64},
				{"base64 signature", "Linear-Signature", b64sig},
				{"short", "Linear-Signature", hex40},
			},
			extra: []suiteCase{
				{name: "signed body without webhookTimestamp", want: signature.ErrMalformedHeader,
					edit: func(t *testing.T, s scheme, r *signature.Request) {
						resign(t, s, r, `{"action":"create","type":"Issue","data":{"id":"evt_1"}}`)
					}},
				{name: "signed webhookTimestamp in seconds, not ms", want: signature.ErrStaleTimestamp,
					edit: func(t *testing.T, s scheme, r *signature.Request) {
						resign(t, s, r, fmt.Sprintf(`{"action":"create","webhookTimestamp":%d}`, now.Unix()))
					}},
			},
		},
		simple("intercom", "X-Hub-Signature",
			hdrEdit{"sha256= prefix", "X-Hub-Signature", "sha256=" + hex64},
			hdrEdit{"sha1= with a SHA-256-sized MAC", "X-Hub-Signature", "sha1=" + hex64},
			hdrEdit{"no prefix", "X-Hub-Signature", hex40}),
		simple("typeform", "Typeform-Signature",
			hdrEdit{"hex instead of base64", "Typeform-Signature", "sha256=" + hex64},
			hdrEdit{"no prefix", "Typeform-Signature", b64sig},
			hdrEdit{"unpadded", "Typeform-Signature", "sha256=" + strings.TrimRight(b64sig, "=")}),
		simple("lemonsqueezy", "X-Signature",
			hdrEdit{"sha256= prefix", "X-Signature", "sha256=" + hex64},
			hdrEdit{"base64", "X-Signature", b64sig},
			hdrEdit{"short", "X-Signature", hex40}),
		simple("dropbox", "X-Dropbox-Signature",
			hdrEdit{"non-hex", "X-Dropbox-Signature", strings.Repeat("zz", 32)},
			hdrEdit{"base64", "X-Dropbox-Signature", b64sig},
			hdrEdit{"long", "X-Dropbox-Signature", hex64 + "ab"}),
		simple("meta", "X-Hub-Signature-256",
			hdrEdit{"no prefix", "X-Hub-Signature-256", hex64},
			hdrEdit{"legacy sha1=", "X-Hub-Signature-256", "sha1=" + hex40},
			hdrEdit{"non-hex", "X-Hub-Signature-256", "sha256=" + strings.Repeat("gg", 32)}),
		simple("bitbucket", "X-Hub-Signature",
			hdrEdit{"no prefix", "X-Hub-Signature", hex64},
			hdrEdit{"GitHub's sha1= form", "X-Hub-Signature", "sha1=" + hex40},
			hdrEdit{"uppercase prefix", "X-Hub-Signature", "SHA256=" + hex64}),
		withURL(simple("square", "X-Square-Hmacsha256-Signature",
			hdrEdit{"hex instead of base64", "X-Square-Hmacsha256-Signature", hex64},
			hdrEdit{"legacy SHA-1 size", "X-Square-Hmacsha256-Signature", base64.StdEncoding.EncodeToString(make([]byte, 20))},
			hdrEdit{"unpadded", "X-Square-Hmacsha256-Signature", strings.TrimRight(b64sig, "=")})),
		withURL(scheme{
			name: "hubspot", cfg: signature.Config{Scheme: "hubspot"},
			old: sym("yyyyyyyy-old0-yyyy-yyyy-yyyyyyyyyyyy"), new: sym("yyyyyyyy-new0-yyyy-yyyy-yyyyyyyyyyyy"), attacker: sym("attacker-yyyy-yyyy-yyyy-yyyyyyyyyyyy"),
			tol: 5 * time.Minute, required: []string{"X-Hubspot-Signature-V3", "X-Hubspot-Request-Timestamp"},
			malformed: []hdrEdit{
				{"hex instead of base64", "X-Hubspot-Signature-V3", hex64},
				{"unpadded", "X-Hubspot-Signature-V3", strings.TrimRight(b64sig, "=")},
				{"fractional ms timestamp", "X-Hubspot-Request-Timestamp", "1760000000000.5"},
				{"RFC 3339 timestamp", "X-Hubspot-Request-Timestamp", "2025-10-09T08:53:20Z"},
			},
			extra: []suiteCase{
				{name: "signed method changed", want: signature.ErrBadSignature,
					edit: func(_ *testing.T, _ scheme, r *signature.Request) { r.Method = http.MethodPut }},
			},
		}),
	}
}

// withURL sets the public URL and the query of a scheme that signs the URL.
func withURL(s scheme) scheme {
	s.cfg.PublicURL = suiteURL
	s.query = suiteQuery
	return s
}

// resign replaces r by a request with body b signed with the new secret at now.
func resign(t *testing.T, s scheme, r *signature.Request, b string) {
	t.Helper()
	s.body = func(time.Time) string { return b }
	*r = *s.request(t, s.new, now)
}

// codeSchemes are the schemes with code of their own besides github and
// standard-webhooks.
func codeSchemes() []scheme {
	keys := suiteKeyMaterial()
	noBodySignature := map[string]error{"changed": nil, "reserialised": nil, "empty": nil}
	twilioBase := func(name, contentType, b string) scheme {
		return scheme{
			name: name, cfg: signature.Config{Scheme: "twilio", PublicURL: suiteURL}, query: suiteQuery, contentType: contentType,
			old: sym("twilio-old-auth-token-01"), new: sym("twilio-new-auth-token-02"), attacker: sym("twilio-attacker-token-03"),
			body: func(time.Time) string { return b }, required: []string{"X-Twilio-Signature"},
			malformed: []hdrEdit{
				{"hex instead of base64", "X-Twilio-Signature", strings.Repeat("ab", 20)},
				{"SHA-256-sized MAC", "X-Twilio-Signature", base64.StdEncoding.EncodeToString(make([]byte, 32))},
				{"unpadded", "X-Twilio-Signature", strings.TrimRight(base64.StdEncoding.EncodeToString(make([]byte, 20)), "=")},
			},
		}
	}
	twilioForm := twilioBase("twilio (form body)", "application/x-www-form-urlencoded",
		"CallSid=CA1234567890ABCDE&Digits=1200&From=%2B14158675309&To=%2B18005551212")
	// Twilio signs the decoded parameters sorted by name, not the raw
	// bytes: the same parameters in another order verify.
	twilioForm.reserialise = func(b string) string {
		p := strings.Split(b, "&")
		for i, j := 0, len(p)-1; i < j; i, j = i+1, j-1 {
			p[i], p[j] = p[j], p[i]
		}
		return strings.Join(p, "&")
	}
	twilioForm.bodyExpect = map[string]error{"reserialised": nil}
	twilioForm.bodyWhy = "Twilio signs the form parameters sorted by name (twilio-go RequestValidator), so their order is not signed"
	return []scheme{
		{
			name: "discord", cfg: signature.Config{Scheme: "discord"},
			old: keys["discord-old"], new: keys["discord-new"], attacker: keys["discord-attacker"],
			tol: 5 * time.Minute, required: []string{"X-Signature-Ed25519", "X-Signature-Timestamp"},
			malformed: []hdrEdit{
				{"non-hex signature", "X-Signature-Ed25519", strings.Repeat("zz", 64)},
				{"32-byte signature", "X-Signature-Ed25519", strings.Repeat("ab", 32)},
				{"fractional timestamp", "X-Signature-Timestamp", "1760000000.0"},
				{"negative timestamp", "X-Signature-Timestamp", "-1760000000"},
			},
		},
		{
			name: "sendgrid", cfg: signature.Config{Scheme: "sendgrid"},
			old: keys["sendgrid-old"], new: keys["sendgrid-new"], attacker: keys["sendgrid-attacker"],
			tol: 5 * time.Minute, required: []string{"X-Twilio-Email-Event-Webhook-Signature", "X-Twilio-Email-Event-Webhook-Timestamp"},
			malformed: []hdrEdit{
				{"not base64", "X-Twilio-Email-Event-Webhook-Signature", "!!notbase64!!"},
				{"longer than any P-256 signature", "X-Twilio-Email-Event-Webhook-Signature", base64.StdEncoding.EncodeToString(make([]byte, 100))},
				{"text timestamp", "X-Twilio-Email-Event-Webhook-Timestamp", "invalid timestamp"},
				{"leading zero timestamp", "X-Twilio-Email-Event-Webhook-Timestamp", "01760000000"},
			},
		},
		// JSON body: Twilio adds bodySHA256 to the URL and signs the URL.
		twilioBase("twilio", "application/json", body),
		twilioForm,
		{
			// Mailgun's signature lives in the body: its "required
			// headers" are the members of the signature object.
			name: "mailgun", cfg: signature.Config{Scheme: "mailgun"},
			old: sym("key-mailgun-old-signing-0123"), new: sym("key-mailgun-new-signing-4567"), attacker: sym("key-mailgun-attacker-89ab"),
			tol:        5 * time.Minute,
			bodyExpect: map[string]error{"changed": nil, "reserialised": nil, "empty": signature.ErrMalformedHeader},
			bodyWhy: "Mailgun signs signature.timestamp + signature.token only: the event data is not covered " +
				"(documentation.mailgun.com securing-webhooks), so changing or re-serialising it is accepted; an empty body has no signature object",
			extra: []suiteCase{
				{name: "no signature object", want: signature.ErrMissingHeader, edit: mailgunEdit(func(m, _ map[string]any) { delete(m, "signature") })},
				{name: "signature is a string", want: signature.ErrMissingHeader, edit: mailgunEdit(func(m, _ map[string]any) { m["signature"] = "x" })},
				{name: "missing signature.timestamp", want: signature.ErrMissingHeader, edit: mailgunEdit(func(_, s map[string]any) { delete(s, "timestamp") })},
				{name: "missing signature.token", want: signature.ErrMissingHeader, edit: mailgunEdit(func(_, s map[string]any) { delete(s, "token") })},
				{name: "missing signature.signature", want: signature.ErrMissingHeader, edit: mailgunEdit(func(_, s map[string]any) { delete(s, "signature") })},
				{name: "malformed signature.signature not hex", want: signature.ErrMalformedHeader, edit: mailgunEdit(func(_, s map[string]any) { s["signature"] = strings.Repeat("zz", 32) })},
				{name: "malformed signature.signature short", want: signature.ErrMalformedHeader, edit: mailgunEdit(func(_, s map[string]any) { s["signature"] = "6261647369676e6174757265" })},
				{name: "malformed signature.timestamp text", want: signature.ErrMalformedHeader, edit: mailgunEdit(func(_, s map[string]any) { s["timestamp"] = "yesterday" })},
				{name: "malformed signature.token a number", want: signature.ErrMalformedHeader, edit: mailgunEdit(func(_, s map[string]any) { s["token"] = 12 })},
				{name: "malformed body not JSON", want: signature.ErrMalformedHeader, edit: func(_ *testing.T, _ scheme, r *signature.Request) { r.Body = []byte("timestamp=1&token=x") }},
				{name: "signed token changed", want: signature.ErrBadSignature, edit: mailgunEdit(func(_, s map[string]any) { s["token"] = strings.Repeat("0", 50) })},
				{name: "signed timestamp changed", want: signature.ErrBadSignature, edit: mailgunEdit(func(_, s map[string]any) { s["timestamp"] = "1760000001" })},
				{name: "signature members re-ordered", want: nil, edit: mailgunEdit(func(_, _ map[string]any) {})},
			},
		},
		{
			name: "gitlab", cfg: signature.Config{Scheme: "gitlab"},
			old: sym("glpat-old-webhook-token"), new: sym("glpat-new-webhook-token"), attacker: sym("glpat-attacker-token"),
			required:   []string{"X-Gitlab-Token"},
			bodyExpect: noBodySignature,
			bodyWhy:    "GitLab sends the secret token itself in X-Gitlab-Token and signs nothing (docs.gitlab.com user/project/integrations/webhooks); TLS alone protects the body",
			// The token has no format: beyond a repeated header (in the
			// generic cases), nothing is malformed.
		},
		{
			name: "postmark", cfg: signature.Config{Scheme: "postmark"},
			old: sym("postmark:old-password"), new: sym("postmark:new-password"), attacker: sym("postmark:attacker"),
			required:   []string{"Authorization"},
			bodyExpect: noBodySignature,
			bodyWhy:    "Postmark has no signature, only the basic auth of the webhook URL (postmarkapp.com/developer/webhooks/webhooks-overview); TLS alone protects the body",
			malformed: []hdrEdit{
				{"bearer token", "Authorization", "Bearer cG9zdG1hcms6bmV3LXBhc3N3b3Jk"},
				{"basic without credentials", "Authorization", "Basic"},
				{"basic not base64", "Authorization", "Basic !!!"},
				{"basic without colon", "Authorization", "Basic " + base64.StdEncoding.EncodeToString([]byte("postmark"))},
			},
		},
	}
}

// mailgunEdit edits the signature object (s) of a Mailgun body (m).
func mailgunEdit(f func(m, s map[string]any)) func(*testing.T, scheme, *signature.Request) {
	return func(t *testing.T, _ scheme, r *signature.Request) {
		t.Helper()
		var m map[string]any
		d := json.NewDecoder(bytes.NewReader(r.Body))
		d.UseNumber()
		if err := d.Decode(&m); err != nil {
			t.Fatalf("mailgun body: %v", err)
		}
		s, _ := m["signature"].(map[string]any)
		f(m, s)
		b, err := json.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		r.Body = b
	}
}
