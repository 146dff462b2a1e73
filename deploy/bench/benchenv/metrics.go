package benchenv

import (
	"context"
	"fmt"
	"math"
	"net/http"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// Families are a process's metric families by name.
type Families map[string]*dto.MetricFamily

// Scrape reads the /metrics of the admin listener at addr.
func Scrape(ctx context.Context, addr string) (Families, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+"/metrics", nil)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, fmt.Errorf("scrape %s: %w", addr, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("scrape %s: %s", addr, resp.Status)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	return p.TextToMetricFamilies(resp.Body)
}

// By sums the series of name whose labels include every pair of match
// (name, value, …) by the value of their label label.
func (f Families) By(name, label string, match ...string) map[string]float64 {
	out := map[string]float64{}
	for _, m := range f[name].GetMetric() {
		labels := map[string]string{}
		for _, l := range m.GetLabel() {
			labels[l.GetName()] = l.GetValue()
		}
		ok := true
		for i := 0; i+1 < len(match); i += 2 {
			ok = ok && labels[match[i]] == match[i+1]
		}
		if ok { // only one of the three is set; the others read 0
			out[labels[label]] += m.GetCounter().GetValue() + m.GetGauge().GetValue() + m.GetUntyped().GetValue()
		}
	}
	return out
}

// Sum is the sum of the series of name whose labels include match.
func (f Families) Sum(name string, match ...string) float64 { return f.By(name, "", match...)[""] }

// Max is the largest value among the series of name, NaN when there is none.
func (f Families) Max(name string) float64 {
	v := math.Inf(-1)
	for _, m := range f[name].GetMetric() {
		v = max(v, m.GetCounter().GetValue()+m.GetGauge().GetValue()+m.GetUntyped().GetValue())
	}
	if math.IsInf(v, -1) {
		return math.NaN()
	}
	return v
}
