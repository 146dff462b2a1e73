package admission

import (
	"context"
	"testing"
	"time"
)

// Freed slots go to the waiting providers in turn, not to whichever
// provider queued the most: B's one waiter is served before A's second.
func TestFreedSlotsGoToWaitingProvidersInTurn(t *testing.T) {
	var a Slots
	sa, sb := &Share{max: 10}, &Share{max: 10}
	a.SetLimits(2, []*Share{sa, sb})
	for range 2 {
		if r := a.Acquire(context.Background(), sa, time.Second); r != "" {
			t.Fatalf("acquire: %s", r)
		}
	}
	served := make(chan string, 3)
	wait := func(s *Share, name string, queued int) {
		go func() {
			if r := a.Acquire(context.Background(), s, 10*time.Second); r == "" {
				served <- name
			}
		}()
		for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(time.Millisecond) {
			a.mu.Lock()
			n := len(s.queue)
			a.mu.Unlock()
			if n == queued {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s never queued", name)
			}
		}
	}
	wait(sa, "a2", 1)
	wait(sa, "a3", 2)
	wait(sb, "b1", 1)
	var got []string
	for range 3 {
		a.Release(sa, 0)
		got = append(got, <-served)
	}
	if got[0] != "a2" || got[1] != "b1" || got[2] != "a3" {
		t.Errorf("served %v, want [a2 b1 a3]", got)
	}
	// Three of A's slots freed, three waiters granted: A 1, B 1, both
	// from the shared pool (no reserves).
	if sa.inFlight != 1 || sb.inFlight != 1 || a.shared != 2 || a.total != 2 {
		t.Errorf("in flight a=%d b=%d, shared %d, total %d; want 1 1 2 2", sa.inFlight, sb.inFlight, a.shared, a.total)
	}
}

// A waiter that times out is refused (saturated) and leaves the queue.
func TestWaiterTimesOutSaturated(t *testing.T) {
	var a Slots
	s := &Share{max: 10}
	a.SetLimits(1, []*Share{s})
	if r := a.Acquire(context.Background(), s, time.Second); r != "" {
		t.Fatal(r)
	}
	start := time.Now()
	if r := a.Acquire(context.Background(), s, 50*time.Millisecond); r != ReasonSaturated {
		t.Fatalf("got %q, want saturated", r)
	}
	if d := time.Since(start); d < 50*time.Millisecond {
		t.Errorf("refused after %v, before its wait", d)
	}
	if len(s.queue) != 0 || len(a.waiting) != 0 {
		t.Errorf("queue %d, waiting %d after the timeout", len(s.queue), len(a.waiting))
	}
	a.Release(s, 0)
	if s.inFlight != 0 || a.shared != 0 || a.total != 0 {
		t.Errorf("after release: in flight %d shared %d total %d", s.inFlight, a.shared, a.total)
	}
}

// The adaptive limit holds while the write latency holds, shrinks when it
// rises well past its long average, and grows back when it falls.
func TestGradientFollowsTheWriteLatency(t *testing.T) {
	g := newGradient(16, 256)
	lim := 256
	for range 2000 {
		lim = g.observe(5*time.Millisecond, lim)
	}
	if lim != 256 {
		t.Fatalf("steady latency: limit %d, want 256", lim)
	}
	for range 100 {
		lim = g.observe(60*time.Millisecond, lim)
	}
	if lim > 64 {
		t.Errorf("latency ×12: limit %d, want it shrunk below 64", lim)
	}
	low := lim
	for range 3000 {
		lim = g.observe(5*time.Millisecond, lim)
	}
	if lim <= low*2 {
		t.Errorf("latency back to normal: limit %d, want it grown from %d", lim, low)
	}
	// An idle receiver (far below its limit) gives no evidence to grow.
	g2 := newGradient(16, 256)
	g2.limit = 40
	for range 1000 {
		g2.observe(time.Millisecond, 1)
	}
	if g2.limit != 40 {
		t.Errorf("idle: limit %v, want 40", g2.limit)
	}
}

// The adaptive limit constrains the shared slots only while two providers
// or more are active: a provider alone may use the whole bound.
func TestAdaptiveLimitAppliesWhenProvidersShare(t *testing.T) {
	var a Slots
	sa, sb := &Share{max: 100, reserved: 2}, &Share{max: 100, reserved: 2}
	a.SetLimits(64, []*Share{sa, sb})
	// The write latency rose tenfold under load: the limit shrinks.
	for range 20 {
		a.limited = max(0, a.limit.observe(time.Millisecond, 1)-a.reserved)
	}
	for range 200 {
		a.limited = max(0, a.limit.observe(10*time.Millisecond, 64)-a.reserved)
	}
	if a.limited >= a.maxShared {
		t.Fatalf("limit did not shrink: %d of %d", a.limited, a.maxShared)
	}
	a.mu.Lock()
	sa.last = time.Now()
	a.resize(time.Now())
	alone := a.sharedSize
	sb.last = time.Now()
	a.resize(time.Now())
	both := a.sharedSize
	a.mu.Unlock()
	if alone != a.maxShared || both != a.limited {
		t.Errorf("shared slots: alone %d (want %d), with two active %d (want %d)", alone, a.maxShared, both, a.limited)
	}
}
