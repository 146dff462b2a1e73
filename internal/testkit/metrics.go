package testkit

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"
)

// Counter is the sum of reg's counters (or gauges) name whose labels
// include labels.
func Counter(t *testing.T, reg *prometheus.Registry, name string, labels map[string]string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	sum := 0.0
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
	metric:
		for _, m := range mf.GetMetric() {
			have := map[string]string{}
			for _, l := range m.GetLabel() {
				have[l.GetName()] = l.GetValue()
			}
			for k, v := range labels {
				if have[k] != v {
					continue metric
				}
			}
			if m.GetCounter() != nil {
				sum += m.GetCounter().GetValue()
			} else if m.GetGauge() != nil {
				sum += m.GetGauge().GetValue()
			}
		}
	}
	return sum
}
