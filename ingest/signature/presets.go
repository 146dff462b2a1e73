package signature

import "time"

// Preset is a provider's signing rules expressed in the declarative HMAC
// scheme.
type Preset struct {
	HMAC HMAC
	// Tolerance is the provider's documented replay window; 0 means 300 s.
	Tolerance time.Duration
}

func (p Preset) tolerance() time.Duration {
	if p.Tolerance == 0 {
		return defaultTolerance
	}
	return p.Tolerance
}

// Presets are the providers that sign with an HMAC, by scheme name. Each
// one's rules come from the provider's documentation and are pinned by a
// vector from the provider's library or documentation (vectors_test.go,
// presets_test.go).
var Presets = map[string]Preset{
	// Stripe-Signature: t=<unix>,v1=<hex>[,v1=…] over "<t>.<body>", the
	// whole "whsec_…" string as the key (stripe-go).
	"stripe": {HMAC: HMAC{Header: "Stripe-Signature", PartSeparator: ",", SignatureKey: "v1",
		Timestamp: TimestampSource{Part: "t"}, Content: "{timestamp}.{body}"}},
	// Slack v0: X-Slack-Signature: v0=hex over "v0:<ts>:<body>" (slack-go).
	"slack": {HMAC: HMAC{Header: "X-Slack-Signature", Prefix: "v0=", Content: "v0:{timestamp}:{body}",
		Timestamp: TimestampSource{Header: "X-Slack-Request-Timestamp"}}},
	// Shopify: base64 over the body; the event id in X-Shopify-Webhook-Id.
	"shopify": {HMAC: HMAC{Header: "X-Shopify-Hmac-Sha256", Encoding: "base64", IDHeader: "X-Shopify-Webhook-Id"}},
	// Paddle Billing: Paddle-Signature: ts=<unix>;h1=<hex> over "<ts>:<body>".
	"paddle": {HMAC: HMAC{Header: "Paddle-Signature", PartSeparator: ";", SignatureKey: "h1",
		Timestamp: TimestampSource{Part: "ts"}, Content: "{timestamp}:{body}"}},
	// Calendly: Calendly-Webhook-Signature: t=<unix>,v1=<hex> over "<t>.<body>";
	// Calendly's documentation suggests a three-minute window.
	"calendly": {HMAC: HMAC{Header: "Calendly-Webhook-Signature", PartSeparator: ",", SignatureKey: "v1",
		Timestamp: TimestampSource{Part: "t"}, Content: "{timestamp}.{body}"}, Tolerance: 3 * time.Minute},
	// Zoom: x-zm-signature: v0=hex over "v0:<ts>:<body>", ts in x-zm-request-timestamp.
	"zoom": {HMAC: HMAC{Header: "X-Zm-Signature", Prefix: "v0=", Content: "v0:{timestamp}:{body}",
		Timestamp: TimestampSource{Header: "X-Zm-Request-Timestamp"}}},
	// Twitch EventSub: sha256=hex over message id + RFC 3339 timestamp +
	// body; Twitch asks to refuse messages older than ten minutes.
	"twitch": {HMAC: HMAC{Header: "Twitch-Eventsub-Message-Signature", Prefix: "sha256=",
		Content: "{id}{timestamp}{body}", IDHeader: "Twitch-Eventsub-Message-Id",
		Timestamp: TimestampSource{Header: "Twitch-Eventsub-Message-Timestamp", Format: "rfc3339"}}, Tolerance: 10 * time.Minute},
	// Linear: Linear-Signature: hex over the body; the body's
	// webhookTimestamp (ms) is checked within a minute, as Linear's SDK does.
	"linear": {HMAC: HMAC{Header: "Linear-Signature",
		Timestamp: TimestampSource{Path: "webhookTimestamp", Format: "unix_ms"}}, Tolerance: time.Minute},
	// Intercom: X-Hub-Signature: sha1=hex over the body, the app's client secret as key.
	"intercom": {HMAC: HMAC{Header: "X-Hub-Signature", Algorithm: "sha1", Prefix: "sha1="}},
	// Typeform: Typeform-Signature: sha256=base64 over the body.
	"typeform": {HMAC: HMAC{Header: "Typeform-Signature", Prefix: "sha256=", Encoding: "base64"}},
	// Lemon Squeezy: X-Signature: hex over the body.
	"lemonsqueezy": {HMAC: HMAC{Header: "X-Signature"}},
	// Dropbox: X-Dropbox-Signature: hex over the body, the app secret as key.
	"dropbox": {HMAC: HMAC{Header: "X-Dropbox-Signature"}},
	// Meta (WhatsApp, Messenger, Instagram): X-Hub-Signature-256: sha256=hex
	// over the body, the app secret as key.
	"meta": {HMAC: HMAC{Header: "X-Hub-Signature-256", Prefix: "sha256="}},
	// Bitbucket Cloud: X-Hub-Signature: sha256=hex over the body.
	"bitbucket": {HMAC: HMAC{Header: "X-Hub-Signature", Prefix: "sha256="}},
	// Square: x-square-hmacsha256-signature: base64 over notification URL + body.
	"square": {HMAC: HMAC{Header: "X-Square-Hmacsha256-Signature", Encoding: "base64", Content: "{url}{body}"}},
	// HubSpot v3: X-HubSpot-Signature-v3: base64 over method + URI (with
	// twelve escapes decoded) + body + timestamp (ms); HubSpot refuses
	// timestamps older than five minutes.
	"hubspot": {HMAC: HMAC{Header: "X-Hubspot-Signature-V3", Encoding: "base64", URLDecode: true,
		Content: "{method}{url}{body}{timestamp}", Timestamp: TimestampSource{Header: "X-Hubspot-Request-Timestamp", Format: "unix_ms"}}},
}
