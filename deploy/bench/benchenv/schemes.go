package benchenv

import (
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/gatehouse/gatehouse/ingest/signature"
)

// MixSchemes are the catalogue schemes of the receiver benchmark's mix (wireOf).
var MixSchemes = []string{"github", "stripe", "shopify", "slack", "standard-webhooks", "twilio", "mailgun"}

// PublicBase prefixes the public_url of the mix's URL-signing providers.
const PublicBase = "https://hooks.bench.invalid/webhooks/"

// wire is one scheme's deliveries of event n: a body template of n (%[1]d),
// the Unix and RFC 3339 times (%[2]d, %[3]s), the padding (%[4]s) and n mod
// 97 (%[5]d); a header (head, "{n}" replaced); the signer's id template.
type wire struct {
	form           bool
	body, head, id string
	headName       string
}

// wireOf is scheme's wire: GitHub's body HMAC with an unsigned delivery id
// (so the replay guard), Stripe's timestamped header, Shopify's base64
// HMAC, Slack's v0:, Standard Webhooks, Twilio's form body with the URL
// signed, Mailgun's token inside the body.
func wireOf(scheme string) (wire, bool) {
	w, ok := map[string]wire{
		"github": {body: `{"action":"opened","issue":{"id":%[1]d,"number":%[1]d,"title":"%[4]s"},"repository":{"full_name":"octo/repo%[5]d"}}`,
			headName: "X-GitHub-Event", head: "issues", id: "4242:72d3162e-cc78-11e3-%012d"},
		"stripe": {body: `{"id":"evt_%[1]d","object":"event","type":"payment_intent.succeeded","created":%[2]d,` +
			`"data":{"object":{"id":"pi_%[1]d","object":"payment_intent","amount":1999,"description":"%[4]s"}}}`},
		"shopify": {body: `{"id":%[1]d,"email":"buyer@example.com","total_price":"19.99","note":"%[4]s"}`,
			headName: "X-Shopify-Topic", head: "orders/create", id: "b54557e4-bdd9-4b37-%012d"},
		"slack":             {body: `{"type":"event_callback","team_id":"T1","event_id":"Ev%[1]d","event_time":%[2]d,"event":{"type":"app_mention","text":"%[4]s"}}`},
		"standard-webhooks": {body: `{"type":"invoice.paid","timestamp":"%[3]s","data":{"invoice_id":"in_%[1]d","memo":"%[4]s"}}`, id: "msg_%d"},
		"twilio": {form: true, body: "MessageSid=SM%[1]d&MessageStatus=delivered&AccountSid=AC1&To=%%2B15558675310&Body=%[4]s",
			headName: "I-Twilio-Idempotency-Token", head: "idem-{n}"},
		"mailgun": {body: `{"event-data":{"id":"mg%[1]d","event":"delivered","timestamp":%[2]d,` +
			`"message":{"headers":{"message-id":"%[1]d@example.com","subject":"%[4]s"}}}}`},
	}[scheme]
	return w, ok
}

// bodyOf is the body of event n at now.
func (w wire) bodyOf(n int64, now time.Time, pad string) string {
	if w.form {
		pad = url.QueryEscape(pad)
	}
	return fmt.Sprintf(w.body, n, now.Unix(), now.UTC().Format(time.RFC3339), pad, n%97)
}

// SchemeYAML is the providers entry of the mix provider named after scheme.
func SchemeYAML(scheme string, secret []byte) string {
	s := fmt.Sprintf("  %s:\n    scheme: %s\n    secrets:\n      - id: bench\n        value: %q\n", scheme, scheme, string(secret))
	if signature.NeedsPublicURL(scheme, nil) {
		s += "    public_url: " + PublicBase + scheme + "\n"
	}
	return s
}

// NewSchemeDeliveries returns the deliveries of scheme (one of
// MixSchemes) as its provider sends them, to the provider of the same name
// at addr, signed with secret, each body padded to about bodyBytes.
func NewSchemeDeliveries(scheme, addr string, secret []byte, bodyBytes int) (*Deliveries, error) {
	w, ok := wireOf(scheme)
	if !ok {
		return nil, fmt.Errorf("bench: no wire format for scheme %q (have %s)", scheme, strings.Join(MixSchemes, ", "))
	}
	cfg := signature.Config{Scheme: scheme}
	if signature.NeedsPublicURL(scheme, nil) {
		cfg.PublicURL = PublicBase + scheme
	}
	return newDeliveries(scheme, addr, secret, bodyBytes, cfg, w), nil
}
