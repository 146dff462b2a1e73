package consumers

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"

	"github.com/twmb/franz-go/pkg/kgo"
)

// apply applies the effects of the handled events in one transaction,
// ordered by object and offset. When the transaction fails for another
// reason than a deadlock, each event is applied alone, so one event the
// database refuses fails alone. A record that failed (its handler, or its
// apply) is then forwarded down the retry ladder beside the stages.
func (b *batch) apply() {
	b.applyEffects(b.ctx)
	for _, w := range b.firsts {
		if !w.beside && w.err != nil && !w.done {
			b.forward(w)
		}
	}
}

// applyEffects is apply's transaction.
func (b *batch) applyEffects(ctx context.Context) {
	r := b.m.r
	var ready []*work
	for _, w := range b.firsts {
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
	actx, span := r.startApply(ctx, len(items))
	outs, err := r.store.applyMany(actx, items)
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
	r.log.Warn("batch apply failed; applying its events one by one", "events", len(ready), "err", err)
	for _, w := range ready {
		if w.outcome, w.err = r.store.apply(ctx, w.ev, w.eff); w.err == nil {
			w.done = true
		}
	}
}

// settle waits for what ran beside the stages and folds it in, ends every
// record (settleRecord) and marks each partition's records in order.
func (b *batch) settle() {
	b.side.wait()
	r := b.m.r
	for _, w := range b.ws {
		if w.first != nil && w.first.done {
			w.outcome, w.done = OutcomeDuplicate, true
		}
		r.settleRecord(w, b.start)
	}
	if b.m.broken.Load() {
		return // an earlier record is unfinished: nothing after it may be marked
	}
	for k, recs := range b.recs {
		b.m.markInOrder(k, recs, b.ws)
	}
}

// ended is how a record that left the stages ended: forwarded down the
// retry ladder, or found late and applied (recovered: its error was the
// missing row).
type ended struct {
	outcome   string
	done      bool
	recovered bool
}

// side is what a batch runs beside its stages: the forwards of records
// that failed, and the re-reads of late inbox rows. Each goroutine fills
// only the results it was handed; wait folds them into their records.
type side struct {
	wg  sync.WaitGroup
	ws  []*work
	res []*ended
}

// runAll runs do beside the stages; do returns how each of ws ended, by
// position.
func (s *side) runAll(ws []*work, do func() []ended) {
	res := make([]*ended, len(ws))
	for i, w := range ws {
		w.beside, res[i] = true, new(ended)
	}
	s.ws, s.res = append(s.ws, ws...), append(s.res, res...)
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		for i, e := range do() {
			*res[i] = e
		}
	}()
}

// wait waits for everything beside the stages and folds the results in.
func (s *side) wait() {
	s.wg.Wait()
	for i, w := range s.ws {
		e := s.res[i]
		w.outcome, w.done = e.outcome, e.done
		if e.recovered {
			w.err = nil // found by late: its error was the missing row
		}
	}
}

// forward forwards w, which failed, down the retry ladder (fail) beside
// the stages; settle waits for its acknowledgement.
func (b *batch) forward(w *work) {
	ctx, rec, role, ev, err := w.ctx, w.rec, w.role, w.ev, w.err
	b.side.runAll([]*work{w}, func() []ended {
		out, ok := b.m.fail(ctx, rec, role, ev, err)
		return []ended{{outcome: out, done: ok}}
	})
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
