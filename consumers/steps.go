package consumers

import (
	"context"
	"time"

	"github.com/gatehouse/gatehouse/consumers/event"
)

// The steps of one event that a main-topic batch (batch.go) shares with a
// retry-topic record and a late inbox row, each of which goes through the
// stages alone: its handler's call, its handle and apply after its claim,
// and its settling.

// handler is the handler of ev, nil when none runs: no handler for its
// type, or an erased event (isErased), which is then skipped.
func (r *Runner) handler(ev *event.Event) event.Handler {
	if isErased(ev) {
		return nil
	}
	return r.cfg.Handlers.Lookup(ev.Provider, ev.Type)
}

// handleEvent is the handle stage of one event: its handler (none: a nil
// effect) called with the batch b.
func (r *Runner) handleEvent(ctx context.Context, ev *event.Event, b *event.Batch) (*event.Effect, error) {
	h := r.handler(ev)
	if h == nil {
		return nil, nil
	}
	return h.Handle(ctx, ev, b)
}

// handleAndApply is the handle and apply stages of one event alone, after
// its claim (a retry-topic record, a late inbox row): its handler, in a
// batch of its own with the store as ledger, then its effect applied in
// one statement.
func (r *Runner) handleAndApply(ctx context.Context, ev *event.Event) (string, error) {
	eff, err := r.handleEvent(ctx, ev, event.NewBatch(r.store))
	if err != nil {
		return "", err
	}
	actx, span := r.startApply(ctx, 1)
	outcome, err := r.store.apply(actx, ev, eff)
	endSpan(span, err)
	return outcome, err
}

// settleRecord ends one record's handling, in a batch or alone: a
// finished record is counted (and logged, when its event succeeded on its
// first record), and its span ends with its outcome.
func (r *Runner) settleRecord(w *work, start time.Time) {
	if w.done {
		if w.err == nil && w.ev != nil && w.first == nil {
			r.logProcessed(w.ctx, w.rec, w.ev, w.outcome)
		}
		r.count(w.ctx, w.rec, w.outcome, start)
	}
	endEvent(w.span, w.outcome, w.err)
}
