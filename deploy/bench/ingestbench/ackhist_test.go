package main

import (
	"math"
	"testing"
	"time"
)

func TestAckQuantile(t *testing.T) {
	before := ackBuckets{0.001: 10, 0.01: 10, 0.1: 10, math.Inf(1): 10}
	// 100 new acks: 50 ≤ 1 ms, 40 in (1 ms, 10 ms], 10 in (10 ms, 100 ms].
	after := ackBuckets{0.001: 60, 0.01: 100, 0.1: 110, math.Inf(1): 110}
	for q, want := range map[float64]time.Duration{0.5: time.Millisecond, 0.9: 10 * time.Millisecond, 0.95: 55 * time.Millisecond} {
		if got := after.quantile(before, q); (got - want).Abs() > 10*time.Microsecond {
			t.Errorf("q%.2f = %v, want %v", q, got, want)
		}
	}
	if got := before.quantile(before, 0.99); got != 0 {
		t.Errorf("no acks: %v", got)
	}
}
