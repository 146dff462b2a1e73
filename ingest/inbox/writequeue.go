package inbox

import "sync"

// writeQueue holds the deliveries waiting for a Writer statement, one
// first-in first-out line per provider, and hands them out one provider
// at a time in turn. A provider flooding the receiver fills its own line:
// a quiet provider's delivery goes into the next statement beside the
// flood's, not behind every row the flood queued before it (admission
// bounds how many deliveries of one provider can wait, ingest.Limits).
type writeQueue struct {
	mu    sync.Mutex
	lines map[string][]*pending
	turn  []string // providers with deliveries waiting, in turn order
	n     int
	// wake holds a token for each worker to wake: push adds one, a
	// worker that leaves deliveries behind adds one for the next worker.
	wake chan struct{}
}

func newWriteQueue(workers int) *writeQueue {
	return &writeQueue{lines: map[string][]*pending{}, wake: make(chan struct{}, workers)}
}

// push adds p at the end of its provider's line and wakes a worker.
func (q *writeQueue) push(p *pending) {
	q.mu.Lock()
	prov := p.rec.Provider
	l := q.lines[prov]
	if len(l) == 0 {
		q.turn = append(q.turn, prov)
	}
	q.lines[prov] = append(l, p)
	q.n++
	q.mu.Unlock()
	q.signal()
}

func (q *writeQueue) signal() {
	select {
	case q.wake <- struct{}{}:
	default: // every worker already has a token
	}
}

// take appends to dst up to max deliveries, one from each provider's line
// in turn, round after round, and wakes another worker when it leaves
// deliveries behind. The providers served keep their place in the turn
// order, after those that were not reached.
func (q *writeQueue) take(dst []*pending, max int) []*pending {
	q.mu.Lock()
	for len(dst) < max && q.n > 0 {
		var served []string // still waiting after this round's delivery
		i := 0
		for ; i < len(q.turn) && len(dst) < max; i++ {
			prov := q.turn[i]
			l := q.lines[prov]
			dst = append(dst, l[0])
			l[0] = nil
			q.n--
			if len(l) == 1 {
				delete(q.lines, prov)
				continue
			}
			q.lines[prov] = l[1:]
			served = append(served, prov)
		}
		q.turn = append(append(make([]string, 0, len(q.turn)), q.turn[i:]...), served...)
	}
	left := q.n > 0
	q.mu.Unlock()
	if left {
		q.signal()
	}
	return dst
}

// len is how many deliveries wait.
func (q *writeQueue) len() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.n
}
