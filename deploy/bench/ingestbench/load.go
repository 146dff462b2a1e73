package main

import (
	"context"
	"time"

	"github.com/gatehouse/gatehouse/deploy/bench/benchenv"
)

// runResult is one timed run of either side.
type runResult struct {
	n       int // acknowledged events (2xx, or pgbench transactions)
	elapsed time.Duration
	lat     *benchenv.Hist // of the acknowledged events
	errs    int
	errMsg  string
	// clientCPU is the CPU time of a client process that ran apart (pgbench).
	clientCPU time.Duration
}

func (r runResult) tput() float64 { return float64(r.n) / r.elapsed.Seconds() }

func (r runResult) pct(q float64) time.Duration { return r.lat.Q(q) }

// source is what a load loop sends: deliveries of one scheme.
type source interface{ Next(time.Time) []byte }

func presign(g source, n int) func(time.Time) []byte { return benchenv.Presign(g.Next, n) }

func fromLoad(l benchenv.LoadResult, err error) (runResult, error) {
	ok, failed := l.Counts()
	return runResult{n: ok, elapsed: l.Elapsed, lat: l.Latencies(), errs: failed, errMsg: l.LastError}, err
}

// closedLoop keeps conns requests in flight for d: each connection sends
// its next request as soon as the previous one is answered.
func (b *bench) closed(ctx context.Context, conns int, d time.Duration, src func(time.Time) []byte) (runResult, error) {
	return fromLoad(benchenv.Load{Addr: b.recv.Public, Conns: conns, Next: src}.Closed(ctx, d), ctx.Err())
}

// openLoop sends requests at Poisson arrivals of the given rate for d over
// up to conns connections. Latency runs from each request's scheduled time,
// so time spent waiting for a free connection counts (as pgbench -R does).
func (b *bench) open(ctx context.Context, conns int, rate float64, d time.Duration, src func(time.Time) []byte) (runResult, error) {
	return fromLoad(benchenv.Load{Addr: b.recv.Public, Conns: conns, Next: src}.Poisson(ctx, rate, d), ctx.Err())
}
