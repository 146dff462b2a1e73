package consumers

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/gatehouse/gatehouse/schemas"
	"github.com/twmb/franz-go/pkg/kgo"
	"go.opentelemetry.io/otel/trace"

	"github.com/gatehouse/gatehouse/consumers/event"
)

// work is one main-topic record of a batch.
type work struct {
	rec     *kgo.Record
	k       tp
	role    topicRole
	ev      *event.Event
	err     error         // decode, claim or handler error: the record fails
	eff     *event.Effect // the handler's effect (nil: none)
	first   *work         // the batch's first record of the same event; nil for a first
	outcome string
	done    bool // finished: the offset may be marked
	// recovered: its row was missing, then found and the event applied
	// by late (err is cleared once late has returned).
	recovered bool
	// ctx holds the record's span (trace.go); span is ended with the batch.
	ctx  context.Context
	span trace.Span
}

// processMain processes the main-topic records of one poll as one batch:
//
//  1. decode every record; records of an event already in the batch ride
//     on its first record (counted as duplicates);
//  2. claim every event's inbox row in one statement; a missing row is
//     read once more after noInboxPause; a record the relay has just
//     published whose row is still missing is read again beside the batch
//     (late.go), and handled and applied alone once found; any other
//     record whose row is missing goes straight to the first retry topic
//     (no key slot held), counted in
//     gatehouse_consumer_records_rejected_total{reason="no_inbox_row"};
//  3. run the handlers of all claimed events at once: their provider API
//     calls are bounded and rate-limited per provider, and calls for the
//     same object share one request (coalescing);
//  4. apply every effect in one transaction (one commit), the events of
//     each object in offset order, so one authoritative state is applied
//     once and the object's other events are ignored_stale;
//  5. forward failed records to the retry or dead-letter topic;
//  6. mark each partition's offsets in order, up to its first record that
//     could not be finished (then the membership ends and the next redelivers it).
//
// Steps 1 to 3 run here; steps 4 to 6 are the returned finish, which the
// membership runs after the previous batch's finish and while it polls and
// handles the next batch (membership.pipeline): a batch's deliveries and
// fetches overlap the previous batch's commit, never its handlers, so the
// events of one key are still handled, applied and marked in offset order.
// finish marks nothing once a record of an earlier batch could not be
// finished (the next membership starts from the first unmarked offset).
func (m *membership) processMain(ctx context.Context, batches map[tp][]*kgo.Record) (finish func()) {
	r := m.r
	start := r.cfg.Now()
	var ws []*work
	for k, recs := range batches {
		role := r.layout.roles[k.topic]
		for _, rec := range recs {
			w := &work{rec: rec, k: k, role: role}
			w.ctx, w.span = r.startEvent(ctx, rec)
			ws = append(ws, w)
		}
	}
	bctx, bspan := r.startBatch(ctx, ws)
	r.m.batchSize.WithLabelValues(r.cfg.Group).Observe(float64(len(ws)))
	firsts, notices := m.decodeAll(ws)
	m.claimAll(ctx, firsts)
	// Records that already failed (undecodable, no inbox row, claim error)
	// are forwarded while the others are handled and applied; every forward
	// waits for its acknowledgement before the batch ends.
	var wg sync.WaitGroup
	forward := func(w *work) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			w.outcome, w.done = m.fail(w.ctx, w.rec, w.role, w.ev, w.err)
		}()
	}
	early := map[*work]bool{}
	var late []*work
	for _, w := range firsts {
		switch {
		case w.err == nil:
		case errors.Is(w.err, errNoInbox) && r.cfg.Now().Sub(w.rec.Timestamp) < noInboxFresh:
			early[w] = true
			late = append(late, w)
		default:
			early[w] = true
			if errors.Is(w.err, errNoInbox) {
				r.m.rejected.WithLabelValues(r.cfg.Group, w.rec.Topic, "no_inbox_row").Inc()
			}
			forward(w)
		}
	}
	m.late(late, &wg)
	m.handleAll(ctx, firsts)
	m.notifyAll(notices, forward)
	return func() {
		defer bspan.End()
		m.finishMain(bctx, batches, ws, firsts, early, &wg, forward, start)
	}
}

// finishMain is processMain's steps 4 to 6.
func (m *membership) finishMain(bctx context.Context, batches map[tp][]*kgo.Record, ws, firsts []*work, early map[*work]bool,
	wg *sync.WaitGroup, forward func(*work), start time.Time) {
	r := m.r
	m.applyAll(bctx, firsts)
	for _, w := range firsts {
		// early[w] first: an early forward's goroutine may be writing w.done.
		if !early[w] && w.err != nil && !w.done {
			forward(w)
		}
	}
	wg.Wait()
	for _, w := range ws {
		if w.recovered {
			w.err = nil // found by late: its error was the missing row
		}
		if w.first != nil && w.first.done {
			w.outcome, w.done = OutcomeDuplicate, true
		}
		if w.done {
			if w.err == nil && w.ev != nil && w.first == nil {
				r.logProcessed(w.ctx, w.rec, w.ev, w.outcome)
			}
			r.count(w.ctx, w.rec, w.outcome, start)
		}
		endEvent(w.span, w.outcome, w.err)
	}
	if m.broken.Load() {
		return // an earlier record is unfinished: nothing after it may be marked
	}
	for k, recs := range batches {
		m.markInOrder(k, recs, ws)
	}
}

