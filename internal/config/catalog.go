package config

import (
	"slices"
)

// Kind is everything gatehouse knows about one kind of provider, in one
// place: how it signs, where its event id, type and creation time are, which
// object an event is about, how its API is called, which handshakes it
// makes and what the consumers do with its events. The stages read it from
// here (ingest: Envelope, fields and handshakes; consumers: Handlers and
// VersionHeader; this package: the defaults); the signing code itself is
// ingest/signature's, by Scheme. Adding a provider that signs like an
// existing one is one entry in Kinds (kinds.go).
type Kind struct {
	// Scheme names the verifier in ingest/signature.
	Scheme string
	// Envelope says how the receiver finds the event's id, type and
	// creation time: EnvelopeBody (the body's own id, type and
	// created_at/created/timestamp; id from the webhook-id header when the
	// body has none), EnvelopeFields (EventID, EventType and CreatedAt say
	// where; the body is wrapped as {"id","type","created_at","data": body})
	// or the older wrapped kinds EnvelopeGitHub (X-GitHub-Delivery,
	// X-GitHub-Event + "." + action), EnvelopeShopify (X-Shopify-Webhook-Id,
	// X-Shopify-Topic with "/" → ".", X-Shopify-Triggered-At),
	// EnvelopeSlack (event_id, event.type or type, event_time).
	Envelope string
	// EventID, EventType and CreatedAt locate the envelope's fields for
	// EnvelopeFields.
	EventID, EventType, CreatedAt Fields
	// Batch: the body is a JSON array of events, each recorded as an event
	// of its own (its fields read from the element; aggregate paths start
	// at data, the element).
	Batch bool
	// Form: the body may be application/x-www-form-urlencoded; it is then
	// stored as a JSON object of its fields (a repeated field as an array).
	Form bool
	// Handshake is a signed verification request answered, after
	// verification, instead of stored: HandshakeSlack, HandshakeZoom,
	// HandshakeTwitch, HandshakeDiscord, or "".
	Handshake string
	// GetHandshake is an unsigned GET the provider makes to check the
	// endpoint: HandshakeMeta or HandshakeDropbox; "" (the default) answers
	// GET with 405.
	GetHandshake string
	// AggregateIDPath is the default aggregate_id_path (the Kafka key).
	AggregateIDPath []string
	// Handlers are the consumers' built-in handlers for a provider with an
	// api_url: HandlersReference, HandlersStripe, or "" (events skipped).
	Handlers string
	// VersionHeader carries api_version on API calls (default Api-Version).
	VersionHeader string
	// Vector says where the verification is proven: the official library
	// or the documentation the tests take their vectors from.
	Vector string
	// Note is what an operator must know about the provider ("" if nothing).
	Note string
}

// Envelope kinds, handshakes and consumer handler sets of Kind.
const (
	EnvelopeBody    = "body"
	EnvelopeFields  = "fields"
	EnvelopeGitHub  = "github"
	EnvelopeShopify = "shopify"
	EnvelopeSlack   = "slack"

	HandshakeSlack   = "slack_url_verification"
	HandshakeZoom    = "zoom_url_validation"
	HandshakeTwitch  = "twitch_callback_verification"
	HandshakeDiscord = "discord_ping"
	HandshakeMeta    = "meta_verify_token"
	HandshakeDropbox = "dropbox_challenge"

	HandlersReference = "reference"
	HandlersStripe    = "stripe"
)

// Field says where one value of an event's envelope comes from: a request
// header, a dotted path into the body ("event-data.id", "entry.0.id"), a
// constant, the body's digest ("sha256:<hex>", for providers that send no
// event id: a redelivery carries the same bytes), or the parts of Join that
// are present, joined by "." (the first one must be present).
type Field struct {
	Header string  `yaml:"header"`
	Path   string  `yaml:"path"`
	Value  string  `yaml:"value"`
	Digest bool    `yaml:"digest"`
	Join   []Field `yaml:"join"`
}

// Fields are alternatives: the first one present gives the value.
type Fields []Field

// Kinds is the provider catalogue, keyed by scheme (providers.<name>.scheme).
var Kinds = kinds()

// Schemes lists the schemes a provider may use, sorted.
var Schemes = func() []string {
	var out []string
	for s := range Kinds {
		out = append(out, s)
	}
	slices.Sort(out)
	return out
}()

// Kind returns the catalogue entry of the provider's scheme, with the
// provider's own event_id, event_type and created_at where it sets them.
func (p *Provider) Kind() Kind {
	k := Kinds[p.Scheme]
	if len(p.EventID) > 0 {
		k.EventID = p.EventID
	}
	if len(p.EventType) > 0 {
		k.EventType = p.EventType
	}
	if len(p.CreatedAt) > 0 {
		k.CreatedAt = p.CreatedAt
	}
	return k
}

// validate checks that f names exactly one source.
func (f Field) validate() error {
	n := 0
	for _, set := range []bool{f.Header != "", f.Path != "", f.Value != "", f.Digest, len(f.Join) > 0} {
		if set {
			n++
		}
	}
	if n != 1 {
		return errFieldSource
	}
	for _, j := range f.Join {
		if err := j.validate(); err != nil {
			return err
		}
	}
	return nil
}
