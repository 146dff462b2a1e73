package api

import (
	"context"
	"fmt"
	"math"
	"time"

	"github.com/gatehouse/gatehouse/ingest/upkeep"
)

// The console's charts read pipeline_minutes (upkeep.Rollup), never the
// inbox: at most one row per provider and minute of the range.

// ChartPoint is one step of a chart: the answers per minute by class, the
// ack latency's p50 and p99 (ms; NaN without answers) and each stage's
// queue age (s; the step's maximum; NaN without a sample).
type ChartPoint struct {
	At                                     time.Time
	Accepted, Duplicate, Rejected, Refused float64
	P50, P99                               float64
	RelayAge, ConsumeAge                   float64
}

// Charts is a range of points, Step apart, oldest first.
type Charts struct {
	Provider string // "" : every provider
	From, To time.Time
	Step     time.Duration
	Points   []ChartPoint
}

// Charts answers the last span in steps of step for provider ("" : every
// provider). The queue ages are the stages' (the same for every provider).
func (ib Inbox) Charts(ctx context.Context, provider string, span, step time.Duration) (Charts, error) {
	to := time.Now().UTC().Truncate(step).Add(step)
	c := Charts{Provider: provider, From: to.Add(-span), To: to, Step: step}
	n := int(span / step)
	type acc struct {
		counts  [4]float64
		buckets []float64
		relay   float64
		consume float64
	}
	bins := make([]acc, n)
	for i := range bins {
		bins[i].relay, bins[i].consume = math.NaN(), math.NaN()
	}
	rows, err := ib.Pool.Query(ctx, `SELECT minute, provider, accepted, duplicate, rejected, refused, ack_buckets, relay_age_s, consume_age_s
FROM pipeline_minutes WHERE minute >= $1 AND minute < $2 AND (provider = '' OR $3 = '' OR provider = $3)`, c.From, c.To, provider)
	if err != nil {
		return c, fmt.Errorf("read pipeline_minutes: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var (
			minute         time.Time
			prov           string
			a, d, rj, rf   int32
			buckets        []int32
			relay, consume *float32
		)
		if err := rows.Scan(&minute, &prov, &a, &d, &rj, &rf, &buckets, &relay, &consume); err != nil {
			return c, fmt.Errorf("read pipeline_minutes: %w", err)
		}
		i := int(minute.Sub(c.From) / step)
		if i < 0 || i >= n {
			continue
		}
		b := &bins[i]
		if prov != "" {
			for j, v := range []int32{a, d, rj, rf} {
				b.counts[j] += float64(v)
			}
			if len(b.buckets) < len(buckets) {
				b.buckets = append(b.buckets, make([]float64, len(buckets)-len(b.buckets))...)
			}
			for j, v := range buckets {
				b.buckets[j] += float64(v)
			}
		}
		if relay != nil && (math.IsNaN(b.relay) || float64(*relay) > b.relay) {
			b.relay = float64(*relay)
		}
		if consume != nil && (math.IsNaN(b.consume) || float64(*consume) > b.consume) {
			b.consume = float64(*consume)
		}
	}
	if err := rows.Err(); err != nil {
		return c, fmt.Errorf("read pipeline_minutes: %w", err)
	}
	perMinute := step.Minutes()
	for i, b := range bins {
		c.Points = append(c.Points, ChartPoint{At: c.From.Add(time.Duration(i) * step),
			Accepted: b.counts[0] / perMinute, Duplicate: b.counts[1] / perMinute, Rejected: b.counts[2] / perMinute, Refused: b.counts[3] / perMinute,
			P50: quantile(b.buckets, 0.5) * 1000, P99: quantile(b.buckets, 0.99) * 1000, RelayAge: b.relay, ConsumeAge: b.consume})
	}
	return c, nil
}

// quantile estimates the q-quantile (seconds) of counts per upkeep.AckBuckets
// bucket (the last: past the last bound) by linear interpolation within
// its bucket, as Prometheus's histogram_quantile does; NaN without counts.
func quantile(counts []float64, q float64) float64 {
	var total float64
	for _, v := range counts {
		total += v
	}
	if total == 0 {
		return math.NaN()
	}
	rank, cum := q*total, 0.0
	for i, v := range counts {
		if cum+v >= rank && v > 0 {
			lo, hi := 0.0, 0.0
			if i > 0 {
				lo = upkeep.AckBuckets[min(i, len(upkeep.AckBuckets))-1]
			}
			if i >= len(upkeep.AckBuckets) {
				return lo // past the last bound: its lower edge, as Prometheus does
			}
			hi = upkeep.AckBuckets[i]
			return lo + (hi-lo)*(rank-cum)/v
		}
		cum += v
	}
	return upkeep.AckBuckets[len(upkeep.AckBuckets)-1]
}
