package consumers

import (
	"context"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/gatehouse/gatehouse/consumers/event"
	"github.com/gatehouse/gatehouse/schemas"
)

// A record can reach the consumers before its inbox row is visible:
// PostgreSQL flushes a transaction's commit record (from which logical
// decoding streams it to the relay) before it removes the transaction from
// the process array (which makes it visible to new snapshots), and a
// receiver backend that loses the CPU between the two keeps a whole group
// commit invisible for that long while the relay, Kafka and the consumers
// move on (the relay's cursor waits for this too: README, dispatcher).
//
// So a main-topic batch reads its missing rows once more after
// noInboxPause, and a record younger than noInboxFresh (its Kafka
// timestamp, set when the relay published it) whose row is still missing
// is read again noInboxRechecks more times, the pause doubling (20, 40,
// 80 ms after the first re-read: 150 ms after the claim at most), beside
// the batch: the batch's other events are handled and applied meanwhile,
// so a foreign record delays nothing. An older record is not waited for
// (a foreign record, a restored database: waiting cannot help).
const (
	noInboxPause    = 10 * time.Millisecond
	noInboxRechecks = 3
	noInboxFresh    = 5 * time.Second
)

// late re-reads the missing inbox rows of ws (first records of the batch)
// beside the batch, under wg, in one statement per re-read: an event
// whose row is found is handled and applied alone (its handler and its own
// consumers_apply, as on a retry topic); one still missing after the last
// re-read, or failing, is forwarded down the retry ladder. It sets
// w.outcome and w.done, and w.recovered when the event was finished
// without a forward.
func (m *membership) late(ws []*work, wg *sync.WaitGroup) {
	if len(ws) == 0 {
		return
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		r := m.r
		ctx := ws[0].ctx // every record's context has the same parent
		var found sync.WaitGroup
		for i := 1; i <= noInboxRechecks && len(ws) > 0; i++ {
			select {
			case <-ctx.Done():
				found.Wait()
				return // unfinished: left unmarked
			case <-time.After(noInboxPause << i):
			}
			slices.SortFunc(ws, func(a, b *work) int {
				if c := strings.Compare(a.ev.Provider, b.ev.Provider); c != 0 {
					return c
				}
				return strings.Compare(a.ev.ID, b.ev.ID)
			})
			keys := make([]eventKey, len(ws))
			for i, w := range ws {
				keys[i] = eventKey{w.ev.Provider, w.ev.ID, w.ev.ReceivedAt}
			}
			claims, err := r.store.claimMany(ctx, keys)
			if err != nil {
				for _, w := range ws {
					found.Add(1)
					go func() { defer found.Done(); m.lateFail(w, err) }()
				}
				found.Wait()
				return
			}
			var missing []*work
			for i, w := range ws {
				switch c := claims[i]; {
				case !c.found:
					missing = append(missing, w)
				case schemas.Final(c.prev):
					w.outcome, w.done, w.recovered = OutcomeDuplicate, true, true
				default:
					w.ev.ReceivedAt = c.receivedAt
					found.Add(1)
					go func() {
						defer found.Done()
						if out, err := r.handleAndApply(w.ctx, w.ev); err != nil {
							m.lateFail(w, err)
						} else {
							w.outcome, w.done, w.recovered = out, true, true
						}
					}()
				}
			}
			ws = missing
		}
		for _, w := range ws {
			r.m.rejected.WithLabelValues(r.cfg.Group, w.rec.Topic, "no_inbox_row").Inc()
			found.Add(1)
			go func() { defer found.Done(); m.lateFail(w, errNoInbox) }() // each forward waits for its ack
		}
		found.Wait()
	}()
}

// lateFail forwards w, whose event failed with err, down the retry ladder.
func (m *membership) lateFail(w *work, err error) {
	w.outcome, w.done = m.fail(w.ctx, w.rec, w.role, w.ev, err)
}

// handler is the handler of ev, nil when none runs: no handler for its
// type, or an erased event (isErased), which is then skipped.
func (r *Runner) handler(ev *event.Event) event.Handler {
	if isErased(ev) {
		return nil
	}
	return r.cfg.Handlers.Lookup(ev.Provider, ev.Type)
}

// handleAndApply runs ev's handler (the forward ledger is the store) and
// applies its effect in one statement: the part of processEvent after the
// claim.
func (r *Runner) handleAndApply(ctx context.Context, ev *event.Event) (string, error) {
	var eff *event.Effect
	if h := r.handler(ev); h != nil {
		var err error
		if eff, err = h.Handle(event.WithLedger(ctx, r.store), ev); err != nil {
			return "", err
		}
	}
	actx, span := r.startApply(ctx, 1)
	outcome, err := r.store.apply(actx, ev, eff)
	endSpan(span, err)
	return outcome, err
}
