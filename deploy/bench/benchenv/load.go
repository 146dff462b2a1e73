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
	// Due is when the request was meant to be sent, from the run's start
	// (closed loop: when it was sent).
	Due time.Duration
	// Latency runs from Due to the answer or the failure.
	Latency time.Duration
	// Status is the HTTP status; 0 for a transport error.
	Status int
	// RetryAfter reports a Retry-After header in the answer.
	RetryAfter bool
	// ID is the request's event id (with Load.IDs).
	ID string
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

// Load is the HTTP load of a run: Conns keep-alive connections to the
// receiver at Addr sending Next(now).
type Load struct {
	Addr  string
	Conns int
	Next  func(time.Time) []byte
	// IDs records each request's event id in its Ack (the body's first
	// "id" string, as Deliveries writes it).
	IDs bool
}

// loadWorker is one connection's share of a run.
type loadWorker struct {
	conn *Conn
	ids  bool
	acks []Ack
	err  string
}

func (w *loadWorker) send(req []byte, start time.Time, due time.Duration) {
	status, msg, err := w.conn.Do(req)
	a := Ack{Due: due, Latency: time.Since(start) - due, Status: status, RetryAfter: w.conn.retryAfter}
	if w.ids {
		a.ID = eventID(req)
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

var idField = []byte(`{"id":"`)

// eventID is the first "id" string of a request's body.
func eventID(req []byte) string {
	i := bytes.Index(req, idField)
	if i < 0 {
		return ""
	}
	rest := req[i+len(idField):]
	return string(rest[:max(0, bytes.IndexByte(rest, '"'))])
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

// Closed keeps Conns requests in flight for d (or until ctx ends): each
// connection sends Next(now) as soon as its previous request is answered.
// Each Ack's Due is its send time; Elapsed runs to the last answer (the
// requests sent before d end too), so Rate does not count them in a
// shorter time than they took.
func (l Load) Closed(ctx context.Context, d time.Duration) LoadResult {
	return closed(ctx, l.workers(), d, func(w *loadWorker, _ int, start time.Time, due time.Duration) {
		w.send(l.Next(start.Add(due)), start, due)
	})
}

// closed is the closed loop of Closed and Loop: each worker's goroutine
// calls do back to back, due when it is called, until d.
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

// Fixed is an open-loop run: requests are due at fixed intervals of
// 1/rate seconds for d (or until ctx ends), whatever the answers, and are
// sent by the first free of Conns connections. Latency runs from each
// request's due time, so the time a request waits for a free connection
// while the receiver is slow counts (no coordinated omission). Requests
// still queued when ctx ends are not sent.
func (l Load) Fixed(ctx context.Context, rate float64, d time.Duration) LoadResult {
	interval := time.Duration(float64(time.Second) / rate)
	return l.open(ctx, d, func() time.Duration { return interval })
}

// Poisson is Fixed with Poisson arrivals: the intervals between due times
// are exponentially distributed with mean 1/rate (as pgbench -R).
func (l Load) Poisson(ctx context.Context, rate float64, d time.Duration) LoadResult {
	return l.open(ctx, d, func() time.Duration {
		return time.Duration(rand.ExpFloat64() / rate * float64(time.Second))
	})
}

func (l Load) open(ctx context.Context, d time.Duration, interval func() time.Duration) LoadResult {
	ws := l.workers()
	due := make(chan time.Duration, 1<<16)
	start := time.Now()
	var wg sync.WaitGroup
	for _, w := range ws {
		wg.Go(func() {
			for at := range due {
				if ctx.Err() != nil {
					continue // drain the queue without sending
				}
				w.send(l.Next(time.Now()), start, at)
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

// Loop is a closed loop of any operation: conns goroutines call do (with
// their index) back to back for d or until ctx ends. Each call is an Ack
// due when it started, Status 200 when do succeeded and 0 (its error the
// LastError) when not; Elapsed runs to the last call's end.
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

// Pace is an open loop of any operation: every 10 ms it calls emit with
// the number of items due at rate per second since the start and not yet
// emitted, for d or until ctx ends; it returns how many were emitted.
func Pace(ctx context.Context, rate float64, d time.Duration, emit func(n int) error) (int, error) {
	start := time.Now()
	sent := 0
	t := time.NewTicker(10 * time.Millisecond)
	defer t.Stop()
	for {
		el := time.Since(start)
		if el >= d {
			return sent, nil
		}
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
}

// PerSecond is a histogram of the 2xx latencies of each second of the run,
// by the second they were answered in (nil for a second without any).
func (r LoadResult) PerSecond() []*Hist {
	var out []*Hist
	for _, a := range r.Acks {
		if !a.OK() {
			continue
		}
		s := int((a.Due + a.Latency) / time.Second)
		for len(out) <= s {
			out = append(out, nil)
		}
		if out[s] == nil {
			out[s] = NewHist()
		}
		out[s].Record(a.Latency)
	}
	return out
}
