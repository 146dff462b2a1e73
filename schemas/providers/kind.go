// Package providers is the provider catalogue as data: for each kind of
// provider gatehouse knows (the values of providers.<name>.scheme), where
// its event id, type and creation time are, which handshakes it makes,
// which object an event is about, how its API is called and what the
// consumers do with its events, plus the declarative HMAC definition type.
// Every stage reads it through Lookup; it imports no stage. The signing
// code is ingest/signature's, keyed by the same scheme name.
package providers

import (
	"errors"
	"maps"
	"slices"
	"time"
)

// Kind is everything gatehouse knows about one kind of provider, in one
// place. The stages read it through Lookup (ingest: Envelope, fields and
// handshakes; consumers: API, the fetch rules; internal/config: the
// defaults); the signing code itself is ingest/signature's, by Scheme.
// Adding a provider that signs like an existing one is one entry of the
// catalogue (catalog.go).
type Kind struct {
	// Scheme names the verifier in ingest/signature.
	Scheme string
	// Tolerance is the provider's documented replay window for its signed
	// timestamp; 0 means DefaultTolerance.
	Tolerance time.Duration
	// SignsURL: the signature covers the URL the provider called, so the
	// provider needs public_url.
	SignsURL bool
	// Envelope says how the receiver finds the event's id, type and
	// creation time: EnvelopeBody (the provider sends the envelope itself:
	// the body's own id, type and created_at/created/timestamp; the id from
	// the webhook-id header when the body has none; stored verbatim) or
	// EnvelopeFields (EventID, EventType and CreatedAt say where; the body is
	// wrapped as {"id","type","created_at","data": body}).
	Envelope string
	// EventID, EventType and CreatedAt locate the envelope's fields for
	// EnvelopeFields.
	EventID, EventType, CreatedAt Fields
	// SignedID names, for people, the header(s) the signing scheme reads
	// the event id from (what a Signed field stands for).
	SignedID string
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
	// API is how the consumers fetch the objects of a provider with an
	// api_url: the auth kind, the version header and the default fetch
	// rules (fetchcat.go); zero for a provider without an object API.
	API API
	// Vector says where the verification is proven: the official library
	// or the documentation the tests take their vectors from.
	Vector string
	// Note is what an operator must know about the provider ("" if nothing).
	Note string
	// Guard is the replay guard the receiver keeps beside the inbox's
	// (provider, event id) key, for a provider whose event id is not
	// covered by its signature: GuardContent (GitHub, Shopify, Bitbucket,
	// Twilio, Linear: a delivery whose signed content was already recorded
	// under another id is a duplicate), GuardToken (Mailgun: a signature
	// token is accepted once), or "" (the id is signed, or nothing is).
	Guard string
	// Redelivery is how long the provider keeps redelivering an event, as
	// it documents it, with the source (redelivery.go): the least dedupe
	// window (storage.dedupe_window) an endpoint of this scheme accepts.
	Redelivery Redelivery
	// Reconcile is how the provider's own record of what it sent can be
	// compared with the inbox (reconcile.go).
	Reconcile Reconcile
}

// Replay guards of Kind.Guard.
const (
	GuardContent = "content"
	GuardToken   = "token"
)

// Envelope kinds and handshakes of Kind.
const (
	EnvelopeBody   = "body"
	EnvelopeFields = "fields"

	HandshakeSlack   = "slack_url_verification"
	HandshakeZoom    = "zoom_url_validation"
	HandshakeTwitch  = "twitch_callback_verification"
	HandshakeDiscord = "discord_ping"
	HandshakeMeta    = "meta_verify_token"
	HandshakeDropbox = "dropbox_challenge"
)

// Field says where one value of an event's envelope comes from: a request
// header, a dotted path into the body ("event-data.id", "entry.0.id"), a
// constant, the body's digest ("sha256:<hex>", for providers that send no
// event id: a redelivery carries the same bytes), or the parts of Join that
// are present, joined by "." (the first part that is not a constant Value
// must be present, or the whole Join is absent and the next alternative of
// Fields is tried).
type Field struct {
	Header string `yaml:"header"`
	Path   string `yaml:"path"`
	Value  string `yaml:"value"`
	Digest bool   `yaml:"digest"`
	// Signed is the event id the signing scheme read from its own id
	// header(s) (GitHub's hook and delivery ids, Shopify's webhook id, an
	// hmac definition's id_header).
	Signed bool    `yaml:"signed"`
	Join   []Field `yaml:"join"`
	// Replace rewrites the value: pairs of old and new text ("/", ".").
	Replace []string `yaml:"replace"`
}

