package signature

// presets are the providers that sign with an HMAC, by scheme name (their
// replay windows are the catalogue's, schemas/providers). Each one's rules
// come from the provider's documentation and are pinned by a vector from
// the provider's library or documentation (vectors_test.go,
// presets_test.go). Preset returns one.
var presets = map[string]HMAC{
	// Stripe-Signature: t=<unix>,v1=<hex>[,v1=…] over "<t>.<body>", the
	// whole "whsec_…" string as the key (stripe-go).
	"stripe": {Header: "Stripe-Signature", PartSeparator: ",", SignatureKey: "v1",
		Timestamp: TimestampSource{Part: "t"}, Content: "{timestamp}.{body}"},
	// Slack v0: X-Slack-Signature: v0=hex over "v0:<ts>:<body>" (slack-go).
	"slack": {Header: "X-Slack-Signature", Prefix: "v0=", Content: "v0:{timestamp}:{body}",
		Timestamp: TimestampSource{Header: "X-Slack-Request-Timestamp"}},
	// Shopify: base64 over the body; the event id in X-Shopify-Webhook-Id.
	"shopify": {Header: "X-Shopify-Hmac-Sha256", Encoding: "base64", IDHeader: "X-Shopify-Webhook-Id"},
	// Paddle Billing: Paddle-Signature: ts=<unix>;h1=<hex> over "<ts>:<body>".
	"paddle": {Header: "Paddle-Signature", PartSeparator: ";", SignatureKey: "h1",
		Timestamp: TimestampSource{Part: "ts"}, Content: "{timestamp}:{body}"},
	// Calendly: Calendly-Webhook-Signature: t=<unix>,v1=<hex> over "<t>.<body>";
	// Calendly's documentation suggests a three-minute window.
	"calendly": {Header: "Calendly-Webhook-Signature", PartSeparator: ",", SignatureKey: "v1",
		Timestamp: TimestampSource{Part: "t"}, Content: "{timestamp}.{body}"},
	// Zoom: x-zm-signature: v0=hex over "v0:<ts>:<body>", ts in x-zm-request-timestamp.
	"zoom": {Header: "X-Zm-Signature", Prefix: "v0=", Content: "v0:{timestamp}:{body}",
		Timestamp: TimestampSource{Header: "X-Zm-Request-Timestamp"}},
	// Twitch EventSub: sha256=hex over message id + RFC 3339 timestamp +
	// body; Twitch asks to refuse messages older than ten minutes.
	"twitch": {Header: "Twitch-Eventsub-Message-Signature", Prefix: "sha256=",
		Content: "{id}{timestamp}{body}", IDHeader: "Twitch-Eventsub-Message-Id",
		Timestamp: TimestampSource{Header: "Twitch-Eventsub-Message-Timestamp", Format: "rfc3339"}},
	// Linear: Linear-Signature: hex over the body; the body's
	// webhookTimestamp (ms) is checked within a minute, as Linear's SDK does.
	"linear": {Header: "Linear-Signature",
		Timestamp: TimestampSource{Path: "webhookTimestamp", Format: "unix_ms"}},
	// Intercom: X-Hub-Signature: sha1=hex over the body, the app's client secret as key.
	"intercom": {Header: "X-Hub-Signature", Algorithm: "sha1", Prefix: "sha1="},
	// Typeform: Typeform-Signature: sha256=base64 over the body.
	"typeform": {Header: "Typeform-Signature", Prefix: "sha256=", Encoding: "base64"},
	// Lemon Squeezy: X-Signature: hex over the body.
	"lemonsqueezy": {Header: "X-Signature"},
	// Dropbox: X-Dropbox-Signature: hex over the body, the app secret as key.
	"dropbox": {Header: "X-Dropbox-Signature"},
	// Meta (WhatsApp, Messenger, Instagram): X-Hub-Signature-256: sha256=hex
	// over the body, the app secret as key.
	"meta": {Header: "X-Hub-Signature-256", Prefix: "sha256="},
	// Bitbucket Cloud: X-Hub-Signature: sha256=hex over the body.
	"bitbucket": {Header: "X-Hub-Signature", Prefix: "sha256="},
	// Square: x-square-hmacsha256-signature: base64 over notification URL + body.
	"square": {Header: "X-Square-Hmacsha256-Signature", Encoding: "base64", Content: "{url}{body}"},
	// HubSpot v3: X-HubSpot-Signature-v3: base64 over method + URI (with
	// twelve escapes decoded) + body + timestamp (ms); HubSpot refuses
	// timestamps older than five minutes.
	"hubspot": {Header: "X-Hubspot-Signature-V3", Encoding: "base64", URLDecode: true,
		Content: "{method}{url}{body}{timestamp}", Timestamp: TimestampSource{Header: "X-Hubspot-Request-Timestamp", Format: "unix_ms"}},
}

// Preset returns the HMAC rules of a preset scheme, or false.
func Preset(scheme string) (HMAC, bool) {
	h, ok := presets[scheme]
	return h, ok
}
