// Package admission decides which webhook deliveries the receiver takes
// on, and how much the bodies it has not verified yet may hold: the
// providers' shares of the bound on deliveries in flight with an adaptive
// limit (Slots, gradient.go), and their shares of the bound on unverified
// body bytes with a bound per client address (Bytes). It answers nothing
// itself: the edge (package ingest) turns a refusal into its 503 or 429.
package admission

import (
	"context"
	"net/http"
	"slices"
	"sync"
	"time"
)

// Admission control. Each provider has a share of the bound on deliveries
// in flight: ReservedInFlight slots that are always its own, and up to
// MaxInFlight in all (admitted or waiting), the slots past its reserve
// taken from a pool shared by every provider. The pool's size is the
// adaptive limit (gradient, gradient.go) less every reserve: what the write
// path carries at the latency it has when not saturated, never more than
// the global bound. The adaptive limit applies only while two providers
// or more are active (a delivery within the last second): it exists to
// keep one provider's flood from queueing another's deliveries, and a
// provider alone may use the whole bound.
//
//   - A delivery of a provider at its MaxInFlight is refused (over_share),
//     before its body is read; the refusal is held on a timer (RefusalHold)
//     before it is answered, as nginx's limit_req delays excess requests,
//     so a closed-loop flood waits instead of spinning on refusals: each
//     of its connections costs a timer, not a request a millisecond.
//   - A verified delivery within its share that finds the pool empty waits
//     for a slot, at most QueueWait; freed slots go to the waiting
//     providers in turn (round robin), so a provider's wait does not grow
//     with another's flood, and a latency spike makes deliveries wait
//     rather than be refused. Past QueueWait it is refused (saturated).
//
// Every refusal is 503 (or the provider's 429) with Retry-After (the
// edge answers it). The zero Slots admits nothing until SetLimits.
type Slots struct {
	mu         sync.Mutex
	shared     int // slots of the shared pool in use
	sharedSize int // its size now: the adaptive limit less the reserves (two providers active), else the global bound less them
	maxShared  int // the global bound less the reserves
	limited    int // the adaptive limit less the reserves
	shares     []*Share
	reserved   int // every provider's reserve
	total      int // deliveries admitted, all providers
	limit      gradient
	waiting    []*Share // shares with waiters, served in turn
	turn       int
}

// Share is one provider's part of the admission bound.
type Share struct {
	inFlight, max, reserved int
	status                  int             // 503 or 429
	last                    time.Time       // of its latest delivery's acquire
	queue                   []chan struct{} // waiters for a slot, oldest first
}

// Why Check or Acquire refuses a delivery (the reason label of
// gatehouse_webhook_refused_total).
const (
	ReasonOverShare = "over_share" // the provider is at its max_in_flight
	ReasonSaturated = "saturated"  // no slot freed within queue_wait: the write path is behind
)

// SetLimits sets the global bound and the providers' shares (New).
func (a *Slots) SetLimits(maxInFlight int, shares []*Share) {
	a.shares = shares
	a.reserved = 0
	for _, s := range shares {
		a.reserved += s.reserved
	}
	a.limit = newGradient(min(maxInFlight, a.reserved+max(8, maxInFlight/16)), maxInFlight)
	a.maxShared = max(0, maxInFlight-a.reserved)
	a.limited, a.sharedSize = a.maxShared, a.maxShared
}

// activeWindow is how recently a provider must have had a delivery to
// count as active (admission).
const activeWindow = time.Second

// resize sets sharedSize from the adaptive limit when two providers or
// more are active, else the global bound (a.mu held).
func (a *Slots) resize(now time.Time) {
	active := 0
	for _, s := range a.shares {
		if s.inFlight > 0 || len(s.queue) > 0 || now.Sub(s.last) < activeWindow {
			active++
		}
	}
	a.sharedSize = a.maxShared
	if active >= 2 {
		a.sharedSize = a.limited
	}
}

