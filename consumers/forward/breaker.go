package forward

import (
	"context"
	"sync"
	"time"

	"github.com/gatehouse/gatehouse/consumers/event"
)

// breaker is one destination's circuit: after threshold consecutive
// failures it opens, and deliveries wait (they are not failed, so nothing
// moves along the retry ladder or to the dead-letter topic while the
// destination is down) while one probe per interval is let through; the
// first probe that reaches the destination closes it.
type breaker struct {
	threshold int
	interval  time.Duration
	now       func() time.Time
	onChange  func(open bool)

	mu       sync.Mutex
	failures int // consecutive
	open     bool
	probing  bool
	probeAt  time.Time
	changed  chan struct{} // closed and replaced on every state change
}

func newBreaker(threshold int, interval time.Duration, now func() time.Time, onChange func(bool)) *breaker {
	return &breaker{threshold: threshold, interval: interval, now: now, onChange: onChange, changed: make(chan struct{})}
}

// admit waits until a delivery may be sent: at once while closed; while
// open, until this caller is the next probe. It fails only when ctx ends.
func (b *breaker) admit(ctx context.Context) (probe bool, err error) {
	for {
		b.mu.Lock()
		if !b.open {
			b.mu.Unlock()
			return false, nil
		}
		now := b.now()
		if !b.probing && !now.Before(b.probeAt) {
			b.probing = true
			b.mu.Unlock()
			return true, nil
		}
		ch, wait := b.changed, b.probeAt.Sub(now)
		if b.probing || wait <= 0 {
			wait = b.interval
		}
		b.mu.Unlock()
		t := time.NewTimer(wait)
		select {
		case <-ch:
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return false, ctx.Err()
		}
		t.Stop()
	}
}

// tryAdmit is admit that does not wait: while the circuit is open it
// admits the caller only as the next probe, and fails with
// event.ErrCircuitOpen otherwise.
func (b *breaker) tryAdmit(context.Context) (probe bool, err error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if !b.open {
		return false, nil
	}
	if !b.probing && !b.now().Before(b.probeAt) {
		b.probing = true
		return true, nil
	}
	return false, event.ErrCircuitOpen
}

// reached records that the destination answered (any status it owns:
// 2xx, or a 4xx that is the request's fault): the circuit closes.
func (b *breaker) reached(probe bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.failures = 0
	if probe {
		b.probing = false
	}
	if b.open {
		b.open = false
		b.signal()
	}
}

// failed records a failure of the destination (5xx, 408, 429, timeout,
// refused connection). It reports whether the circuit is open now.
func (b *breaker) failed(probe bool) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.failures++
	if probe {
		b.probing = false
		b.probeAt = b.now().Add(b.interval)
		b.signal()
		return true
	}
	if !b.open && b.failures >= b.threshold {
		b.open = true
		b.probeAt = b.now().Add(b.interval)
		b.signal()
	}
	return b.open
}

// abandon records that the caller gave up on its delivery (its context
// ended) before the destination's answer settled anything: a probe frees
// its slot, so the next delivery may probe at once, and the circuit keeps
// its state. Without it a cancelled probe would keep probing true and no
// later probe would ever be admitted.
func (b *breaker) abandon(probe bool) {
	if !probe {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.probing {
		b.probing = false
		close(b.changed) // wake the deliveries waiting behind the probe
		b.changed = make(chan struct{})
	}
}

func (b *breaker) signal() {
	close(b.changed)
	b.changed = make(chan struct{})
	if b.onChange != nil {
		b.onChange(b.open)
	}
}
