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

// work is one record of a batch. Only the goroutine that runs the batch's
// stages writes it: a goroutine a stage starts is handed what it reads and
// returns its result, which the stage folds in after its wait.
type work struct {
	rec     *kgo.Record
	k       tp
	role    topicRole
	ev      *event.Event
	err     error         // decode, claim, handler or apply error: the record fails
	eff     *event.Effect // the handler's effect (nil: none)
	first   *work         // the batch's first record of the same event; nil for a first
	outcome string
	done    bool // finished: the offset may be marked
	// beside: how the record ends is decided beside the stages (a forward
	// down the retry ladder, a late inbox row); settle folds it in.
	beside bool
	// late: its inbox row was still missing after claimLate; the handle
	// stage parks its key in its chain (parkLate) and forwards it.
	late bool
	// ctx holds the record's span (trace.go); span is ended by settle.
	ctx  context.Context
	span trace.Span
}

// batch is the main-topic records of one poll, stepping through the stages
// decode → claim → handle → apply → settle, each a method that reads and
// writes the batch's state; the goroutines of a stage return results into
// slots they own, folded into the batch after the stage's wait.
//
//  1. decode every record; records of an event already in the batch ride
//     on its first record (counted as duplicates); erasure notices go apart;
//  2. claim every event's inbox row in one statement; a missing row is
//     read once more after noInboxPause; a record the relay has just
//     published whose row is still missing is read again beside the batch
//     (late.go), and handled and applied alone once found; any other
//     record whose row is missing goes straight to the first retry topic
//     (no key slot held), counted in
//     gatehouse_consumer_records_rejected_total{reason="no_inbox_row"};
//     a record that failed is forwarded beside the next stages;
//  3. handle: run the handlers of all claimed events at once, with the
//     batch's memo and the store as ledger (event.Batch): their provider
//     API calls are bounded and rate-limited per provider, and calls for
//     the same object share one request (coalescing); then send the
//     erasure notices on;
//  4. apply every effect in one transaction (one commit), the events of
//     each object in offset order, so one authoritative state is applied
//     once and the object's other events are ignored_stale; a record that
//     failed is forwarded to the retry or dead-letter topic;
//  5. settle: wait for the forwards and late rows, count and log every
//     record, and mark each partition's offsets in order, up to its first
//     record that could not be finished (then the membership ends and the
//     next redelivers it).
//
// processMain runs stages 1 to 3; apply and settle are the returned finish,
// which the membership runs after the previous batch's finish and while it
// polls and handles the next batch (membership.pipeline): a batch's
// deliveries and fetches overlap the previous batch's commit, never its
// handlers, so the events of one key are still handled, applied and marked
// in offset order. settle marks nothing once a record of an earlier batch
// could not be finished (the next membership starts from the first
// unmarked offset).
type batch struct {
	m       *membership
	recs    map[tp][]*kgo.Record // per partition, in offset order
	ws      []*work              // every record
	firsts  []*work              // the first record of each event (decode)
	notices []*work              // the erasure notices (decode)
	calls   *event.Batch         // the memo and ledger handed to every handler
	side    side                 // what runs beside the stages
	start   time.Time
	ctx     context.Context // the batch's span: apply's parent
	span    trace.Span
}

// processMain processes the main-topic records of one poll as one batch:
// decode, claim and handle now; the returned finish applies and settles.
func (m *membership) processMain(ctx context.Context, recs map[tp][]*kgo.Record) (finish func()) {
	r := m.r
	b := &batch{m: m, recs: recs, start: r.cfg.Now(), calls: event.NewBatch(r.store)}
	for k, rs := range recs {
		role := r.layout.roles[k.topic]
		for _, rec := range rs {
			w := &work{rec: rec, k: k, role: role}
			w.ctx, w.span = r.startEvent(ctx, rec)
			b.ws = append(b.ws, w)
		}
	}
	b.ctx, b.span = r.startBatch(ctx, b.ws)
	r.m.batchSize.WithLabelValues(r.cfg.Group).Observe(float64(len(b.ws)))
	b.decode()
	b.claim(ctx)
	b.handle(ctx)
	return func() {
		defer b.span.End()
		b.apply()
		b.settle()
	}
}

