package consumers

import (
	"context"
	"sync"

	"github.com/twmb/franz-go/pkg/kgo"
)

// processKeyed processes a main-topic partition's batch with records of
// different keys (objects) in parallel, up to KeyConcurrency at once, and
// records of one key in offset order. Offsets are marked afterwards, in
// order, up to the first record that could not be finished; then the
// session restarts and everything after it is delivered again (effects stay
// once: the dedupe row recognises what was already applied).
func (s *session) processKeyed(ctx context.Context, k tp, recs []*kgo.Record, role topicRole) {
	s.r.parts.head(k, recs[0].Timestamp)
	var order []string
	byKey := map[string][]int{}
	for i, rec := range recs {
		key := string(rec.Key)
		if _, ok := byKey[key]; !ok {
			order = append(order, key)
		}
		byKey[key] = append(byKey[key], i)
	}
	done := make([]bool, len(recs))
	sem := make(chan struct{}, s.r.cfg.KeyConcurrency)
	var wg sync.WaitGroup
	for _, key := range order {
		idx := byKey[key]
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer func() { <-sem; wg.Done() }()
			for _, i := range idx {
				if !s.handle(ctx, recs[i], role) {
					return // later records of this key wait for the redelivery
				}
				done[i] = true
			}
		}()
	}
	wg.Wait()
	for i, rec := range recs {
		if !done[i] {
			s.broken.Store(true)
			return
		}
		s.cl.MarkCommitRecords(rec)
		s.r.parts.done(k, rec.Offset, rec.Timestamp)
	}
}
