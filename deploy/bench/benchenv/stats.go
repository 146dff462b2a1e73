package benchenv

import (
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"
)

// Hist records latencies of 1 µs to 10 min, three significant digits (HdrHistogram).
type Hist struct{ h *hdrhistogram.Histogram }

// maxLatency is the largest latency a Hist tells apart.
const maxLatency = 10 * time.Minute

// NewHist returns an empty histogram.
func NewHist() *Hist {
	return &Hist{h: hdrhistogram.New(int64(time.Microsecond), int64(maxLatency), 3)}
}

// Record adds one latency (negative ones count as 0).
func (h *Hist) Record(d time.Duration) {
	_ = h.h.RecordValue(int64(min(max(d, 0), maxLatency)))
}

// N is the number of latencies recorded.
func (h *Hist) N() int { return int(h.h.TotalCount()) }

// Q is the q-quantile (0 ≤ q ≤ 1; 1 is the largest); 0 when empty.
func (h *Hist) Q(q float64) time.Duration {
	if h == nil || h.h.TotalCount() == 0 {
		return 0
	}
	if q >= 1 {
		return time.Duration(h.h.Max())
	}
	return time.Duration(h.h.ValueAtQuantile(q * 100))
}

// Merge adds o's latencies to h.
func (h *Hist) Merge(o *Hist) { h.h.Merge(o.h) }

// Mean is the mean latency recorded; 0 when empty.
func (h *Hist) Mean() time.Duration {
	if h == nil || h.h.TotalCount() == 0 {
		return 0
	}
	return time.Duration(h.h.Mean())
}

// Median is the median of v (mean of the middle two; 0 when empty).
func Median(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	s := slices.Sorted(slices.Values(v))
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// MedianOf is the median of f over xs.
func MedianOf[T any](xs []T, f func(T) float64) float64 { return Median(Col(xs, f)) }

// Col is f of each of xs.
func Col[T any](xs []T, f func(T) float64) []float64 {
	out := make([]float64, len(xs))
	for i, x := range xs {
		out[i] = f(x)
	}
	return out
}

// Spread is the minimum, maximum and median of v.
func Spread(v []float64) (lo, hi, med float64) {
	if len(v) == 0 {
		return 0, 0, 0
	}
	return slices.Min(v), slices.Max(v), Median(v)
}

// Sum is the sum of v.
func Sum(v []float64) float64 {
	t := 0.0
	for _, x := range v {
		t += x
	}
	return t
}

// Millis is d in milliseconds.
func Millis(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// Ms formats d in ms with prec decimals ("1.25 ms"); negative: "–" (not measured).
func Ms(d time.Duration, prec int) string {
	if d < 0 {
		return "–"
	}
	return fmt.Sprintf("%.*f ms", prec, Millis(d))
}

// Thousands formats f, rounded, with spaces between digit groups ("1 234 567").
func Thousands(f float64) string {
	s := fmt.Sprintf("%.0f", math.Abs(f))
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + " " + s[i:]
	}
	if math.Round(f) < 0 {
		s = "-" + s
	}
	return s
}

// Verdict is "met" or "NOT met".
func Verdict(ok bool) string {
	if ok {
		return "met"
	}
	return "NOT met"
}
