package api

import (
	"math"
	"testing"
)

// The quantile of bucket counts interpolates within its bucket, as
// Prometheus's histogram_quantile does.
func TestQuantileOfAckBuckets(t *testing.T) {
	counts := make([]float64, 13)
	counts[3] = 50 // ≤ 5 ms (from 2 ms)
	counts[6] = 50 // ≤ 50 ms (from 20 ms)
	if got := quantile(counts, 0.5); math.Abs(got-0.005) > 1e-9 {
		t.Errorf("p50 = %v, want 0.005 (the top of the first bucket)", got)
	}
	if got := quantile(counts, 0.99); math.Abs(got-(0.02+0.03*49/50)) > 1e-9 {
		t.Errorf("p99 = %v, want %v", got, 0.02+0.03*49/50)
	}
	if !math.IsNaN(quantile(make([]float64, 13), 0.5)) {
		t.Error("no answers: want NaN")
	}
	counts = make([]float64, 13)
	counts[12] = 1
	if got := quantile(counts, 0.99); got != 2.5 {
		t.Errorf("past the last bound: %v, want 2.5", got)
	}
}
