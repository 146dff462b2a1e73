package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// requests hands out pre-signed requests, signing more inline when the
// pre-signed ones run out.
type requests struct {
	gen  source
	reqs [][]byte
	i    atomic.Int64
}

func presign(g source, n int) *requests {
	r := &requests{gen: g, reqs: make([][]byte, n)}
	now := time.Now()
	for i := range r.reqs {
		r.reqs[i] = g.Next(now)
	}
	return r
}

func (r *requests) take() []byte {
	if i := r.i.Add(1) - 1; i < int64(len(r.reqs)) {
		return r.reqs[i]
	}
	return r.gen.Next(time.Now())
}

// runResult is one timed run of either side.
type runResult struct {
	n       int
	elapsed time.Duration
	lats    []time.Duration // sorted
	errs    int
	errMsg  string
	// clientCPU is the CPU time of a client process that ran apart (pgbench).
	clientCPU time.Duration
}

func (r runResult) tput() float64 { return float64(r.n) / r.elapsed.Seconds() }

func (r runResult) pct(q float64) time.Duration {
	if len(r.lats) == 0 {
		return 0
	}
	return r.lats[int(q*float64(len(r.lats)-1)+0.5)]
}

// conn is one keep-alive HTTP/1.1 connection to the receiver.
type conn struct {
	c  net.Conn
	br *bufio.Reader
}

func dialAll(addr string, n int) ([]*conn, error) {
	cs := make([]*conn, 0, n)
	for range n {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			for _, x := range cs {
				x.c.Close()
			}
			return nil, fmt.Errorf("dial receiver: %w", err)
		}
		cs = append(cs, &conn{c: c, br: bufio.NewReaderSize(c, 4096)})
	}
	return cs, nil
}

// do sends one request and reads the response; it reports the status and,
// for a non-204, the start of the body.
func (c *conn) do(req []byte) (int, string, error) {
	_ = c.c.SetDeadline(time.Now().Add(30 * time.Second))
	if _, err := c.c.Write(req); err != nil {
		return 0, "", err
	}
	resp, err := http.ReadResponse(c.br, nil)
	if err != nil {
		return 0, "", err
	}
	msg := ""
	if resp.StatusCode != http.StatusNoContent {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 200))
		msg = strings.TrimSpace(string(b))
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode, msg, nil
}

// worker accumulates one connection's results.
type worker struct {
	lats []time.Duration
	errs int
	msg  string
	last time.Time
}

func (w *worker) record(status int, msg string, err error, lat time.Duration, end time.Time) bool {
	w.last = end
	switch {
	case err != nil:
		w.errs++
		w.msg = err.Error()
		return false
	case status != http.StatusNoContent:
		w.errs++
		w.msg = fmt.Sprintf("%d %s", status, msg)
	default:
		w.lats = append(w.lats, lat)
	}
	return true
}

func merge(ws []*worker, start time.Time) runResult {
	var r runResult
	var last time.Time
	for _, w := range ws {
		r.lats = append(r.lats, w.lats...)
		r.errs += w.errs
		if w.msg != "" {
			r.errMsg = w.msg
		}
		if w.last.After(last) {
			last = w.last
		}
	}
	slices.Sort(r.lats)
	r.n = len(r.lats)
	r.elapsed = last.Sub(start)
	return r
}

// closedLoop keeps conns requests in flight for d: each connection sends
// its next request as soon as the previous one is answered.
func closedLoop(ctx context.Context, addr string, conns int, d time.Duration, src *requests) (runResult, error) {
	cs, err := dialAll(addr, conns)
	if err != nil {
		return runResult{}, err
	}
	ws := make([]*worker, conns)
	var wg sync.WaitGroup
	start := time.Now()
	deadline := start.Add(d)
	for i, c := range cs {
		ws[i] = &worker{lats: make([]time.Duration, 0, 1<<14)}
		wg.Go(func() {
			defer c.c.Close()
			w := ws[i]
			for t0 := time.Now(); t0.Before(deadline) && ctx.Err() == nil; {
				status, msg, err := c.do(src.take())
				end := time.Now()
				if !w.record(status, msg, err, end.Sub(t0), end) {
					return
				}
				t0 = end
			}
		})
	}
	wg.Wait()
	return merge(ws, start), ctx.Err()
}

// openLoop sends requests at Poisson arrivals of the given rate for d over
// up to conns connections. Latency runs from each request's scheduled time,
// so time spent waiting for a free connection counts (as pgbench -R does).
func openLoop(ctx context.Context, addr string, conns int, rate float64, d time.Duration, src *requests) (runResult, error) {
	cs, err := dialAll(addr, conns)
	if err != nil {
		return runResult{}, err
	}
	sched := make(chan time.Time, int(rate*d.Seconds())+conns+16)
	ws := make([]*worker, conns)
	var wg sync.WaitGroup
	start := time.Now()
	for i, c := range cs {
		ws[i] = &worker{lats: make([]time.Duration, 0, 1<<12)}
		wg.Go(func() {
			defer c.c.Close()
			w := ws[i]
			for due := range sched {
				status, msg, err := c.do(src.take())
				end := time.Now()
				if !w.record(status, msg, err, end.Sub(due), end) {
					for range sched { // let the others finish the schedule
					}
					return
				}
			}
		})
	}
	end := start.Add(d)
	next := start
	for next.Before(end) && ctx.Err() == nil {
		now := time.Now()
		for ; !next.After(now) && next.Before(end); next = next.Add(time.Duration(rand.ExpFloat64() / rate * float64(time.Second))) {
			sched <- next
		}
		if wait := time.Until(next); wait > 0 {
			time.Sleep(wait)
		}
	}
	close(sched)
	wg.Wait()
	r := merge(ws, start)
	r.elapsed = d
	return r, ctx.Err()
}