// decodeAll decodes the records and links repeated events to their first
// record; it returns the first records, and the erasure notices apart
// (not events: nothing to claim, fetch or apply; notifyAll sends them on).
func (m *membership) decodeAll(ws []*work) (firsts, notices []*work) {
	seen := map[eventKey]*work{}
	for _, w := range ws {
		w.ev, w.err = decode(w.rec, w.role.provider)
		if w.err == nil && isNotice(w.ev) {
			notices = append(notices, w)
			continue
		}
		if w.err == nil {
			key := eventKey{provider: w.ev.Provider, id: w.ev.ID} // repeats of an event, whatever their hint
			if f, ok := seen[key]; ok {
				w.first = f
				continue
			}
			seen[key] = w
		}
		firsts = append(firsts, w)
	}
	return firsts, notices
}

// claimAll claims the inbox rows of the decoded first records; a record
// whose row is missing, also after noInboxPause, gets errNoInbox.
func (m *membership) claimAll(ctx context.Context, firsts []*work) {
	var todo []*work
	for _, w := range firsts {
		if w.err == nil {
			todo = append(todo, w)
		}
	}
	for round := 0; round < 2 && len(todo) > 0; round++ {
		if round == 1 {
			select {
			case <-ctx.Done():
				for _, w := range todo {
					w.err = ctx.Err() // unclaimed: neither handled nor forwarded, left unmarked
				}
				return
			case <-time.After(noInboxPause):
			}
		}
		slices.SortFunc(todo, func(a, b *work) int {
			if c := strings.Compare(a.ev.Provider, b.ev.Provider); c != 0 {
				return c
			}
			return strings.Compare(a.ev.ID, b.ev.ID)
		})
		keys := make([]eventKey, len(todo))
		for i, w := range todo {
			keys[i] = eventKey{w.ev.Provider, w.ev.ID, w.ev.ReceivedAt}
		}
		claims, err := m.r.store.claimMany(ctx, keys)
		if err != nil {
			for _, w := range todo {
				w.err = err
			}
			return
		}
		var missing []*work
		for i, w := range todo {
			c := claims[i]
			if c.found {
				w.ev.ReceivedAt = c.receivedAt
			}
			switch {
			case !c.found:
				missing = append(missing, w)
			case schemas.Final(c.prev):
				w.outcome, w.done = OutcomeDuplicate, true
			}
		}
		todo = missing
	}
	for _, w := range todo {
		w.err = errNoInbox
	}
}

// handleAll runs the handlers of the claimed events concurrently, with one
// fetch memo for the batch (coalescing) and the store as forward ledger.
func (m *membership) handleAll(ctx context.Context, firsts []*work) {
	mctx := event.WithLedger(event.WithMemo(ctx), m.r.store)
	var wg sync.WaitGroup
	for _, w := range firsts {
		if w.err != nil || w.done {
			continue
		}
		h := m.r.handler(w.ev)
		if h == nil {
			continue
		}
		wg.Add(1)
		hctx := mctx
		if m.r.tracing {
			hctx = trace.ContextWithSpan(mctx, w.span)
		}
		go func() {
			defer wg.Done()
			w.eff, w.err = h.Handle(hctx, w.ev)
		}()
	}
	wg.Wait()
}

// applyAll applies the effects of the handled events in one transaction,
// ordered by object and offset. When the transaction fails for another
// reason than a deadlock, each event is applied alone, so one event the
// database refuses fails alone.
func (m *membership) applyAll(ctx context.Context, firsts []*work) {
	var ready []*work
	for _, w := range firsts {
		if w.err == nil && !w.done {
			ready = append(ready, w)
		}
	}
	if len(ready) == 0 {
		return
	}
	slices.SortStableFunc(ready, func(a, b *work) int {
		if c := strings.Compare(a.ev.ObjectKey, b.ev.ObjectKey); c != 0 {
			return c
		}
		if c := strings.Compare(a.rec.Topic, b.rec.Topic); c != 0 {
			return c
		}
		return int(a.rec.Offset - b.rec.Offset)
	})
	items := make([]applyItem, len(ready))
	for i, w := range ready {
		items[i] = applyItem{ev: w.ev, eff: w.eff}
	}
	actx, span := m.r.startApply(ctx, len(items))
	outs, err := m.r.store.applyMany(actx, items)
	endSpan(span, err)
	if err == nil {
		for i, w := range ready {
			w.outcome, w.done = outs[i], true
		}
		return
	}
	if ctx.Err() != nil || errors.Is(err, context.Canceled) {
		return // not finished: left unmarked
	}
	m.r.log.Warn("batch apply failed; applying its events one by one", "events", len(ready), "err", err)
	for _, w := range ready {
		if w.outcome, w.err = m.r.store.apply(ctx, w.ev, w.eff); w.err == nil {
			w.done = true
		}
	}
}

// markInOrder marks a partition's records up to the first unfinished one;
// an unfinished record breaks the membership (it is delivered again).
func (m *membership) markInOrder(k tp, recs []*kgo.Record, ws []*work) {
	done := make(map[*kgo.Record]bool, len(recs))
	for _, w := range ws {
		if w.k == k && w.done {
			done[w.rec] = true
		}
	}
	for _, rec := range recs {
		if !done[rec] {
			m.broken.Store(true)
			return
		}
		m.cl.MarkCommitRecords(rec)
		m.r.parts.done(k, rec.Offset, rec.Timestamp)
	}
}
