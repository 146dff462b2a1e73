package ingest

import (
	"math"
	"time"
)

// gradient is the receiver's adaptive concurrency limit, in the manner of
// Netflix's concurrency-limits Gradient2: it compares a short average of
// the atomic write's latency with a long one, and shrinks the limit when
// the short one rises past tolerance times the long one (the database is
// queueing), growing it by a small queue allowance while latency holds.
// The limit bounds the slots shared by the providers past their reserves
// (admission), so under a flood the write path is kept near the latency it
// has when not saturated, and a provider within its reserve is served at
// that latency instead of behind a queue of the flood's rows. It is a
// capacity estimate, not a refusal rule: a delivery that finds no slot
// waits for one, in turn with the other providers' (admission.acquire).
type gradient struct {
	min, max    float64
	limit       float64
	short, long float64 // EWMAs of the write latency, seconds; 0 until the first sample
}

const (
	gradientTolerance = 2.0   // the short average may reach twice the long one before the limit shrinks
	gradientSmoothing = 0.2   // weight of a new estimate
	gradientShort     = 0.1   // EWMA weight of a sample in the short average (about 10 samples)
	gradientLong      = 0.002 // and in the long one (about 500 samples)
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
		g.short, g.long = s, s
	}
	g.short += gradientShort * (s - g.short)
	g.long += gradientLong * (s - g.long)
	if g.long > 2*g.short { // latency fell a lot: let the long average follow
		g.long *= 0.95
	}
	if float64(inFlight) < g.limit/2 { // not using the limit: no evidence to grow it
		return int(g.limit)
	}
	grad := math.Max(0.5, math.Min(1.0, gradientTolerance*g.long/g.short))
	next := g.limit*grad + math.Sqrt(g.limit)
	g.limit = math.Max(g.min, math.Min(g.max, g.limit*(1-gradientSmoothing)+next*gradientSmoothing))
	return int(g.limit)
}
