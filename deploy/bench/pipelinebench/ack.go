package main

import (
	"math"
	"slices"
	"time"
)

// buckets are the cumulative counts per upper bound of the receiver's own
// gatehouse_webhook_ack_seconds histogram (status 204): from the handler's
// start to the 204, without the time a request spends in the kernel and in
// the load generator.
type buckets map[float64]float64

func ackBuckets(f families) buckets {
	out := buckets{}
	for _, m := range f["gatehouse_webhook_ack_seconds"].GetMetric() {
		is204 := false
		for _, l := range m.GetLabel() {
			is204 = is204 || (l.GetName() == "status" && l.GetValue() == "204")
		}
		if !is204 {
			continue
		}
		for _, b := range m.GetHistogram().GetBucket() {
			if !math.IsInf(b.GetUpperBound(), 1) {
				out[b.GetUpperBound()] += float64(b.GetCumulativeCount())
			}
		}
		out[math.Inf(1)] += float64(m.GetHistogram().GetSampleCount())
	}
	return out
}

// quantile estimates the q-quantile of the acks between two readings,
// interpolating linearly inside the bucket (as PromQL's
// histogram_quantile); 0 when there were none. Above the highest finite
// bound it answers that bound.
func (after buckets) quantile(before buckets, q float64) time.Duration {
	total := after[math.Inf(1)] - before[math.Inf(1)]
	if total <= 0 {
		return 0
	}
	bounds := make([]float64, 0, len(after))
	for ub := range after {
		bounds = append(bounds, ub)
	}
	slices.Sort(bounds)
	rank, lower, prev := q*total, 0.0, 0.0
	for _, ub := range bounds {
		c := after[ub] - before[ub]
		if c >= rank {
			if math.IsInf(ub, 1) {
				return seconds(lower)
			}
			return seconds(lower + (ub-lower)*(rank-prev)/math.Max(c-prev, 1))
		}
		lower, prev = ub, c
	}
	return seconds(lower)
}

func seconds(s float64) time.Duration { return time.Duration(s * float64(time.Second)) }