// Fields are alternatives: the first one present gives the value.
type Fields []Field

// DefaultTolerance is the replay window of a signed timestamp when the
// provider documents none.
const DefaultTolerance = 300 * time.Second

// catalogue is built once; Lookup hands out copies.
var catalogue = func() map[string]Kind {
	ks := kinds()
	all := apis()
	maps.Copy(all, moreAPIs())
	for scheme, api := range all {
		k := ks[scheme]
		k.API = api
		ks[scheme] = k
	}
	return ks
}()

// cloneFetch copies rules deeply enough that no caller shares a slice or
// map with the catalogue.
func cloneFetch(fs []Fetch) []Fetch {
	if fs == nil {
		return nil
	}
	out := make([]Fetch, len(fs))
	for i, f := range fs {
		out[i] = f
		out[i].Types = slices.Clone(f.Types)
		out[i].Version = slices.Clone(f.Version)
		out[i].Retry = slices.Clone(f.Retry)
		out[i].When = maps.Clone(f.When)
		out[i].Query = maps.Clone(f.Query)
		out[i].Variables = maps.Clone(f.Variables)
		out[i].RetryErrors = slices.Clone(f.RetryErrors)
	}
	return out
}

// Lookup returns the catalogue entry of a scheme (providers.<name>.scheme),
// or false when the catalogue has none. The Kind is a copy: changing it
// changes nothing for other callers.
func Lookup(scheme string) (Kind, bool) {
	k, ok := catalogue[scheme]
	if !ok {
		return Kind{}, false
	}
	k.AggregateIDPath = slices.Clone(k.AggregateIDPath)
	k.Redelivery = redeliveries[scheme]
	k.Reconcile = reconciles[scheme]
	if e := k.Reconcile.Events; e != nil {
		c := *e
		k.Reconcile.Events = &c
	}
	k.EventID, k.EventType, k.CreatedAt = k.EventID.clone(), k.EventType.clone(), k.CreatedAt.clone()
	k.API.Fetch = cloneFetch(k.API.Fetch)
	return k, true
}

// Names lists every scheme of the catalogue, sorted.
func Names() []string {
	out := make([]string, 0, len(catalogue))
	for s := range catalogue {
		out = append(out, s)
	}
	slices.Sort(out)
	return out
}

// ReplayWindow is k's replay window: Tolerance, or DefaultTolerance.
func (k Kind) ReplayWindow() time.Duration {
	if k.Tolerance == 0 {
		return DefaultTolerance
	}
	return k.Tolerance
}

func (fs Fields) clone() Fields {
	if fs == nil {
		return nil
	}
	out := make(Fields, len(fs))
	for i, f := range fs {
		out[i] = f
		out[i].Join = Fields(f.Join).clone()
		out[i].Replace = slices.Clone(f.Replace)
	}
	return out
}

// Validate checks that f names exactly one source (ErrFieldSource).
func (f Field) Validate() error {
	n := 0
	for _, set := range []bool{f.Header != "", f.Path != "", f.Value != "", f.Digest, f.Signed, len(f.Join) > 0} {
		if set {
			n++
		}
	}
	if n != 1 {
		return ErrFieldSource
	}
	if len(f.Replace)%2 != 0 {
		return ErrFieldReplace
	}
	for _, j := range f.Join {
		if err := j.Validate(); err != nil {
			return err
		}
	}
	return nil
}

// ErrFieldSource is Field.Validate's error.
var ErrFieldSource = errors.New("set exactly one of header, path, value, digest, signed and join")

// ErrFieldReplace is Field.Validate's error for an odd replace list.
var ErrFieldReplace = errors.New("replace takes pairs of old and new text")
