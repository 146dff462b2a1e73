package consumers

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"sync"

	"github.com/gatehouse/gatehouse/consumers/event"
)

// Forwarder is a forward entry as the provider handler uses it
// (consumers/forward's Forwarder is one).
type Forwarder interface {
	// Accepts reports whether the entry takes ev (its types and when:).
	Accepts(ev *event.Event) bool
	// Destination is the key of the destination the entry delivers to.
	Destination() string
	// DeliverShaped sends ev, with obj (the fetched object, nil: none),
	// and answers what was sent.
	DeliverShaped(ctx context.Context, ev *event.Event, obj json.RawMessage) (event.Sent, error)
	// Transforms reports whether a transform shapes the deliveries.
	Transforms() bool
}

// providerHandler is what gatehouse does with one provider's events: the
// declarative fetch (nil: none), then delivery to every forward
// destination whose types match. An event forwarded without a fetched
// object succeeds without a projection write; an event neither fetched nor
// forwarded is skipped.
type providerHandler struct {
	fetch    event.Handler
	forwards []Forwarder
}

// NewProviderHandler returns the handler of one provider's events: fetch
// (consumers/fetch's Fetcher; nil: none), then delivery to every forward
// whose entry accepts the event. It returns nil when there is neither.
func NewProviderHandler(fetch event.Handler, forwards ...Forwarder) event.Handler {
	if fetch == nil && len(forwards) == 0 {
		return nil
	}
	return &providerHandler{fetch: fetch, forwards: forwards}
}

// RegisterProvider registers on r, for every event of provider, its fetch
// (nil: none) joined with its forward entries (NewProviderHandler); a
// provider with neither gets no handler.
func RegisterProvider[F Forwarder](r *Registry, provider string, fetch event.Handler, forwards []F) {
	fws := make([]Forwarder, len(forwards))
	for i, f := range forwards {
		fws[i] = f
	}
	if h := NewProviderHandler(fetch, fws...); h != nil {
		r.Register(provider, "*", h)
	}
	for _, fw := range fws {
		if o, ok := ordering(fw); ok {
			r.registerOrdered(provider, o)
		}
	}
}

// Handle fetches (through b's memo), then delivers to every matching
// destination at once (one delivery per destination: of two entries naming
// one destination the first matching wins); a destination ordered per
// object keeps the order of ev's key (deliverOrdered, parking.go). When several destinations
// match, or a transform shapes the delivery, each that answers 2xx is
// recorded in b's ledger, and a retry of the event goes only to the others;
// with one destination a retry delivers again (the webhook-id is the same,
// so the destination deduplicates). A failure of any destination fails the
// event: permanent when one of them is.
func (h *providerHandler) Handle(ctx context.Context, ev *event.Event, b *event.Batch) (*event.Effect, error) {
	var eff *event.Effect
	if h.fetch != nil {
		var err error
		if eff, err = h.fetch.Handle(ctx, ev, b); err != nil {
			return nil, event.InStage(event.StageFetch, err)
		}
	}
	var todo []Forwarder
	seen := map[string]bool{}
	for _, fw := range h.forwards {
		if fw.Accepts(ev) && !seen[fw.Destination()] {
			seen[fw.Destination()] = true
			todo = append(todo, fw)
		}
	}
	if len(todo) == 0 {
		return eff, nil
	}
	var obj json.RawMessage
	if eff != nil {
		obj = eff.Data
	}
	ledger := b.Ledger()
	if len(todo) == 1 && !todo[0].Transforms() {
		ledger = nil // nothing to remember: a retry goes to the one destination again
	} else {
		done, err := ledger.ForwardedTo(ctx, ev.Provider, ev.ID)
		if err != nil {
			return nil, err
		}
		todo = slices.DeleteFunc(todo, func(fw Forwarder) bool { return done[fw.Destination()] })
	}
	errs := make([]error, len(todo))
	var wg sync.WaitGroup
	for i, fw := range todo {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sent, err := deliverOrdered(ctx, b, fw, ev, obj)
			if errs[i] = err; err == nil && ledger != nil {
				errs[i] = ledger.RecordForward(ctx, ev.Provider, ev.ID, fw.Destination(), sent)
			} else {
				errs[i] = event.InStage(event.StageForwardPrefix+fw.Destination(), errs[i])
			}
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	if eff == nil {
		eff = &event.Effect{} // done elsewhere: succeeded, nothing projected
	}
	return eff, nil
}
