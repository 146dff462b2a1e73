package consumers

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"sync"
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

// Handle fetches, then delivers to every matching destination at once
// (one delivery per destination: of two entries naming one destination
// the first matching wins). When several destinations match, each that
// answers 2xx is recorded (forwardLedger), and a retry of the event goes
// only to the others; with one destination a retry delivers again (the
// webhook-id is the same, so the destination deduplicates). A failure of
// any destination fails the event: permanent when one of them is.
func (h *providerHandler) Handle(ctx context.Context, ev *Event) (*Effect, error) {
	var eff *Effect
	if h.fetch != nil {
		var err error
		if eff, err = h.fetch.Handle(ctx, ev); err != nil {
			return nil, inStage(StageFetch, err)
		}
	}
	var todo []*Forwarder
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
	ledger := ledgerFrom(ctx)
	if ledger == nil || (len(todo) == 1 && !todo[0].Transforms()) {
		ledger = nil // nothing to remember: a retry goes to the one destination again
	} else {
		done, err := ledger.forwardedTo(ctx, ev.Provider, ev.ID)
		if err != nil {
			return nil, err
		}
		todo = slices.DeleteFunc(todo, func(fw *Forwarder) bool { return done[fw.Destination()] })
	}
	errs := make([]error, len(todo))
	var wg sync.WaitGroup
	for i, fw := range todo {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sent, err := fw.DeliverShaped(ctx, ev, obj)
			if errs[i] = err; err == nil && ledger != nil {
				errs[i] = ledger.recordForward(ctx, ev.Provider, ev.ID, fw.Destination(), sent)
			} else {
				errs[i] = inStage(StageForwardPrefix+fw.Destination(), errs[i])
			}
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	if eff == nil {
		eff = &Effect{} // done elsewhere: succeeded, nothing projected
	}
	return eff, nil
}
