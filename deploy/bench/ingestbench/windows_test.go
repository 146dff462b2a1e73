package main

import (
	"strings"
	"testing"
	"time"

	"github.com/gatehouse/gatehouse/deploy/bench/benchenv"
)

func TestCommonStartNeedsEveryTable(t *testing.T) {
	t0 := time.Date(2026, 12, 7, 4, 0, 0, 0, time.UTC)
	at := func(m int) time.Time { return t0.Add(time.Duration(m) * time.Minute) }
	parts := func(widths map[string][]int) []partition {
		var ps []partition
		for parent, ms := range widths {
			for i := range len(ms) - 1 {
				ps = append(ps, partition{parent: parent, name: parent + "_p", starts: at(ms[i]), ends: at(ms[i+1])})
			}
		}
		return ps
	}
	// Two-minute partitions of all three: the first change after from.
	two := parts(map[string][]int{"inbox": {0, 2, 4, 6}, "outbox": {0, 2, 4, 6}, "dedupe_keys": {0, 2, 4, 6}})
	if got := commonStart(two, at(1), at(10)); !got.Equal(at(2)) {
		t.Errorf("two-minute partitions: change at %v, want %v", got, at(2))
	}
	if got := commonStart(two, at(3), at(10)); !got.Equal(at(4)) {
		t.Errorf("two-minute partitions from 4:03: change at %v, want %v", got, at(4))
	}
	// A fresh database before the configured width holds from its first
	// partition: the inbox and keys to midnight, the outbox to the hour,
	// then the configured width. No moment within ten minutes.
	fresh := parts(map[string][]int{"inbox": {0, 20 * 60, 20*60 + 2}, "dedupe_keys": {0, 20 * 60, 20*60 + 2}, "outbox": {0, 60, 62, 64}})
	if got := commonStart(fresh, at(1), at(10)); !got.IsZero() {
		t.Errorf("first partitions to midnight and the hour: change at %v, want none", got)
	}
	// The outbox changing alone is not the moment.
	if got := commonStart(fresh, at(1), at(70)); !got.IsZero() {
		t.Errorf("the outbox alone changes at 5:00: change at %v, want none", got)
	}
	// Different widths meet at a common multiple.
	mixed := parts(map[string][]int{"inbox": {0, 2, 4, 6, 8}, "outbox": {0, 3, 6, 9}, "dedupe_keys": {0, 1, 2, 3, 4, 5, 6, 7}})
	if got := commonStart(mixed, at(1), at(10)); !got.Equal(at(6)) {
		t.Errorf("widths 2, 3 and 1 minutes: change at %v, want %v", got, at(6))
	}
	if s := listPartitions(fresh); !strings.Contains(s, "outbox [12-07 04:00:00, 12-07 05:00:00)") || !strings.Contains(s, "inbox [12-07 04:00:00, 12-08 00:00:00)") {
		t.Errorf("listPartitions: %s", s)
	}
}

func TestWindowsCountAnswersByArrival(t *testing.T) {
	start := time.Date(2026, 12, 7, 4, 0, 0, 0, time.UTC)
	l := benchenv.LoadResult{Start: start, Acks: []benchenv.Ack{
		{Due: 0, Latency: time.Second, Status: 204},                          // arrives at 1 s
		{Due: 4 * time.Second, Latency: 2 * time.Second, Status: 204},        // sent in the first window, arrives in the second
		{Due: 6 * time.Second, Latency: time.Millisecond, Status: 503},       // not a 2xx
		{Due: 9 * time.Second, Latency: 999 * time.Millisecond, Status: 204}, // 9.999 s
		{Due: 14 * time.Second, Latency: 2 * time.Second, Status: 204},       // after the last bound
		{Due: 5 * time.Second, Latency: 0, Status: 204},                      // exactly at a bound: the later window
		{Due: 2 * time.Second, Latency: 3 * time.Second / 2, Status: 500},    // a failure
	}}
	bs := bounds(start, 5*time.Second, 15*time.Second)
	if len(bs) != 4 || !bs[3].Equal(start.Add(15*time.Second)) {
		t.Fatalf("bounds: %v", bs)
	}
	cpu := []time.Duration{0, 10 * time.Millisecond, 10 * time.Millisecond, 40 * time.Millisecond}
	ws, err := windows(l, bs, cpu)
	if err != nil {
		t.Fatal(err)
	}
	want := []int{1, 3, 0}
	for i, w := range ws {
		if w.n != want[i] || w.lat.N() != want[i] {
			t.Errorf("window %d: %d answers (%d latencies), want %d", i, w.n, w.lat.N(), want[i])
		}
	}
	if ws[0].pgCPU != 10*time.Millisecond || ws[1].pgCPU != 0 || ws[2].pgCPU != 30*time.Millisecond {
		t.Errorf("CPU per window: %v %v %v", ws[0].pgCPU, ws[1].pgCPU, ws[2].pgCPU)
	}
	if got := ws[1].tput(); got != 3.0/5 {
		t.Errorf("window 1 events/s %v, want 0.6", got)
	}
	if _, err := windows(l, bs, cpu[:2]); err == nil {
		t.Error("CPU read at fewer bounds than the windows': no error")
	}
}

func TestRollSpansMergeTheirWindows(t *testing.T) {
	change := time.Date(2026, 12, 7, 4, 2, 0, 0, time.UTC)
	r := &rollResult{change: change}
	bs := bounds(change.Add(-30*time.Second), 10*time.Second, 50*time.Second) // lead-in, 2 before, 2 after
	for i := range len(bs) - 1 {
		h := benchenv.NewHist()
		for range 10 * (i + 1) {
			h.Record(time.Millisecond)
		}
		r.win = append(r.win, window{from: bs[i], to: bs[i+1], n: 10 * (i + 1), lat: h, pgCPU: time.Duration(i+1) * time.Millisecond})
	}
	before, after := r.spans(20 * time.Second)
	if before.n != 20+30 || after.n != 40+50 || before.lat.N() != 50 || after.lat.N() != 90 {
		t.Errorf("before %d (%d latencies), after %d (%d): want 50 and 90, the lead-in window left out", before.n, before.lat.N(), after.n, after.lat.N())
	}
	if before.pgCPU != 5*time.Millisecond || after.pgCPU != 9*time.Millisecond {
		t.Errorf("CPU before %v after %v", before.pgCPU, after.pgCPU)
	}
	if got := after.tput() / before.tput(); got != 90.0/50 {
		t.Errorf("ratio %v", got)
	}
}