// Check says why a delivery of s would be refused now ("" when it may go
// on), without taking a slot: the refusal before the body is read.
func (a *Slots) Check(s *Share) (reason string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if s.inFlight+len(s.queue) >= s.max {
		return ReasonOverShare
	}
	return ""
}

// Acquire admits one delivery of s, waiting at most wait for a slot, or
// says why not.
func (a *Slots) Acquire(ctx context.Context, s *Share, wait time.Duration) (reason string) {
	now := time.Now()
	a.mu.Lock()
	if now.Sub(s.last) >= activeWindow {
		s.last = now
		a.resize(now)
	} else {
		s.last = now
	}
	switch {
	case s.inFlight+len(s.queue) >= s.max:
		a.mu.Unlock()
		return ReasonOverShare
	case s.inFlight < s.reserved && len(s.queue) == 0:
	case a.shared < a.sharedSize && len(a.waiting) == 0:
		a.shared++
	default:
		ch := make(chan struct{})
		s.queue = append(s.queue, ch)
		if len(s.queue) == 1 {
			a.waiting = append(a.waiting, s)
		}
		a.mu.Unlock()
		t := time.NewTimer(wait)
		defer t.Stop()
		select {
		case <-ch:
			return ""
		case <-t.C:
		case <-ctx.Done():
		}
		a.mu.Lock()
		defer a.mu.Unlock()
		select {
		case <-ch: // granted while the timer fired
			return ""
		default:
		}
		s.queue = slices.DeleteFunc(s.queue, func(c chan struct{}) bool { return c == ch })
		if len(s.queue) == 0 {
			a.dropWaiting(s)
		}
		return ReasonSaturated
	}
	s.inFlight++
	a.total++
	a.mu.Unlock()
	return ""
}

// InFlight is s's deliveries being served.
func (a *Slots) InFlight(s *Share) int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return s.inFlight
}

// Release gives back the slot of a delivery of s that Acquire admitted,
// with the latency of its write (0: none measured), and hands freed slots
// to waiters.
func (a *Slots) Release(s *Share, write time.Duration) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if write > 0 {
		a.limited = max(0, a.limit.observe(write, a.total)-a.reserved)
		a.resize(time.Now())
	}
	if s.inFlight > s.reserved {
		a.shared--
	}
	s.inFlight--
	a.total--
	if len(s.queue) > 0 && s.inFlight < s.reserved { // its own reserved slot
		a.grant(s)
	}
	for a.shared < a.sharedSize && len(a.waiting) > 0 {
		a.turn %= len(a.waiting)
		w := a.waiting[a.turn]
		if w.inFlight >= w.reserved {
			a.shared++
		}
		a.grant(w)
		a.turn++
	}
}

// grant gives s's oldest waiter a slot (a.mu held).
func (a *Slots) grant(s *Share) {
	ch := s.queue[0]
	s.queue = s.queue[1:]
	s.inFlight++
	a.total++
	close(ch)
	if len(s.queue) == 0 {
		a.dropWaiting(s)
	}
}

func (a *Slots) dropWaiting(s *Share) {
	if i := slices.Index(a.waiting, s); i >= 0 {
		a.waiting = slices.Delete(a.waiting, i, i+1)
		if a.turn > i {
			a.turn--
		}
	}
}

// NewShare is a provider's share of a global bound of total: at most
// maxInFlight (0: a quarter of total) admitted or waiting, reserved of
// them its own (0: 16, at most maxInFlight), refused with status (429, or
// 503 for any other value).
func NewShare(maxInFlight, reserved, status, total int) *Share {
	s := &Share{max: maxInFlight, reserved: reserved, status: status}
	if s.max <= 0 {
		s.max = max(1, total/4)
	}
	if s.reserved <= 0 {
		s.reserved = min(16, s.max)
	}
	if s.status != http.StatusTooManyRequests {
		s.status = http.StatusServiceUnavailable
	}
	return s
}

// Status is the status of the share's refusals: 503, or the provider's 429.
func (s *Share) Status() int { return s.status }