// decode decodes the records and links repeated events to their first
// record; it keeps the first records, and the erasure notices apart
// (not events: nothing to claim, fetch or apply; handle sends them on).
func (b *batch) decode() {
	seen := map[eventKey]*work{}
	for _, w := range b.ws {
		w.ev, w.err = decode(w.rec, w.role.provider)
		if w.err == nil && isNotice(w.ev) {
			b.notices = append(b.notices, w)
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
		b.firsts = append(b.firsts, w)
	}
}

// claim claims the inbox rows of the decoded first records; a record
// whose row is missing, also after noInboxPause, gets errNoInbox. Then the
// records that failed leave the stages: a fresh one whose row is missing
// is read again beside them (late; before them, claimLate, when a
// destination is ordered per object), any other is forwarded down the
// retry ladder beside them; every forward is acknowledged before settle
// ends.
func (b *batch) claim(ctx context.Context) {
	b.claimRows(ctx)
	r := b.m.r
	var late []*work
	for _, w := range b.firsts {
		switch {
		case w.err == nil:
		case errors.Is(w.err, errNoInbox) && r.cfg.Now().Sub(w.rec.Timestamp) < noInboxFresh:
			late = append(late, w)
		default:
			if errors.Is(w.err, errNoInbox) {
				r.m.rejected.WithLabelValues(r.cfg.Group, w.rec.Topic, "no_inbox_row").Inc()
			}
			b.forward(w)
		}
	}
	if len(late) > 0 && r.cfg.Handlers.Ordered() {
		// a destination is ordered per object: the batch waits for its
		// late rows, so a key's records keep their order (parking.go)
		for _, w := range b.claimLate(ctx, late) {
			if errors.Is(w.err, errNoInbox) {
				r.m.rejected.WithLabelValues(r.cfg.Group, w.rec.Topic, "no_inbox_row").Inc()
				w.late = true // its key parks behind it in its chain, then it is forwarded (handle)
				continue
			}
			b.forward(w)
		}
		return
	}
	if len(late) > 0 {
		rows := make([]lateRow, len(late))
		for i, w := range late {
			rows[i] = lateRow{ctx: w.ctx, rec: w.rec, role: w.role, ev: *w.ev}
		}
		b.side.runAll(late, func() []ended { return b.m.late(rows) })
	}
}

// claimRows is claim's statement, read twice at most.
func (b *batch) claimRows(ctx context.Context) {
	var todo []*work
	for _, w := range b.firsts {
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
		claims, err := b.claimSorted(ctx, todo)
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

// called is the result of a handler or a notice, filled by the goroutine
// that ran it.
type called struct {
	eff     *event.Effect
	outcome string
	err     error
}

// handle runs the handlers of the claimed events concurrently, each with
// the batch's memo (coalescing) and the store as forward ledger, then
// sends the batch's erasure notices on (a notice follows its event in the
// partition, so its event's own delivery goes first), each at once; a
// notice that fails is forwarded down the retry ladder.
func (b *batch) handle(ctx context.Context) {
	r := b.m.r
	var todo []*work
	for _, w := range b.firsts {
		if (w.err == nil && !w.done) || w.late {
			todo = append(todo, w)
		}
	}
	res := make([]called, len(todo))
	var parking parker = r.store
	if r.cfg.Handlers.Ordered() { // one probe of the batch's parked keys, not one per delivery (parking_probe.go)
		bp, err := r.probeParking(ctx, todo)
		if err != nil {
			r.log.WarnContext(ctx, "probing the batch's parked keys failed; each delivery probes its own", "err", err)
		} else {
			parking, b.calls = bp, event.NewBatch(bp)
		}
	}
	var wg sync.WaitGroup
	for _, chain := range chains(todo, r.cfg.Handlers.Ordered()) { // one key's records in order when a destination is ordered (parking.go)
		wg.Add(1)
		go func() {
			defer wg.Done()
			for _, i := range chain {
				hctx, ev := ctx, todo[i].ev
				if r.tracing {
					hctx = trace.ContextWithSpan(ctx, todo[i].span)
				}
				if todo[i].late { // its row is missing: its key waits behind it (parking_late.go)
					res[i].err = r.parkLate(hctx, ev, parking)
					continue
				}
				res[i].eff, res[i].err = r.handleEvent(hctx, ev, b.calls)
			}
		}()
	}
	wg.Wait()
	for i, w := range todo {
		if w.late {
			if res[i].err != nil {
				r.log.WarnContext(w.ctx, "parking behind an event whose inbox row is missing failed; its key's later events may overtake it",
					"provider", w.ev.Provider, "event_id", w.ev.ID, "err", res[i].err)
			}
			b.forward(w) // down the retry ladder, with errNoInbox
			continue
		}
		w.eff, w.err = res[i].eff, res[i].err
	}
	b.notify()
}

// notify sends the batch's erasure notices on (notice.go), at once.
func (b *batch) notify() {
	res := make([]called, len(b.notices))
	var wg sync.WaitGroup
	for i, w := range b.notices {
		ctx, ev := w.ctx, w.ev
		wg.Add(1)
		go func() {
			defer wg.Done()
			res[i].outcome, res[i].err = b.m.r.notify(ctx, ev)
		}()
	}
	wg.Wait()
	for i, w := range b.notices {
		w.outcome, w.err = res[i].outcome, res[i].err
		if w.err != nil {
			b.forward(w)
		} else {
			w.done = true
		}
	}
}

// claimSorted sorts todo by provider and event id (the order every claim
// takes its row locks in, so two claims never deadlock) and claims their
// inbox rows in one statement: claims[i] is todo[i]'s.
func (b *batch) claimSorted(ctx context.Context, todo []*work) ([]claim, error) {
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
	return b.m.r.store.claimMany(ctx, keys)
}
