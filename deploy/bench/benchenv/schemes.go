package benchenv

import (
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/gatehouse/gatehouse/ingest/signature"
)

// MixSchemes are the catalogue schemes the receiver benchmark's mix
// section sends, each as its provider sends it: GitHub (body HMAC, an
// unsigned delivery id, so the replay guard), Stripe (timestamped
// signature header), Shopify (base64 HMAC), Slack (v0:), Standard
// Webhooks, Twilio (form-encoded, the URL signed) and Mailgun (a token
// inside the body).
var MixSchemes = []string{"github", "stripe", "shopify", "slack", "standard-webhooks", "twilio", "mailgun"}

// PublicBase is the public URL prefix the mix's URL-signing providers are
// configured with (public_url: PublicBase + name).
const PublicBase = "https://hooks.bench.invalid/webhooks/"

// wire is one scheme's deliveries: the body and provider headers of event
// n (pad makes the body about its target size), and the event id the
// signer needs ("" where the scheme takes none).
type wire struct {
	form bool
	body func(n int64, now time.Time, pad string) string
	head func(n int64) map[string]string
	id   func(n int64) string
}

func wireOf(scheme string) (wire, bool) {
	ws := map[string]wire{
		"github": {
			body: func(n int64, _ time.Time, pad string) string {
				return `{"action":"opened","issue":{"id":` + itoa(n) + `,"number":` + itoa(n) + `,"title":"` + pad + `"},"repository":{"full_name":"octo/repo` + itoa(n%97) + `"}}`
			},
			head: func(int64) map[string]string { return map[string]string{"X-GitHub-Event": "issues"} },
			id:   func(n int64) string { return "4242:72d3162e-cc78-11e3-" + fmt.Sprintf("%012d", n) },
		},
		"stripe": {
			body: func(n int64, now time.Time, pad string) string {
				return `{"id":"evt_` + itoa(n) + `","object":"event","type":"payment_intent.succeeded","created":` + itoa(now.Unix()) +
					`,"data":{"object":{"id":"pi_` + itoa(n) + `","object":"payment_intent","amount":1999,"description":"` + pad + `"}}}`
			},
		},
		"shopify": {
			body: func(n int64, _ time.Time, pad string) string {
				return `{"id":` + itoa(n) + `,"email":"buyer@example.com","total_price":"19.99","note":"` + pad + `"}`
			},
			head: func(int64) map[string]string { return map[string]string{"X-Shopify-Topic": "orders/create"} },
			id:   func(n int64) string { return "b54557e4-bdd9-4b37-" + fmt.Sprintf("%012d", n) },
		},
		"slack": {
			body: func(n int64, now time.Time, pad string) string {
				return `{"type":"event_callback","team_id":"T1","event_id":"Ev` + itoa(n) + `","event_time":` + itoa(now.Unix()) +
					`,"event":{"type":"app_mention","text":"` + pad + `"}}`
			},
		},
		"standard-webhooks": {
			body: func(n int64, now time.Time, pad string) string {
				return `{"type":"invoice.paid","timestamp":"` + now.UTC().Format(time.RFC3339) + `","data":{"invoice_id":"in_` + itoa(n) + `","memo":"` + pad + `"}}`
			},
			id: func(n int64) string { return "msg_" + itoa(n) },
		},
		"twilio": {
			form: true,
			body: func(n int64, _ time.Time, pad string) string {
				return "MessageSid=SM" + itoa(n) + "&MessageStatus=delivered&AccountSid=AC1&To=%2B15558675310&Body=" + url.QueryEscape(pad)
			},
			head: func(n int64) map[string]string {
				return map[string]string{"I-Twilio-Idempotency-Token": "idem-" + itoa(n)}
			},
		},
		"mailgun": {
			body: func(n int64, now time.Time, pad string) string {
				return `{"event-data":{"id":"mg` + itoa(n) + `","event":"delivered","timestamp":` + itoa(now.Unix()) +
					`,"message":{"headers":{"message-id":"` + itoa(n) + `@example.com","subject":"` + pad + `"}}}}`
			},
		},
	}
	w, ok := ws[scheme]
	return w, ok
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

// SchemeYAML is the providers.<scheme> entry of a mix provider named after
// its scheme, verifying with secret.
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
