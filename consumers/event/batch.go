package event

import (
	"context"
	"net/http"
	"sync"
)

// Memo coalesces the work of one batch: the first call for a key runs,
// every other call for it, concurrent or later, gets its result. The
// runner puts one in each batch's context (WithMemo); fetch's API client
// coalesces its requests through it.
type Memo struct {
	mu    sync.Mutex
	calls map[string]*memoCall
}

type memoCall struct {
	done chan struct{}
	v    any
	err  error
}

type memoKey struct{}

// WithMemo returns ctx carrying a new batch memo.
func WithMemo(ctx context.Context) context.Context {
	return context.WithValue(ctx, memoKey{}, &Memo{calls: map[string]*memoCall{}})
}

// MemoFrom returns ctx's batch memo, nil when none.
func MemoFrom(ctx context.Context) *Memo {
	m, _ := ctx.Value(memoKey{}).(*Memo)
	return m
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
// and the console shows what a transform sent. The runner hands its store to the handlers through the
// context (WithLedger); without one (a handler called directly) every
// retry delivers to every destination.
type Ledger interface {
	ForwardedTo(ctx context.Context, provider, eventID string) (map[string]bool, error)
	RecordForward(ctx context.Context, provider, eventID, destination string, sent Sent) error
}

type ledgerKey struct{}

// WithLedger returns ctx carrying l.
func WithLedger(ctx context.Context, l Ledger) context.Context {
	return context.WithValue(ctx, ledgerKey{}, l)
}

// LedgerFrom returns ctx's ledger, nil when none.
func LedgerFrom(ctx context.Context) Ledger {
	l, _ := ctx.Value(ledgerKey{}).(Ledger)
	return l
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
