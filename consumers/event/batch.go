package event

import (
	"context"
	"net/http"
	"sync"
)

// Batch is what a batch of the runner hands every handler it runs, as the
// Handler's third argument: the batch's fetch memo (coalescing) and the
// forward ledger. Build one with NewBatch; a handler reads both
// unconditionally, so none runs without them. The runner builds one per
// main-topic batch, and one per event of a retry topic or a late inbox row
// (a batch of one).
type Batch struct {
	memo   *Memo
	ledger Ledger
}

// NewBatch returns a batch with a new, empty memo and ledger l. It panics
// when l is nil: a handler without a ledger would deliver every retry to
// every destination.
func NewBatch(l Ledger) *Batch {
	if l == nil {
		panic("event: NewBatch without a ledger")
	}
	return &Batch{memo: &Memo{calls: map[string]*memoCall{}}, ledger: l}
}

// Memo is the batch's fetch memo.
func (b *Batch) Memo() *Memo { return b.memo }

// Ledger is the batch's forward ledger.
func (b *Batch) Ledger() Ledger { return b.ledger }

// Memo coalesces the work of one batch: the first call for a key runs,
// every other call for it, concurrent or later, gets its result. fetch's
// API client coalesces its requests through the memo of the Batch it is
// handed.
type Memo struct {
	mu    sync.Mutex
	calls map[string]*memoCall
}

type memoCall struct {
	done chan struct{}
	v    any
	err  error
}

// Do returns the result of the first call of key, running do when this is
// it; shared reports that another call's result was returned.
func (m *Memo) Do(key string, do func() (any, error)) (v any, err error, shared bool) {
	m.mu.Lock()
	if c, ok := m.calls[key]; ok {
		m.mu.Unlock()
		<-c.done
		return c.v, c.err, true
	}
	c := &memoCall{done: make(chan struct{})}
	m.calls[key] = c
	m.mu.Unlock()
	c.v, c.err = do()
	close(c.done)
	return c.v, c.err, false
}

// Ledger remembers which destinations answered 2xx for an event that goes
// to several, or whose delivery a transform shaped (table
// forward_deliveries), so a retry delivers only to the ones that failed
// and the console shows what a transform sent. The runner's store is the
// ledger of every Batch it builds.
type Ledger interface {
	ForwardedTo(ctx context.Context, provider, eventID string) (map[string]bool, error)
	RecordForward(ctx context.Context, provider, eventID, destination string, sent Sent) error
}

// Sent is what a forward destination was sent for one event: the body and
// the extra headers as a transform shaped them (Transformed), or nothing
// when the transform dropped the event (Dropped).
type Sent struct {
	Body        []byte
	Headers     http.Header
	Transformed bool
	Dropped     bool
}
