package consumers

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/gatehouse/gatehouse/schemas/providers"
)

// Effect is the business action of one event: the authoritative state of a
// provider object, applied to the projection under the version guard. An
// Effect without ObjectID is an action done elsewhere (a forward): the
// event succeeds and nothing is projected.
type Effect struct {
	ObjectType string          // e.g. payment, invoice, payment_intent
	ObjectID   string          // the provider's object id
	Version    int64           // only a strictly greater version replaces the stored one
	Data       json.RawMessage // the object as the provider's API returned it
}

// Handler processes one event. It returns the effect to apply, or nil when
// the event needs none. Errors are classified with Classify: wrap permanent
// ones with Permanent.
type Handler interface {
	Handle(ctx context.Context, ev *Event) (*Effect, error)
}

// HandlerFunc adapts a function to Handler.
type HandlerFunc func(ctx context.Context, ev *Event) (*Effect, error)

// Handle calls f.
func (f HandlerFunc) Handle(ctx context.Context, ev *Event) (*Effect, error) { return f(ctx, ev) }

// Registry maps (provider, event type) to a Handler. A pattern is an exact
// type ("invoice.paid"), a prefix ending in ".*" ("invoice.*") or "*".
type Registry struct {
	m map[string]map[string]Handler
}

// NewRegistry returns an empty Registry.
func NewRegistry() *Registry { return &Registry{m: map[string]map[string]Handler{}} }

// Register adds h for provider and pattern, replacing an earlier one.
func (r *Registry) Register(provider, pattern string, h Handler) {
	if r.m[provider] == nil {
		r.m[provider] = map[string]Handler{}
	}
	r.m[provider][pattern] = h
}

// Lookup returns the handler of an event type: the exact match, else the
// longest matching prefix pattern, else "*"; nil when none matches.
func (r *Registry) Lookup(provider, typ string) Handler {
	hs := r.m[provider]
	if h, ok := hs[typ]; ok {
		return h
	}
	for t := typ; ; {
		i := strings.LastIndexByte(t, '.')
		if i < 0 {
			break
		}
		t = t[:i]
		if h, ok := hs[t+".*"]; ok {
			return h
		}
	}
	return hs["*"]
}

// RegisterReference registers, for a provider speaking the reference
// scheme, the catalogue's fetch rules of the reference provider:
// GET {api}/v1/payments/<data.payment_id> for payment.* and
// /v1/invoices/<data.invoice_id> for invoice.*, the version being the
// object's "version" (an integer), or else its "updated_at" (RFC 3339, as
// Unix microseconds).
func RegisterReference(r *Registry, provider string, api *APIClient) {
	registerCatalogue(r, provider, "reference", api)
}

// RegisterStripe registers the catalogue's Stripe rules: every event whose
// data.object is a payment_intent, charge, invoice, customer, subscription,
// refund or checkout.session reads it with GET {api}/v1/<collection>/<id>.
// Stripe objects carry no version, so the version is the fetch time in
// Unix microseconds: a later fetch sees a state at least as new, and the
// guard keeps a slower, older fetch from overwriting it. Events of one
// object coalesced in a batch share one fetch and so one version: the
// first applies, the others are ignored_stale. Events about other objects
// are skipped.
func RegisterStripe(r *Registry, provider string, api *APIClient, _ func() time.Time) {
	registerCatalogue(r, provider, "stripe", api)
}

func registerCatalogue(r *Registry, provider, scheme string, api *APIClient) {
	k, _ := providers.Lookup(scheme)
	f, err := NewFetcher(k.API.Fetch, api, api.version)
	if err != nil {
		panic(fmt.Sprintf("catalogue rules of %s: %v", scheme, err)) // providers' tests keep them valid
	}
	r.Register(provider, "*", f)
}
