package ingest

import (
	"errors"
	"sync/atomic"
)

// bodyBudget bounds the bytes held for bodies whose signature is not yet
// verified, over all providers and connections. A slot of a provider's
// share is taken only after verification (admission.go), so without this
// bound clients without the secret could hold connections × max_body_bytes
// of buffered body. The budget is charged as a body's buffer grows, before
// it grows, and given back once the signature is checked (the body is then
// held under a slot of max_in_flight) or the read fails. A read that would
// pass the budget is refused with 503 and Retry-After (reason
// unverified_bytes); the minimum body rate frees what a slow client holds.
type bodyBudget struct {
	max  int64
	used atomic.Int64
}

var errBodyBudget = errors.New("the bytes of unverified bodies being read are at their bound")

// take reserves n bytes, or reports false and reserves nothing.
func (b *bodyBudget) take(n int64) bool {
	if b.used.Add(n) > b.max {
		b.used.Add(-n)
		return false
	}
	return true
}

// give returns n bytes reserved by take.
func (b *bodyBudget) give(n int64) { b.used.Add(-n) }
