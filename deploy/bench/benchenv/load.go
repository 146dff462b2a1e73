package benchenv

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// Ack is one request of a load run.
type Ack struct {
	// Due is when the request was meant to be sent, from the run's start
	// (closed loop: when it was sent).
	Due time.Duration
	// Latency runs from Due to the answer or the failure.
	Latency time.Duration
	// Status is the HTTP status; 0 for a transport error.
	Status int
}

// OK reports a 2xx answer.
func (a Ack) OK() bool { return a.Status/100 == 2 }

// LoadResult is what a load run saw.
type LoadResult struct {
	Start   time.Time
	Elapsed time.Duration
	// Acks holds every request, ordered by Due.
	Acks []Ack
	// LastError is the last non-2xx answer or transport error, for the report.
	LastError string
}

// Counts returns the 2xx answers and the others (non-2xx and transport errors).
func (r LoadResult) Counts() (ok, failed int) {
	for _, a := range r.Acks {
		if a.OK() {
			ok++
		} else {
			failed++
		}
	}
	return ok, failed
}

// Rate is the 2xx answers per second of the run.
func (r LoadResult) Rate() float64 {
	ok, _ := r.Counts()
	if r.Elapsed <= 0 {
		return 0
	}
	return float64(ok) / r.Elapsed.Seconds()
}

// loadWorker is one connection's share of a run.
type loadWorker struct {
	conn *Conn
	acks []Ack
	err  string
}

func (w *loadWorker) send(req []byte, start time.Time, due time.Duration) {
	status, msg, err := w.conn.Do(req)
	lat := time.Since(start) - due
	w.acks = append(w.acks, Ack{Due: due, Latency: lat, Status: status})
	switch {
	case err != nil:
		w.err = err.Error()
		time.Sleep(10 * time.Millisecond) // a dead receiver must not be spun on
	case status/100 != 2:
		w.err = fmt.Sprintf("%d %.120s", status, msg)
	}
}

func workers(addr string, n int) []*loadWorker {
	ws := make([]*loadWorker, n)
	for i := range ws {
		ws[i] = &loadWorker{conn: NewConn(addr), acks: make([]Ack, 0, 1<<12)}
	}
	return ws
}

func collect(ws []*loadWorker, start time.Time, elapsed time.Duration) LoadResult {
	r := LoadResult{Start: start, Elapsed: elapsed}
	for _, w := range ws {
		w.conn.Close()
		r.Acks = append(r.Acks, w.acks...)
		if w.err != "" {
			r.LastError = w.err
		}
	}
	slices.SortFunc(r.Acks, func(a, b Ack) int { return int(a.Due - b.Due) })
	return r
}

// ClosedLoop keeps conns requests in flight on conns keep-alive
// connections to addr for d (or until ctx ends): each connection sends
// next(now) as soon as its previous request is answered. Each Ack's Due is
// its send time.
func ClosedLoop(ctx context.Context, addr string, conns int, d time.Duration, next func(time.Time) []byte) LoadResult {
	ws := workers(addr, conns)
	start := time.Now()
	var wg sync.WaitGroup
	for _, w := range ws {
		wg.Go(func() {
			for ctx.Err() == nil {
				t0 := time.Now()
				due := t0.Sub(start)
				if due >= d {
					return
				}
				w.send(next(t0), start, due)
			}
		})
	}
	wg.Wait()
	return collect(ws, start, min(time.Since(start), d))
}

// FixedRate is an open-loop run: requests are due at fixed intervals of
// 1/rate seconds for d (or until ctx ends), whatever the answers, and are
// sent by the first free of conns keep-alive connections. Latency runs from
// each request's due time, so the time a request waits for a free
// connection while the receiver is slow counts (no coordinated omission).
// Requests still queued when ctx ends are not sent.
func FixedRate(ctx context.Context, addr string, conns int, rate float64, d time.Duration, next func(time.Time) []byte) LoadResult {
	interval := time.Duration(float64(time.Second) / rate)
	return openLoop(ctx, addr, conns, d, func() time.Duration { return interval }, next)
}

// Poisson is FixedRate with Poisson arrivals: the intervals between due
// times are exponentially distributed with mean 1/rate (as pgbench -R).
func Poisson(ctx context.Context, addr string, conns int, rate float64, d time.Duration, next func(time.Time) []byte) LoadResult {
	return openLoop(ctx, addr, conns, d, func() time.Duration {
		return time.Duration(rand.ExpFloat64() / rate * float64(time.Second))
	}, next)
}

func openLoop(ctx context.Context, addr string, conns int, d time.Duration, interval func() time.Duration, next func(time.Time) []byte) LoadResult {
	ws := workers(addr, conns)
	due := make(chan time.Duration, 1<<16)
	start := time.Now()
	var wg sync.WaitGroup
	for _, w := range ws {
		wg.Go(func() {
			for at := range due {
				if ctx.Err() != nil {
					continue // drain the queue without sending
				}
				w.send(next(time.Now()), start, at)
			}
		})
	}
	for at := time.Duration(0); at < d && ctx.Err() == nil; at += interval() {
		if wait := time.Until(start.Add(at)); wait > 0 {
			time.Sleep(wait)
		}
		due <- at // blocks while the queue is full; the due times stay fixed
	}
	close(due)
	wg.Wait()
	return collect(ws, start, d)
}

// Presign returns a source handing out n requests of next built now, and
// building more inline once they run out: the load generator's own CPU
// stays off the measured path.
func Presign(next func(time.Time) []byte, n int) func(time.Time) []byte {
	reqs := make([][]byte, n)
	now := time.Now()
	for i := range reqs {
		reqs[i] = next(now)
	}
	var i atomic.Int64
	return func(now time.Time) []byte {
		if k := i.Add(1) - 1; k < int64(n) {
			return reqs[k]
		}
		return next(now)
	}
}

// Latencies is a histogram of the 2xx answers' latencies.
func (r LoadResult) Latencies() *Hist {
	h := NewHist()
	for _, a := range r.Acks {
		if a.OK() {
			h.Record(a.Latency)
		}
	}
	return h
}
