package main

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/gatehouse/gatehouse/deploy/bench/benchenv"
)

// fwdSecret signs the forward cases' deliveries (Standard Webhooks).
const fwdSecret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"

// destination is a team's service for the forward cases: it answers 204
// after the current latency and counts deliveries.
type destination struct {
	url       string
	stop      func()
	latency   atomic.Int64 // time.Duration
	delivered atomic.Int64
}

func startDestination() (*destination, error) {
	d := &destination{}
	base, stop, err := benchenv.Serve(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if l := time.Duration(d.latency.Load()); l > 0 {
			time.Sleep(l)
		}
		d.delivered.Add(1)
		w.WriteHeader(http.StatusNoContent)
	}))
	if err != nil {
		return nil, err
	}
	d.url, d.stop = base+"/hooks", stop
	return d, nil
}

// forwardYAML is the forward list of the forward cases' providers.
func forwardYAML(d *destination, concurrency int) string {
	return fmt.Sprintf("    forward:\n      - url: %s\n        secret: %s\n        concurrency: %d\n", d.url, fwdSecret, concurrency)
}

// forwardCases are case 7 (forward to a 0-latency destination) and case 8
// (the destination answering after the API latency, 50 ms by default):
// pre-loaded backlogs drained by a consumer that forwards every event.
func (b *bench) forwardCases(ctx context.Context, res *results) error {
	o := b.o
	b.Logf("case 7: %d events forwarded to a 0-latency destination", o.events)
	var err error
	if res.forwardFast, err = b.backlog(ctx, "fwdfast", o.events, func(i int) string { return "pay_fwd_" + strconv.Itoa(i) }); err != nil {
		return err
	}
	b.Logf("case 8: %d events forwarded to a destination answering after %v", o.events, o.apiLatency)
	b.dest.latency.Store(int64(o.apiLatency))
	if res.forwardSlow, err = b.backlog(ctx, "fwdslow", o.events, func(i int) string { return "pay_fws_" + strconv.Itoa(i) }); err != nil {
		return err
	}
	b.dest.latency.Store(0)
	if got := b.dest.delivered.Load(); got < int64(2*o.events) {
		return fmt.Errorf("forward cases: %d deliveries, want %d", got, 2*o.events)
	}
	return nil
}
