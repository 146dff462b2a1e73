package admission

import (
	"math"
	"time"
)

// gradient is the receiver's adaptive concurrency limit, in the manner of
// Netflix's concurrency-limits (Gradient2, with Vegas's no-load latency as
// its baseline): it compares a short average of the atomic write's latency
// with the latency the write has when the receiver is not loaded (writes
// made with at most two deliveries in flight), and shrinks the limit when
// the short average rises past tolerance times that baseline (the
// database, or the machine, is queueing), growing it by a queue allowance
// of √limit while latency holds. The baseline is learnt only from unloaded
// writes, so a flood lasting minutes cannot teach it that its own latency
// is normal.
//
// The limit bounds the slots shared by the providers past their reserves
// (Slots): under a flood the write path is kept near its unloaded
// latency, and a provider within its reserve is served at that latency
// instead of behind a queue of the flood's rows. It is a capacity
// estimate, not a refusal rule: a delivery that finds no slot waits for
// one, in turn with the other providers' (Slots.Acquire).
type gradient struct {
	min, max float64
	limit    float64
	short    float64 // EWMA of the write latency, seconds; 0 until the first sample
	noLoad   float64 // the unloaded write latency, seconds
}

const (
	gradientTolerance = 2.0  // the short average may reach twice the unloaded latency before the limit shrinks
	gradientSmoothing = 0.2  // weight of a new estimate
	gradientShort     = 0.1  // EWMA weight of a sample in the short average (about 10 samples)
	gradientNoLoad    = 0.05 // EWMA weight of an unloaded write in the baseline
)

func newGradient(lo, hi int) gradient {
	return gradient{min: float64(lo), max: float64(hi), limit: float64(hi)}
}

// observe takes one write's latency with inFlight deliveries in flight and
// returns the new limit.
func (g *gradient) observe(rtt time.Duration, inFlight int) int {
	s := rtt.Seconds()
	if s <= 0 {
		return int(g.limit)
	}
	if g.short == 0 {
		g.short, g.noLoad = s, s
	}
	g.short += gradientShort * (s - g.short)
	if inFlight <= 2 {
		g.noLoad += gradientNoLoad * (s - g.noLoad)
	}
	if float64(inFlight) < g.limit/2 { // not using the limit: no evidence to grow it
		return int(g.limit)
	}
	grad := math.Max(0.5, math.Min(1.0, gradientTolerance*g.noLoad/g.short))
	next := g.limit*grad + math.Sqrt(g.limit)
	g.limit = math.Max(g.min, math.Min(g.max, g.limit*(1-gradientSmoothing)+next*gradientSmoothing))
	return int(g.limit)
}
