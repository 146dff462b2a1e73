package consumers

import (
	"context"
	"errors"
	"sync"

	"github.com/gatehouse/gatehouse/consumers/event"
)

// NoticeForwarder is a forward entry that can send erasure notices
// (consumers/forward's Forwarder is one).
type NoticeForwarder interface {
	// ErasureNotices reports whether the entry's destination receives
	// erasure notices (forward.erasure_notices, default true).
	ErasureNotices() bool
	// DeliverNotice sends the notice ev to the destination, signed.
	DeliverNotice(ctx context.Context, ev *event.Event) error
}

// noticeHandler is a handler that sends erasure notices on
// (providerHandler): it answers how many destinations took the notice.
type noticeHandler interface {
	HandleNotice(ctx context.Context, ev *event.Event) (int, error)
}

// HandleNotice sends the erasure notice ev to every forward destination
// of the provider that takes notices, once per destination, whatever the
// entries' types and when: (a destination may hold a copy of any event it
// was sent), at once. A failure of any destination fails the notice (the
// retry ladder sends it again to every destination: the webhook-id is the
// same, so a destination deduplicates). It returns how many destinations
// took it.
func (h *providerHandler) HandleNotice(ctx context.Context, ev *event.Event) (int, error) {
	var todo []Forwarder
	seen := map[string]bool{}
	for _, fw := range h.forwards {
		n, ok := fw.(NoticeForwarder)
		if ok && n.ErasureNotices() && !seen[fw.Destination()] {
			seen[fw.Destination()] = true
			todo = append(todo, fw)
		}
	}
	errs := make([]error, len(todo))
	var wg sync.WaitGroup
	for i, fw := range todo {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = event.InStage(event.StageForwardPrefix+fw.Destination(), fw.(NoticeForwarder).DeliverNotice(ctx, ev))
		}()
	}
	wg.Wait()
	return len(todo), errors.Join(errs...)
}

// notify processes an erasure notice (isNotice): it has no inbox row, so
// there is nothing to claim, fetch or apply; its provider's forward
// destinations that take notices are sent it (HandleNotice). The outcome is
// OutcomeOK when one took it, OutcomeSkipped when none does (gatehouse's
// own projections were erased by the erasure itself).
func (r *Runner) notify(ctx context.Context, ev *event.Event) (string, error) {
	h, ok := r.cfg.Handlers.Lookup(ev.Provider, ev.Type).(noticeHandler)
	if !ok {
		return OutcomeSkipped, nil
	}
	n, err := h.HandleNotice(ctx, ev)
	switch {
	case err != nil:
		return "", err
	case n == 0:
		return OutcomeSkipped, nil
	}
	return OutcomeOK, nil
}
