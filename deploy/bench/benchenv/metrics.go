package benchenv

import (
	"context"
	"fmt"
	"io"
	"math"
	"net/http"
	"slices"

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
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 200))
		return nil, fmt.Errorf("scrape %s: %s: %s", addr, resp.Status, b)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	return p.TextToMetricFamilies(resp.Body)
}

// Values returns the values of the series of name whose labels include
// every pair of match (name, value, name, value…).
func (f Families) Values(name string, match ...string) []float64 {
	var out []float64
	for _, m := range f[name].GetMetric() {
		if !labelled(m, match...) {
			continue
		}
		switch {
		case m.Counter != nil:
			out = append(out, m.GetCounter().GetValue())
		case m.Gauge != nil:
			out = append(out, m.GetGauge().GetValue())
		case m.Untyped != nil:
			out = append(out, m.GetUntyped().GetValue())
		}
	}
	return out
}

func labelled(m *dto.Metric, match ...string) bool {
	for i := 0; i+1 < len(match); i += 2 {
		found := false
		for _, l := range m.GetLabel() {
			found = found || (l.GetName() == match[i] && l.GetValue() == match[i+1])
		}
		if !found {
			return false
		}
	}
	return true
}

// Sum is the sum of Values.
func (f Families) Sum(name string, match ...string) float64 { return Sum(f.Values(name, match...)) }

// By sums the counter name by the value of its label.
func (f Families) By(name, label string) map[string]float64 {
	out := map[string]float64{}
	for _, m := range f[name].GetMetric() {
		for _, l := range m.GetLabel() {
			if l.GetName() == label {
				out[l.GetValue()] += m.GetCounter().GetValue()
			}
		}
	}
	return out
}

// Max is the largest of Values, NaN when there is none.
func (f Families) Max(name string, match ...string) float64 {
	v := f.Values(name, match...)
	if len(v) == 0 {
		return math.NaN()
	}
	return slices.Max(v)
}
