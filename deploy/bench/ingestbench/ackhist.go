package main

import (
	"fmt"
	"io"
	"math"
	"net/http"
	"slices"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// ackBuckets is the cumulative count per upper bound of gatehouse's own
// gatehouse_webhook_ack_seconds histogram (status 204), as the receiver
// measures it: from the handler's start to the 204, i.e. without the time
// a request spends in the kernel and in the load generator.
type ackBuckets map[float64]uint64

// gatherer returns the receiver's metric families: scraped from the admin
// listener of the binary, or gathered from the in-process registry.
type gatherer func() (map[string]*dto.MetricFamily, error)

func scrapeAdmin(addr string) gatherer {
	return func() (map[string]*dto.MetricFamily, error) {
		resp, err := http.Get("http://" + addr + "/metrics")
		if err != nil {
			return nil, err
		}
		defer resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			b, _ := io.ReadAll(io.LimitReader(resp.Body, 200))
			return nil, fmt.Errorf("metrics: %s: %s", resp.Status, b)
		}
		p := expfmt.NewTextParser(model.UTF8Validation)
		return p.TextToMetricFamilies(resp.Body)
	}
}

func gatherRegistry(reg *prometheus.Registry) gatherer {
	return func() (map[string]*dto.MetricFamily, error) {
		mfs, err := reg.Gather()
		out := make(map[string]*dto.MetricFamily, len(mfs))
		for _, mf := range mfs {
			out[mf.GetName()] = mf
		}
		return out, err
	}
}

// ackHistogram reads the 204 buckets of gatehouse_webhook_ack_seconds.
func ackHistogram(g gatherer) (ackBuckets, error) {
	if g == nil {
		return nil, nil
	}
	mfs, err := g()
	if err != nil {
		return nil, err
	}
	out := ackBuckets{}
	for _, m := range mfs["gatehouse_webhook_ack_seconds"].GetMetric() {
		status := ""
		for _, l := range m.GetLabel() {
			if l.GetName() == "status" {
				status = l.GetValue()
			}
		}
		if status != "204" {
			continue
		}
		for _, b := range m.GetHistogram().GetBucket() {
			if !math.IsInf(b.GetUpperBound(), 1) { // the text format lists +Inf too
				out[b.GetUpperBound()] += b.GetCumulativeCount()
			}
		}
		out[math.Inf(1)] += m.GetHistogram().GetSampleCount()
	}
	return out, nil
}

// quantile estimates the q-quantile of the acks between two readings,
// interpolating linearly inside the bucket (as PromQL's histogram_quantile).
func (after ackBuckets) quantile(before ackBuckets, q float64) time.Duration {
	total := float64(after[math.Inf(1)] - before[math.Inf(1)])
	if total == 0 {
		return 0
	}
	var bounds []float64
	for ub := range after {
		bounds = append(bounds, ub)
	}
	slices.Sort(bounds)
	rank, lower, prev := q*total, 0.0, 0.0
	for _, ub := range bounds {
		c := float64(after[ub] - before[ub])
		if c >= rank {
			if math.IsInf(ub, 1) {
				return time.Duration(lower * float64(time.Second))
			}
			v := lower + (ub-lower)*(rank-prev)/math.Max(c-prev, 1)
			return time.Duration(v * float64(time.Second))
		}
		lower, prev = ub, c
	}
	return time.Duration(lower * float64(time.Second))
}
