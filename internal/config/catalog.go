package config

import "slices"

// Kind is everything gatehouse knows about one kind of provider, in one
// place: how it signs, where its event id, type and creation time are, which
// object an event is about, how its API is called and what the consumers do
// with its events. The stages read it from here (ingest: Envelope and
// Handshake; consumers: Handlers and VersionHeader; this package: the
// defaults); the signing code itself is ingest/signature's, by Scheme.
// Adding a provider that signs like an existing one is one entry here.
type Kind struct {
	// Scheme names the verifier in ingest/signature.
	Scheme string
	// Envelope says how the receiver finds the event's id, type and
	// creation time: EnvelopeBody (the body's own id, type and
	// created_at/created/timestamp; id from the webhook-id header when the
	// body has none), or a provider whose body is wrapped as
	// {"id","type","created_at","data": body}: EnvelopeGitHub (X-GitHub-Delivery,
	// X-GitHub-Event + "." + action), EnvelopeShopify (X-Shopify-Webhook-Id,
	// X-Shopify-Topic with "/" → ".", X-Shopify-Triggered-At),
	// EnvelopeSlack (event_id, event.type or type, event_time).
	Envelope string
	// Handshake is a verification request answered, after verification,
	// instead of stored: "slack_url_verification" or "".
	Handshake string
	// AggregateIDPath is the default aggregate_id_path (the Kafka key).
	AggregateIDPath []string
	// Handlers are the consumers' built-in handlers for a provider with an
	// api_url: HandlersReference, HandlersStripe, or "" (events skipped).
	Handlers string
	// VersionHeader carries api_version on API calls (default Api-Version).
	VersionHeader string
}

// Envelope kinds and consumer handler sets of Kind.
const (
	EnvelopeBody    = "body"
	EnvelopeGitHub  = "github"
	EnvelopeShopify = "shopify"
	EnvelopeSlack   = "slack"

	HandlersReference = "reference"
	HandlersStripe    = "stripe"
)

// Kinds is the provider catalogue, keyed by scheme (providers.<name>.scheme).
var Kinds = map[string]Kind{
	"reference": {Scheme: "reference", Envelope: EnvelopeBody, Handlers: HandlersReference},
	"stripe": {Scheme: "stripe", Envelope: EnvelopeBody, AggregateIDPath: []string{"data.object.id"},
		Handlers: HandlersStripe, VersionHeader: "Stripe-Version"},
	"github":            {Scheme: "github", Envelope: EnvelopeGitHub, AggregateIDPath: []string{"data.repository.full_name"}},
	"slack":             {Scheme: "slack", Envelope: EnvelopeSlack, Handshake: "slack_url_verification"},
	"standard-webhooks": {Scheme: "standard-webhooks", Envelope: EnvelopeBody},
	"shopify":           {Scheme: "shopify", Envelope: EnvelopeShopify},
}

// Schemes lists the schemes a provider may use, sorted.
var Schemes = func() []string {
	var out []string
	for s := range Kinds {
		out = append(out, s)
	}
	slices.Sort(out)
	return out
}()

// Kind returns the catalogue entry of the provider's scheme.
func (p *Provider) Kind() Kind { return Kinds[p.Scheme] }
