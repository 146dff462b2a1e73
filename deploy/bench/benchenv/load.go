package benchenv

import (
	"bytes"
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
	// Due is when the request was meant to be sent (closed loop: when it
	// was), from the run's start; Latency runs from Due to the answer.
	Due, Latency time.Duration
	Status       int    // the HTTP status; 0 for a transport error
	RetryAfter   bool   // the answer had a Retry-After header
	ID           string // the request's event id (with Load.IDs)
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
		}
	}
	return ok, len(r.Acks) - ok
}

// Rate is the 2xx answers per second of the run.
func (r LoadResult) Rate() float64 {
	ok, _ := r.Counts()
	return float64(ok) / max(r.Elapsed.Seconds(), 1e-9)
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

// Load is a run's HTTP load: Conns keep-alive connections to Addr sending Next(now).
type Load struct {
	Addr  string
	Conns int
	Next  func(time.Time) []byte
	// IDs records each request's event id in its Ack (the body's first
	// "id" string, as Deliveries writes it).
	IDs bool
}

// loadWorker is one connection's (or Loop goroutine's) share of a run.
type loadWorker struct {
	conn *Conn
	ids  bool
	acks []Ack
	err  string
}

var idField = []byte(`{"id":"`)

func (w *loadWorker) send(req []byte, start time.Time, due time.Duration) {
	status, msg, err := w.conn.Do(req)
	a := Ack{Due: due, Latency: time.Since(start) - due, Status: status, RetryAfter: w.conn.retryAfter}
	if _, id, ok := bytes.Cut(req, idField); ok && w.ids {
		a.ID = string(id[:max(0, bytes.IndexByte(id, '"'))])
	}
	w.acks = append(w.acks, a)
	switch {
	case err != nil:
		w.err = err.Error()
		time.Sleep(10 * time.Millisecond) // a dead receiver must not be spun on
	case status/100 != 2:
		w.err = fmt.Sprintf("%d %.120s", status, msg)
	}
}

func (l Load) workers() []*loadWorker {
	ws := make([]*loadWorker, l.Conns)
	for i := range ws {
		ws[i] = &loadWorker{conn: NewConn(l.Addr), ids: l.IDs, acks: make([]Ack, 0, 1<<12)}
	}
	return ws
}

func collect(ws []*loadWorker, start time.Time, elapsed time.Duration) LoadResult {
	r := LoadResult{Start: start, Elapsed: elapsed}
	for _, w := range ws {
		if w.conn != nil {
			w.conn.Close()
		}
		r.Acks = append(r.Acks, w.acks...)
		if w.err != "" {
			r.LastError = w.err
		}
	}
	slices.SortFunc(r.Acks, func(a, b Ack) int { return int(a.Due - b.Due) })
	return r
}

// Closed keeps Conns requests in flight for d; Elapsed runs to the last answer.
func (l Load) Closed(ctx context.Context, d time.Duration) LoadResult {
	return closed(ctx, l.workers(), d, func(w *loadWorker, _ int, start time.Time, due time.Duration) {
		w.send(l.Next(start.Add(due)), start, due)
	})
}

// closed calls do back to back on each worker's goroutine until d.
func closed(ctx context.Context, ws []*loadWorker, d time.Duration, do func(w *loadWorker, i int, start time.Time, due time.Duration)) LoadResult {
	start := time.Now()
	var wg sync.WaitGroup
	for i, w := range ws {
		wg.Go(func() {
			for due := time.Since(start); due < d && ctx.Err() == nil; due = time.Since(start) {
				do(w, i, start, due)
			}
		})
	}
	wg.Wait()
	return collect(ws, start, time.Since(start))
}

// Fixed is an open loop: a request due every 1/rate seconds for d, sent by
// the first free of Conns connections; latency runs from the due time.
func (l Load) Fixed(ctx context.Context, rate float64, d time.Duration) LoadResult {
	return l.open(ctx, d, func() float64 { return 1 / rate })
}

// Poisson is Fixed with exponential intervals of mean 1/rate (as pgbench -R).
func (l Load) Poisson(ctx context.Context, rate float64, d time.Duration) LoadResult {
	return l.open(ctx, d, func() float64 { return rand.ExpFloat64() / rate })
}

// open is the open loop of Fixed and Poisson; interval is in seconds.
func (l Load) open(ctx context.Context, d time.Duration, interval func() float64) LoadResult {
	ws := l.workers()
	due := make(chan time.Duration, 1<<16)
	start := time.Now()
	var wg sync.WaitGroup
	for _, w := range ws {
		wg.Go(func() {
			for at := range due {
				if ctx.Err() == nil { // else drain the queue without sending
					w.send(l.Next(time.Now()), start, at)
				}
			}
		})
	}
	for at := time.Duration(0); at < d && ctx.Err() == nil; at += time.Duration(interval() * float64(time.Second)) {
		time.Sleep(time.Until(start.Add(at)))
		due <- at // blocks while the queue is full; the due times stay fixed
	}
	close(due)
	wg.Wait()
	return collect(ws, start, d)
}

// Presign hands out n requests of next built now (then more): off the measured path.
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

// Loop is a closed loop of any operation: conns goroutines call do back to
// back for d; each call is an Ack, Status 200 when do succeeded, else 0.
func Loop(ctx context.Context, conns int, d time.Duration, do func(worker int) error) LoadResult {
	ws := make([]*loadWorker, conns)
	for i := range ws {
		ws[i] = &loadWorker{}
	}
	return closed(ctx, ws, d, func(w *loadWorker, i int, start time.Time, due time.Duration) {
		a := Ack{Due: due, Status: 200}
		if err := do(i); err != nil {
			a.Status, w.err = 0, err.Error()
		}
		a.Latency = time.Since(start) - due
		w.acks = append(w.acks, a)
	})
}

// Pace calls emit every 10 ms, for d, with the items due at rate and not emitted.
func Pace(ctx context.Context, rate float64, d time.Duration, emit func(n int) error) (int, error) {
	start := time.Now()
	sent := 0
	t := time.NewTicker(10 * time.Millisecond)
	defer t.Stop()
	for el := time.Since(start); el < d; el = time.Since(start) {
		if due := int(rate*el.Seconds()) - sent; due > 0 {
			if err := emit(due); err != nil {
				return sent, err
			}
			sent += due
		}
		select {
		case <-ctx.Done():
			return sent, ctx.Err()
		case <-t.C:
		}
	}
	return sent, nil
}
