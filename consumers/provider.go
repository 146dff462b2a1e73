package consumers

import (
	"context"
	"encoding/json"
)

// providerHandler is what gatehouse does with one provider's events: the
// declarative fetch (nil: none), then delivery to every forward
// destination whose types match. An event forwarded without a fetched
// object succeeds without a projection write; an event neither fetched nor
// forwarded is skipped.
type providerHandler struct {
	fetch    *Fetcher
	forwards []*Forwarder
}

// Handle fetches, then forwards; a failure of either fails the event (a
// retry fetches and delivers again: the webhook-id is the same, so the
// destination deduplicates).
func (h *providerHandler) Handle(ctx context.Context, ev *Event) (*Effect, error) {
	var eff *Effect
	if h.fetch != nil {
		var err error
		if eff, err = h.fetch.Handle(ctx, ev); err != nil {
			return nil, err
		}
	}
	delivered := false
	for _, fw := range h.forwards {
		if !fw.Matches(ev.Type) {
			continue
		}
		var obj json.RawMessage
		if eff != nil {
			obj = eff.Data
		}
		if err := fw.Deliver(ctx, ev, obj); err != nil {
			return nil, err
		}
		delivered = true
	}
	if eff == nil && delivered {
		eff = &Effect{} // done elsewhere: succeeded, nothing projected
	}
	return eff, nil
}
