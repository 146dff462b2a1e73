package main

import (
	"math"
	"strings"
	"testing"
	"time"

	"github.com/gatehouse/gatehouse/deploy/bench/benchenv"
)

// A synthetic three-minute run: the report's windows, rates, partition
// counts and minute windows come from the right samples.
func TestReportFiguresComeFromTheirWindows(t *testing.T) {
	o := &options{duration: 3 * time.Minute, maxD: 20 * time.Second, conns: 64,
		interval: time.Minute, retention: 3 * time.Minute, check: 10 * time.Second, drain: time.Minute, args: []string{"-d", "3m"}}
	r := &results{o: o, pgVersion: "15", kafkaVersion: "4", rate: 100, preDrain: 2 * time.Second, postDrain: -1}
	r.max = benchenv.LoadResult{Elapsed: 20 * time.Second, Acks: make([]benchenv.Ack, 4000)}
	for i := range r.max.Acks {
		r.max.Acks[i].Status = 204
	}
	for at := time.Duration(0); at <= 3*time.Minute; at += 10 * time.Second {
		sec := at.Seconds()
		processed := 100*min(sec, 120) + 90*max(sec-120, 0) // the consumers fall behind in the last minute
		r.samples = append(r.samples, sample{at: at, accepted: 100 * sec, published: 100 * sec, processed: processed,
			relayAge: 0, created: sec / 60, dropped: math.Floor(sec / 90),
			bytes: map[string]int64{"inbox": int64(sec) << 20, "outbox": 0}, parts: map[string]int64{"inbox": 5}})
	}
	for i := range 18000 {
		st := 204
		if i == 17999 {
			st = 503
		}
		r.open.Acks = append(r.open.Acks, benchenv.Ack{Due: time.Duration(i) * 10 * time.Millisecond,
			Latency: time.Duration(1+i/6000) * time.Millisecond, Status: st})
	}
	var b strings.Builder
	r.print(&b)
	out := b.String()
	for _, want := range []string{
		"**100 events/s** for 3m0s",
		"| receiver (accepted) | 100 | ack p99 1.00 ms | 100 | ack p99 3.00 ms |",
		"| consumers (processed) | 100 |", "| 90 |",
		"**3 created, 2 dropped**",
		"| inbox | 0.0 MiB | 60.0 MiB | 180.0 MiB | 180.0 MiB | +60.0 MiB |",
		"17999 answered 2xx, 1 not",
		"not caught up within 1m0s",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("report lacks %q:\n%s", want, out)
		}
	}
}
