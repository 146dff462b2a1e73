package consumers

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Effect is the business action of one event: the authoritative state of a
// provider object, applied to the projection under the version guard.
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

// ReferenceObject maps an event type prefix of the reference provider to
// the data member naming the subject and the API collection holding it.
type ReferenceObject struct {
	Prefix     string // e.g. "payment" for payment.succeeded
	IDField    string // e.g. "payment_id" in data
	Collection string // e.g. "payments" for GET /v1/payments/{id}
}

// ReferenceObjects are the consequential event families of the reference
// provider (SPEC.md's payment.succeeded and invoice.paid examples).
var ReferenceObjects = []ReferenceObject{
	{Prefix: "payment", IDField: "payment_id", Collection: "payments"},
	{Prefix: "invoice", IDField: "invoice_id", Collection: "invoices"},
}

// RegisterReference registers, for a provider speaking the reference
// scheme, one fetching handler per ReferenceObjects family: it reads
// GET {api}/v1/<collection>/<id> and uses the object's "version" (an
// integer), or else its "updated_at" (RFC 3339, as Unix microseconds).
func RegisterReference(r *Registry, provider string, api *APIClient) {
	for _, o := range ReferenceObjects {
		r.Register(provider, o.Prefix+".*", HandlerFunc(func(ctx context.Context, ev *Event) (*Effect, error) {
			id, ok := ev.Path(o.IDField)
			if !ok {
				return nil, Permanentf("event %s: data.%s missing", ev.Type, o.IDField)
			}
			path, err := ObjectPath(o.Collection, id)
			if err != nil {
				return nil, err
			}
			obj, err := api.Get(ctx, path)
			if err != nil {
				return nil, err
			}
			v, err := objectVersion(obj)
			if err != nil {
				return nil, fmt.Errorf("%s %s: %w", o.Prefix, id, err)
			}
			return &Effect{ObjectType: o.Prefix, ObjectID: id, Version: v, Data: obj}, nil
		}))
	}
}

func objectVersion(obj json.RawMessage) (int64, error) {
	var o struct {
		Version   json.Number `json:"version"`
		UpdatedAt string      `json:"updated_at"`
	}
	if err := json.Unmarshal(obj, &o); err != nil {
		return 0, fmt.Errorf("object is not a JSON object: %w", err)
	}
	if o.Version != "" {
		return strconv.ParseInt(o.Version.String(), 10, 64)
	}
	if t, err := time.Parse(time.RFC3339Nano, o.UpdatedAt); err == nil {
		return t.UnixMicro(), nil
	}
	return 0, fmt.Errorf("object has neither version nor updated_at")
}

// StripeCollections maps the Stripe object types gatehouse projects to
// their API collection.
var StripeCollections = map[string]string{
	"payment_intent":   "payment_intents",
	"charge":           "charges",
	"invoice":          "invoices",
	"customer":         "customers",
	"subscription":     "subscriptions",
	"refund":           "refunds",
	"checkout.session": "checkout/sessions",
}

// RegisterStripe registers a handler for every Stripe event whose
// data.object is one of StripeCollections: it fetches the object with
// GET {api}/v1/<collection>/<id>. Stripe objects carry no version, so the
// version is the fetch time in Unix microseconds: a later fetch sees a
// state at least as new, and the guard keeps a slower, older fetch from
// overwriting it. Events of one object coalesced in a batch share one fetch
// and so one version: the first applies, the others are ignored_stale. Events about other objects have no handler (skipped).
func RegisterStripe(r *Registry, provider string, api *APIClient, now func() time.Time) {
	for objType, coll := range StripeCollections {
		r.Register(provider, objType+".*", stripeHandler(api, coll, now))
	}
}

func stripeHandler(api *APIClient, coll string, now func() time.Time) Handler {
	return HandlerFunc(func(ctx context.Context, ev *Event) (*Effect, error) {
		typ, _ := ev.Path("object.object")
		id, ok := ev.Path("object.id")
		if !ok {
			return nil, Permanentf("stripe event %s: data.object.id missing", ev.Type)
		}
		// A local per call: handlers run concurrently, and the closure's
		// coll is shared by every event of its pattern.
		c := coll
		if known, ok := StripeCollections[typ]; ok {
			c = known
		}
		path, err := ObjectPath(c, id)
		if err != nil {
			return nil, err
		}
		obj, fetched, err := api.GetAt(ctx, path)
		if err != nil {
			return nil, err
		}
		if typ == "" {
			typ = strings.TrimSuffix(c, "s")
		}
		return &Effect{ObjectType: typ, ObjectID: id, Version: fetched.UnixMicro(), Data: obj}, nil
	})
}
